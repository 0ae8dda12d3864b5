"""The peer of meshc's language-model training step: the same model as
examples/transformer/charlm.mtf (or llama.mtf, moe.mtf) -- the forward pass
of the JAX oracle (tests/oracle/models.py), here in float32 with XLA's
optimisations on -- differentiated with jax.value_and_grad and updated by
Adam with the example's warm-up and gradient clipping, jit-compiled as one
step, trained on the fortunes windows in file order. Sizes come from the
model's `dim` lines. Prints the mean, minimum and median step time in ms.

Usage: .venv/bin/python bench/jax_lm_train.py MODEL DATA_DIR STEPS [f32|bf16]
  MODEL: charlm | llama | moe (a model of tests/oracle/models.py)
  bf16: the peer of meshc --precision=bf16, as a JAX user writes it: the
  f32 parameters cast to bf16 inside the step (the update stays f32) and
  every array the model makes (one-hot, ranges, masks) bf16, so the whole
  forward and backward pass runs in bf16 (statistics too: cheaper than
  meshc's f32 statistics, so a conservative peer).
"""
import os
import re
import statistics
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(root, "tests", "oracle"))
import models  # noqa: E402

# The oracle's module imports JAX lazily in float64 with XLA's optimiser off;
# a benchmark wants JAX as users run it: float32, optimised.
models.jax, models.jnp = jax, jnp
# Its masks ask for float64, which JAX in float32 mode gives as float32.
warnings.filterwarnings("ignore", message="Explicitly requested dtype")

name, data, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
precision = sys.argv[4] if len(sys.argv) > 4 else "f32"
if precision not in ("f32", "bf16"):
    sys.exit(f"jax_lm_train: precision '{precision}' is neither f32 nor bf16")
if precision == "bf16":
    # The oracle's ops ask for float64 where they make arrays; here those
    # are bf16, like the parameters the step casts.
    class _Bf16Numpy:
        float64 = jnp.bfloat16

        def __getattr__(self, attr):
            return getattr(jnp, attr)

    models.jnp = _Bf16Numpy()
model = models.MODELS[name]
source = open(os.path.join(root, model.source)).read()
sizes = {m.group(1): int(m.group(2))
         for m in re.finditer(r"^dim\s+(\w+)\s*=\s*(\d+)", source, re.M)}
# The update written below; refuse a model that trains with another.
lr, warmup, clip_norm = 3e-3, 30.0, 1.0
if not re.search(r"^train \w+ with adam\(lr = 3e-3, warmup_steps = 30, clip_norm = 1\)$",
                 source, re.M):
    sys.exit(f"{model.source}: this benchmark runs adam(lr = 3e-3, warmup_steps = 30, "
             "clip_norm = 1); the model trains with something else")

key = jax.random.PRNGKey(0)
params = {}
for i, (pname, dims) in enumerate(model.params.items()):
    shape = tuple(sizes[d] for d in dims)
    params[pname] = 0.05 * jax.random.normal(jax.random.fold_in(key, i), shape, jnp.float32)
slots = jax.tree_util.tree_map(lambda p: (jnp.zeros_like(p), jnp.zeros_like(p)), params)

tokens_all = np.load(f"{data}/train_tokens.npy")
targets_all = np.load(f"{data}/train_targets.npy")
batch = sizes["batch"]


def objective(p, x):
    if precision == "bf16":
        p = {k: v.astype(jnp.bfloat16) for k, v in p.items()}
    named_p = {k: models.Named(v, model.params[k]) for k, v in p.items()}
    named_x = {k: models.Named(v, model.inputs[k][0]) for k, v in x.items()}
    values = model.forward(named_p, named_x)
    if isinstance(values, models.Named):
        values = {"loss": values}
    return values[model.objective].array.astype(jnp.float32)


@jax.jit
def step(p, s, t, x):
    loss, g = jax.value_and_grad(objective)(p, x)
    norm = jnp.sqrt(sum(jnp.sum(v * v) for v in jax.tree_util.tree_leaves(g)))
    scale = clip_norm / jnp.maximum(norm, clip_norm)
    rate = lr * jnp.minimum(1.0, (t + 1.0) / warmup)

    def update(p, s, g):
        g = g * scale
        m, v = s
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        mh = m / (1 - 0.9 ** (t + 1.0))
        vh = v / (1 - 0.999 ** (t + 1.0))
        return p - rate * mh / (jnp.sqrt(vh) + 1e-8), (m, v)

    out = {k: update(p[k], s[k], g[k]) for k in p}
    return {k: out[k][0] for k in p}, {k: out[k][1] for k in p}, loss


times = []
for t in range(steps + 5):
    rows = np.arange(t * batch, (t + 1) * batch) % len(tokens_all)
    x = {"tokens": jnp.asarray(tokens_all[rows]), "targets": jnp.asarray(targets_all[rows])}
    start = time.perf_counter()
    params, slots, loss = step(params, slots, float(t), x)
    loss.block_until_ready()
    if t >= 5:  # the first steps compile
        times.append((time.perf_counter() - start) * 1e3)
print(f"jax {jax.__version__} ({precision}): {steps} steps, mean {statistics.mean(times):.3f} ms, "
      f"min {min(times):.3f} ms, median {statistics.median(times):.3f} ms; final loss {float(loss):.4f}")
