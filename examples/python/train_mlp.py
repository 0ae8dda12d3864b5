#!/usr/bin/env python3
"""Trains the digits MLP (examples/mlp/mlp.mtf) from Python on 8 CPU
virtual devices, as README's meshrun command does, and prints the held-out
accuracy. Its parameters equal meshrun's for the same steps
(tests/python/test_session.py).

    .venv/bin/python examples/python/train_mlp.py [--steps 800]
        [--mesh "b:2;m:4"] [--layout "batch:b;hidden:m"]
"""

import argparse
import pathlib
import sys
import time

import numpy as np

import meshc

ROOT = pathlib.Path(__file__).resolve().parents[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--eval-every", type=int, default=200)
    parser.add_argument("--mesh", default="b:2;m:4")
    parser.add_argument("--layout", default="batch:b;hidden:m")
    parser.add_argument("--data", type=pathlib.Path,
                        default=ROOT / "data" / "digits")
    args = parser.parse_args()

    try:
        train = {"x": np.load(args.data / "train_x.npy"),
                 "labels": np.load(args.data / "train_labels.npy")}
        test = {"x": np.load(args.data / "test_x.npy"),
                "labels": np.load(args.data / "test_labels.npy")}
    except OSError as error:
        print(f"train_mlp: {error} (scripts/fetch_data.sh fetches the "
              "digits)", file=sys.stderr)
        return 1

    program = meshc.compile(ROOT / "examples" / "mlp" / "mlp.mtf",
                            mesh=args.mesh, layout=args.layout)
    report = program.explain()
    print(f"{program.name} on {program.devices} devices ({args.mesh}), "
          f"{len(report['collectives'])} collectives a step, "
          f"{report['memory']['on_a_device']:,} bytes on a device")
    session = meshc.Session(program)
    print(f"{len(train['x'])} training examples, batch "
          f"{program.inputs['x'][1][0]}, {args.steps} steps")

    started = time.perf_counter()
    done = 0
    while done < args.steps:
        chunk = min(args.eval_every or args.steps, args.steps - done)
        history = session.train(train, steps=chunk)
        done += chunk
        held_out = session.evaluate(test)
        print(f"step {done}: loss {history[-1]['loss']:.4f}, held-out "
              f"loss {held_out['loss']:.4f}, accuracy "
              f"{held_out['accuracy']:.4f}")
    seconds = time.perf_counter() - started
    print(f"{args.steps} steps in {seconds:.2f} s")
    print(f"accuracy {held_out['accuracy']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
