"""Stacks the per-instance parameters of an unrolled program into the
stacked parameters of the same model compiled with --repeat=loop.

    stack_params.py UNROLLED.mprog LOOP.mprog UNROLLED_DIR OUT_DIR
        writes OUT_DIR/<name>.npy for every parameter (and optimizer slot) of
        LOOP.mprog from UNROLLED_DIR (meshrun --dump-params of UNROLLED.mprog)
    stack_params.py --compare TOLERANCE UNROLLED.mprog LOOP.mprog
                    UNROLLED_DIR LOOP_DIR
        compares every parameter and optimizer slot of LOOP_DIR with
        UNROLLED_DIR's, stacked: prints the largest difference relative to
        each tensor's largest magnitude, for the parameters and for the
        slots, and exits 1 when one is above TOLERANCE (0: bit-identical)
    stack_params.py --unstack UNROLLED.mprog LOOP.mprog LOOP_DIR OUT_DIR
                    [LOOP_OUTPUTS.json OUT_OUTPUTS.json]
        the other way: writes OUT_DIR/<name>.npy for every parameter of
        UNROLLED.mprog from LOOP_DIR (meshrun --dump-params of LOOP.mprog),
        each layer's slice of a stacked one, and (given the outputs of
        meshrun --dump-outputs) the outputs with every grad/NAME of a
        stacked parameter cut into its layers' grad/NAME, so that a check
        written for the unrolled program reads the loop program's results

Both programs list their parameters in program order. A loop parameter
whose first dim is a loop's layer dim (size L) belongs to a run of P such
parameters; the unrolled program has L * P parameters there, layer after
layer, each layer's in the run's order. Any other parameter is one of the
unrolled program's, of the same shape.
"""
import json
import os
import sys

import numpy as np


def params(path):
    program = json.load(open(path))
    return [t for t in program["tensors"] if t["role"] == "param"]


def file_of(directory, name):
    return os.path.join(directory, name.replace("/", "__") + ".npy")


def pairs(unrolled_path, loop_path):
    """Yields (loop param name, [unrolled names], stacked?)."""
    unrolled = params(unrolled_path)
    loop = params(loop_path)
    loop_dims = set()
    for step in json.load(open(loop_path))["steps"]:
        if step["op"] == "loop":
            loop_dims.add(step["count"])
    u = 0
    i = 0
    while i < len(loop):
        first = loop[i]["dims"][0] if loop[i]["dims"] else None
        stacked = (first is not None and first["size"] in loop_dims and
                   not any(d["name"] == first["name"] for d in unrolled[u]["dims"]))
        if not stacked:
            yield loop[i]["name"], [unrolled[u]["name"]]
            i += 1
            u += 1
            continue
        layer_dim = first["name"]
        run = []
        while (i < len(loop) and loop[i]["dims"] and
               loop[i]["dims"][0]["name"] == layer_dim):
            run.append(loop[i]["name"])
            i += 1
        layers = first["size"]
        for k, name in enumerate(run):
            yield name, [unrolled[u + layer * len(run) + k]["name"]
                         for layer in range(layers)]
        u += layers * len(run)
    if u != len(unrolled):
        sys.exit("stack_params: %d unrolled parameters left over" %
                 (len(unrolled) - u))


def stacked_values(directory, names):
    arrays = [np.load(file_of(directory, n)) for n in names]
    return arrays[0] if len(arrays) == 1 else np.stack(arrays)


def unstack(args):
    unrolled_path, loop_path, loop_dir, out_dir = args[:4]
    os.makedirs(out_dir, exist_ok=True)
    grads = {}
    for name, targets in pairs(unrolled_path, loop_path):
        if "/" in name:  # optimizer slots: not unstacked
            continue
        value = np.load(file_of(loop_dir, name))
        slices = [value] if len(targets) == 1 else list(value)
        for target, part in zip(targets, slices):
            np.save(file_of(out_dir, target), part.astype(np.float32))
        grads["grad/" + name] = ["grad/" + t for t in targets]
    if len(args) == 6:
        document = json.load(open(args[4]))
        outputs = {}
        for name, tensor in document["outputs"].items():
            if name not in grads or len(grads[name]) == 1:
                outputs[grads.get(name, [name])[0]] = tensor
                continue
            layers = len(grads[name])
            per = len(tensor["data"]) // layers
            for layer, target in enumerate(grads[name]):
                outputs[target] = dict(
                    tensor, dims=tensor["dims"][1:], shape=tensor["shape"][1:],
                    data=tensor["data"][layer * per:(layer + 1) * per])
        document["outputs"] = outputs
        json.dump(document, open(args[5], "w"))


def main():
    args = sys.argv[1:]
    if args and args[0] == "--unstack":
        return unstack(args[1:])
    compare = args and args[0] == "--compare"
    tolerance = 0.0
    if compare:
        tolerance = float(args[1])
        args = args[2:]
    unrolled_path, loop_path, unrolled_dir, other_dir = args
    worst = {"params": (0.0, "-"), "slots": (0.0, "-")}
    for name, sources in pairs(unrolled_path, loop_path):
        want = stacked_values(unrolled_dir, sources)
        if not compare:
            os.makedirs(other_dir, exist_ok=True)
            np.save(file_of(other_dir, name), want.astype(np.float32))
            continue
        got = np.load(file_of(other_dir, name))
        if got.shape != want.shape:
            sys.exit("%s: shape %s vs %s" % (name, got.shape, want.shape))
        scale = max(float(np.max(np.abs(want))), 1e-30)
        error = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
        kind = "slots" if "/" in name else "params"
        if error > worst[kind][0] or worst[kind][1] == "-":
            worst[kind] = (max(error, worst[kind][0]), name)
    if compare:
        for kind in ("params", "slots"):
            print("%s: largest relative difference %.1e (%s)" %
                  (kind, worst[kind][0], worst[kind][1]))
        sys.exit(0 if max(w for w, _ in worst.values()) <= tolerance else 1)


main()
