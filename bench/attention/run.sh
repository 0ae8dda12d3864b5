#!/usr/bin/env bash
# Fused attention against the unfused program, side by side on the same
# cores (issue 33): charlm at sequence 2048 (bench/attention/charlm-2048.mtf,
# or another model) compiled with and without mtf-fuse-attention; prints each
# program's planned memory (meshc --explain) and then alternates training
# runs of the two on synthetic inputs, ROUNDS times, reporting meshrun's
# median step time.
#
# usage: bench/attention/run.sh [STEPS=10] [ROUNDS=3] [CORES=0] [PRECISION=f32|bf16] [MODEL.mtf]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${MESHC_BUILD_DIR:-$root/build}/bin"
steps="${1:-10}"
rounds="${2:-3}"
cores="${3:-0}"
precision="${4:-f32}"
model="${5:-$root/bench/attention/charlm-2048.mtf}"
for number in "$steps" "$rounds"; do
  [[ "$number" =~ ^[1-9][0-9]*$ ]] || { echo "attention: '$number' is not a positive count" >&2; exit 2; }
done
[[ "$cores" =~ ^[0-9]+(,[0-9]+)*$ ]] || { echo "attention: '$cores' is not a core list" >&2; exit 2; }
[[ "$precision" == f32 || "$precision" == bf16 ]] || { echo "attention: precision '$precision' is not f32 or bf16" >&2; exit 2; }
for need in "$model" "$bin/meshc" "$bin/meshrun"; do
  [ -e "$need" ] || { echo "attention: missing $need (run scripts/setup.sh and a build)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

flags=(--precision="$precision")
"$bin/meshc" "$model" "${flags[@]}" -o "$work/fused.mprog"
"$bin/meshc" "$model" "${flags[@]}" --no-fuse-attention -o "$work/unfused.mprog"
echo "$(basename "$model") ($precision): planned memory per device (meshc --explain)"
for variant in fused unfused; do
  extra=()
  [ "$variant" = unfused ] && extra=(--no-fuse-attention)
  "$bin/meshc" "$model" "${flags[@]}" "${extra[@]}" --explain |
    sed -n "s/^ *planned arena \([0-9.]* [KMG]iB\).*/  $variant: arena \1/p;s/^ *scratch *\([0-9.]* [KMG]iB\).*/  $variant: scratch \1/p;s/^predicted step time: \([0-9.]* [mu]*s\).*/  $variant: predicted \1 (h100-sxm)/p"
done
median_ms() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }
run() { taskset -c "$cores" "$bin/meshrun" "$work/$1.mprog" --steps "$steps" --quiet 2>&1 | grep summary | median_ms; }
echo "training on cores $cores, $rounds rounds of $steps steps; median step time (ms)"
for ((r = 1; r <= rounds; ++r)); do
  fused="$(run fused)"
  unfused="$(run unfused)"
  awk -v r="$r" -v f="$fused" -v u="$unfused" 'BEGIN {
    printf "round %d: fused %.1f, unfused %.1f (fused/unfused %.2f)\n", r, f, u, f / u }'
done
