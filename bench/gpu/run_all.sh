#!/usr/bin/env bash
# The GPU checks and benchmarks of the CUDA backend (docs/cuda.md), in two
# halves, because the GPU machine has CUDA, CMake, ninja, PyTorch and JAX but
# no MLIR (so no meshc) and no package manager:
#
#   bench/gpu/run_all.sh stage [DIR]   here, with meshc built: compiles the
#       benchmark programs and the layout sweeps into DIR (default
#       bench/gpu/staged) and stages the build dependencies (stage_deps.sh).
#   bench/gpu/run_all.sh gpu [DIR]     on the GPU machine, in the repository
#       root with DIR carried along: builds the runtime alone with CUDA
#       (build-gpu), runs the kernel conformance suite (every step kind on
#       cuda and cpu) and the CUDA unit tests, the GPU layout sweep and the
#       benchmarks, and writes everything to DIR/results.txt.
#   gpu-build, gpu-test, gpu-bench     the three parts of `gpu` one by one
#       (each fits a 10-minute command).
#
# Environment: MESHC_BUILD_DIR (stage: the build with bin/meshc, default
# build), PYTHON (gpu: the Python with torch, default python3), STEPS
# (benchmark steps, default 10), PROGRAMS (gpu-bench: the staged block
# programs timed, default block_1x1 block_1x1_bf16 block_2x4), TORCH=0
# (gpu-bench: skip the PyTorch peers), CUDA_ARCH (default 90), BUILD_DIR (gpu: the
# runtime-only build, default build-gpu), TARGETS (gpu-build: the ninja
# targets, default meshrun MeshcConformanceTests MeshcCudaTests
# MeshcRuntimeTests gemm_bench),
# MESHC_STAGED_DEPS=1 (gpu-build:
# use the staged dependencies even where the system has its own).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$root/bench/gpu"
mode="${1:?usage: run_all.sh stage|gpu|gpu-build|gpu-test|gpu-bench [DIR]}"
dir="$(mkdir -p "${2:-$here/staged}" && cd "${2:-$here/staged}" && pwd)"
build="${BUILD_DIR:-$root/build-gpu}"
python="${PYTHON:-python3}"
steps="${STEPS:-10}"

stage() {
  local meshc="${MESHC_BUILD_DIR:-$root/build}/bin/meshc"
  [[ -x "$meshc" ]] || { echo "run_all.sh: $meshc not found (set MESHC_BUILD_DIR)" >&2; exit 1; }
  "$meshc" "$here/block_large.mtf" -o "$dir/block_1x1.mprog"
  "$meshc" "$here/block_large.mtf" --precision=bf16 -o "$dir/block_1x1_bf16.mprog"
  "$meshc" "$here/block_large.mtf" --mesh "b:2;m:4" \
    --layout "batch:b;heads:m;d_ff:m" -o "$dir/block_2x4.mprog"
  "$meshc" "$here/gemm_large.mtf" -o "$dir/gemm.mprog"
  rm -rf "$dir/sweep"
  "$python" "$here/make_sweep.py" "$meshc" "$root/examples/mlp/mlp.mtf" \
    "a:2;b:4" batch,io,hidden,classes "$dir/sweep/mlp_2x4"
  "$python" "$here/make_sweep.py" "$meshc" "$root/examples/transformer/block.mtf" \
    "a:2;b:2" batch,heads,d_ff "$dir/sweep/transformer_2x2"
  # Unequal blocks (device weights), moved by variable-count collectives:
  # all-gathers and slices in the block, all-to-alls and reduce-scatters in
  # unequal-moves.mtf.
  "$python" "$here/make_sweep.py" "$meshc" "$root/examples/transformer/block.mtf" \
    "a:3;b:2" batch,heads,d_ff "$dir/sweep/transformer_3x2_weights" --axis-weights "a=1,2,3"
  "$python" "$here/make_sweep.py" "$meshc" "$root/tests/runtime/Inputs/unequal-moves.mtf" \
    "m:3" n,batch "$dir/sweep/moves_3_weights" --axis-weights "m=1,2,3"
  # A loop step (--repeat=loop): the body's buffers shifted per iteration.
  "$python" "$here/make_sweep.py" "$meshc" "$root/tests/sweep/Inputs/loop-lm.mtf" \
    "a:2;b:2" batch,heads,d_ff "$dir/sweep/loop_lm_2x2" --repeat=loop
  # Mixed precision: bf16 storage, fused kernels reading and writing 16-bit
  # elements, 16-bit windows; held to the bf16 sweep's tolerance (sweep.sh
  # reads a sweep's rtol file; docs/testing.md derives the figure).
  "$python" "$here/make_sweep.py" "$meshc" "$root/examples/transformer/block.mtf" \
    "a:2;b:2" batch,heads,d_ff "$dir/sweep/transformer_2x2_bf16" --precision=bf16
  echo 0.125 > "$dir/sweep/transformer_2x2_bf16/rtol"
  # Recomputed repeats and sharded optimizer state.
  "$python" "$here/make_sweep.py" "$meshc" "$root/examples/transformer/block.mtf" \
    "a:2;b:2" batch,heads,d_ff "$dir/sweep/transformer_2x2_remat_zero" \
    --remat=repeat --shard-optimizer
  # Pipelines (layers over an axis: collective_permute, ticks as a loop) and
  # microbatches; 6 layers on 4 stages uneven.
  "$python" "$here/make_sweep.py" "$meshc" "$root/tests/training/Inputs/pipeline-lm.mtf" \
    "p:2;b:2" layers,batch,heads "$dir/sweep/pipeline_lm_2x2" --only=layers: --microbatches 2 \
    --uneven
  "$python" "$here/make_sweep.py" "$meshc" "$root/tests/training/Inputs/pipeline-lm.mtf" \
    "p:4" layers,batch "$dir/sweep/pipeline_lm_4_uneven" --only=layers: --microbatches 4 --uneven
  "$here/stage_deps.sh" "$dir/deps"
  echo "run_all.sh: staged in $dir; on the GPU machine: bench/gpu/run_all.sh gpu $dir"
}

