#!/usr/bin/env bash
# libFuzzer targets (fuzz/, docs/testing.md "Fuzzing"):
#
#   scripts/fuzz.sh --list                 the targets, one per line
#   scripts/fuzz.sh TARGET SECONDS [ARGS]  fuzz TARGET for SECONDS (ARGS go to libFuzzer)
#   scripts/fuzz.sh all SECONDS [ARGS]     every target, SECONDS each
#
# Builds the targets with clang 22 and -fsanitize=fuzzer-no-link,address,undefined
# in a build directory of its own (MESHC_FUZZ_DIR, default build-fuzz; JOBS,
# default nproc). Each target's corpus (DIR/corpus/TARGET) starts from seed
# files of the repository (fuzz/seeds/TARGET and the examples, test inputs and
# presets listed below) and grows across runs; an input that crashes, leaks,
# times out (10 s) or trips a sanitizer is saved as DIR/findings/TARGET-* and
# the script exits non-zero. The last lines of each run give the executions.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
targets=(fuzz-mtf fuzz-mprog fuzz-npy fuzz-checkpoint-index fuzz-layout fuzz-machine)

describe() {
  case "$1" in
    fuzz-mtf) echo "the .mtf frontend through verification (importMtf, unrolled and as loops)" ;;
    fuzz-mprog) echo "the .mprog loader (parseProgram)" ;;
    fuzz-npy) echo ".npy input files (parseNpy)" ;;
    fuzz-checkpoint-index) echo "a checkpoint's index.json (parseCheckpointIndex)" ;;
    fuzz-layout) echo "mesh, layout and axis-weight strings, spec JSON, memory sizes" ;;
    fuzz-machine) echo "machine-profile JSON (parseMachineProfile)" ;;
  esac
}

if [[ "${1:-}" == --list ]]; then
  for target in "${targets[@]}"; do printf '%-22s %s\n' "$target" "$(describe "$target")"; done
  exit 0
fi
usage="usage: scripts/fuzz.sh --list | TARGET|all SECONDS [LIBFUZZER-ARGS...]"
target="${1:?$usage}"
seconds="${2:?$usage}"
shift 2
if [[ "$target" != all && -z "$(describe "$target")" ]]; then
  echo "fuzz.sh: unknown target '$target'; scripts/fuzz.sh --list names them" >&2
  exit 2
fi
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: SECONDS must be a positive whole number, got '$seconds'" >&2
  exit 2
fi
for tool in clang-22 clang++-22; do
  if ! command -v "$tool" > /dev/null; then
    echo "fuzz.sh: $tool not found; scripts/setup.sh installs it (clang-22, libclang-rt-22-dev)" >&2
    exit 2
  fi
done

build="${MESHC_FUZZ_DIR:-$root/build-fuzz}"
jobs="${JOBS:-$(nproc)}"
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g"
cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
  -DMESHC_BUILD_FUZZERS=ON -DMESHC_BUILD_TESTS=OFF -DMESHC_BUILD_RUNTIME=OFF \
  -DMESHC_ENABLE_CUDA=OFF -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" > /dev/null
mkdir -p "$build/logs"
if ! ninja -C "$build" -j "$jobs" "$([[ "$target" == all ]] && echo fuzzers || echo "$target")" \
    > "$build/logs/build.log" 2>&1; then
  grep -E 'error|FAILED' "$build/logs/build.log" | head -n 40 >&2
  echo "fuzz.sh: the build failed; $build/logs/build.log has all of it" >&2
  exit 1
fi

# Seed files from the repository, by target.
seeds() {
  case "$1" in
    fuzz-mtf) find "$root/examples" "$root/tests" -name '*.mtf' ;;
    fuzz-mprog) find "$root/tests" -name '*.mprog' -not -path '*/Output/*' ;;
    fuzz-machine) find "$root/runtime/core/cost/machines" -name '*.json' ;;
  esac
  if [[ -d "$root/fuzz/seeds/${1#fuzz-}" ]]; then
    find "$root/fuzz/seeds/${1#fuzz-}" -type f
  fi
}
dictionary() {
  case "$1" in
    fuzz-mtf) echo "-dict=$root/fuzz/dicts/mtf.dict" ;;
    fuzz-mprog | fuzz-checkpoint-index | fuzz-machine) echo "-dict=$root/fuzz/dicts/json.dict" ;;
  esac
}

# Runs one target; its whole output goes to DIR/logs/TARGET.log, the final
# statistics (or, on a finding, the report) to the terminal.
run() {
  local name="$1"
  shift
  local corpus="$build/corpus/$name" log="$build/logs/$name.log"
  mkdir -p "$corpus" "$build/findings" "$build/logs"
  seeds "$name" | while read -r file; do cp -n "$file" "$corpus/seed-$(basename "$file")"; done
  echo "fuzz.sh: $name for $seconds s ($(describe "$name")), log $log"
  # Leaks are checked (libFuzzer's -detect_leaks), with the suppressions
  # the sanitizer suite uses for the libraries' own allocations. LLVM's
  # BumpPtrAllocator poisons its slabs where our instrumented code inlines
  # it, and Debian's uninstrumented libMLIR then allocates from them without
  # unpoisoning: a false use-after-poison, so manual poisoning is ignored.
  local status=0
  ASAN_OPTIONS="allow_user_poisoning=0" \
  LSAN_OPTIONS="suppressions=$root/scripts/sanitize.supp:print_suppressions=0" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    "$build/fuzz/$name" "$corpus" $(dictionary "$name") -max_total_time="$seconds" \
      -timeout=10 -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$build/findings/$name-" "$@" > "$log" 2>&1 || status=$?
  if [[ $status -ne 0 ]]; then
    echo "fuzz.sh: $name FAILED (exit $status); the input is in $build/findings/:" >&2
    grep -v '^#' "$log" | tail -n 60 >&2
  else
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^Done ' "$log" || true
  fi
  return "$status"
}

status=0
if [[ "$target" == all ]]; then
  for name in "${targets[@]}"; do run "$name" "$@" || status=1; done
else
  run "$target" "$@" || status=1
fi
exit "$status"
