"""Reads meshrun --csv and checks that the mean loss of the last 5 steps is
below RATIO (default 0.5) times that of the first step.

usage: loss_falls.py RUN.csv [RATIO]"""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
ratio = float(sys.argv[2]) if len(sys.argv) > 2 else 0.5
losses = [float(r["loss"]) for r in rows]
first, last = losses[0], sum(losses[-5:]) / 5
if not last < ratio * first:
    sys.exit(f"loss_falls: loss went from {first} to {last}, not below "
             f"{ratio} x {first}")
print(f"loss falls from {first:.4f} to {last:.4f} (< {ratio} x): OK")
