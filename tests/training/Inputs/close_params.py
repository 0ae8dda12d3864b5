"""Compares the --dump-params folders A (a run without microbatches) and B
(the same steps with them): every parameter and optimizer slot of A within
TOL of B's, as ||a - b|| / ||a|| per tensor (Adam divides by the gradients'
root mean square, which turns the last bits of a sum taken in another order
into larger differences of single elements; the norm is what training
sees). B's gradient accumulators (zero between steps) must not be among
its files: meshrun dumps no accumulator. With --outputs A.json B.json also compares the
outputs of meshrun --dump-outputs (scalars: relative difference; with
--abs NAME=TOL, output NAME's absolute difference, for a count such as an
accuracy, whose quantum is one example)."""
import json
import os
import sys

import numpy as np

args = sys.argv[1:]
outputs = None
absolute = {}
while args[:1] in (["--outputs"], ["--abs"]):
    if args[0] == "--outputs":
        outputs, args = args[1:3], args[3:]
    else:
        name, _, value = args[1].partition("=")
        absolute[name], args = float(value), args[2:]
a_dir, b_dir, tol = args[0], args[1], float(args[2])
failed = False
worst, worst_name = 0.0, ""
names = sorted(f for f in os.listdir(a_dir) if f.endswith(".npy"))
if not names:
    sys.exit(f"close_params: no parameters in {a_dir}")
for f in names:
    a, b = np.load(os.path.join(a_dir, f)), np.load(os.path.join(b_dir, f))
    if a.shape != b.shape:
        sys.exit(f"close_params: {f}: shapes {a.shape} and {b.shape}")
    norm = float(np.linalg.norm(a))
    diff = float(np.linalg.norm(a - b)) / norm if norm else float(np.linalg.norm(b))
    if diff >= worst:
        worst, worst_name = diff, f[:-4]
sums = [f for f in os.listdir(b_dir) if f.endswith("__grad_sum.npy")]
if sums:
    print("DIFFERS: gradient accumulators were dumped: " + ", ".join(sums))
    failed = True
ok = worst <= tol
failed |= not ok
print(f"params and slots: largest relative difference {worst:.1e} ({worst_name}) {'OK' if ok else 'DIFFERS'}")
if outputs:
    a_out, b_out = (json.load(open(path))["outputs"] for path in outputs)
    for name in sorted(a_out):
        x, y = a_out[name]["data"][0], b_out[name]["data"][0]
        if name in absolute:
            ok = abs(x - y) <= absolute[name]
        else:
            ok = abs(x - y) / max(abs(x), 1e-30) <= tol
        failed |= not ok
        print(f"output {name}: {x:.7g} and {y:.7g} {'OK' if ok else 'DIFFERS'}")
sys.exit(1 if failed else 0)
