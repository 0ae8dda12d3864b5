#!/usr/bin/env bash
# The main job, end to end on a fresh machine: installs what is missing,
# builds, then compiles the MLP example for a 2x4 mesh (data parallel over
# 'b', hidden units split over 'm') and shows what meshc makes of it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MESHC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"
meshc="$build/bin/meshc"
model="$root/examples/mlp/mlp.mtf"
mesh="b:2;m:4"
layout="batch:b;hidden:m"

echo
echo "== meshc examples/mlp/mlp.mtf --mesh \"$mesh\" --layout \"$layout\" --explain"
"$meshc" "$model" --mesh "$mesh" --layout "$layout" --explain
echo
echo "== meshc examples/mlp/mlp.mtf --mesh \"$mesh\" --layout \"$layout\" --emit=mtf"
"$meshc" "$model" --mesh "$mesh" --layout "$layout" --emit=mtf
