"""Reads meshrun --csv and checks that the loss of the last 5 steps is below
half that of the first step."""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
losses = [float(r["loss"]) for r in rows]
first, last = losses[0], sum(losses[-5:]) / 5
if not last < 0.5 * first:
    sys.exit(f"loss_falls: loss went from {first} to {last}")
print(f"loss falls from {first:.4f} to {last:.4f}: OK")
