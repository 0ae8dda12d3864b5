#!/usr/bin/env python3
"""The outside oracle: recomputes a model's loss (and its other compared
outputs) and the gradient of every parameter with JAX in float64, from the
parameters and the batch meshrun used, and compares with meshrun's outputs
(`loss`, ... and `grad/<param>`). The gradients are those of the objective
the model trains (`train objective with ...`), which is the loss unless the
model says otherwise (models.Model.objective).

usage (with the venv of scripts/setup_python.sh, lit's %jaxpython):

  check.py MODEL --params DIR --input NAME=FILE.npy ... --outputs RUN.json
           [--rtol R] [--atol A] [--write-reference REF.json]

  MODEL       a model of models.py (mlp, charlm, moe, ...)
  --params    a folder of `meshrun --dump-params`: one <name>.npy per
              parameter ('/' in names written as '__'), float32
  --input     the batch meshrun was fed (`meshrun --input NAME=FILE.npy`)
  --outputs   `meshrun --dump-outputs` of a run with `meshc --output-grads`:
              {"outputs": {NAME: {"dims", "shape", "dtype", "data"}}}
  --rtol, --atol
              a tensor agrees when max|run - ref| <= rtol * max|ref| + atol
              (defaults 1e-4 and 0; docs/testing.md, "Outside oracle (JAX)")
  --write-reference REF.json
              also write the oracle's loss and gradients (float64) in the
              --dump-outputs format; with it, --outputs may be left out
  --reference REF.json
              take the loss and gradients from REF.json (written by
              --write-reference from the same params and inputs: checked by
              a hash) instead of recomputing them, e.g. to check the runs of
              many layouts against one oracle run

Exits 0 when every gradient and output agree, 1 on any disagreement or a
missing, extra or misshapen tensor, 2 on a usage or input error.
"""
import argparse
import hashlib
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402  (imports JAX only when a model is evaluated)

RTOL = 1e-4
ATOL = 0.0


class InputError(Exception):
    pass


def param_file(name):
    return name.replace("/", "__") + ".npy"


def load_npy(path, what):
    try:
        return np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read {what} {path}: {e}")


def load_params(model, folder):
    if not os.path.isdir(folder):
        raise InputError(f"--params {folder}: no such folder")
    params = {}
    for name, dims in model.params.items():
        path = os.path.join(folder, param_file(name))
        if not os.path.exists(path):
            raise InputError(f"parameter {name!r} of model {model.name}: "
                             f"{param_file(name)} is missing from {folder}")
        array = load_npy(path, f"parameter {name!r}")
        if array.dtype != np.float32:
            raise InputError(f"parameter {name!r}: {path} holds {array.dtype}, expected float32")
        if array.ndim != len(dims):
            raise InputError(f"parameter {name!r}: {path} has shape {list(array.shape)}, "
                             f"expected rank {len(dims)} (dims {list(dims)})")
        params[name] = array
    known = {param_file(n) for n in model.params}
    # Optimizer slots (w1/adam_m -> w1__adam_m.npy, opt/step) are not
    # parameters of the forward model.
    slots = ("__adam_m.npy", "__adam_v.npy", "__momentum.npy")
    extra = sorted(f for f in os.listdir(folder)
                   if f.endswith(".npy") and f not in known
                   and f != "opt__step.npy" and not f.endswith(slots))
    if extra:
        raise InputError(f"{folder} holds parameters model {model.name} does not have: "
                         f"{', '.join(extra)} (a different model?)")
    return params


def load_inputs(model, specs):
    inputs = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--input {spec!r}: expected NAME=FILE.npy")
        if name not in model.inputs:
            raise InputError(f"--input {name}: model {model.name} has no input {name!r} "
                             f"(its inputs: {', '.join(model.inputs)})")
        if name in inputs:
            raise InputError(f"--input {name} given twice")
        dims, dtype = model.inputs[name]
        array = load_npy(path, f"input {name!r}")
        want = {"f32": np.float32, "i32": np.int32}[dtype]
        if array.dtype != want:
            raise InputError(f"input {name!r}: {path} holds {array.dtype}, expected {dtype}")
        if array.ndim != len(dims):
            raise InputError(f"input {name!r}: {path} has shape {list(array.shape)}, "
                             f"expected rank {len(dims)} (dims {list(dims)})")
        inputs[name] = array
    missing = [n for n in model.inputs if n not in inputs]
    if missing:
        raise InputError(f"model {model.name} needs --input for {', '.join(missing)}")
    return inputs


