#!/usr/bin/env bash
# The test suite under a sanitizer, in a build directory of its own:
#
#   scripts/sanitize.sh address [CTEST-ARGS...]   AddressSanitizer + UBSan
#   scripts/sanitize.sh thread  [CTEST-ARGS...]   ThreadSanitizer
#
# Scope (SANITIZE_SCOPE): "runtime" (the default: the runtime, its unit
# tests and the MPI tests, built without MLIR, as on a GPU machine) or "all"
# (the compiler too, and every lit test). Environment: MESHC_SANITIZE_DIR
# (default build-SANITIZER[-all]), JOBS (default nproc).
#
# A report stops the test that made it (halt_on_error) and fails it: the
# ctest summary lists what to look at, with the report in its output.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kind="${1:?usage: sanitize.sh address|thread [CTEST-ARGS...]}"
shift
scope="${SANITIZE_SCOPE:-runtime}"
case "$kind" in
  address) flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined" ;;
  thread) flags="-fsanitize=thread" ;;
  *) echo "sanitize.sh: unknown sanitizer '$kind' (address|thread)" >&2; exit 2 ;;
esac
# The compiler's MLIR-heavy objects build at -O1 with line tables only
# (what the sanitizers' docs suggest): with -O2 -g the scope-all build
# took over two hours on two cores.
opt="-O2 -g"
case "$scope" in
  runtime) compiler=OFF ;;
  all) compiler=ON opt="-O1 -g1" ;;
  *) echo "sanitize.sh: SANITIZE_SCOPE='$scope' is neither runtime nor all" >&2; exit 2 ;;
esac
suffix="$kind"
[[ $scope == all ]] && suffix="$kind-all"
build="${MESHC_SANITIZE_DIR:-$root/build-$suffix}"
jobs="${JOBS:-$(nproc)}"

cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="$opt -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$opt -DNDEBUG" \
  -DMESHC_BUILD_COMPILER="$compiler" -DMESHC_ENABLE_CUDA=OFF \
  -DMESHC_BUILD_PYTHON=OFF \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DCMAKE_C_FLAGS="$flags -fno-omit-frame-pointer" \
  -DCMAKE_CXX_FLAGS="$flags -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" > /dev/null
ninja -C "$build" -j "$jobs"

# Leaks are reported at exit; OpenBLAS's and Open MPI's own allocations
# that live until exit are not ours (suppressed by name).
# allow_user_poisoning=0: LLVM's BumpPtrAllocator, inlined into our
# instrumented code, poisons slabs that Debian's uninstrumented libMLIR then
# allocates from without unpoisoning (a false use-after-poison; scope all).
export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:detect_leaks=1:abort_on_error=0:allow_user_poisoning=0}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$root/scripts/sanitize.supp:print_suppressions=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$root/scripts/sanitize-thread.supp}"
cd "$build"
# The tests under mpirun (ctest label "mpi", tests/CMakeLists.txt) run
# without leak checks: Open MPI's plugins leave their allocations to the exit
# and are unloaded by then, so their reports name no module a suppression
# could match.
status=0
ctest --output-on-failure -j "$jobs" -LE mpi "$@" || status=1
ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0" \
  ctest --output-on-failure -j "$jobs" -L mpi "$@" || status=1
exit "$status"
