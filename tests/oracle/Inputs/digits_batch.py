#!/usr/bin/env python3
"""Writes one batch of the digits data set (scripts/fetch_data.sh) for meshrun
--input and the oracle: OUT/x.npy f32 [ROWS, 64] and OUT/labels.npy i32 [ROWS],
the first ROWS images of data/digits/train_*.npy (the start of its fixed-seed
shuffle, so every class appears).

usage: digits_batch.py DATA/digits OUT [ROWS=64]
"""
import os
import sys

import numpy as np


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    src, out = argv[0], argv[1]
    rows = int(argv[2]) if len(argv) == 3 else 64
    x = np.load(os.path.join(src, "train_x.npy"))
    labels = np.load(os.path.join(src, "train_labels.npy"))
    if rows > len(x):
        print(f"digits_batch: {rows} rows asked, {len(x)} in {src}", file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "x.npy"), np.ascontiguousarray(x[:rows], dtype=np.float32))
    np.save(os.path.join(out, "labels.npy"), np.ascontiguousarray(labels[:rows], dtype=np.int32))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
