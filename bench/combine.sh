#!/usr/bin/env bash
# Combined collectives measured (docs/performance.md#combined-collectives):
# charlm on b:2 compiled with every collective on its own (--bucket-size 0)
# and combined (the default), run alternately on CPU threads and on 2 MPI
# ranks, ROUNDS times each, STEPS steps a run; prints each run's median step.
#
# usage: bench/combine.sh [BUILD]   (BUILD: the build with bin/meshc and
#        bin/meshrun, default build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
rounds="${ROUNDS:-3}" steps="${STEPS:-60}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data="$root/data/fortunes"
for bucket in 0 128MiB; do
  "$build/bin/meshc" "$root/examples/transformer/charlm.mtf" --mesh "b:2" \
    --layout "batch:b" --bucket-size "$bucket" -o "$work/charlm_$bucket.mprog"
done
run() { # run TRANSPORT BUCKET
  local launch=()
  [[ $1 == mpi ]] && launch=(mpirun --allow-run-as-root --oversubscribe -np 2)
  "${launch[@]}" "$build/bin/meshrun" "$work/charlm_$2.mprog" --steps "$steps" \
    --quiet --input tokens="$data/train_tokens.npy" \
    --input targets="$data/train_targets.npy" 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1
}
echo "charlm b:2, $steps steps a run, median ms per step ($(nproc) cores)"
for round in $(seq "$rounds"); do
  for transport in threads mpi; do
    line="round $round $transport:"
    for bucket in 0 128MiB; do
      line+=" bucket $bucket $(run "$transport" "$bucket") ms"
    done
    echo "$line"
  done
done
