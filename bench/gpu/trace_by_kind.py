#!/usr/bin/env python3
"""Where a step's time goes, from a `meshrun --trace` file: the last traced
run of device 0, summed by step kind, and its slowest steps.

On the CUDA backend, trace under MESHC_CUDA_SYNC=1 (bench/gpu/device_check.sh
does): without it steps are only enqueued, and the time lands on whichever
step next waits for the GPU.

usage: trace_by_kind.py TRACE.json [--top N]
"""
import argparse
import collections
import json


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    with open(args.trace) as f:
        trace = json.load(f)
    steps = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    if not steps:
        raise SystemExit(f"{args.trace}: no traced steps")
    last = max(e["args"]["run"] for e in steps)
    steps = [e for e in steps
             if e["args"]["run"] == last and e["pid"] == 0 and e["tid"] == 0]
    kinds = collections.defaultdict(lambda: [0, 0.0])
    for e in steps:
        kinds[e["name"]][0] += 1
        kinds[e["name"]][1] += e["dur"] / 1000
    total = sum(ms for _, ms in kinds.values())
    print(f"run {last}, device 0: {len(steps)} steps, {total:.1f} ms")
    for kind, (count, ms) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
        print(f"  {kind:24s} {count:5d} steps {ms:10.2f} ms {100 * ms / total:5.1f}%")
    print(f"slowest {args.top}:")
    for e in sorted(steps, key=lambda e: -e["dur"])[:args.top]:
        print(f"  step {e['args'].get('step'):5} {e['name']:10s} "
              f"{e['args'].get('phase', ''):9s} {e['dur'] / 1000:9.2f} ms")


if __name__ == "__main__":
    main()
