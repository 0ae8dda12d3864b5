#!/usr/bin/env python3
"""The Python package's cost over meshrun (docs/performance.md, "meshc from
Python"): the same program trained the same steps on the same data, once by
`meshrun` (a process: load, set up, train) and once by `meshc.Session`
(set up, train) in this process, alternating ROUNDS times. Each prints the
wall time of set-up and training; the ratio is Python's over meshrun's.

usage: .venv/bin/python bench/python/session_vs_meshrun.py [--build DIR]
       [--steps 800] [--rounds 3] [--model mlp|charlm]
"""

import argparse
import pathlib
import statistics
import subprocess
import tempfile
import time

import numpy as np

import meshc

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = {
    "mlp": ("examples/mlp/mlp.mtf", "b:2;m:4", "batch:b;hidden:m",
            "data/digits", {"x": "train_x.npy", "labels": "train_labels.npy"}),
    "charlm": ("examples/transformer/charlm.mtf", "b:2;m:2",
               "batch:b;heads:m;d_ff:m;vocab:m", "data/fortunes",
               {"tokens": "train_tokens.npy",
                "targets": "train_targets.npy"}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=pathlib.Path, default=ROOT / "build")
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    args = parser.parse_args()
    model, mesh, layout, data, files = MODELS[args.model]
    program = meshc.compile(ROOT / model, mesh=mesh, layout=layout)
    arrays = {name: np.load(ROOT / data / file) for name, file in files.items()}
    with tempfile.TemporaryDirectory() as work:
        path = pathlib.Path(work) / "model.mprog"
        program.save(path)
        command = [str(args.build / "bin" / "meshrun"), str(path), "--steps",
                   str(args.steps), "--quiet"]
        for name, file in files.items():
            command += ["--input", f"{name}={ROOT / data / file}"]
        tool, package = [], []
        print(f"{args.model} on {mesh} ({layout}), {args.steps} steps a run")
        for round_ in range(args.rounds):
            started = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True)
            tool.append(time.perf_counter() - started)
            started = time.perf_counter()
            session = meshc.Session(program)
            session.train(arrays, steps=args.steps)
            package.append(time.perf_counter() - started)
            print(f"round {round_ + 1}: meshrun {tool[-1]:.3f} s, "
                  f"meshc.Session {package[-1]:.3f} s")
        ratio = statistics.median(package) / statistics.median(tool)
        print(f"median: meshrun {statistics.median(tool):.3f} s, "
              f"meshc.Session {statistics.median(package):.3f} s, "
              f"ratio {ratio:.2f}")


if __name__ == "__main__":
    main()
