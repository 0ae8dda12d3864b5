#!/usr/bin/env python3
"""Compiles the layout sweep of one model for a GPU machine that has no
meshc: every valid layout of MODEL on MESH, each as N.mprog with the
reference interpreter's outputs N.ref.json (meshc --reference), plus
layouts.txt (N and its layout per line). bench/gpu/sweep.sh runs them.

usage: make_sweep.py MESHC MODEL MESH DIM[,DIM...] OUTDIR [--only=TEXT]
                     [MESHC-FLAG...]

Flags after OUTDIR go to every meshc call (e.g. --axis-weights "a=1,2,3":
unequal blocks, each device on its own). With --microbatches, which meshc
--reference refuses (the reference runs one step of the global program), the
reference is compiled apart without it: the step's result is the same.
--only=TEXT keeps the layouts that contain TEXT (--only=layers: the pipelined
ones; a microbatched run without a pipeline feeds each microbatch the same
synthetic inputs, so its outputs are not the reference's).

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


def without_microbatches(flags):
    """`flags` without --microbatches N / --microbatches=N."""
    kept, skip = [], False
    for flag in flags:
        if skip:
            skip = False
        elif flag == "--microbatches":
            skip = True
        elif not flag.startswith("--microbatches="):
            kept.append(flag)
    return kept


def main(argv):
    if len(argv) < 6:
        print(__doc__.strip().splitlines()[5], file=sys.stderr)
        return 2
    meshc, model, mesh, dims, out = argv[1:6]
    flags = argv[6:]
    only = ""
    if flags and flags[0].startswith("--only="):
        only = flags.pop(0)[len("--only="):]
    axes = [pair.split(":")[0] for pair in mesh.split(";")]
    os.makedirs(out, exist_ok=True)
    valid = invalid = 0
    with open(os.path.join(out, "layouts.txt"), "w") as listing:
        for layout in layouts(dims.split(","), axes):
            if only not in layout:
                continue
            prog = os.path.join(out, f"{valid}.mprog")
            ref = os.path.join(out, f"{valid}.ref.json")
            common = [meshc, model, "--mesh", mesh, "--layout", layout]
            apart = without_microbatches(flags) != flags
            built = subprocess.run(
                common + ["-o", prog] + ([] if apart else ["--reference", ref]) +
                flags, capture_output=True, text=True)
            if built.returncode == 0 and apart:
                built = subprocess.run(
                    common + ["-o", os.devnull, "--reference", ref] +
                    without_microbatches(flags), capture_output=True, text=True)
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
