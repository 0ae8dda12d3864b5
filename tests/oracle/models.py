"""The models of the outside oracle, written by hand in JAX.

Each model is the forward pass of one `.mtf` file, from its parameters and
inputs to its scalar loss; `check.py` differentiates it with `jax.grad` in
float64 and compares with what meshc/meshrun computed in float32.

Tensors carry their dimension names, as in the `.mtf` language, through the
small `Named` wrapper below: `einsum(x, w1, out=["batch", "hidden"])` contracts
the dimensions missing from `out`, `a + b` broadcasts by name, `mean(t)`
reduces to a scalar. A model declares the dimensions of every parameter and
input in `.mtf` order; sizes come from the `.npy` files (and must agree).

To add a model: write `def my_loss(p, x)` over `Named` tensors (`p` and `x`
map names to `Named`) and register it:

    register(Model(
        name="my-model", source="examples/my/model.mtf",
        params={"layer/w": ("d_model", "d_ff"), ...},   # names as in meshc
        inputs={"tokens": (("batch", "seq"), "i32"), ...},
        loss=my_loss))

Parameter names are those of meshc (`grad/<name>` outputs); `/` in a name
becomes `__` in the `--dump-params` file names.
"""
from dataclasses import dataclass
from typing import Callable, Dict, Sequence, Tuple

# JAX is imported on first use (load_jax), not here: the import takes over a
# second, and check.py needs only the declarations when it compares with a
# stored --reference or stops at an input error.
jax = None
jnp = None


def load_jax():
    """Imports JAX in float64 mode into this module; returns the jax module."""
    global jax, jnp
    if jax is None:
        import jax as _jax
        import jax.numpy as _jnp
        _jax.config.update("jax_enable_x64", True)
        jax, jnp = _jax, _jnp
    return jax


# ---- named tensors ------------------------------------------------------------

class Named:
    """A JAX array with one name per axis (a pytree-free helper: the model
    functions unwrap to plain arrays at their boundary)."""

    def __init__(self, array, dims: Sequence[str]):
        dims = tuple(dims)
        if array.ndim != len(dims):
            raise ValueError(f"array of rank {array.ndim} given dims {dims}")
        if len(set(dims)) != len(dims):
            raise ValueError(f"repeated dimension in {dims}")
        self.array, self.dims = array, dims

    def __repr__(self):
        return f"Named({list(self.dims)}, shape={tuple(self.array.shape)})"

    def size(self, dim):
        return self.array.shape[self.dims.index(dim)]

    def to(self, dims: Sequence[str]):
        """The array transposed to `dims` (a permutation of self.dims)."""
        dims = tuple(dims)
        if sorted(dims) != sorted(self.dims):
            raise ValueError(f"cannot transpose {list(self.dims)} to {list(dims)}")
        return jnp.transpose(self.array, [self.dims.index(d) for d in dims])

    def map(self, fn):
        return Named(fn(self.array), self.dims)

    def _broadcast(self, other, fn):
        """Elementwise with broadcasting by name: the result has self's dims,
        then other's dims that self lacks."""
        if not isinstance(other, Named):
            return Named(fn(self.array, other), self.dims)
        dims = self.dims + tuple(d for d in other.dims if d not in self.dims)
        return Named(fn(_expand(self, dims), _expand(other, dims)), dims)

    def __add__(self, other): return self._broadcast(other, jnp.add)
    def __sub__(self, other): return self._broadcast(other, jnp.subtract)
    def __mul__(self, other): return self._broadcast(other, jnp.multiply)
    def __truediv__(self, other): return self._broadcast(other, jnp.divide)
    def __neg__(self): return self.map(jnp.negative)


