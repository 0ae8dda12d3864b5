#!/usr/bin/env bash
# Installs every system package meshc needs on Debian bookworm, idempotently:
# packages already present are left alone, and apt runs only when something is
# missing. Needs root (or sudo). CUDA, NCCL and MPI stay optional for the build;
# the CUDA toolkit is not a Debian package and is used only where present.
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ python3
  # MLIR/LLVM 22 (libMLIR.so, mlir-tblgen, FileCheck, lit)
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # libraries and test framework
  nlohmann-json3-dev libgtest-dev libopenblas-dev zlib1g-dev
  # SIMD vectors and vectorized exp/log/tanh of the CPU backend
  libhwy-dev
  # oneDNN: bf16 GEMMs on CPUs with bf16 dot products (runtime/cpu/Bf16Gemm.h);
  # Debian's oneDNN is built with the OpenCL GPU runtime and its CMake package
  # requires OpenCL (only recommended, so --no-install-recommends skips it)
  libdnnl-dev ocl-icd-opencl-dev
  # MPI for multi-process runs
  libopenmpi-dev openmpi-bin
  # the libFuzzer targets (scripts/fuzz.sh): clang, libFuzzer, sanitizer runtimes
  clang-22 libclang-rt-22-dev
  # real data (scripts/fetch_data.sh) and the JAX venv (scripts/setup_python.sh)
  python3-numpy python3-venv
  # the Python package meshc (python/: its extension's headers)
  python3-dev
  # the schema of meshc --explain=json (tests/driver/explain-json.test)
  python3-jsonschema
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then
      sudo="sudo"
    else
      echo "setup: error: missing packages (${missing[*]}) and not root; run as root or install them" >&2
      exit 1
    fi
  fi

  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The JAX venv of the outside oracle (.venv/) and the real data sets (data/).
# Both are optional for the build: when one fails (no PyPI or Debian mirror),
# the tests that need it are skipped (lit features jax, digits, fortunes).
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if ! "$root/scripts/setup_python.sh"; then
  echo "setup: warning: no JAX venv; the oracle tests (REQUIRES: jax) will be skipped" >&2
fi
if ! "$root/scripts/fetch_data.sh"; then
  echo "setup: warning: no data sets; the tests that need data/ will be skipped" >&2
fi
