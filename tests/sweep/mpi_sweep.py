#!/usr/bin/env python3
"""The layout sweep under MPI: every valid layout of a model on one mesh,
compiled by meshc (with the reference interpreter's outputs) and run by
`mpirun -np <devices> meshrun` (one mesh device per rank); every run must agree
with the reference (scripts/compare_outputs.py's tolerance).

usage: mpi_sweep.py MESHC MESHRUN COMPARE MODEL MESH DIM[,DIM...] WORKDIR

Layouts: each mesh axis unused or splitting one of DIMs, in every order. meshc
rejects the layouts the model cannot take (its error says why); those are
counted as invalid, any other failure fails the sweep.
"""
import itertools
import os
import subprocess
import sys

INVALID = ("is not divisible", "over the same mesh axis")


def layouts(dims, axes):
    """Every assignment of axes to dims (or none), in every order."""
    for choice in itertools.product([None] + dims, repeat=len(axes)):
        groups = {}
        for axis, dim in zip(axes, choice):
            if dim is not None:
                groups.setdefault(dim, []).append(axis)
        for orders in itertools.product(
                *[itertools.permutations(g) for g in groups.values()]):
            yield ";".join(f"{dim}:{'+'.join(order)}"
                           for dim, order in zip(groups, orders))


def main(argv):
    meshc, meshrun, compare, model, mesh, dims, work = argv[1:]
    axes = [pair.split(":")[0] for pair in mesh.split(";")]
    devices = 1
    for pair in mesh.split(";"):
        devices *= int(pair.split(":")[1])
    os.makedirs(work, exist_ok=True)
    valid = invalid = 0
    for index, layout in enumerate(layouts(dims.split(","), axes)):
        prog = os.path.join(work, f"{index}.mprog")
        ref = os.path.join(work, f"{index}.ref.json")
        out = os.path.join(work, f"{index}.out.json")
        built = subprocess.run(
            [meshc, model, "--mesh", mesh, "--layout", layout, "-o", prog,
             "--reference", ref], capture_output=True, text=True)
        if built.returncode != 0:
            if any(reason in built.stderr for reason in INVALID):
                invalid += 1
                continue
            print(f"FAIL {layout}: meshc: {built.stderr}")
            return 1
        valid += 1
        run = subprocess.run(
            ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
             str(devices), meshrun, prog, "--quiet", "--dump-outputs", out],
            capture_output=True, text=True, timeout=120)
        if run.returncode != 0:
            print(f"FAIL {layout}: meshrun: {run.stdout}{run.stderr}")
            return 1
        check = subprocess.run([sys.executable, compare, out, ref],
                               capture_output=True, text=True)
        if check.returncode != 0:
            print(f"FAIL {layout}: {check.stdout}")
            return 1
    print(f"mpi sweep: {model.split('/')[-1]} on {mesh}, {devices} ranks: "
          f"{valid} valid layouts agree with the reference, {invalid} invalid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