def _expand(t: Named, dims):
    """t's array with axes ordered as in `dims`, size-1 axes for dims it lacks."""
    present = [d for d in dims if d in t.dims]
    array = t.to(present)
    shape = [t.size(d) if d in t.dims else 1 for d in dims]
    return array.reshape(shape)


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def einsum(*operands: Named, out: Sequence[str]) -> Named:
    """mtf.einsum: multiply the operands, broadcasting by name, and sum over
    every dimension that is not in `out`."""
    names = []
    for t in operands:
        names += [d for d in t.dims if d not in names]
    missing = [d for d in out if d not in names]
    if missing:
        raise ValueError(f"einsum output dims {missing} are in no operand")
    letter = {d: _LETTERS[i] for i, d in enumerate(names)}
    spec = ",".join("".join(letter[d] for d in t.dims) for t in operands)
    spec += "->" + "".join(letter[d] for d in out)
    return Named(jnp.einsum(spec, *[t.array for t in operands],
                            precision=jax.lax.Precision.HIGHEST), out)


def relu(t: Named) -> Named:
    return t.map(jax.nn.relu)


def mean(t: Named, dims: Sequence[str] = None) -> Named:
    """mean(x) (all dims: a scalar) or mean(x, [d...])."""
    dims = t.dims if dims is None else tuple(dims)
    axes = tuple(t.dims.index(d) for d in dims)
    return Named(jnp.mean(t.array, axis=axes), [d for d in t.dims if d not in dims])


def reduce_sum(t: Named, dims: Sequence[str] = None) -> Named:
    dims = t.dims if dims is None else tuple(dims)
    axes = tuple(t.dims.index(d) for d in dims)
    return Named(jnp.sum(t.array, axis=axes), [d for d in t.dims if d not in dims])


def softmax_cross_entropy(logits: Named, labels: Named, classes: str) -> Named:
    """-log softmax(logits)[label] over the dimension `classes`; the result has
    the labels' dimensions (the logits' others, in the labels' order)."""
    others = [d for d in logits.dims if d != classes]
    if sorted(others) != sorted(labels.dims):
        raise ValueError(f"labels dims {list(labels.dims)} are not the logits dims "
                         f"{list(logits.dims)} without {classes!r}")
    z = logits.to(list(labels.dims) + [classes])
    logp = jax.nn.log_softmax(z, axis=-1)
    picked = jnp.take_along_axis(logp, labels.array[..., None].astype(jnp.int32), axis=-1)
    return Named(-picked[..., 0], labels.dims)


# ---- the registry ---------------------------------------------------------------

@dataclass
class Model:
    name: str
    source: str                                   # the .mtf file it mirrors
    params: Dict[str, Tuple[str, ...]]            # name -> dims, in .mtf order
    inputs: Dict[str, Tuple[Tuple[str, ...], str]]  # name -> (dims, "f32" | "i32")
    loss: Callable[[Dict[str, Named], Dict[str, Named]], Named]

    def loss_fn(self, params, inputs):
        """The scalar loss from plain arrays (what jax.grad differentiates)."""
        load_jax()
        p = {k: Named(v, self.params[k]) for k, v in params.items()}
        x = {k: Named(v, self.inputs[k][0]) for k, v in inputs.items()}
        out = self.loss(p, x)
        if out.dims:
            raise ValueError(f"model {self.name}: the loss has dims {list(out.dims)}, "
                             "expected a scalar")
        return out.array


MODELS: Dict[str, Model] = {}


def register(model: Model):
    if model.name in MODELS:
        raise ValueError(f"model {model.name!r} registered twice")
    MODELS[model.name] = model
    return model


# ---- examples/mlp/mlp.mtf --------------------------------------------------------

def mlp_loss(p, x):
    h = relu(einsum(x["x"], p["w1"], out=["batch", "hidden"]) + p["b1"])
    logits = einsum(h, p["w2"], out=["batch", "classes"])
    return mean(softmax_cross_entropy(logits, x["labels"], "classes"))


register(Model(
    name="mlp",
    source="examples/mlp/mlp.mtf",
    params={"w1": ("io", "hidden"), "b1": ("hidden",), "w2": ("hidden", "classes")},
    inputs={"x": (("batch", "io"), "f32"), "labels": (("batch",), "i32")},
    loss=mlp_loss))
