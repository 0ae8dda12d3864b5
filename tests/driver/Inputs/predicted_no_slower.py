#!/usr/bin/env python3
"""Reads the 'predicted step time: <value> <unit>' line of two `meshc
--explain` outputs and exits 1 unless the first is no slower than the second
(the test that --layout auto's choice is predicted no slower than a
hand-written layout)."""
import re
import sys

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def predicted(path):
    with open(path) as f:
        for line in f:
            match = re.match(r"predicted step time: ([0-9.]+) (ns|us|ms|s) ",
                             line)
            if match:
                return float(match.group(1)) * UNITS[match.group(2)]
    raise SystemExit(f"{path}: no 'predicted step time:' line")


def main(argv):
    if len(argv) != 3:
        print("usage: predicted_no_slower.py CHOSEN.txt OTHER.txt",
              file=sys.stderr)
        return 2
    chosen, other = predicted(argv[1]), predicted(argv[2])
    verdict = "no slower" if chosen <= other else "SLOWER"
    print(f"chosen {chosen:.6g} s, other {other:.6g} s: {verdict}")
    return 0 if chosen <= other else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
