#!/usr/bin/env python3
"""A pipeline's bubble measured from a `meshrun --trace` file: for each
device (stage s, its coordinate along the stage axis) the time of the tick
loops' iterations in which it holds no microbatch (ticks t with t - s outside
[0, M), forward and backward), as a share of all its ticks' time and of the
step, beside GPipe's (P - 1) / (M + P - 1). In the SPMD program a stage
computes on zeros in those ticks rather than idling (docs/pipeline.md), so
what the trace shows is their time.

An iteration's time runs from its first step's start to its last step's
end (a collective_permute's wait for the peer included). The tick loops must
be the program's only loops (mtf-pipeline-stages unrolls a stage's layers in
the tick body): each phase's iterations must number M + P - 1.

usage: pipeline_bubble.py TRACE.json M [--axis p] [--runs N]
  (the last N traced runs, default 3, each reported per device)
"""
import argparse
import collections
import json
import re
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("microbatches", type=int)
    parser.add_argument("--axis", default="p")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with open(args.trace) as f:
        events = json.load(f)["traceEvents"]
    stage_of = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            found = re.search(rf"\b{re.escape(args.axis)}=(\d+)",
                              e["args"]["name"])
            if found:
                stage_of[(e["pid"], e["tid"])] = int(found.group(1))
    if not stage_of:
        sys.exit(f"pipeline_bubble: no device of {args.trace} has a "
                 f"coordinate along '{args.axis}' (--axis)")
    stages = max(stage_of.values()) + 1
    ticks = args.microbatches + stages - 1
    steps = [e for e in events if e.get("ph") == "X" and "run" in e["args"]]
    runs = sorted({e["args"]["run"] for e in steps})[-args.runs:]
    bubble = (stages - 1) / ticks
    print(f"{stages} stages, {args.microbatches} microbatches, {ticks} ticks: "
          f"GPipe's bubble {100 * bubble:.1f}%")
    shares = []
    for (pid, tid), stage in sorted(stage_of.items()):
        for run in runs:
            mine = [e for e in steps if e["pid"] == pid and e["tid"] == tid
                    and e["args"]["run"] == run]
            if not mine:
                continue
            begin = min(e["ts"] for e in mine)
            end = max(e["ts"] + e["dur"] for e in mine)
            spans = {}
            for e in mine:
                it = e["args"].get("iteration")
                if it is None:
                    continue
                key = (e["args"]["phase"], it)
                first, last = spans.get(key, (e["ts"], e["ts"] + e["dur"]))
                spans[key] = (min(first, e["ts"]),
                              max(last, e["ts"] + e["dur"]))
            per_phase = collections.Counter(phase for phase, _ in spans)
            if any(count != ticks for count in per_phase.values()):
                sys.exit(f"pipeline_bubble: run {run} has loops of "
                         f"{dict(per_phase)} iterations, not the {ticks} "
                         f"ticks of {args.microbatches} microbatches on "
                         f"{stages} stages")
            loops = sum(last - first for first, last in spans.values())
            idle = sum(last - first for (_, tick), (first, last)
                       in spans.items()
                       if not 0 <= tick - stage < args.microbatches)
            shares.append(idle / loops)
            print(f"stage {stage} (pid {pid} device {tid}) run {run}: step "
                  f"{(end - begin) / 1e3:.1f} ms, ticks {loops / 1e3:.1f} ms, "
                  f"bubble ticks {idle / 1e3:.1f} ms: {100 * idle / loops:.1f}%"
                  f" of the ticks, {100 * idle / (end - begin):.1f}% of the "
                  f"step")
    shares.sort()
    print(f"bubble share of the ticks: median {100 * shares[len(shares) // 2]:.1f}%"
          f" ({100 * shares[0]:.1f}-{100 * shares[-1]:.1f}%) against GPipe's "
          f"{100 * bubble:.1f}%")


if __name__ == "__main__":
    main()
