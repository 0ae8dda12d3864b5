#!/usr/bin/env python3
"""The layout sweep under MPI: the valid layouts of a model on one mesh,
compiled by meshc and run by `mpirun -np <devices> meshrun` (one mesh device
per rank), each checked against the reference interpreter.

usage: mpi_sweep.py MESHC MESHRUN MODEL MESH DIM[,DIM...] WORKDIR [EVERY]

Layouts: each mesh axis unused or splitting one of DIMs, in every order (the
enumeration of tests/sweep/LayoutSweepTest.cpp). EVERY (default 1) runs only
every EVERY-th enumerated layout, starting with the first: a deterministic
sample that keeps the sweep within CI time on large meshes. meshc rejects the
layouts the model cannot take (its error says why); those are counted as
invalid, any other failure fails the sweep.

A model that trains runs two training steps, like the in-process sweep, with
Adam's eps forced to 1e-3 (see docs/testing.md: with 1e-8 the update of a
near-zero gradient amplifies f32 rounding whatever the layout). Checked:

  - the scalar outputs of step 1 (meshrun --csv) against the reference
    interpreter's run of the global program (meshc --reference), and
  - the outputs of step 2 and every parameter and optimizer slot after step
    2 (--dump-outputs, --dump-params) against the same program on one device
    (meshrun in-process), which LayoutSweepTest checks against the reference
    after two steps.

Tolerance per tensor: |got - want| <= RTOL * max|want| with RTOL = 1e-5
against the reference (scripts/compare_outputs.py's) and 2e-5 against the
one-device run (both runs are within 1e-5 of the reference). A model that
does not train runs one step, its outputs compared with the reference.
"""
import array
import ast
import csv
import json
import os
import re
import subprocess
import sys
import itertools

INVALID = ("is not divisible", "over the same mesh axis")
RTOL_REFERENCE = 1e-5
RTOL_ONE_DEVICE = 2e-5
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]


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