def dim_sizes(model, params, inputs):
    """Each named dimension's size, checking that all tensors agree."""
    sizes, seen = {}, {}
    tensors = [(f"parameter {n}", model.params[n], a) for n, a in params.items()]
    tensors += [(f"input {n}", model.inputs[n][0], a) for n, a in inputs.items()]
    for what, dims, array in tensors:
        for d, size in zip(dims, array.shape):
            if d in sizes and sizes[d] != size:
                raise InputError(f"dimension {d!r} is {sizes[d]} in {seen[d]} but {size} "
                                 f"in {what}")
            sizes.setdefault(d, size)
            seen.setdefault(d, what)
    return sizes


def digest(params, inputs):
    """A hash of the parameters and the batch, to tie a --write-reference file
    to the data it was computed from."""
    h = hashlib.sha256()
    for kind, arrays in (("param", params), ("input", inputs)):
        for name in sorted(arrays):
            a = np.ascontiguousarray(arrays[name])
            h.update(f"{kind} {name} {a.dtype.str} {a.shape}\n".encode())
            h.update(a.tobytes())
    return h.hexdigest()


def reference(model, params, inputs):
    """The outputs (the loss, ...) and d objective / d param for every param,
    in float64, from one jitted evaluation."""
    jax = models.load_jax()
    jnp = jax.numpy
    p64 = {k: jnp.asarray(v, dtype=jnp.float64) for k, v in params.items()}
    x64 = {k: jnp.asarray(v, dtype=jnp.float64 if v.dtype == np.float32 else jnp.int32)
           for k, v in inputs.items()}
    (_, values), grads = jax.jit(jax.value_and_grad(model.objective_fn, has_aux=True))(p64, x64)
    out = {name: ((), np.asarray(values[name], dtype=np.float64)) for name in model.outputs}
    for name, dims in model.params.items():
        out["grad/" + name] = (dims, np.asarray(grads[name], dtype=np.float64))
    return out


def read_reference(model, path, want_digest):
    """A reference written by --write-reference for these params and inputs."""
    try:
        with open(path) as f:
            doc = json.load(f)
        oracle, outputs = doc["oracle"], doc["outputs"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"cannot read --reference {path}: {e}")
    if oracle.get("model") != model.name:
        raise InputError(f"--reference {path} is of model {oracle.get('model')!r}, "
                         f"not {model.name!r}")
    if oracle.get("digest") != want_digest:
        raise InputError(f"--reference {path} was computed from other parameters or "
                         "inputs than those given")
    ref = {}
    for name in list(model.outputs) + ["grad/" + n for n in model.params]:
        if name not in outputs:
            raise InputError(f"--reference {path} lacks {name}")
        entry = outputs[name]
        ref[name] = (tuple(entry["dims"]),
                     np.asarray(entry["data"], dtype=np.float64).reshape(entry["shape"]))
    return ref


def write_reference(path, model, ref, data_digest):
    """The oracle's values in the --dump-outputs format, in float64 (dtype
    "f64"), with the model and the digest of its data under "oracle"."""
    outputs = {}
    for name, (dims, array) in ref.items():
        outputs[name] = {"dims": list(dims), "shape": list(array.shape), "dtype": "f64",
                         "data": [float(v) for v in array.reshape(-1)]}
    with open(path, "w") as f:
        json.dump({"oracle": {"model": model.name, "jax": models.load_jax().__version__,
                              "digest": data_digest},
                   "outputs": outputs}, f)
        f.write("\n")


def load_outputs(path):
    try:
        with open(path) as f:
            outputs = json.load(f)["outputs"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"cannot read --outputs {path}: {e}")
    if not isinstance(outputs, dict):
        raise InputError(f"--outputs {path}: 'outputs' is not an object")
    return outputs


