"""The models of the outside oracle, written by hand in JAX.

Each model is the forward pass of one `.mtf` file, from its parameters and
inputs to its scalar outputs; `check.py` differentiates its objective (the
scalar of `train`) with `jax.grad` in float64 and compares the outputs and
gradients with what meshc/meshrun computed in float32.

Tensors carry their dimension names, as in the `.mtf` language, through the
small `Named` wrapper below: `einsum(x, w1, out=["batch", "hidden"])` contracts
the dimensions missing from `out`, `a + b` broadcasts by name, `mean(t)`
reduces to a scalar; `softmax`, `gelu`, `one_hot`, `argmax`, `cumsum`, ... are
the `.mtf` builtins of the same names. A model declares the dimensions of every
parameter and input in `.mtf` order; sizes come from the `.npy` files (and
must agree).

To add a model: write `def my_forward(p, x)` over `Named` tensors (`p` and `x`
map names to `Named`) returning its scalar loss, and register it:

    register(Model(
        name="my-model", source="examples/my/model.mtf",
        params={"layer_0.w": ("d_model", "d_ff"), ...},  # names as in meshc
        inputs={"tokens": (("batch", "seq"), "i32"), ...},
        forward=my_forward))

When the model trains something other than an output called `loss`, or more
outputs should be compared, return a dict of named scalars and say which:
`outputs=("loss", "balance"), objective="objective"` (the moe model below).

Parameter names are those of meshc (`grad/<name>` outputs: a parameter of the
k-th instance of function `f` is `f_k.<param>`, docs/language.md); `/` in a
name becomes `__` in the `--dump-params` file names. Piecewise-constant steps
(argmax, one_hot of computed indices, equal, less) pass no gradient in meshc:
wrap them in `stop_gradient` where JAX would differentiate through them.
"""
import os
from dataclasses import dataclass
from typing import Callable, Dict, Sequence, Tuple, Union

# JAX is imported on first use (load_jax), not here: the import takes over a
# second, and check.py needs only the declarations when it compares with a
# stored --reference or stops at an input error.
jax = None
jnp = None


def load_jax():
    """Imports JAX in float64 mode into this module; returns the jax module.

    XLA's CPU backend compiles without LLVM optimisation (unless XLA_FLAGS
    sets the level): a model runs once per check, and for the transformers
    that cuts the jit compile from ~8.5 s to ~1.3 s of CPU for ~1 s more run
    time; the arithmetic is IEEE float64 either way."""
    global jax, jnp
    if jax is None:
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_backend_optimization_level" not in flags:
            os.environ["XLA_FLAGS"] = (flags + " --xla_backend_optimization_level=0").strip()
        import jax as _jax
        import jax.numpy as _jnp
        import jax.scipy.special  # noqa: F401 (jax.scipy.special.logsumexp)
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


def gelu(t: Named) -> Named:
    """gelu with the tanh approximation, as meshc computes it (runtime/cpu/
    CpuKernels.cpp, compiler/interpreter): x (1 + tanh(c (x + 0.044715 x^3))) / 2,
    c = sqrt(2 / pi)."""
    c = (2.0 / jnp.pi) ** 0.5
    return t.map(lambda x: 0.5 * x * (1.0 + jnp.tanh(c * (x + 0.044715 * x * x * x))))


def silu(t: Named) -> Named:
    """x * sigmoid(x)."""
    return t.map(jax.nn.silu)


def logsumexp(t: Named, dim: str) -> Named:
    """log(sum(exp(x))) along `dim`; the result drops `dim`."""
    axis = t.dims.index(dim)
    return Named(jax.scipy.special.logsumexp(t.array, axis=axis),
                 [d for d in t.dims if d != dim])


def rsqrt(t: Named) -> Named:
    return t.map(jax.lax.rsqrt)


def softmax(t: Named, dim: str) -> Named:
    return t.map(lambda a: jax.nn.softmax(a, axis=t.dims.index(dim)))