def read_npy(path):
    """The elements of a little-endian f32 or i32 .npy file, as a list."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{path}: not a .npy file")
    length = int.from_bytes(data[8:10], "little")
    header = ast.literal_eval(data[10:10 + length].decode("latin1"))
    code = {"<f4": "f", "<i4": "i"}[header["descr"]]
    values = array.array(code)
    values.frombytes(data[10 + length:])
    return list(values)


def worst(got, want):
    """max|got - want| / max|want| (or the absolute error for zeros)."""
    scale = max((abs(v) for v in want), default=0.0)
    error = max((abs(a - b) for a, b in zip(got, want)), default=0.0)
    return error / scale if scale else error


class Checker:
    """Collects mismatches and the worst relative error."""

    def __init__(self):
        self.problems = []
        self.worst = (0.0, "-")

    def compare(self, what, got, want, rtol):
        if len(got) != len(want):
            self.problems.append(f"{what}: {len(got)} elements, "
                                 f"expected {len(want)}")
            return
        relative = worst(got, want)
        if relative > self.worst[0]:
            self.worst = (relative, what)
        if relative > rtol:
            self.problems.append(f"{what}: max relative error "
                                 f"{relative:.1e} > {rtol:g}")


def run(command, what):
    done = subprocess.run(command, capture_output=True, text=True,
                          timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"{what}: {done.stdout}{done.stderr}")
    return done


def outputs(path):
    with open(path) as f:
        return {name: tensor["data"]
                for name, tensor in json.load(f)["outputs"].items()}


def first_step(csv_path):
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    return rows[0] if rows else {}


def meshrun_args(meshrun, prog, out, steps, trains):
    args = [meshrun, prog, "--quiet", "--steps", str(steps), "--dump-outputs",
            out + ".json"]
    if trains:
        args += ["--dump-params", out + ".params", "--csv", out + ".csv"]
    return args


def check_layout(out, trains, reference, base, checker):
    """Compares run `out` (file stem) with the reference and the one-device
    run `base` (file stem)."""
    if not trains:
        got = outputs(out + ".json")
        for name, want in reference.items():
            checker.compare(f"output {name}", got.get(name, []), want,
                            RTOL_REFERENCE)
        return
    step = first_step(out + ".csv")
    for name, want in reference.items():
        if name in step:
            checker.compare(f"step 1 {name}", [float(step[name])], want,
                            RTOL_REFERENCE)
        elif len(want) == 1:
            checker.problems.append(f"step 1 {name}: missing from the CSV")
    got, want = outputs(out + ".json"), outputs(base + ".json")
    for name in want:
        checker.compare(f"step 2 output {name}", got.get(name, []),
                        want[name], RTOL_ONE_DEVICE)
    params = sorted(os.listdir(base + ".params"))
    if sorted(os.listdir(out + ".params")) != params:
        checker.problems.append("the dumped params differ in names")
        return
    for name in params:
        checker.compare(f"param {name[:-4]}",
                        read_npy(os.path.join(out + ".params", name)),
                        read_npy(os.path.join(base + ".params", name)),
                        RTOL_ONE_DEVICE)


def main(argv):
    if len(argv) not in (7, 8):
        print(__doc__, file=sys.stderr)
        return 2
    meshc, meshrun, model, mesh, dims, work = argv[1:7]
    every = int(argv[7]) if len(argv) == 8 else 1
    axes = [pair.split(":")[0] for pair in mesh.split(";")]
    devices = 1
    for pair in mesh.split(";"):
        devices *= int(pair.split(":")[1])
    os.makedirs(work, exist_ok=True)

    with open(model) as f:
        source = f.read()
    trains = re.search(r"^train .* with adam", source, re.M) is not None
    if trains:
        source = re.sub(r"adam\(", "adam(eps = 1e-3, ", source)
    swept = os.path.join(work, os.path.basename(model))
    with open(swept, "w") as f:
        f.write(source)
    steps = 2 if trains else 1

    # The reference (global program, first run) and the one-device run.
    base = os.path.join(work, "one-device")
    run([meshc, swept, "-o", base + ".mprog", "--reference", base + ".ref"],
        "meshc (one device)")
    reference = outputs(base + ".ref")
    run(meshrun_args(meshrun, base + ".mprog", base, steps, trains),
        "meshrun (one device)")

    enumerated = list(layouts(dims.split(","), axes))
    valid = invalid = 0
    checker = Checker()
    for index, layout in enumerate(enumerated):
        if index % every:
            continue
        stem = os.path.join(work, str(index))
        built = subprocess.run(
            [meshc, swept, "--mesh", mesh, "--layout", layout, "-o",
             stem + ".mprog"], capture_output=True, text=True)
        if built.returncode != 0:
            if any(reason in built.stderr for reason in INVALID):
                invalid += 1
                continue
            print(f"FAIL {layout}: meshc: {built.stderr}")
            return 1
        valid += 1
        try:
            run(MPIRUN + ["-np", str(devices)] +
                meshrun_args(meshrun, stem + ".mprog", stem, steps, trains),
                "meshrun")
        except RuntimeError as error:
            print(f"FAIL {layout}: {error}")
            return 1
        checker.problems = []
        check_layout(stem, trains, reference, base, checker)
        if checker.problems:
            print(f"FAIL {layout}:\n  " + "\n  ".join(checker.problems))
            return 1
    sample = (f"{valid + invalid} of {len(enumerated)} enumerated layouts "
              f"(one in {every})" if every > 1 else
              f"all {len(enumerated)} enumerated layouts")
    what = ("loss, step-2 outputs, params and optimizer slots after 2 steps"
            if trains else "outputs")
    print(f"mpi sweep: {os.path.basename(model)} on {mesh}, {devices} ranks, "
          f"{sample}: {valid} valid layouts agree with the reference "
          f"({what}), {invalid} invalid")
    print(f"worst relative error {checker.worst[0]:.1e} ({checker.worst[1]})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
