#!/usr/bin/env python3
"""Checks meshc --explain=json against docs/explain.schema.json and against
the text report of the same compile: the tensor and collective counts the
text states, the memory total its parts, the predicted step its parts.

usage: check_explain_json.py REPORT.json REPORT.txt SCHEMA.json
Prints one line, "explain json: ok, N tensors, M collectives", or the first
mismatch and exits 1.
"""
import json
import re
import sys

import jsonschema


def main(argv):
    with open(argv[1]) as f:
        report = json.load(f)
    with open(argv[2]) as f:
        text = f.read()
    with open(argv[3]) as f:
        schema = json.load(f)
    try:
        jsonschema.validate(report, schema)
    except jsonschema.ValidationError as error:
        path = "/".join(str(part) for part in error.absolute_path)
        print(f"explain json: not the schema's at '{path}': {error.message}")
        return 1
    problems = []
    tensors = re.search(r"^tensors \((\d+);", text, re.M)
    if tensors and int(tensors.group(1)) != len(report["tensors"]):
        problems.append(f"{len(report['tensors'])} tensors, the text "
                        f"{tensors.group(1)}")
    memory = report["memory"]
    parts = sum(memory[k] for k in ("parameters", "optimizer", "inputs",
                                    "activations"))
    if parts != memory["total"]:
        problems.append(f"memory total {memory['total']}, its parts {parts}")
    if "on_a_device" in memory and \
            memory["on_a_device"] != memory["arena"] + memory["scratch"]:
        problems.append("on_a_device is not arena + scratch")
    p = report["prediction"]
    runs = sum(c["count"] for c in report["collectives"])
    stated = re.search(r"^collectives per step \((\d+)", text, re.M)
    if not stated:
        problems.append("the text states no collectives per step")
    elif p["microbatches"] == 1 and int(stated.group(1)) != runs:
        problems.append(f"{runs} collective runs, the text "
                        f"{stated.group(1)}")
    if p["microbatches"] == 1 and runs != p["collectives"]:
        problems.append(f"{runs} collective runs, the prediction "
                        f"{p['collectives']}")
    step = p["compute_seconds"] + p["exposed_seconds"] + p["overhead_seconds"]
    if abs(step - p["step_seconds"]) > 1e-9 * max(1.0, step):
        problems.append(f"step {p['step_seconds']} is not its parts {step}")
    if abs(p["exposed_seconds"] - (p["communication_seconds"] -
                                   p["hidden_seconds"])) > 1e-9:
        problems.append("exposed is not communication - hidden")
    outputs = re.search(r"^outputs: (.*)$", text, re.M)
    if report["outputs"] and not outputs:
        problems.append("the text names no outputs")
    elif outputs and outputs.group(1).split(", ") != report["outputs"]:
        problems.append(f"outputs {report['outputs']}, the text "
                        f"{outputs.group(1)}")
    if problems:
        print("explain json: " + "; ".join(problems))
        return 1
    print(f"explain json: ok, {len(report['tensors'])} tensors, "
          f"{len(report.get('collectives', []))} collectives ({runs} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
