#!/usr/bin/env bash
# Overlapped collectives on a real model (docs/performance.md#overlapped-collectives):
# charlm on b:2;m:2 in Megatron's layout (its backward pass's partial sums
# over m start before the weight gradients' einsums), compiled with every
# collective blocking (--overlap-limit 0), with started collectives in the
# loop bodies' own order (--no-schedule) and with started collectives in the
# order for overlap (the default), the last two run with meshrun --overlap
# off (where they start: what --overlap auto picks on a machine with fewer
# than 2 cores per device) and the default one also with --overlap on
# (lanes). The four alternate, ROUNDS times, STEPS steps a run, on CPU
# threads; prints each run's median step.
#
# usage: bench/overlap/charlm.sh [BUILD]   (default build; ROUNDS, STEPS,
#        MESH, LAYOUT from the environment)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
rounds="${ROUNDS:-3}" steps="${STEPS:-30}"
mesh="${MESH:-b:2;m:2}" layout="${LAYOUT:-batch:b;heads:m;d_ff:m;vocab:m}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data="$root/data/fortunes"
model="$root/examples/transformer/charlm.mtf"
"$build/bin/meshc" "$model" --mesh "$mesh" --layout "$layout" \
  --overlap-limit 0 -o "$work/blocking.mprog"
"$build/bin/meshc" "$model" --mesh "$mesh" --layout "$layout" \
  --no-schedule -o "$work/kept.mprog"
"$build/bin/meshc" "$model" --mesh "$mesh" --layout "$layout" \
  -o "$work/started.mprog"
run() { # run PROGRAM OVERLAP
  "$build/bin/meshrun" "$work/$1.mprog" --overlap "$2" --steps "$steps" \
    --quiet --input tokens="$data/train_tokens.npy" \
    --input targets="$data/train_targets.npy" 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1
}
echo "charlm $mesh ($layout), $steps steps a run, median ms per step" \
  "($(nproc) cores)"
for round in $(seq "$rounds"); do
  echo "round $round: blocking $(run blocking off) ms," \
    "started in the bodies' order --overlap off $(run kept off) ms," \
    "started --overlap off $(run started off) ms," \
    "started --overlap on $(run started on) ms"
done
