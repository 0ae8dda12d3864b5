#!/usr/bin/env bash
# The MLP training step (forward, backward, Adam) of meshc on one CPU device
# and on a 2x4 mesh of CPU virtual devices, next to the same step in JAX
# (jit, CPU) on the same machine and data. Needs scripts/setup.sh (data, JAX)
# and a build.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${MESHC_BUILD_DIR:-$root/build}/bin"
steps="${1:-500}"
digits="$root/data/digits"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data=(--input x="$digits/train_x.npy" --input labels="$digits/train_labels.npy" --no-shuffle)
"$bin/meshc" "$root/examples/mlp/mlp.mtf" -o "$work/one.mprog"
"$bin/meshc" "$root/examples/mlp/mlp.mtf" --mesh "b:2;m:4" --layout "batch:b;hidden:m" -o "$work/mesh.mprog"
echo "meshc, 1 device:  $("$bin/meshrun" "$work/one.mprog" --steps "$steps" "${data[@]}" --quiet 2>&1 | grep summary)"
echo "meshc, 2x4 mesh:  $("$bin/meshrun" "$work/mesh.mprog" --steps "$steps" "${data[@]}" --quiet 2>&1 | grep summary)"
"$root/.venv/bin/python" "$root/bench/jax_mlp_train.py" "$digits" "$steps"
