#!/usr/bin/env bash
# Prefetched gathers and interleaved halves measured on CPU threads
# (docs/performance.md#parameter-sharding-zero-3): charlm on b:2;m:2 in
# Megatron's layout with --shard-params, compiled with each layer's
# gathers where its iteration starts (--no-prefetch), one layer ahead (the
# default), also with the loops in halves (--interleave-halves), and with
# the forward's gathered layers kept for the backward (--keep-gathered).
# The four alternate, ROUNDS times, STEPS steps a run; prints each run's
# median step and the memory meshrun measured resident.
#
# usage: bench/overlap/zero3.sh [BUILD]   (default build; ROUNDS, STEPS,
#        MESH, LAYOUT, PRECISION from the environment)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
rounds="${ROUNDS:-3}" steps="${STEPS:-30}"
mesh="${MESH:-b:2;m:2}" layout="${LAYOUT:-batch:b;heads:m;d_ff:m;vocab:m}"
precision="${PRECISION:-f32}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data="$root/data/fortunes"
model="$root/examples/transformer/charlm.mtf"
compile() { # compile NAME FLAGS...
  local name="$1"
  shift
  "$build/bin/meshc" "$model" --mesh "$mesh" --layout "$layout" \
    --precision="$precision" --shard-params "$@" -o "$work/$name.mprog"
}
compile kept --no-prefetch
compile prefetched
compile halves --interleave-halves
compile keep --keep-gathered
run() { # run PROGRAM -> "median ms, resident"
  "$build/bin/meshrun" "$work/$1.mprog" --steps "$steps" --quiet \
    --input tokens="$data/train_tokens.npy" \
    --input targets="$data/train_targets.npy" 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms.*device memory \([0-9.]* [KMG]iB\) resident.*/\1 ms (\2)/p' |
    head -1
}
echo "charlm $mesh ($layout, $precision, --shard-params), $steps steps a run," \
  "median per step ($(nproc) cores)"
for round in $(seq "$rounds"); do
  echo "round $round: --no-prefetch $(run kept)," \
    "prefetched $(run prefetched), --interleave-halves $(run halves)," \
    "--keep-gathered $(run keep)"
done
