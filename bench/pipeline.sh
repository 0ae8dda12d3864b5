#!/usr/bin/env bash
# Pipelines measured (docs/performance.md#pipelines): the six-layer language
# model of the pipeline tests at a size where a step takes tens of ms (batch
# BATCH, default 32; seq 64, d_model 128, d_ff 512), on CPU threads, ROUNDS
# rounds of STEPS steps, the programs alternating within each round:
#   1 device           the whole model on one device (one core)
#   b:2                data parallel on 2 devices (the peer)
#   p:2 M=1,2,4,8      a pipeline of 2 stages of 3 layers, M microbatches,
#                      GPipe's schedule and 1F1B's (--schedule 1f1b), and
#                      for even M the interleaved one (--schedule interleaved
#                      --virtual-stages 3: 3 blocks of one layer a stage)
# Prints each run's median step, and for each pipeline the share of its step
# beyond the data-parallel peer's, 1 - t(b:2) / t(p:2), beside GPipe's
# bubble (P - 1) / (M + P - 1): both run the same layers on the same two
# cores, a pipeline also its bubble ticks (and the layers before and after
# the repeat on both stages). Then one traced run of each pipeline
# (meshrun --trace) and the bubble measured in it by bench/pipeline_bubble.py:
# the share of the tick loops' time in which a stage holds no microbatch,
# and each program's device memory (meshrun's planned and resident arena).
#
# usage: bench/pipeline.sh [BUILD]   (BUILD: the build with bin/meshc and
#        bin/meshrun, default build)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
rounds="${ROUNDS:-3}" steps="${STEPS:-20}" batch="${BATCH:-32}"
counts="${COUNTS:-1 2 4 8}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
sed -e "s/^dim batch   = 12/dim batch   = $batch/" \
    -e "s/^dim seq     = 8/dim seq     = 64/" \
    -e "s/^dim memory  = 8/dim memory  = 64/" \
    -e "s/^dim vocab   = 16/dim vocab   = 64/" \
    -e "s/^dim d_model = 16/dim d_model = 128/" \
    -e "s/^dim heads   = 2/dim heads   = 4/" \
    -e "s/^dim d_k     = 8/dim d_k     = 32/" \
    -e "s/^dim d_ff    = 32/dim d_ff    = 512/" \
    "$root/tests/training/Inputs/pipeline-lm.mtf" > "$work/lm.mtf"
meshc="$build/bin/meshc"
"$meshc" "$work/lm.mtf" -o "$work/one.mprog"
"$meshc" "$work/lm.mtf" --mesh "b:2" --layout "batch:b" -o "$work/dp.mprog"
for m in $counts; do
  "$meshc" "$work/lm.mtf" --mesh "p:2" --layout "layers:p" \
    --microbatches "$m" -o "$work/p$m.mprog"
  "$meshc" "$work/lm.mtf" --mesh "p:2" --layout "layers:p" \
    --microbatches "$m" --schedule 1f1b -o "$work/f$m.mprog"
  if [ $((m % 2)) -eq 0 ]; then
    "$meshc" "$work/lm.mtf" --mesh "p:2" --layout "layers:p" \
      --microbatches "$m" --schedule interleaved --virtual-stages 3 \
      -o "$work/i$m.mprog"
  fi
done
run() { # run NAME -> median ms
  "$build/bin/meshrun" "$work/$1.mprog" --steps "$steps" --quiet 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p' | head -1
}
echo "pipeline-lm, 6 layers, batch $batch, $steps steps a run ($(nproc) cores)"
for round in $(seq "$rounds"); do
  dp="$(run dp)"
  line="round $round: 1 device $(run one) ms, b:2 ${dp} ms"
  for m in $counts; do
    for schedule in p f i; do
      [ -e "$work/$schedule$m.mprog" ] || continue
      t="$(run "$schedule$m")"
      v=$([ "$schedule" = i ] && echo 3 || echo 1)
      share=$(awk -v t="$t" -v d="$dp" -v m="$m" -v v="$v" \
        'BEGIN { printf "beyond b:2 %.0f%%, bubble %.0f%%", 100 * (1 - d / t), 100 / (v * m + 1) }')
      name=$(case $schedule in p) echo GPipe;; f) echo 1F1B;; i) echo interleaved;; esac)
      line+=", p:2 M=$m $name ${t} ms (${share})"
    done
  done
  echo "$line"
done
for m in $counts; do
  for schedule in gpipe 1f1b interleaved; do
    name=$(case $schedule in gpipe) echo "p$m";; 1f1b) echo "f$m";; *) echo "i$m";; esac)
    [ -e "$work/$name.mprog" ] || continue
    memory="$("$build/bin/meshrun" "$work/$name.mprog" --steps "$steps" \
      --quiet --trace "$work/$name.json" | sed -n 's/.*device memory \(.*\)/\1/p')"
    echo "traced p:2 M=$m $schedule: memory $memory"
    # 1F1B's bubble takes more microbatches than stages to tell its loops.
    if [ "$schedule" = gpipe ] || [ "$m" -gt 1 ]; then
      echo "  $(python3 "$root/bench/pipeline_bubble.py" \
        "$work/$name.json" "$m" --schedule "$schedule" --virtual-stages 3 |
        tail -1)"
    fi
  done
done
