#!/usr/bin/env python3
"""The cost model against measurement: every valid layout of the examples on
2 devices (mesh b:2), its step time predicted by `meshc --explain --machine
PROFILE` and measured by meshrun (threads, or --mpi: mpirun -np 2, one rank
per device). Prints each layout's pair, then per model and over all layouts
the Spearman rank correlation of predicted and measured times and the median
relative error |predicted - measured| / measured (docs/cost.md).

usage: bench/cost_vs_measured.py [--mpi] [--steps N] [--machine PROFILE]
                                 [--models m1,m2] [BUILD_DIR]

PROFILE defaults to the preset measured on the development machine
(epyc-2core-threads, or epyc-2core-mpi with --mpi); on another machine give
the profile meshc-calibrate wrote there. The layouts are the sweep's
(tests/sweep/mpi_sweep.py).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "sweep"))
from mpi_sweep import INVALID, MPIRUN, layouts  # noqa: E402

MODELS = {
    "mlp": ("examples/mlp/mlp.mtf", "batch,io,hidden,classes"),
    "block": ("examples/transformer/block.mtf",
              "batch,seq,d_model,heads,d_k,d_ff"),
    "charlm": ("examples/transformer/charlm.mtf",
               "batch,seq,d_model,heads,d_k,d_ff,vocab"),
    "llama": ("examples/llama/llama.mtf",
              "batch,seq,d_model,heads,d_k,d_ff,vocab"),
}

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def ranks(values):
    """1-based ranks, ties sharing their mean rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            result[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return result


def spearman(xs, ys):
    """Pearson correlation of the ranks (nan for fewer than 3 points or a
    constant series)."""
    if len(xs) < 3:
        return float("nan")
    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / (sxx * syy) ** 0.5 if sxx and syy else float("nan")


def predict(meshc, model, layout, machine):
    out = subprocess.run(
        [meshc, model, "--mesh", "b:2", "--layout", layout, "--explain",
         "--machine", machine], capture_output=True, text=True)
    if out.returncode != 0:
        if any(reason in out.stderr for reason in INVALID):
            return None
        raise RuntimeError(f"meshc --explain failed on '{layout}':\n"
                           f"{out.stderr}")
    match = re.search(r"predicted step time: ([0-9.]+) (ns|us|ms|s) ",
                      out.stdout)
    if not match:
        raise RuntimeError(f"no predicted step time for '{layout}'")
    return float(match.group(1)) * UNITS[match.group(2)]


def measure(meshc, meshrun, model, layout, steps, mpi, work):
    prog = os.path.join(work, "p.mprog")
    subprocess.run([meshc, model, "--mesh", "b:2", "--layout", layout,
                    "-o", prog], check=True, capture_output=True)
    command = [meshrun, prog, "--steps", str(steps), "--quiet"]
    if mpi:
        command = MPIRUN + ["-np", "2"] + command
    out = subprocess.run(command, capture_output=True, text=True, check=True)
    match = re.search(r"mean ([0-9.]+) ms", out.stdout + out.stderr)
    if not match:
        raise RuntimeError(f"no mean step time from meshrun:\n{out.stdout}"
                           f"{out.stderr}")
    return float(match.group(1)) * 1e-3


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build", nargs="?", default=os.path.join(ROOT, "build"))
    parser.add_argument("--mpi", action="store_true")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--machine")
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    meshc = os.path.join(args.build, "bin", "meshc")
    meshrun = os.path.join(args.build, "bin", "meshrun")
    machine = args.machine or ("epyc-2core-mpi" if args.mpi
                               else "epyc-2core-threads")
    everything = []
    print(f"machine profile {machine}; {'MPI, 2 ranks' if args.mpi else '2 threads'}; "
          f"{args.steps} steps per layout")
    print(f"{'model':8} {'layout':28} {'predicted':>10} {'measured':>10} {'error':>7}")
    summary = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            if name not in MODELS:
                parser.error(f"unknown model '{name}' ({', '.join(MODELS)})")
            model, dims = MODELS[name]
            model = os.path.join(ROOT, model)
            pairs = []
            for layout in layouts(dims.split(","), ["b"]):
                predicted = predict(meshc, model, layout, machine)
                if predicted is None:
                    continue
                measured = measure(meshc, meshrun, model, layout, args.steps,
                                   args.mpi, work)
                error = abs(predicted - measured) / measured
                pairs.append((predicted, measured, error))
                print(f"{name:8} {layout or '(replicated)':28} "
                      f"{predicted * 1e3:9.3f}ms {measured * 1e3:9.3f}ms "
                      f"{error * 100:6.1f}%", flush=True)
            everything += pairs
            summary.append((name, pairs))
    print()
    for name, pairs in summary + [("all", everything)]:
        rho = spearman([p for p, _, _ in pairs], [m for _, m, _ in pairs])
        median = statistics.median(e for _, _, e in pairs) if pairs else float("nan")
        print(f"{name:8} {len(pairs):3} layouts: Spearman {rho:5.2f}, "
              f"median relative error {median * 100:5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