def rename(t: Named, old: str, new: str) -> Named:
    return Named(t.array, [new if d == old else d for d in t.dims])


def arange(dim: str, size: int) -> Named:
    """mtf range(dim): 0, 1, ..., size - 1 as floats."""
    return Named(jnp.arange(size, dtype=jnp.float64), [dim])


def one_hot(ids: Named, dim: str, size: int) -> Named:
    """1.0 at each index along the new last dimension `dim`."""
    return Named(jax.nn.one_hot(ids.array, size, dtype=jnp.float64), ids.dims + (dim,))


def argmax(t: Named, dim: str) -> Named:
    """The index of the first maximum along `dim` (i32), as mtf.argmax."""
    axis = t.dims.index(dim)
    return Named(jnp.argmax(t.array, axis=axis).astype(jnp.int32),
                 [d for d in t.dims if d != dim])


def cumsum(t: Named, dim: str) -> Named:
    """The inclusive running sum along `dim`."""
    return t.map(lambda a: jnp.cumsum(a, axis=t.dims.index(dim)))


def less(a: Named, b: Named) -> Named:
    return a._broadcast(b, lambda x, y: jnp.less(x, y).astype(jnp.float64))


def equal(a: Named, b: Named) -> Named:
    return a._broadcast(b, lambda x, y: jnp.equal(x, y).astype(jnp.float64))


def stop_gradient(t: Named) -> Named:
    return t.map(jax.lax.stop_gradient)


# ---- the registry ---------------------------------------------------------------

@dataclass
class Model:
    name: str
    source: str                                   # the .mtf file it mirrors
    params: Dict[str, Tuple[str, ...]]            # name -> dims, in .mtf order
    inputs: Dict[str, Tuple[Tuple[str, ...], str]]  # name -> (dims, "f32" | "i32")
    # The forward pass: the scalar `loss`, or a dict of named scalars that
    # holds every name of `outputs` and the `objective`.
    forward: Callable[[Dict[str, Named], Dict[str, Named]], Union[Named, Dict[str, Named]]]
    outputs: Tuple[str, ...] = ("loss",)          # .mtf outputs compared with meshrun's
    objective: str = "loss"                       # what `train` minimises: grad/* are its gradients

    def objective_fn(self, params, inputs):
        """(objective, {output: value}) from plain arrays, as scalars: what
        jax.value_and_grad(..., has_aux=True) differentiates."""
        load_jax()
        p = {k: Named(v, self.params[k]) for k, v in params.items()}
        x = {k: Named(v, self.inputs[k][0]) for k, v in inputs.items()}
        values = self.forward(p, x)
        if isinstance(values, Named):
            values = {"loss": values}
        for name in (self.objective,) + tuple(self.outputs):
            if name not in values:
                raise ValueError(f"model {self.name}: the forward pass returns no {name!r}")
            if values[name].dims:
                raise ValueError(f"model {self.name}: {name} has dims "
                                 f"{list(values[name].dims)}, expected a scalar")
        return (values[self.objective].array,
                {name: values[name].array for name in self.outputs})


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
    forward=mlp_loss))


# ---- examples/transformer/charlm.mtf ------------------------------------------------

def layer_norm(p, k, x):
    """Instance k of the .mtf function layer_norm (parameters layer_norm_k.*)."""
    scale, shift = p[f"layer_norm_{k}.scale"], p[f"layer_norm_{k}.shift"]
    centered = x - mean(x, ["d_model"])
    variance = mean(centered * centered, ["d_model"])
    return centered * rsqrt(variance + 1e-5) * scale + shift