def compare(ref, run, rtol, atol, outputs_path):
    """Prints one line per tensor; returns the list of problems."""
    problems = []
    grads = sorted(n for n in run if n.startswith("grad/"))
    if not grads:
        problems.append(f"{outputs_path} has no grad/* outputs (was the model compiled "
                        "with meshc --output-grads?)")
    for name in sorted(n for n in grads if n not in ref):
        problems.append(f"{name}: the model has no parameter {name[5:]!r}")
    print(f"{'tensor':<24} {'shape':<14} {'max|ref|':>10} {'max abs err':>12} "
          f"{'rel err':>9}  verdict")
    for name, (dims, want) in ref.items():
        got = run.get(name)
        if got is None:
            problems.append(f"{name}: missing from {outputs_path}")
            print(f"{name:<24} {str(list(want.shape)):<14} {'':>10} {'':>12} {'':>9}  MISSING")
            continue
        if name.startswith("grad/") and list(got.get("dims", [])) != list(dims):
            problems.append(f"{name}: dims {got.get('dims')} != the parameter's {list(dims)}")
            print(f"{name:<24} dims {got.get('dims')} != {list(dims)}  WRONG DIMS")
            continue
        shape = list(got.get("shape", []))
        data = got.get("data", [])
        if shape != list(want.shape) or len(data) != want.size:
            problems.append(f"{name}: shape {shape} ({len(data)} values) != "
                            f"reference {list(want.shape)}")
            print(f"{name:<24} shape {shape} != {list(want.shape)}  WRONG SHAPE")
            continue
        value = np.asarray(data, dtype=np.float64).reshape(want.shape)
        scale = float(np.max(np.abs(want))) if want.size else 0.0
        if not np.all(np.isfinite(value)):
            err, rel, ok = math.nan, math.nan, False
        else:
            err = float(np.max(np.abs(value - want))) if want.size else 0.0
            rel = err / scale if scale else (0.0 if err == 0 else math.inf)
            ok = err <= rtol * scale + atol
        verdict = "agrees" if ok else "DIFFERS"
        print(f"{name:<24} {str(list(want.shape)):<14} {scale:>10.3e} {err:>12.3e} "
              f"{rel:>9.2e}  {verdict}")
        if not ok:
            if want.ndim == 0:
                detail = f"{float(value):.8g} vs reference {float(want):.8g}"
            else:
                diff = np.abs(value - want)
                diff[~np.isfinite(diff)] = np.inf
                worst = tuple(int(i) for i in np.unravel_index(np.argmax(diff), want.shape))
                detail = (f"worst element {worst}: {value[worst]:.8g} vs reference "
                          f"{want[worst]:.8g}")
            problems.append(f"{name}: max abs error {err:.3e} > {rtol:g} * max|ref| "
                            f"{scale:.3e} + {atol:g} ({detail})")
    return problems


def main(argv):
    parser = argparse.ArgumentParser(
        description="Compare meshrun's loss and gradients with JAX in float64.")
    parser.add_argument("model", help=f"one of: {', '.join(models.MODELS)}")
    parser.add_argument("--params", required=True, help="folder of meshrun --dump-params")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=FILE.npy")
    parser.add_argument("--outputs", help="meshrun --dump-outputs JSON")
    parser.add_argument("--rtol", type=float, default=RTOL)
    parser.add_argument("--atol", type=float, default=ATOL)
    parser.add_argument("--write-reference", metavar="REF.json")
    parser.add_argument("--reference", metavar="REF.json")
    args = parser.parse_args(argv)
    if args.outputs is None and args.write_reference is None:
        parser.error("give --outputs (or --write-reference)")

    model = models.MODELS.get(args.model)
    if model is None:
        print(f"check.py: error: unknown model {args.model!r}; known: "
              f"{', '.join(models.MODELS)}", file=sys.stderr)
        return 2
    try:
        params = load_params(model, args.params)
        inputs = load_inputs(model, args.input)
        sizes = dim_sizes(model, params, inputs)
        run = load_outputs(args.outputs) if args.outputs else None
    except InputError as e:
        print(f"check.py: error: {e}", file=sys.stderr)
        return 2

    data_digest = digest(params, inputs)
    try:
        ref = (read_reference(model, args.reference, data_digest) if args.reference
               else reference(model, params, inputs))
    except InputError as e:
        print(f"check.py: error: {e}", file=sys.stderr)
        return 2
    if args.write_reference:
        write_reference(args.write_reference, model, ref, data_digest)
    if run is None:
        return 0

    source = (f"reference {args.reference}" if args.reference
              else f"JAX {models.load_jax().__version__} float64")
    of = "" if model.objective == "loss" else f"gradients of {model.objective}; "
    print(f"oracle: model {model.name} ({model.source}), {source}; "
          f"dims {', '.join(f'{d}={s}' for d, s in sizes.items())}; {of}"
          f"tolerance max|run - ref| <= {args.rtol:g} * max|ref| + {args.atol:g}")
    problems = compare(ref, run, args.rtol, args.atol, args.outputs)
    sys.stdout.flush()
    if problems:
        source = "the reference" if args.reference else "the JAX oracle"
        print(f"check.py: FAIL: {len(problems)} problem{'s' if len(problems) > 1 else ''} "
              f"against {source} ({len(ref)} tensors checked):", file=sys.stderr)
        for p in problems:
            print(f"  {p}", file=sys.stderr)
        return 1
    outputs = ("the loss" if tuple(model.outputs) == ("loss",)
               else ", ".join(model.outputs))
    of = "" if model.objective == "loss" else f" (of {model.objective})"
    print(f"check.py: OK: {outputs} and {len(model.params)} gradients{of} agree with "
          f"the JAX oracle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
