#!/usr/bin/env bash
# The main job, end to end on a fresh machine: installs what is missing
# (packages, the digits data set, JAX), builds, compiles the MLP example for a
# 2x4 mesh (data parallel over 'b', hidden units split over 'm'), shows what
# meshc made of it, checks one training step against the reference
# interpreter, then trains it on 8 CPU virtual devices on the handwritten
# digits and prints the held-out accuracy.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MESHC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"
bin="$build/bin"
model="$root/examples/mlp/mlp.mtf"
mesh="b:2;m:4"
layout="batch:b;hidden:m"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo
echo "== meshc examples/mlp/mlp.mtf --mesh \"$mesh\" --layout \"$layout\" --explain"
"$bin/meshc" "$model" --mesh "$mesh" --layout "$layout" --explain 2>/dev/null
echo
echo "== meshc ... -o mlp.mprog --reference reference.json"
"$bin/meshc" "$model" --mesh "$mesh" --layout "$layout" \
  -o "$work/mlp.mprog" --reference "$work/reference.json"
echo
echo "== meshrun mlp.mprog --devices 8 --steps 1   (one training step, synthetic data)"
"$bin/meshrun" "$work/mlp.mprog" --backend cpu --devices 8 --steps 1 \
  --dump-outputs "$work/run.json"
echo
echo "== that step on 8 devices against the reference interpreter (global program)"
python3 "$root/scripts/compare_outputs.py" "$work/run.json" "$work/reference.json"

digits="$root/data/digits"
echo
echo "== meshrun mlp.mprog --devices 8 --steps 800 on the digits (1,437 train / 360 held out)"
"$bin/meshrun" "$work/mlp.mprog" --backend cpu --devices 8 --steps 800 \
  --input x="$digits/train_x.npy" --input labels="$digits/train_labels.npy" \
  --eval-input x="$digits/test_x.npy" --eval-input labels="$digits/test_labels.npy" \
  --eval-every 200 --csv "$work/loss.csv" --plot "$build/mlp-loss.svg"
echo "(loss curve: $build/mlp-loss.svg)"