def attention(p, k, x, mask):
    """Instance k of attention: causal multi-head self-attention."""
    w = {n: p[f"attention_{k}.{n}"] for n in ("wq", "wk", "wv", "wo")}
    q = einsum(x, w["wq"], out=["batch", "seq", "heads", "d_k"])
    key = rename(einsum(x, w["wk"], out=["batch", "seq", "heads", "d_k"]), "seq", "memory")
    v = rename(einsum(x, w["wv"], out=["batch", "seq", "heads", "d_k"]), "seq", "memory")
    scores = einsum(q, key, out=["batch", "heads", "seq", "memory"]) * 0.1767767 + mask
    weights = softmax(scores, "memory")
    context = einsum(weights, v, out=["batch", "seq", "heads", "d_k"])
    return einsum(context, w["wo"], out=["batch", "seq", "d_model"])


def causal_mask(seq):
    """less(range(seq), range(memory)) * -1e9: -1e9 where a key is in the future."""
    return less(arange("seq", seq), arange("memory", seq)) * -1e9


def embed_tokens(p, x):
    tokens = x["tokens"]
    vocab = p["embed"].size("vocab")
    return einsum(one_hot(tokens, "vocab", vocab), p["embed"],
                  out=["batch", "seq", "d_model"]) + p["pos"]


def lm_loss(p, x, y, k):
    """The final layer_norm (instance k), unembed and mean cross-entropy."""
    logits = einsum(layer_norm(p, k, y), p["unembed"], out=["batch", "seq", "vocab"])
    return mean(softmax_cross_entropy(logits, x["targets"], "vocab"))


def charlm_forward(p, x):
    mask = causal_mask(x["tokens"].size("seq"))
    h = embed_tokens(p, x)
    # repeat 2 block(x, mask): instance i of block calls layer_norm 2i and
    # 2i + 1, attention i and mlp i.
    for i in range(2):
        a = h + attention(p, i, layer_norm(p, 2 * i, h), mask)
        inner = gelu(einsum(layer_norm(p, 2 * i + 1, a), p[f"mlp_{i}.w_in"],
                            out=["batch", "seq", "d_ff"]) + p[f"mlp_{i}.b_in"])
        h = a + einsum(inner, p[f"mlp_{i}.w_out"], out=["batch", "seq", "d_model"])
    return lm_loss(p, x, h, 4)


def layer_norm_params(k):
    return {f"layer_norm_{k}.scale": ("d_model",), f"layer_norm_{k}.shift": ("d_model",)}


def attention_params(k):
    return {f"attention_{k}.wq": ("d_model", "heads", "d_k"),
            f"attention_{k}.wk": ("d_model", "heads", "d_k"),
            f"attention_{k}.wv": ("d_model", "heads", "d_k"),
            f"attention_{k}.wo": ("heads", "d_k", "d_model")}


EMBEDDINGS = {"embed": ("vocab", "d_model"), "pos": ("seq", "d_model"),
              "unembed": ("d_model", "vocab")}
TOKENS = {"tokens": (("batch", "seq"), "i32"), "targets": (("batch", "seq"), "i32")}

register(Model(
    name="charlm",
    source="examples/transformer/charlm.mtf",
    params={**EMBEDDINGS,
            **{name: dims for i in range(2) for name, dims in {
                **layer_norm_params(2 * i), **attention_params(i),
                **layer_norm_params(2 * i + 1),
                f"mlp_{i}.w_in": ("d_model", "d_ff"), f"mlp_{i}.b_in": ("d_ff",),
                f"mlp_{i}.w_out": ("d_ff", "d_model")}.items()},
            **layer_norm_params(4)},
    inputs=TOKENS,
    forward=charlm_forward))


# ---- examples/moe/moe.mtf -------------------------------------------------------------

MOE_CAPACITY = 32  # dim capacity = 32 in moe.mtf (no parameter or input has it)


