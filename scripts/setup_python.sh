#!/usr/bin/env bash
# Installs JAX (CPU) into a virtual environment at .venv/ in the repository,
# for the outside oracle (tests/oracle/, docs/testing.md), and what the
# Python package meshc builds and tests with (nanobind, scikit-build-core,
# pytest; docs/python.md). Idempotent: does nothing when they all import.
# Needs the Debian packages python3, python3-venv and python3-dev
# (scripts/setup.sh installs them) and PyPI; the first run downloads about
# 100 MB of wheels.
#
# The lit config finds this interpreter (substitution %jaxpython, feature
# `jax`); CMake builds the package meshc for it (python/CMakeLists.txt).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"

# Pinned versions that support Python 3.11 (Debian bookworm's python3).
requirements=(
  "jax[cpu]==0.6.2"
  "jaxlib==0.6.2"
  "numpy==2.2.6"
  "nanobind==2.9.2"
  "scikit-build-core==0.11.6"
  "pytest==9.2.0"
)

if [ -x "$venv/bin/python" ] &&
   version="$("$venv/bin/python" -c 'import jax, nanobind, scikit_build_core, pytest; print(jax.__version__)' 2>/dev/null)"; then
  echo "setup_python: JAX $version, nanobind, scikit-build-core and pytest present in .venv"
  exit 0
fi

# Debian's interpreter, not whatever `python3` is first on PATH (pyenv and the
# like), so the venv is the same on every machine.
python=/usr/bin/python3
if [ ! -x "$python" ]; then
  echo "setup_python: error: $python not found; install the Debian package python3" >&2
  exit 1
fi

if [ ! -x "$venv/bin/python" ]; then
  echo "setup_python: creating $venv"
  if ! "$python" -m venv "$venv"; then
    echo "setup_python: error: '$python -m venv' failed; install the Debian package python3-venv" >&2
    rm -rf "$venv"
    exit 1
  fi
fi

echo "setup_python: installing ${requirements[*]} into .venv (PyPI)"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "${requirements[@]}"; then
  echo "setup_python: error: pip could not install ${requirements[*]} from PyPI" >&2
  echo "setup_python: (is PyPI reachable? delete .venv/ and run again to start over)" >&2
  exit 1
fi

if ! "$venv/bin/python" -c 'import jax, jax.numpy as jnp; jnp.zeros(1).block_until_ready()'; then
  echo "setup_python: error: JAX was installed but does not import or run" >&2
  exit 1
fi
echo "setup_python: JAX $("$venv/bin/python" -c 'import jax; print(jax.__version__)') ready in .venv"
