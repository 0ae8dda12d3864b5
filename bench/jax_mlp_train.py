"""The peer of meshc's MLP training step: the same model as
examples/mlp/mlp.mtf (64 -> 128 relu -> 10, softmax cross-entropy, Adam
lr 3e-3, batch 64) written in JAX, jit-compiled, trained on the same digits
rows in file order. Prints the mean, minimum and median step time in ms.

Usage: .venv/bin/python bench/jax_mlp_train.py DATA_DIR STEPS
"""
import statistics
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

data, steps = sys.argv[1], int(sys.argv[2])
x_all = np.load(f"{data}/train_x.npy")
y_all = np.load(f"{data}/train_labels.npy")
batch = 64

key = jax.random.PRNGKey(0)
k1, k2 = jax.random.split(key)
params = {"w1": 0.05 * jax.random.normal(k1, (64, 128)), "b1": jnp.zeros(128),
          "w2": 0.05 * jax.random.normal(k2, (128, 10))}
state = jax.tree_util.tree_map(lambda p: (jnp.zeros_like(p), jnp.zeros_like(p)), params)


def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"]
    return jnp.mean(jax.nn.logsumexp(logits, axis=1) - jnp.take_along_axis(logits, y[:, None], 1)[:, 0])


@jax.jit
def step(p, s, t, x, y):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    def update(p, s, g):
        m, v = s
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        mh = m / (1 - 0.9 ** (t + 1))
        vh = v / (1 - 0.999 ** (t + 1))
        return p - 3e-3 * mh / (jnp.sqrt(vh) + 1e-8), (m, v)
    out = jax.tree_util.tree_map(update, p, s, g, is_leaf=lambda n: isinstance(n, tuple))
    new_p = {k: out[k][0] for k in p}
    new_s = {k: out[k][1] for k in p}
    return new_p, new_s, loss


times = []
for t in range(steps + 10):
    rows = np.arange(t * batch, (t + 1) * batch) % len(x_all)
    x, y = jnp.asarray(x_all[rows]), jnp.asarray(y_all[rows])
    start = time.perf_counter()
    params, state, loss = step(params, state, t, x, y)
    loss.block_until_ready()
    if t >= 10:  # the first steps compile
        times.append((time.perf_counter() - start) * 1e3)
print(f"jax {jax.__version__}:        {steps} steps, mean {statistics.mean(times):.3f} ms, "
      f"min {min(times):.3f} ms, median {statistics.median(times):.3f} ms; final loss {float(loss):.4f}")
