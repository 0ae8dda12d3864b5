#!/usr/bin/env bash
# The MLP training step (forward, backward, Adam) of meshc next to the same
# step in JAX (jit, CPU; bench/jax_mlp_train.py) on the same machine, cores
# and data, side by side in one run:
#   1 core:    meshc on 1 device and JAX, both under `taskset -c 0`;
#   all cores: meshc on 1 device (its fused steps and GEMMs shared by a
#              thread per core) and JAX;
#   and meshc on a 2x4 mesh of CPU virtual devices.
# Needs scripts/setup.sh (data, JAX) and a build.
#
#   bench/training_vs_jax.sh [STEPS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${MESHC_BUILD_DIR:-$root/build}/bin"
steps="${1:-500}"
digits="$root/data/digits"
python="$root/.venv/bin/python"
for need in "$digits/train_x.npy" "$python" "$bin/meshc" "$bin/meshrun"; do
  [ -e "$need" ] || { echo "training_vs_jax: missing $need (run scripts/setup.sh and a build)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data=(--input x="$digits/train_x.npy" --input labels="$digits/train_labels.npy" --no-shuffle --quiet)
"$bin/meshc" "$root/examples/mlp/mlp.mtf" -o "$work/one.mprog"
"$bin/meshc" "$root/examples/mlp/mlp.mtf" --mesh "b:2;m:4" --layout "batch:b;hidden:m" -o "$work/mesh.mprog"
count() { "$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$1"; }
echo "mlp: $(count "$work/one.mprog") steps launched per training step (1 device)"

ms() { sed -n 's/.*mean \([0-9.]*\) ms.*/\1/p'; }
cores="$(nproc)"
all="0-$((cores - 1))"
meshc1=$(taskset -c 0 "$bin/meshrun" "$work/one.mprog" --steps "$steps" "${data[@]}" 2>&1 | grep summary)
jax1=$(taskset -c 0 "$python" "$root/bench/jax_mlp_train.py" "$digits" "$steps")
meshcN=$(taskset -c "$all" "$bin/meshrun" "$work/one.mprog" --steps "$steps" "${data[@]}" 2>&1 | grep summary)
jaxN=$(taskset -c "$all" "$python" "$root/bench/jax_mlp_train.py" "$digits" "$steps")
mesh=$(taskset -c "$all" "$bin/meshrun" "$work/mesh.mprog" --steps "$steps" "${data[@]}" 2>&1 | grep summary)
echo "1 core,      meshc 1 device: $meshc1"
echo "1 core,      $jax1"
echo "$cores cores,     meshc 1 device: $meshcN"
echo "$cores cores,     $jaxN"
echo "$cores cores,     meshc 2x4 mesh: $mesh"
awk -v a="$(echo "$meshc1" | ms)" -v b="$(echo "$jax1" | ms)" \
  'BEGIN { printf "1 core:      meshc / JAX = %.2f\n", a / b }'
awk -v a="$(echo "$meshcN" | ms)" -v b="$(echo "$jaxN" | ms)" -v c="$cores" \
  'BEGIN { printf "%d cores:     meshc / JAX = %.2f\n", c, a / b }'
