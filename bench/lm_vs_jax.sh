#!/usr/bin/env bash
# The training step (forward, backward, Adam with warm-up and clipping) of a
# language-model example -- charlm (default), llama or moe -- in meshc and in
# JAX (jit, CPU, float32; bench/jax_lm_train.py) on the same machine, cores
# and data, side by side in one run:
#   1 core:  meshc on 1 device under `taskset -c 0`, JAX under `taskset -c 0`;
#   2 cores: meshc on b:2 (2 devices, one thread each) and JAX, both under
#            `taskset -c 0,1`.
# Also prints how many steps the compiled program launches per training step,
# fused (meshc's default) and with --no-fuse, and the 1-core time of the
# unfused program. Needs scripts/setup.sh (data, JAX) and a build.
#
#   bench/lm_vs_jax.sh [MODEL] [STEPS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${MESHC_BUILD_DIR:-$root/build}/bin"
model="${1:-charlm}"
steps="${2:-50}"
case "$model" in
  charlm) source="$root/examples/transformer/charlm.mtf" ;;
  llama) source="$root/examples/llama/llama.mtf" ;;
  moe) source="$root/examples/moe/moe.mtf" ;;
  *) echo "lm_vs_jax: unknown model '$model' (charlm, llama, moe)" >&2; exit 2 ;;
esac
fortunes="$root/data/fortunes"
python="$root/.venv/bin/python"
for need in "$fortunes/train_tokens.npy" "$python" "$bin/meshc" "$bin/meshrun"; do
  [ -e "$need" ] || { echo "lm_vs_jax: missing $need (run scripts/setup.sh and a build)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data=(--input tokens="$fortunes/train_tokens.npy" --input targets="$fortunes/train_targets.npy" --no-shuffle --quiet)

"$bin/meshc" "$source" -o "$work/one.mprog"
"$bin/meshc" "$source" --mesh "b:2" --layout "batch:b" -o "$work/two.mprog"
"$bin/meshc" "$source" --no-fuse -o "$work/unfused.mprog"
count() { "$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$1"; }
echo "$model: $(count "$work/one.mprog") steps launched per training step (1 device; $(count "$work/unfused.mprog") with --no-fuse)"

ms() { sed -n 's/.*mean \([0-9.]*\) ms.*/\1/p'; }
meshc1=$(taskset -c 0 "$bin/meshrun" "$work/one.mprog" --steps "$steps" "${data[@]}" 2>&1 | grep summary)
unfused1=$(taskset -c 0 "$bin/meshrun" "$work/unfused.mprog" --steps "$steps" "${data[@]}" 2>&1 | grep summary)
jax1=$(taskset -c 0 "$python" "$root/bench/jax_lm_train.py" "$model" "$fortunes" "$steps")
meshc2=$(taskset -c 0,1 "$bin/meshrun" "$work/two.mprog" --steps "$steps" "${data[@]}" 2>&1 | grep summary)
jax2=$(taskset -c 0,1 "$python" "$root/bench/jax_lm_train.py" "$model" "$fortunes" "$steps")
echo "1 core,  meshc 1 device: $meshc1"
echo "1 core,  meshc --no-fuse: $unfused1"
echo "1 core,  $jax1"
echo "2 cores, meshc b:2:      $meshc2"
echo "2 cores, $jax2"
awk -v a="$(echo "$meshc1" | ms)" -v b="$(echo "$jax1" | ms)" -v u="$(echo "$unfused1" | ms)" \
  'BEGIN { printf "1 core:  meshc / JAX = %.2f (unfused %.2f)\n", a / b, u / b }'
awk -v a="$(echo "$meshc2" | ms)" -v b="$(echo "$jax2" | ms)" \
  'BEGIN { printf "2 cores: meshc / JAX = %.2f\n", a / b }'
