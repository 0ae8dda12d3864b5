"""The package scripts/build.sh installs into .venv (scikit-build-core,
pyproject.toml) is this tree's: it imports from anywhere without PYTHONPATH
and holds the sources' Python modules."""

import os
import subprocess
import sys

import pytest

from conftest import MLP, ROOT


def test_the_installed_package_is_this_trees(tmp):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = subprocess.run(
        [sys.executable, "-c",
         "import meshc, os; print(os.path.dirname(meshc.__file__)); "
         f"print(meshc.compile({str(MLP)!r}, mesh='b:2', layout='batch:b'))"],
        capture_output=True, text=True, cwd=tmp, env=env, check=False)
    if "No module named 'meshc'" in probe.stderr:
        pytest.skip("meshc is not installed in this Python "
                    "(scripts/build.sh installs it into .venv)")
    assert probe.returncode == 0, probe.stderr
    installed, program = probe.stdout.splitlines()
    assert "site-packages" in installed
    assert program.endswith("on 2 devices>")
    for name in ("__init__.py", "_compile.py", "_session.py", "_meshc.pyi"):
        with open(os.path.join(installed, name), encoding="utf-8") as file:
            copy = file.read()
        with open(ROOT / "python" / "meshc" / name, encoding="utf-8") as file:
            assert copy == file.read(), \
                f"{installed}/{name} is stale: run scripts/build.sh"
