#!/usr/bin/env python3
"""Compares two output files in the format of `meshrun --dump-outputs` and
`meshc --reference`: {"outputs": {name: {"dims", "shape", "data"}}}.

Prints one line per output and exits 1 when a shape differs or an element
differs by more than RTOL times the largest magnitude of the reference tensor
(the tolerance of the layout sweep; see docs/testing.md), or than the RTOL
given after the two files (bf16 programs: docs/testing.md).
"""
import json
import sys

RTOL = 1e-5


def main(argv):
    if len(argv) not in (3, 4):
        print("usage: compare_outputs.py RUN.json REFERENCE.json [RTOL]",
              file=sys.stderr)
        return 2
    rtol = float(argv[3]) if len(argv) == 4 else RTOL
    with open(argv[1]) as f:
        run = json.load(f)["outputs"]
    with open(argv[2]) as f:
        reference = json.load(f)["outputs"]
    ok = True
    for name, want in sorted(reference.items()):
        got = run.get(name)
        if got is None:
            print(f"  {name}: missing from {argv[1]}")
            ok = False
            continue
        if got["shape"] != want["shape"]:
            print(f"  {name}: shape {got['shape']} != reference {want['shape']}")
            ok = False
            continue
        scale = max((abs(v) for v in want["data"]), default=0.0)
        worst = max((abs(a - b) for a, b in zip(got["data"], want["data"])),
                    default=0.0)
        relative = worst / scale if scale else worst
        verdict = "agrees" if worst <= rtol * scale else "DIFFERS"
        ok &= verdict == "agrees"
        shown = (f"{got['data'][0]:.6f} vs reference {want['data'][0]:.6f}"
                 if len(want["data"]) == 1 else f"shape {want['shape']}")
        print(f"  {name}: {shown}, max relative error {relative:.1e}: {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
