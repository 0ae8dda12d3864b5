#!/usr/bin/env bash
# Installs what is missing, configures (once) and builds meshc into build/
# (or $MESHC_BUILD_DIR). Safe to run again: every step is incremental.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MESHC_BUILD_DIR:-$root/build}"

"$root/scripts/setup.sh"

if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
cmake --build "$build" -j "$(nproc)"
