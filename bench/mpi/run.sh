#!/usr/bin/env bash
# The MPI benchmarks of docs/performance.md, in one run:
#   (a) meshc's MPI all-reduce (MpiCommunicator, as meshrun uses it) against
#       a plain MPI_Allreduce of the same bytes, 4 KiB .. 64 MiB, on 2, 4 and
#       8 ranks (meshc-bench-mpi);
#   (b) meshrun in one process (devices are threads) against mpirun -np 8
#       meshrun (one device per rank) on the same .mprog: the MLP training on
#       a 2x4 mesh and the transformer block on a 2x4 mesh.
# usage: bench/mpi/run.sh [BUILD_DIR] [STEPS] [a|b]
#   (default: build, 50 steps, both parts)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
steps=${2:-50}
part=${3:-ab}
bin=$build/bin
mpirun=(mpirun --allow-run-as-root --oversubscribe)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ $part == *a* ]]; then
  echo "== (a) all-reduce: meshc's MPI path vs MPI_Allreduce"
  for np in 2 4 8; do
    "${mpirun[@]}" -np "$np" "$bin/meshc-bench-mpi" < /dev/null
  done
  echo
fi
[[ $part == *b* ]] || exit 0

echo "== (b) meshrun: threads in one process vs one MPI rank per device"
mean_ms() { sed -n 's/^summary: .*mean \([0-9.]*\) ms.*/\1/p'; }
printf '%-44s %12s %12s %8s\n' model "threads ms" "MPI ms" "MPI/thr"
while IFS='|' read -r name model mesh layout; do
  "$bin/meshc" "$root/$model" --mesh "$mesh" --layout "$layout" \
    -o "$work/$name.mprog" < /dev/null
  # (stdin from /dev/null: mpirun would read the model list)
  threads=$("$bin/meshrun" "$work/$name.mprog" --steps "$steps" --quiet \
    < /dev/null | mean_ms)
  mpi=$("${mpirun[@]}" -np 8 "$bin/meshrun" "$work/$name.mprog" \
    --steps "$steps" --quiet < /dev/null | mean_ms)
  ratio=$(awk -v a="$mpi" -v b="$threads" 'BEGIN { printf "%.2f", a / b }')
  printf '%-44s %12s %12s %8s\n' "$name ($mesh, $layout)" "$threads" \
    "$mpi" "$ratio"
done <<'MODELS'
mlp-train|examples/mlp/mlp.mtf|b:2;m:4|batch:b;hidden:m
transformer-train|examples/transformer/block.mtf|b:2;m:4|batch:b;heads:m
MODELS
