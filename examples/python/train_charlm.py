#!/usr/bin/env python3
"""Trains the character-level transformer LM (examples/transformer/
charlm.mtf) on the fortunes corpus from Python, as docs/training.md's
meshrun command does: heads, MLP units and vocabulary split over `m`.

    .venv/bin/python examples/python/train_charlm.py [--steps 300]
"""

import argparse
import math
import pathlib
import sys
import time

import numpy as np

import meshc

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--eval-every", type=int, default=100)
    parser.add_argument("--mesh", default="b:2;m:4")
    parser.add_argument("--layout", default="batch:b;heads:m;d_ff:m;vocab:m")
    parser.add_argument("--data", type=pathlib.Path,
                        default=ROOT / "data" / "fortunes")
    args = parser.parse_args()

    try:
        train = {"tokens": np.load(args.data / "train_tokens.npy"),
                 "targets": np.load(args.data / "train_targets.npy")}
        test = {"tokens": np.load(args.data / "test_tokens.npy"),
                "targets": np.load(args.data / "test_targets.npy")}
    except OSError as error:
        print(f"train_charlm: {error} (scripts/fetch_data.sh builds the "
              "corpus)", file=sys.stderr)
        return 1

    program = meshc.compile(ROOT / "examples" / "transformer" / "charlm.mtf",
                            mesh=args.mesh, layout=args.layout)
    session = meshc.Session(program)
    vocabulary = 64
    print(f"{program.name} on {program.devices} devices: "
          f"{len(train['tokens'])} training sequences, uniform guess "
          f"{math.log(vocabulary):.2f} nats per character")

    def report(step, outputs):
        if step % 10 == 0:
            print(f"  step {step}: loss {outputs['loss']:.3f}", flush=True)

    started = time.perf_counter()
    done = 0
    while done < args.steps:
        chunk = min(args.eval_every or args.steps, args.steps - done)
        session.train(train, steps=chunk, progress=report)
        done += chunk
        held_out = session.evaluate(test)
        print(f"step {done}: held-out loss {held_out['loss']:.3f} nats per "
              f"character")
    print(f"{args.steps} steps in {time.perf_counter() - started:.1f} s")
    print(f"held-out loss {held_out['loss']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
