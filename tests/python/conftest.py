"""Fixtures of the Python package's tests (docs/python.md, docs/testing.md).

ctest runs each test file with the package built in the build tree first on
PYTHONPATH and MESHC_BIN naming the build's bin/ (meshc and meshrun, whose
results the package must equal)."""

import os
import pathlib
import subprocess

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp" / "mlp.mtf"
DIGITS = ROOT / "data" / "digits"


def bin_path(tool: str) -> str:
    directory = os.environ.get("MESHC_BIN", str(ROOT / "build" / "bin"))
    return os.path.join(directory, tool)


def run_tool(tool: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([bin_path(tool), *args], capture_output=True,
                          text=True, check=False)


@pytest.fixture(scope="session")
def digits():
    """The digits set (scripts/fetch_data.sh): train and test arrays."""
    if not (DIGITS / "train_x.npy").exists():
        pytest.skip("no data/digits (scripts/fetch_data.sh)")
    return {
        "train": {"x": np.load(DIGITS / "train_x.npy"),
                  "labels": np.load(DIGITS / "train_labels.npy")},
        "test": {"x": np.load(DIGITS / "test_x.npy"),
                 "labels": np.load(DIGITS / "test_labels.npy")},
    }


@pytest.fixture
def tmp(tmp_path):
    return tmp_path
