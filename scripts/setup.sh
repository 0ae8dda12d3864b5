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
  nlohmann-json3-dev libgtest-dev libopenblas-dev
  # MPI for multi-process runs
  libopenmpi-dev openmpi-bin
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

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
