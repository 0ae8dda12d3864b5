"""examples/python: each runs as a user would run it and says what it
promises (docs/python.md)."""

import os
import pathlib
import subprocess
import sys

import pytest

from conftest import DIGITS, ROOT

EXAMPLES = ROOT / "examples" / "python"


def run_example(name, *args):
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args],
                          capture_output=True, text=True, check=False,
                          env=dict(os.environ))


def test_train_mlp_reaches_97_percent(digits):
    result = run_example("train_mlp.py")
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    word, figure = last.split()
    assert word == "accuracy"
    assert float(figure) >= 0.97, result.stdout


def test_train_charlm_runs_and_learns():
    if not (ROOT / "data" / "fortunes" / "train_tokens.npy").exists():
        pytest.skip("no data/fortunes (scripts/fetch_data.sh)")
    result = run_example("train_charlm.py", "--steps", "20",
                         "--eval-every", "20", "--mesh", "b:2;m:2")
    assert result.returncode == 0, result.stderr
    held_out = float(result.stdout.strip().splitlines()[-1].split()[-1])
    assert held_out < 4.0  # below the uniform guess, log(64) = 4.16


def test_check_jax_agrees():
    pytest.importorskip("jax")
    result = run_example("check_jax.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agree:" in result.stdout
