#!/usr/bin/env python3
"""Compares the last held-out loss ("eval after step N: loss X") of two meshrun
outputs: prints both and whether the second is within RTOL of the first.

usage: heldout_within.py F32.out OTHER.out RTOL
"""
import re
import sys


def last_eval_loss(path):
    losses = re.findall(r"eval after step \d+: loss ([0-9.]+)", open(path).read())
    if not losses:
        sys.exit(f"{path}: no 'eval after step N: loss X' line")
    return float(losses[-1])


def main(argv):
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    base, other, rtol = last_eval_loss(argv[1]), last_eval_loss(argv[2]), float(argv[3])
    relative = abs(other - base) / base
    verdict = "OK" if relative <= rtol else "TOO FAR"
    print(f"held-out loss {other:.4f} vs {base:.4f}: {relative:.2%} apart "
          f"(<= {rtol:.0%}): {verdict}")
    return 0 if verdict == "OK" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
