#!/usr/bin/env bash
# bf16 on the CPU against f32, side by side on the same cores (issue 33):
# a language-model example (charlm default, llama) trained by meshrun on one
# device in f32, in --precision=bf16 with bf16 GEMMs on oneDNN (where the CPU
# has bf16 dot products, cpu/Bf16Gemm.h), and in bf16 with that path off
# (MESHC_CPU_BF16_GEMM=0: operands widened to f32 for OpenBLAS), alternating
# the three in each round.
#
# With WITH_JAX=1, each round also runs the same model in JAX in f32 and in
# bf16 (bench/jax_lm_train.py) on the same cores.
#
# usage: [WITH_JAX=1] bench/bf16_cpu.sh [charlm|llama] [STEPS=50] [ROUNDS=3] [CORES=0]
#   CORES: the taskset core list (0: one core; 0,1: two cores, the device's
#   GEMMs and fused steps shared by two threads).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${MESHC_BUILD_DIR:-$root/build}/bin"
model="${1:-charlm}"
steps="${2:-50}"
rounds="${3:-3}"
cores="${4:-0}"
case "$model" in
  charlm) source="$root/examples/transformer/charlm.mtf" ;;
  llama) source="$root/examples/llama/llama.mtf" ;;
  *) echo "bf16_cpu: unknown model '$model' (charlm, llama)" >&2; exit 2 ;;
esac
for number in "$steps" "$rounds"; do
  [[ "$number" =~ ^[1-9][0-9]*$ ]] || { echo "bf16_cpu: '$number' is not a positive count" >&2; exit 2; }
done
[[ "$cores" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "bf16_cpu: '$cores' is not a core list" >&2; exit 2; }
fortunes="$root/data/fortunes"
for need in "$fortunes/train_tokens.npy" "$bin/meshc" "$bin/meshrun"; do
  [ -e "$need" ] || { echo "bf16_cpu: missing $need (run scripts/setup.sh and a build)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data=(--input tokens="$fortunes/train_tokens.npy" --input targets="$fortunes/train_targets.npy" --no-shuffle --quiet)

"$bin/meshc" "$source" -o "$work/f32.mprog"
"$bin/meshc" "$source" --precision=bf16 -o "$work/bf16.mprog"
median_ms() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }
run() { # PROGRAM [ENV...]
  local program="$1"
  shift
  env "$@" taskset -c "$cores" "$bin/meshrun" "$work/$program.mprog" --steps "$steps" \
    "${data[@]}" 2>&1 | grep summary | median_ms
}
echo "$model on cores $cores, $rounds rounds of $steps steps; median step time (ms)"
for ((r = 1; r <= rounds; ++r)); do
  f32="$(run f32)"
  fast="$(run bf16)"
  widened="$(run bf16 MESHC_CPU_BF16_GEMM=0)"
  awk -v r="$r" -v f="$f32" -v b="$fast" -v w="$widened" 'BEGIN {
    printf "round %d: f32 %.1f, bf16 %.1f (%.2f of f32), bf16 widened to f32 %.1f (%.2f)\n",
      r, f, b, b / f, w, w / f }'
  if [ "${WITH_JAX:-0}" = 1 ]; then
    jax32="$(taskset -c "$cores" "$root/.venv/bin/python" "$root/bench/jax_lm_train.py" "$model" "$fortunes" "$steps" f32 | median_ms)"
    jax16="$(taskset -c "$cores" "$root/.venv/bin/python" "$root/bench/jax_lm_train.py" "$model" "$fortunes" "$steps" bf16 | median_ms)"
    awk -v r="$r" -v f="$f32" -v b="$fast" -v j="$jax32" -v k="$jax16" 'BEGIN {
      printf "round %d: JAX f32 %.1f (meshc/JAX %.2f), JAX bf16 %.1f (meshc/JAX %.2f)\n",
        r, j, f / j, k, b / k }'
  fi
done
