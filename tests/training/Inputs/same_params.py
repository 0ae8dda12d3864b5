"""Compares the parameters (not optimizer slots) of two --dump-params
folders: |a - b| <= tol * max|a| per tensor."""
import os
import sys

import numpy as np

a_dir, b_dir, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
names = sorted(f for f in os.listdir(a_dir) if f.endswith(".npy") and "__" not in f)
if not names:
    sys.exit(f"same_params: no parameters in {a_dir}")
failed = False
for f in names:
    a, b = np.load(os.path.join(a_dir, f)), np.load(os.path.join(b_dir, f))
    diff = float(np.max(np.abs(a - b)))
    ok = diff <= tol * float(np.max(np.abs(a)))
    failed |= not ok
    print(f"{f[:-4]}: max difference {diff:.3e} {'OK' if ok else 'DIFFERS'}")
sys.exit(1 if failed else 0)
