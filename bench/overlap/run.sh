#!/usr/bin/env bash
# Overlapped collectives measured (docs/performance.md#overlapped-collectives):
# the same program with its all-reduce blocking and started beside an einsum
# (bench/overlap/program.py), run alternately on CPU threads and on 2 MPI
# ranks, ROUNDS times each, STEPS steps a run; prints each run's median step
# and, for reference, the einsum alone and the all-reduce alone.
#
# usage: bench/overlap/run.sh [BUILD]   (default build; N, GRAD, ROUNDS, STEPS
#        from the environment)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
n="${N:-768}" grad="${GRAD:-4194304}" rounds="${ROUNDS:-3}" steps="${STEPS:-30}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/overlap/program.py" "$n" "$grad" "$work/blocking.mprog"
python3 "$root/bench/overlap/program.py" "$n" "$grad" "$work/started.mprog" --started
run() { # run TRANSPORT PROGRAM
  local launch=()
  [[ $1 == mpi ]] && launch=(mpirun --allow-run-as-root --oversubscribe -np 2)
  "${launch[@]}" "$build/bin/meshrun" "$work/$2.mprog" --overlap on --steps "$steps" --quiet 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1
}
echo "m:2, einsum ${n}^3 beside an all-reduce of $grad f32, $steps steps a run," \
  "median ms per step ($(nproc) cores)"
for round in $(seq "$rounds"); do
  for transport in threads mpi; do
    for program in blocking started; do
      echo "round $round $transport $program: $(run "$transport" "$program")"
    done
  done
done