def moe_forward(p, x):
    mask = causal_mask(x["tokens"].size("seq"))
    h0 = embed_tokens(p, x)
    a = h0 + attention(p, 0, layer_norm(p, 0, h0), mask)

    # Top-1 routing. argmax, one_hot, cumsum of the one-hots and equal are
    # piecewise constant: meshc passes no gradient through them, so the
    # gradient reaches the router only through the gate values.
    h = layer_norm(p, 1, a)
    experts = p["router"].size("experts")
    gates = softmax(einsum(h, p["router"], out=["batch", "seq", "experts"]), "experts")
    chosen = stop_gradient(one_hot(argmax(gates, "experts"), "experts", experts))
    position = cumsum(chosen, "seq") * chosen
    dispatch = stop_gradient(equal(position, arange("capacity", MOE_CAPACITY) + 1.0))
    combine = dispatch * reduce_sum(gates * chosen, ["experts"])
    inputs = einsum(dispatch, h, out=["experts", "batch", "capacity", "d_model"])
    hidden = gelu(einsum(inputs, p["w_in"], out=["experts", "batch", "capacity", "d_ff"]))
    outputs = einsum(hidden, p["w_out"], out=["experts", "batch", "capacity", "d_model"])
    y = a + einsum(combine, outputs, out=["batch", "seq", "d_model"])

    balance = reduce_sum(mean(chosen, ["batch", "seq"]) * mean(gates, ["batch", "seq"])) * 4.0
    loss = lm_loss(p, x, y, 2)
    return {"loss": loss, "balance": balance, "objective": loss + balance * 0.01}


register(Model(
    name="moe",
    source="examples/moe/moe.mtf",
    params={**EMBEDDINGS, **layer_norm_params(0), **attention_params(0),
            "router": ("d_model", "experts"), "w_in": ("experts", "d_model", "d_ff"),
            "w_out": ("experts", "d_ff", "d_model"),
            **layer_norm_params(1), **layer_norm_params(2)},
    inputs=TOKENS,
    forward=moe_forward,
    outputs=("loss", "balance"),
    objective="objective"))


# ---- examples/llama/llama.mtf ---------------------------------------------------

def rms_norm(p, k, x):
    """Instance k of the .mtf function rms_norm (parameter rms_norm_k.scale)."""
    return x * rsqrt(mean(x * x, ["d_model"]) + 1e-5) * p[f"rms_norm_{k}.scale"]


def llama_forward(p, x):
    mask = causal_mask(x["tokens"].size("seq"))
    h = embed_tokens(p, x)
    # repeat 2 block(x, mask): instance i of block calls rms_norm 2i and
    # 2i + 1, attention i and swiglu i.
    for i in range(2):
        a = h + attention(p, i, rms_norm(p, 2 * i, h), mask)
        n = rms_norm(p, 2 * i + 1, a)
        gate = silu(einsum(n, p[f"swiglu_{i}.w_gate"], out=["batch", "seq", "d_ff"]))
        up = einsum(n, p[f"swiglu_{i}.w_up"], out=["batch", "seq", "d_ff"])
        h = a + einsum(gate * up, p[f"swiglu_{i}.w_down"], out=["batch", "seq", "d_model"])
    logits = einsum(rms_norm(p, 4, h), p["unembed"], out=["batch", "seq", "vocab"])
    vocab = p["unembed"].size("vocab")
    target_logit = reduce_sum(logits * one_hot(x["targets"], "vocab", vocab), ["vocab"])
    return mean(logsumexp(logits, "vocab") - target_logit)


register(Model(
    name="llama",
    source="examples/llama/llama.mtf",
    params={**EMBEDDINGS,
            **{name: dims for i in range(2) for name, dims in {
                f"rms_norm_{2 * i}.scale": ("d_model",), **attention_params(i),
                f"rms_norm_{2 * i + 1}.scale": ("d_model",),
                f"swiglu_{i}.w_gate": ("d_model", "d_ff"),
                f"swiglu_{i}.w_up": ("d_model", "d_ff"),
                f"swiglu_{i}.w_down": ("d_ff", "d_model")}.items()},
            "rms_norm_4.scale": ("d_model",)},
    inputs=TOKENS,
    forward=llama_forward))
