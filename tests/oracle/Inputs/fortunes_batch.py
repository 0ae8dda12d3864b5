#!/usr/bin/env python3
"""Writes one batch of the fortunes corpus (scripts/fetch_data.sh) for meshrun
--input and the oracle: OUT/tokens.npy and OUT/targets.npy, i32 [ROWS, SEQ],
the first ROWS windows of data/fortunes/train_{tokens,targets}.npy (SEQ is the
corpus' window, 64 unless fetch_data.sh was given --seq-len).

usage: fortunes_batch.py DATA/fortunes OUT [ROWS=16]
"""
import os
import sys

import numpy as np


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    src, out = argv[0], argv[1]
    rows = int(argv[2]) if len(argv) == 3 else 16
    tokens = np.load(os.path.join(src, "train_tokens.npy"))
    targets = np.load(os.path.join(src, "train_targets.npy"))
    if tokens.shape != targets.shape or tokens.ndim != 2:
        print(f"fortunes_batch: {src}: train_tokens {list(tokens.shape)} and train_targets "
              f"{list(targets.shape)} are not two [rows, seq] arrays of one shape", file=sys.stderr)
        return 1
    if rows > len(tokens):
        print(f"fortunes_batch: {rows} rows asked, {len(tokens)} in {src}", file=sys.stderr)
        return 1
    os.makedirs(out, exist_ok=True)
    for name, array in (("tokens", tokens), ("targets", targets)):
        np.save(os.path.join(out, name + ".npy"),
                np.ascontiguousarray(array[:rows], dtype=np.int32))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
