#!/usr/bin/env bash
# The main job, end to end on a fresh machine: installs what is missing,
# builds, compiles the MLP example for a 2x4 mesh (data parallel over 'b',
# hidden units split over 'm'), shows what meshc made of it, runs it on 8 CPU
# virtual devices and checks the result against the reference interpreter.
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
echo "== meshc ... --emit=mtf   (the model with every tensor's layout)"
"$bin/meshc" "$model" --mesh "$mesh" --layout "$layout" --emit=mtf 2>/dev/null
echo
echo "== meshc ... -o mlp.mprog --reference reference.json"
"$bin/meshc" "$model" --mesh "$mesh" --layout "$layout" \
  -o "$work/mlp.mprog" --reference "$work/reference.json"
echo
echo "== meshrun mlp.mprog --backend cpu --devices 8 --steps 3"
"$bin/meshrun" "$work/mlp.mprog" --backend cpu --devices 8 --steps 3 \
  --dump-outputs "$work/run.json"
echo
echo "== the 8-device run against the reference interpreter (global program)"
python3 "$root/scripts/compare_outputs.py" "$work/run.json" "$work/reference.json"
