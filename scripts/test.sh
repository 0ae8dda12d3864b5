#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, then runs every test
# (gtest suites and each lit test as its own ctest test) in one ctest run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MESHC_BUILD_DIR:-$root/build}"

"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
