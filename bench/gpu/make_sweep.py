#!/usr/bin/env python3
"""Compiles the layout sweep of one model for a GPU machine that has no
meshc: every valid layout of MODEL on MESH, each as N.mprog with the
reference interpreter's outputs N.ref.json (meshc --reference), plus
layouts.txt (N and its layout per line). bench/gpu/sweep.sh runs them.

usage: make_sweep.py MESHC MODEL MESH DIM[,DIM...] OUTDIR [MESHC-FLAG...]

Flags after OUTDIR go to every meshc call (e.g. --axis-weights "a=1,2,3":
unequal blocks, each device on its own).

The layouts are those of tests/sweep/mpi_sweep.py (each mesh axis unused or
splitting one of DIMs, in every order); layouts meshc rejects as invalid are
skipped, any other meshc failure stops with exit 1.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "tests", "sweep"))
from mpi_sweep import INVALID, layouts  # noqa: E402


def main(argv):
    if len(argv) < 6:
        print(__doc__.strip().splitlines()[5], file=sys.stderr)
        return 2
    meshc, model, mesh, dims, out = argv[1:6]
    flags = argv[6:]
    axes = [pair.split(":")[0] for pair in mesh.split(";")]
    os.makedirs(out, exist_ok=True)
    valid = invalid = 0
    with open(os.path.join(out, "layouts.txt"), "w") as listing:
        for layout in layouts(dims.split(","), axes):
            prog = os.path.join(out, f"{valid}.mprog")
            built = subprocess.run(
                [meshc, model, "--mesh", mesh, "--layout", layout, "-o", prog,
                 "--reference", os.path.join(out, f"{valid}.ref.json")] +
                flags,
                capture_output=True, text=True)
            if built.returncode != 0:
                if any(reason in built.stderr for reason in INVALID):
                    invalid += 1
                    continue
                print(f"make_sweep: meshc failed on layout '{layout}': "
                      f"{built.stderr}", file=sys.stderr)
                return 1
            listing.write(f"{valid} {layout}\n")
            valid += 1
    print(f"make_sweep: {os.path.basename(model)} on {mesh}: {valid} layouts "
          f"in {out} ({invalid} invalid skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
