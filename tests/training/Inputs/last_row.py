"""Prints the named columns of the last row of a meshrun --csv file, one
"name value" line each (6 decimals).

usage: last_row.py RUN.csv COLUMN..."""
import csv
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
if not rows:
    sys.exit(f"last_row: {sys.argv[1]} has no rows")
for column in sys.argv[2:]:
    if column not in rows[-1]:
        sys.exit(f"last_row: no column '{column}' in {sys.argv[1]}")
    print(f"{column} {float(rows[-1][column]):.6f}")