# CMake flags for what the GPU machine lacks, from the staged copies
# (MESHC_STAGED_DEPS=1: use them all, to try them on a machine that has
# the packages).
dependency_flags() {
  local deps="$dir/deps" flags=() force="${MESHC_STAGED_DEPS:-0}"
  if [[ $force == 1 ]] || ! [[ -f /usr/include/nlohmann/json.hpp ]]; then
    flags+=("-Dnlohmann_json_DIR=$deps/cmake/nlohmann_json")
  fi
  if [[ $force == 1 ]] || { ! compgen -G "/usr/include/*/openblas*/cblas.h" > /dev/null &&
     ! [[ -f /usr/include/openblas/cblas.h ]]; }; then
    flags+=("-DCMAKE_LIBRARY_PATH=$deps/lib" "-DCMAKE_INCLUDE_PATH=$deps/include"
            "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath,$deps/lib -Wl,-rpath-link,$deps/lib")
  fi
  if [[ $force == 1 ]] || ! [[ -f /usr/include/hwy/highway.h ]]; then
    flags+=("-Dhwy_DIR=$deps/cmake/hwy")
  fi
  if [[ $force == 1 ]] || ! [[ -f /usr/include/gtest/gtest.h ]]; then
    if ! [[ -d "$deps/gtest" ]]; then
      cmake -G Ninja -S "$deps/src/googletest" -B "$deps/gtest-build" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$deps/gtest" > /dev/null
      cmake --build "$deps/gtest-build" --target install > /dev/null
    fi
    flags+=("-DGTest_ROOT=$deps/gtest")
  fi
  printf '%s\n' "${flags[@]}"
}

gpu_build() {
  local flags=()
  mapfile -t flags < <(dependency_flags)
  cmake -G Ninja -S "$root" -B "$build" -DMESHC_BUILD_COMPILER=OFF \
    -DMESHC_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCH:-90}" "${flags[@]}"
  # shellcheck disable=SC2086
  ninja -C "$build" ${TARGETS:-meshrun MeshcConformanceTests MeshcCudaTests MeshcRuntimeTests gemm_bench}
}

gpu_test() {
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
  "$build/tests/unit/conformance/MeshcConformanceTests" --gtest_brief=1
  "$build/tests/unit/cuda/MeshcCudaTests" --gtest_brief=1
  "$here/sweep.sh" "$dir/sweep" "$build/bin/meshrun"
}

# `meshrun ... --quiet` prints "summary: N steps, mean X ms, median M ms, min Y ms".
min_ms() { sed -n 's/.*min \([0-9.]*\) ms.*/\1/p'; }

gpu_bench() {
  local meshrun="$build/bin/meshrun" summary program tf32
  local -A best
  for tf32 in 0 1; do
    for program in ${PROGRAMS:-block_1x1 block_1x1_bf16 block_2x4}; do
      summary="$(MESHC_CUDA_TF32=$tf32 "$meshrun" "$dir/$program.mprog" \
        --backend cuda --steps "$steps" --quiet 2>&1 | tail -1)"
      best[$program.$tf32]="$(echo "$summary" | min_ms)"
      echo "meshc $program tf32=$tf32: $summary; $("$python" "$here/flops.py" \
        "${best[$program.$tf32]:-0}" tf32)"
    done
    echo "meshc gemm 8192x4096x16384 tf32=$tf32: $(MESHC_CUDA_TF32=$tf32 \
      "$meshrun" "$dir/gemm.mprog" --backend cuda --steps "$steps" --quiet 2>&1 | tail -1)"
  done
  "$build/bin/gemm_bench" "$steps"
  # PyTorch fp32 against meshc fp32; tf32 and bf16 against meshc tf32 (meshc
  # has no bf16).
  [[ ${TORCH:-1} == 1 ]] || return 0
  for precision in fp32 tf32 bf16; do
    tf32=1
    [[ $precision == fp32 ]] && tf32=0
    "$python" "$here/torch_block.py" --steps "$steps" --precision "$precision" \
      ${best[block_1x1.$tf32]:+--meshc-ms "${best[block_1x1.$tf32]}"}
  done
}

case "$mode" in
  stage) stage ;;
  gpu-build) gpu_build ;;
  gpu-test) gpu_test ;;
  gpu-bench) gpu_bench ;;
  gpu)
    # The benchmarks run even when a test fails; the exit code tells.
    status=0
    {
      echo "run_all.sh gpu on $(hostname), $(date -u)"
      gpu_build
      gpu_test || status=1
      gpu_bench || status=1
      exit "$status"
    } 2>&1 | tee "$dir/results.txt" ;;
  *) echo "run_all.sh: unknown mode '$mode' (stage|gpu|gpu-build|gpu-test|gpu-bench)" >&2
     exit 2 ;;
esac
