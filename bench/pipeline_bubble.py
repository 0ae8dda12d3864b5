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

With --schedule 1f1b (meshc --schedule 1f1b) the ticks are three kinds of
loop: P - 1 ticks of forward only, M of forward and backward, P - 1 of
backward only. A forward takes F (the forward-only ticks' mean), a backward
B (the backward-only ticks'), and the bubble is the share of the ticks'
time beyond M (F + B), the microbatches' own work: (P - 1) / (M + P - 1)
where the ticks of both take F + B.

With --schedule interleaved --virtual-stages V (meshc's) the tick loops run
V M + P - 1 ticks of one block each, stage s idle in the ticks t with t - s
outside [0, V M): the bubble (P - 1) / (V M + P - 1).

usage: pipeline_bubble.py TRACE.json M [--axis p] [--runs N]
                          [--schedule gpipe|1f1b|interleaved]
                          [--virtual-stages V]
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
    parser.add_argument("--schedule", choices=["gpipe", "1f1b", "interleaved"],
                        default="gpipe")
    parser.add_argument("--virtual-stages", type=int, default=2)
    args = parser.parse_args()
    # Interleaved: each of the V M entries is one tick of a stage's work.
    entries = args.microbatches * (args.virtual_stages
                                   if args.schedule == "interleaved" else 1)
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
    ticks = entries + stages - 1
    steps = [e for e in events if e.get("ph") == "X" and "run" in e["args"]]
    runs = sorted({e["args"]["run"] for e in steps})[-args.runs:]
    bubble = (stages - 1) / ticks
    name = "GPipe's" if args.schedule != "interleaved" else "interleaved"
    print(f"{stages} stages, {args.microbatches} microbatches, {ticks} ticks: "
          f"{name} bubble {100 * bubble:.1f}%")
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
            if args.schedule == "1f1b":
                shares.append(one_f_one_b(mine, stages, args.microbatches,
                                          stage, run, pid, tid))
                continue
            per_phase = collections.Counter(phase for phase, _ in spans)
            if any(count != ticks for count in per_phase.values()):
                sys.exit(f"pipeline_bubble: run {run} has loops of "
                         f"{dict(per_phase)} iterations, not the {ticks} "
                         f"ticks of {entries} entries on {stages} stages")
            loops = sum(last - first for first, last in spans.values())
            idle = sum(last - first for (_, tick), (first, last)
                       in spans.items()
                       if not 0 <= tick - stage < entries)
            shares.append(idle / loops)
            print(f"stage {stage} (pid {pid} device {tid}) run {run}: step "
                  f"{(end - begin) / 1e3:.1f} ms, ticks {loops / 1e3:.1f} ms, "
                  f"bubble ticks {idle / 1e3:.1f} ms: {100 * idle / loops:.1f}%"
                  f" of the ticks, {100 * idle / (end - begin):.1f}% of the "
                  f"step")
    shares.sort()
    print(f"bubble share of the ticks: median {100 * shares[len(shares) // 2]:.1f}%"
          f" ({100 * shares[0]:.1f}-{100 * shares[-1]:.1f}%) against {name} "
          f"{100 * bubble:.1f}%")


def one_f_one_b(mine, stages, microbatches, stage, run, pid, tid):
    """The bubble share of one device's run under 1F1B (module doc)."""
    # Each body step by its loop: the steps of a loop run its count of
    # iterations; the loops come in the program's order (forward only, both,
    # backward only), a loop's steps in one run of step numbers.
    iterations = collections.defaultdict(set)
    phase_of = {}
    for e in mine:
        if "iteration" in e["args"]:
            iterations[e["args"]["step"]].add(e["args"]["iteration"])
            phase_of[e["args"]["step"]] = e["args"]["phase"]
    # A loop's body steps are numbered one after the other, after the
    # loop's own step: a gap starts the next loop.
    loop_of, loop = {}, -1
    for step in sorted(iterations):
        if step - 1 not in iterations:
            loop += 1
        loop_of[step] = loop
    loops = collections.defaultdict(dict)  # kind -> (loop, iteration) -> span
    for e in mine:
        step = e["args"].get("step")
        if step not in iterations:
            continue
        count = len(iterations[step])
        if phase_of[step] == "backward":
            kind = "backward only" if count == stages - 1 else None
        elif count == microbatches and microbatches > stages - 1:
            kind = "both"
        else:
            kind = "forward only"
        if kind is None:
            sys.exit(f"pipeline_bubble: step {step} runs {count} iterations "
                     f"in the backward, not the {stages - 1} ticks of "
                     "backward only")
        key = (loop_of[step], e["args"]["iteration"])
        first, last = loops[kind].get(key, (e["ts"], e["ts"] + e["dur"]))
        loops[kind][key] = (min(first, e["ts"]),
                            max(last, e["ts"] + e["dur"]))
    if set(loops) != {"forward only", "both", "backward only"}:
        sys.exit("pipeline_bubble: the trace has not the three kinds of tick "
                 f"loop of 1F1B with {microbatches} microbatches on {stages} "
                 f"stages (found {sorted(loops)}; it takes M > P - 1)")
    time = {kind: sum(last - first for first, last in spans.values())
            for kind, spans in loops.items()}
    forward = time["forward only"] / (stages - 1)
    backward = time["backward only"] / (stages - 1)
    total = sum(time.values())
    share = 1 - microbatches * (forward + backward) / total
    print(f"stage {stage} (pid {pid} device {tid}) run {run}: ticks "
          f"{total / 1e3:.1f} ms, forward {forward / 1e3:.2f} ms, backward "
          f"{backward / 1e3:.2f} ms, both {time['both'] / microbatches / 1e3:.2f}"
          f" ms a tick: bubble {100 * share:.1f}% of the ticks")
    return share


if __name__ == "__main__":
    main()
