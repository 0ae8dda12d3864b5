#!/usr/bin/env python3
"""A stand-in for meshc/meshrun, to prove the oracle harness before the
compiler has --output-grads (tests/oracle/harness.test).

  fake_mlp.py make DIR [--seed K] [--batch B --io I --hidden H --classes C]
      writes what a run of examples/mlp/mlp.mtf would leave: DIR/params/{w1,b1,w2}.npy
      (float32, as `meshrun --dump-params`), the batch DIR/x.npy (f32) and
      DIR/labels.npy (i32), and DIR/run.json (as `meshrun --dump-outputs` of a
      program compiled with `meshc --output-grads`): the loss and grad/w1,
      grad/b1, grad/w2, computed in float32 by hand-written backpropagation
      in numpy, independent of the JAX model.

  fake_mlp.py perturb IN.json OUT.json ACTION...
      a copy of IN.json with one change, to prove that check.py notices:
        bump NAME REL     add REL * max|NAME| to the first element of NAME
        scale NAME F      multiply all of NAME by F
        drop NAME         remove output NAME
        dims NAME D1,D2   replace the dims of NAME
        nan NAME          make the last element of NAME a NaN
"""
import json
import os
import sys

import numpy as np


def make(folder, seed=1, batch=64, io=64, hidden=128, classes=10):
    rng = np.random.RandomState(seed)
    f32 = np.float32
    w1 = (rng.standard_normal((io, hidden)) * 0.05).astype(f32)
    b1 = (rng.standard_normal(hidden) * 0.01).astype(f32)
    w2 = (rng.standard_normal((hidden, classes)) * 0.05).astype(f32)
    x = (rng.randint(0, 17, size=(batch, io)) / 16.0).astype(f32)  # like the digits
    labels = rng.randint(0, classes, size=batch).astype(np.int32)

    # Forward and backward in float32, as the compiled program computes them.
    z1 = x @ w1 + b1
    h = np.maximum(z1, f32(0))
    logits = h @ w2
    shifted = logits - logits.max(axis=1, keepdims=True)
    logsumexp = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    logp = shifted - logsumexp
    loss = np.mean(-logp[np.arange(batch), labels], dtype=f32)
    dlogits = np.exp(logp)
    dlogits[np.arange(batch), labels] -= f32(1)
    dlogits /= f32(batch)
    grad_w2 = h.T @ dlogits
    dz1 = (dlogits @ w2.T) * (z1 > 0)
    grad_w1 = x.T @ dz1
    grad_b1 = dz1.sum(axis=0, dtype=f32)

    os.makedirs(os.path.join(folder, "params"), exist_ok=True)
    for name, array in [("w1", w1), ("b1", b1), ("w2", w2)]:
        np.save(os.path.join(folder, "params", name + ".npy"), array)
    np.save(os.path.join(folder, "x.npy"), x)
    np.save(os.path.join(folder, "labels.npy"), labels)

    def entry(dims, array):
        array = np.asarray(array, dtype=f32)
        return {"dims": dims, "shape": list(array.shape), "dtype": "f32",
                "data": [float(v) for v in array.reshape(-1)]}

    outputs = {"loss": entry([], loss),
               "grad/w1": entry(["io", "hidden"], grad_w1),
               "grad/b1": entry(["hidden"], grad_b1),
               "grad/w2": entry(["hidden", "classes"], grad_w2)}
    with open(os.path.join(folder, "run.json"), "w") as f:
        json.dump({"outputs": outputs}, f)
    print(f"fake_mlp: batch {batch}, io {io}, hidden {hidden}, classes {classes}: "
          f"loss {float(loss):.6f}")


def perturb(src, dst, action, name, *arg):
    with open(src) as f:
        doc = json.load(f)
    out = doc["outputs"][name]
    data = out["data"]
    if action == "bump":
        data[0] += float(arg[0]) * max(abs(v) for v in data)
    elif action == "scale":
        out["data"] = [v * float(arg[0]) for v in data]
    elif action == "drop":
        del doc["outputs"][name]
    elif action == "dims":
        out["dims"] = arg[0].split(",") if arg[0] else []
    elif action == "nan":
        data[-1] = float("nan")
    else:
        raise SystemExit(f"fake_mlp: unknown perturbation {action!r}")
    with open(dst, "w") as f:
        json.dump(doc, f)


def main(argv):
    if len(argv) >= 2 and argv[0] == "make":
        options = {"seed": 1}
        rest = argv[2:]
        for flag, value in zip(rest[::2], rest[1::2]):
            options[flag.lstrip("-")] = int(value)
        make(argv[1], **options)
    elif len(argv) >= 5 and argv[0] == "perturb":
        perturb(*argv[1:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
