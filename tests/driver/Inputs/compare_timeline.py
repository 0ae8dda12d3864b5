"""Compares meshc --timeline's predicted run with meshrun --trace's measured
one (device 0, the last run traced).

    compare_timeline.py PREDICTED.json [MEASURED.json] EXPLAIN.txt

Prints whether both list the same steps in the same order (by op and loop
iteration; copies apart: the emitter adds some the cost model does not
price; without MEASURED.json, not), whether the predicted events of each track (the device, its lanes
of started collectives, one per link class) run one at a time and end at the predicted step, and whether that step is --explain's (EXPLAIN.txt, printed
to 3 digits).
"""
import json
import re
import sys

predicted = json.load(open(sys.argv[1]))
measured = json.load(open(sys.argv[2])) if len(sys.argv) == 4 else None
explain_file = sys.argv[-1]


def steps(events):
    return [(e["name"], e["args"].get("iteration", -1)) for e in events
            if e["ph"] == "X" and e["name"] not in ("copy", "run overhead")]


if measured is not None:
    last = max(e["args"]["run"] for e in measured["traceEvents"]
               if e["ph"] == "X")
    run = [e for e in measured["traceEvents"]
           if e["ph"] == "X" and e["tid"] == 0 and e["args"]["run"] == last]
    ours, theirs = steps(predicted["traceEvents"]), steps(run)
    print(f"steps: {len(ours)} predicted, {len(theirs)} run; "
          f"same order: {ours == theirs}")
events = [e for e in predicted["traceEvents"] if e["ph"] == "X"]
end = max(e["ts"] + e["dur"] for e in events)
total = predicted["otherData"]["predicted step seconds"] * 1e6


def in_order(track):
    """Each event of `track` starts where the one before it ends, or later."""
    mine = [e for e in events if e["tid"] == track]
    return all(b["ts"] - a["ts"] - a["dur"] >= -1e-9 * total
               for a, b in zip(mine, mine[1:]))


# The device's steps (track 0) and its started collectives (tracks 1 and
# 2, a lane per link class) each run one at a time.
ordered = all(in_order(track) for track in {e["tid"] for e in events})
print(f"one at a time on each track: {ordered}; "
      f"events end at the predicted step: {abs(end - total) <= 1e-6 * total}")
units = {"s": 1e6, "ms": 1e3, "us": 1, "ns": 1e-3}
explained = re.search(r"predicted step time: ([0-9.]+) (s|ms|us|ns) ",
                      open(explain_file).read())
explain = float(explained.group(1)) * units[explained.group(2)]
print(f"predicted {total / 1e3:.3f} ms, --explain's: "
      f"{abs(total - explain) <= 0.005 * explain}")
