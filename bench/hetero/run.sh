#!/usr/bin/env bash
# Unequal devices on one machine (issue 15, HetSeq's case): three MPI ranks,
# one mesh device each, ranks 0 and 1 pinned to core 0 (half a core each)
# and rank 2 alone on core 1, so rank 2 is about twice as fast. The wide MLP
# (bench/hetero/mlp_wide.mtf) trains data-parallel on b:3 with the even
# split and with device weights matched to those speeds (b=1,1,2), side by
# side in one run; the step time is the slowest rank's (meshrun times a step
# between barriers). Also one device alone on one core, the unit of speed.
# Needs a build with MPI (mpirun) and at least 2 cores.
#
#   bench/hetero/run.sh [STEPS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${MESHC_BUILD_DIR:-$root/build}/bin"
steps="${1:-30}"
model="$root/bench/hetero/mlp_wide.mtf"
for need in "$bin/meshc" "$bin/meshrun"; do
  [ -x "$need" ] || { echo "hetero: missing $need (build first)" >&2; exit 1; }
done
command -v mpirun > /dev/null || { echo "hetero: needs mpirun" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1

"$bin/meshc" "$model" -o "$work/one.mprog"
"$bin/meshc" "$model" --mesh "b:3" --layout "batch:b" -o "$work/even.mprog"
"$bin/meshc" "$model" --mesh "b:3" --layout "batch:b" --axis-weights "b=1,1,2" -o "$work/weighted.mprog"
"$bin/meshc" "$model" --mesh "b:3" --layout "batch:b" --axis-weights "b=1,1,1.5" -o "$work/weighted15.mprog"

ms() { sed -n 's/.*mean \([0-9.]*\) ms.*/\1/p'; }
minms() { sed -n 's/.*min \([0-9.]*\) ms.*/\1/p'; }
# Ranks 0 and 1 share core 0; rank 2 has core 1. Waiting ranks yield the
# core instead of spinning, so the two on core 0 share it fairly.
unequal() {
  mpirun --allow-run-as-root --oversubscribe --bind-to none \
    --mca mpi_yield_when_idle 1 -x OPENBLAS_NUM_THREADS \
    -np 1 taskset -c 0 "$bin/meshrun" "$1" --steps "$steps" --quiet : \
    -np 1 taskset -c 0 "$bin/meshrun" "$1" --steps "$steps" --quiet : \
    -np 1 taskset -c 1 "$bin/meshrun" "$1" --steps "$steps" --quiet 2>&1 | grep summary
}
one=$(taskset -c 0 "$bin/meshrun" "$work/one.mprog" --steps "$steps" --quiet 2>&1 | grep summary)
even=$(unequal "$work/even.mprog")
weighted=$(unequal "$work/weighted.mprog")
weighted15=$(unequal "$work/weighted15.mprog")
echo "1 device, 1 core:                  $one"
echo "b:3 even (512|512|512):            $even"
echo "b:3 weights 1,1,2 (384|384|768):   $weighted"
echo "b:3 weights 1,1,1.5 (439|439|658): $weighted15"
awk -v e="$(echo "$even" | ms)" -v w="$(echo "$weighted" | ms)" -v h="$(echo "$weighted15" | ms)" \
  'BEGIN { printf "weighted / even step time: 1,1,2: %.2f; 1,1,1.5: %.2f\n", w / e, h / e }'
awk -v e="$(echo "$even" | minms)" -v w="$(echo "$weighted" | minms)" -v h="$(echo "$weighted15" | minms)" \
  'BEGIN { printf "weighted / even fastest step: 1,1,2: %.2f; 1,1,1.5: %.2f\n", w / e, h / e }'
