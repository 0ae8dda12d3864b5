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

# The Python package meshc into the project's .venv (docs/python.md): built
# by scikit-build-core (pyproject.toml) in a build tree of its own,
# $build/wheel, incremental after the first time. Skipped, with a warning,
# where the venv lacks what it needs (scripts/setup_python.sh failed).
venv_python="$root/.venv/bin/python"
if [ -x "$venv_python" ] &&
   "$venv_python" -c 'import nanobind, scikit_build_core' 2>/dev/null; then
  echo "build: installing the Python package meshc into .venv ($build/wheel)"
  "$venv_python" -m pip install --quiet --disable-pip-version-check \
    --no-build-isolation --no-deps \
    --config-settings=build-dir="$build/wheel" "$root"
else
  echo "build: warning: .venv has no nanobind/scikit-build-core; the Python package meshc is not installed" >&2
fi
