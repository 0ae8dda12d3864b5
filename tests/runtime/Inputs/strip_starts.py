"""Writes a .mprog without its started collectives: every "start" member and
every wait step removed (loop bodies included), which means the same program
with every collective run to completion (docs/mprog.md#overlapped-collectives).

usage: strip_starts.py IN.mprog OUT.mprog
"""
import json
import sys


def strip(steps):
    kept = []
    for step in steps:
        if step["op"] == "wait":
            continue
        step.pop("start", None)
        if step["op"] == "loop":
            step["body"] = strip(step["body"])
        kept.append(step)
    return kept


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        program = json.load(f)
    program["steps"] = strip(program["steps"])
    with open(sys.argv[2], "w") as f:
        json.dump(program, f, indent=1)


if __name__ == "__main__":
    main()
