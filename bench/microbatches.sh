#!/usr/bin/env bash
# Gradient accumulation measured (docs/performance.md#microbatches): charlm
# with a batch of BATCH sequences (default 64) on b:2, compiled with
# --microbatches 1, 2, 4 and 8, run alternately on CPU threads ROUNDS times,
# STEPS steps a run. Prints, per count, the planned arena and what meshrun
# measured resident per device, and each run's median step and examples/s.
#
# usage: bench/microbatches.sh [BUILD]   (BUILD: the build with bin/meshc
#        and bin/meshrun, default build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
rounds="${ROUNDS:-3}" steps="${STEPS:-20}" batch="${BATCH:-64}"
counts="${COUNTS:-1 2 4 8}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data="$root/data/fortunes"
sed "s/^dim batch   = 16/dim batch   = $batch/" \
  "$root/examples/transformer/charlm.mtf" > "$work/charlm.mtf"
for m in $counts; do
  "$build/bin/meshc" "$work/charlm.mtf" --mesh "b:2" --layout "batch:b" \
    --microbatches "$m" -o "$work/m$m.mprog"
done
run() { # run COUNT -> "median-ms resident"
  "$build/bin/meshrun" "$work/m$1.mprog" --steps "$steps" --quiet \
    --input tokens="$data/train_tokens.npy" \
    --input targets="$data/train_targets.npy" 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms.*device memory \([0-9.]* [KMG]iB\) resident.*/\1 \2/p' |
    head -1
}
echo "charlm, batch $batch, b:2, $steps steps a run ($(nproc) cores)"
for round in $(seq "$rounds"); do
  line="round $round:"
  for m in $counts; do
    read -r ms resident unit <<<"$(run "$m")"
    eps=$(awk -v b="$batch" -v ms="$ms" 'BEGIN { printf "%.0f", b / ms * 1000 }')
    line+="  M=$m ${ms} ms (${eps} ex/s, ${resident} ${unit})"
  done
  echo "$line"
done
