#!/usr/bin/env bash
# One pass of the GPU check (closed issue 16) sized for a short device lease:
# build, the kernel conformance suite (every step kind on cuda and cpu) and
# the CUDA unit tests, the GPU layout sweep, compute-sanitizer, and the
# benchmarks, each phase under its own time limit, each writing its log to
# OUT as it goes (so a phase that runs out of time still reports the others).
#
# usage: bench/gpu/device_check.sh OUT [STAGED]   (on the GPU machine, in the
#        repository root, with STAGED = bench/gpu/staged carried along)
# Environment: PHASES (default "build unit sweep memcheck bench"; also
# racecheck, loss, trace, torch), the limits T_<PHASE> in seconds, STEPS (default 5),
# MEMCHECK_FILTER (the unit tests memcheck runs in both binaries, a
# --gtest_filter; default every CUDA test: cuda/*:Cuda*:*/CudaSession.*).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$(mkdir -p "${1:?usage: device_check.sh OUT [STAGED]}" && cd "$1" && pwd)"
staged="${2:-$root/bench/gpu/staged}"
build="${BUILD_DIR:-$root/build-gpu}"
export BUILD_DIR="$build" STEPS="${STEPS:-5}"
phases="${PHASES:-build unit sweep memcheck bench}"
summary="$out/summary.txt"

phase() {  # phase NAME LIMIT COMMAND...
  local name="$1" limit="$2" start rc
  shift 2
  start=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" > "$out/$name.log" 2>&1
  rc=$?
  echo "$name: rc=$rc in $(( $(date +%s) - start )) s" | tee -a "$summary"
  return $rc
}

{
  echo "device_check on $(hostname), $(date -u)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  nvcc --version | tail -1
  cmake --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1
  nproc
} > "$summary" 2>&1

for p in $phases; do
  case "$p" in
    build)
      TARGETS="meshrun MeshcCudaTests MeshcConformanceTests gemm_bench" \
        phase build "${T_BUILD:-300}" "$root/bench/gpu/run_all.sh" gpu-build "$staged" ||
        { tail -40 "$out/build.log"; exit 1; } ;;
    unit)
      phase unit "${T_UNIT:-120}" bash -c "'$build/tests/unit/conformance/MeshcConformanceTests' \
        --gtest_brief=1 && '$build/tests/unit/cuda/MeshcCudaTests' --gtest_brief=1" ;;
    sweep)
      phase sweep "${T_SWEEP:-150}" "$root/bench/gpu/sweep.sh" "$staged/sweep" \
        "$build/bin/meshrun" ;;
    memcheck)
      phase memcheck "${T_MEMCHECK:-120}" bash -c "for t in conformance/MeshcConformanceTests \
        cuda/MeshcCudaTests; do compute-sanitizer --tool memcheck --leak-check full \
        --error-exitcode 3 '$build/tests/unit/'\$t --gtest_brief=1 \
        --gtest_filter='${MEMCHECK_FILTER:-cuda/*:Cuda*:*/CudaSession.*}' || exit \$?; done" ;;
    racecheck)
      phase racecheck "${T_RACECHECK:-120}" compute-sanitizer --tool racecheck \
        --error-exitcode 3 "$build/tests/unit/cuda/MeshcCudaTests" --gtest_brief=1 ;;
    loss)
      # The block's first losses in fp32 on 1 and 8 (2x4) devices, to compare
      # with the CPU backend's (meshrun block_1x1.mprog --steps 3 here).
      phase loss "${T_LOSS:-120}" bash -c "for p in block_1x1 block_2x4; do
        echo \$p; '$build/bin/meshrun' '$staged/'\$p.mprog --backend cuda \
          --steps 3; done" ;;
    trace)
      # Where a step's time goes: every step waited for (MESHC_CUDA_SYNC=1)
      # and traced, the 1x1 block in tf32 (bench/gpu/trace_by_kind.py sums it).
      phase trace "${T_TRACE:-120}" env MESHC_CUDA_SYNC=1 MESHC_CUDA_TF32=1 \
        "$build/bin/meshrun" "$staged/block_1x1.mprog" --backend cuda --steps 3 \
        --quiet --trace "$out/trace_block_1x1.json" ;;
    torch)
      # PyTorch eager and torch.compile on the same block, fp32, tf32, bf16.
      phase torch "${T_TORCH:-200}" bash -c "for p in fp32 tf32 bf16; do
        python3 '$root/bench/gpu/torch_block.py' --steps $STEPS --precision \$p; done" ;;
    bench)
      phase bench "${T_BENCH:-200}" "$root/bench/gpu/run_all.sh" gpu-bench "$staged" ;;
    *) echo "device_check: unknown phase '$p'" >> "$summary" ;;
  esac
done
cat "$summary"
