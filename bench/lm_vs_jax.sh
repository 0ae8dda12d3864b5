#!/usr/bin/env bash
# The training step (forward, backward, Adam with warm-up and clipping) of a
# language-model example -- charlm (default), llama or moe -- in meshc and in
# JAX (jit, CPU, float32; bench/jax_lm_train.py) on the same machine, cores
# and data, side by side in one run:
#   1 core:  meshc on 1 device (fused, and --no-fuse) and JAX, all under
#            `taskset -c 0`;
#   2 cores: meshc on 1 device (its fused steps and GEMMs shared by 2
#            threads), meshc on b:2 (2 devices, one thread each) and JAX, all
#            under `taskset -c 0,1`.
# A shared VM's speed drifts from second to second, so the runs alternate
# for ROUNDS rounds (default 3) and each figure is the median over the
# rounds of a run's median step time; each round's ratios are printed too.
# Also prints how many steps the compiled program launches per training
# step, fused (meshc's default) and with --no-fuse. Needs scripts/setup.sh
# (data, JAX) and a build.
#
#   bench/lm_vs_jax.sh [MODEL] [STEPS] [ROUNDS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${MESHC_BUILD_DIR:-$root/build}/bin"
model="${1:-charlm}"
steps="${2:-50}"
rounds="${3:-3}"
case "$model" in
  charlm) source="$root/examples/transformer/charlm.mtf" ;;
  llama) source="$root/examples/llama/llama.mtf" ;;
  moe) source="$root/examples/moe/moe.mtf" ;;
  *) echo "lm_vs_jax: unknown model '$model' (charlm, llama, moe)" >&2; exit 2 ;;
esac
for number in "$steps" "$rounds"; do
  [[ "$number" =~ ^[1-9][0-9]*$ ]] || { echo "lm_vs_jax: '$number' is not a positive count" >&2; exit 2; }
done
fortunes="$root/data/fortunes"
python="$root/.venv/bin/python"
for need in "$fortunes/train_tokens.npy" "$python" "$bin/meshc" "$bin/meshrun"; do
  [ -e "$need" ] || { echo "lm_vs_jax: missing $need (run scripts/setup.sh and a build)" >&2; exit 1; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
data=(--input tokens="$fortunes/train_tokens.npy" --input targets="$fortunes/train_targets.npy" --no-shuffle --quiet)

"$bin/meshc" "$source" -o "$work/one.mprog"
"$bin/meshc" "$source" --mesh "b:2" --layout "batch:b" -o "$work/two.mprog"
"$bin/meshc" "$source" --no-fuse -o "$work/unfused.mprog"
count() { "$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["steps"]))' "$1"; }
echo "$model: $(count "$work/one.mprog") steps launched per training step (1 device; $(count "$work/unfused.mprog") with --no-fuse)"
echo "$rounds rounds of $steps steps; each figure: median step time (ms)"

median_ms() { sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'; }
meshrun() { # CORES PROGRAM
  taskset -c "$1" "$bin/meshrun" "$work/$2.mprog" --steps "$steps" "${data[@]}" 2>&1 | grep summary | median_ms
}
jax() { # CORES
  taskset -c "$1" "$python" "$root/bench/jax_lm_train.py" "$model" "$fortunes" "$steps" | median_ms
}
declare -A times
last() { echo "${times[$1]}" | awk '{ print $NF }'; }
for ((round = 1; round <= rounds; ++round)); do
  times[one1]+=" $(meshrun 0 one)"
  times[unfused1]+=" $(meshrun 0 unfused)"
  times[jax1]+=" $(jax 0)"
  times[one2]+=" $(meshrun 0,1 one)"
  times[two2]+=" $(meshrun 0,1 two)"
  times[jax2]+=" $(jax 0,1)"
  awk -v r="$round" -v a="$(last one1)" -v u="$(last unfused1)" -v j="$(last jax1)" \
    -v o="$(last one2)" -v t="$(last two2)" -v k="$(last jax2)" 'BEGIN {
      printf "round %d: 1 core meshc %.1f, unfused %.1f, JAX %.1f (%.2f); ", r, a, u, j, a / j
      printf "2 cores meshc 1 device %.1f, b:2 %.1f, JAX %.1f (%.2f, %.2f)\n", o, t, k, o / k, t / k }'
done
median() { echo "${times[$1]}" | tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
awk -v a="$(median one1)" -v u="$(median unfused1)" -v j="$(median jax1)" \
  -v o="$(median one2)" -v t="$(median two2)" -v k="$(median jax2)" 'BEGIN {
    printf "1 core:  meshc %.1f ms, --no-fuse %.1f ms, JAX %.1f ms\n", a, u, j
    printf "2 cores: meshc 1 device %.1f ms, b:2 %.1f ms, JAX %.1f ms\n", o, t, k
    printf "1 core:  meshc / JAX = %.2f (unfused %.2f)\n", a / j, u / j
    printf "2 cores: meshc / JAX = %.2f (1 device, 2 threads), %.2f (b:2)\n", o / k, t / k }'
