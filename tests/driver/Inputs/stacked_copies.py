"""Counts, per loop step of a .mprog, the copy steps of its body that write
one of its stacked buffers: a value the body computes and stacks is planned
in its slice (docs/training.md, "Loops"), so only a value that shares its
buffer with a loop argument, an input, a parameter or an output is copied.

usage: stacked_copies.py PROGRAM.mprog   prints "loop K: N copies into M
stacked buffers, B body steps" per loop step, in program order.
"""
import json
import sys

program = json.load(open(sys.argv[1]))
loops = [step for step in program["steps"] if step["op"] == "loop"]
for k, loop in enumerate(loops):
    stacked = {entry["buf"] for entry in loop["stacked"]}
    copies = [step for step in loop["body"]
              if step["op"] == "copy" and step["out"] in stacked]
    print("loop %d: %d copies into %d stacked buffers, %d body steps" %
          (k, len(copies), len(stacked), len(loop["body"])))
