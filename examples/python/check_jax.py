#!/usr/bin/env python3
"""Checks a compiled program against JAX in the same process: the digits
MLP (examples/mlp/mlp.mtf) compiled for a 2x4 mesh with its gradients as
outputs runs one training step in meshc; JAX recomputes the loss and every
parameter's gradient in float64 from the same parameters and batch.

    .venv/bin/python examples/python/check_jax.py [--mesh M --layout L]

Exits 0 when they agree (max |meshc - jax| <= 1e-4 * max |jax| + 1e-7 for
every tensor), 1 otherwise.
"""

import argparse
import pathlib
import sys

import numpy as np

import meshc

ROOT = pathlib.Path(__file__).resolve().parents[2]


def jax_loss_and_grads(params, x, labels):
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def loss(p):
        h = jax.nn.relu(x @ p["w1"] + p["b1"])
        logits = h @ p["w2"]
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits),
                                     labels[:, None], axis=1)
        return -jnp.mean(picked)

    p64 = {k: jnp.asarray(v, jnp.float64) for k, v in params.items()}
    value, grads = jax.value_and_grad(loss)(p64)
    return float(value), {k: np.asarray(v) for k, v in grads.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mesh", default="b:2;m:4")
    parser.add_argument("--layout", default="batch:b;hidden:m")
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()

    program = meshc.compile(ROOT / "examples" / "mlp" / "mlp.mtf",
                            mesh=args.mesh, layout=args.layout,
                            output_grads=True)
    session = meshc.Session(program, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    batch = {"x": rng.standard_normal((64, 64)).astype(np.float32),
             "labels": rng.integers(0, 10, 64).astype(np.int32)}
    before = {k: v for k, v in session.params.items() if "/" not in k}
    session.train(batch, steps=1)
    outputs = session.outputs

    x = np.asarray(batch["x"], np.float64)
    loss, grads = jax_loss_and_grads(before, x, batch["labels"])
    worst = 0.0
    ok = True
    rows = [("loss", np.asarray(outputs["loss"]), np.asarray(loss))]
    rows += [(f"grad/{k}", outputs[f"grad/{k}"], g)
             for k, g in sorted(grads.items())]
    for name, got, want in rows:
        error = float(np.max(np.abs(got - want)))
        scale = float(np.max(np.abs(want)))
        agrees = error <= 1e-4 * scale + 1e-7
        ok &= agrees
        worst = max(worst, error / scale if scale else error)
        print(f"{name:10s} max |meshc - jax| {error:.3e} (of {scale:.3e}) "
              f"{'ok' if agrees else 'DIFFERS'}")
    print(f"{'agree' if ok else 'disagree'}: worst relative error "
          f"{worst:.2e} on {program.devices} devices ({args.mesh})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
