"""``python -m nbeval`` is the ``nbeval`` command (for an environment whose scripts are not on PATH)."""

from __future__ import annotations

import subprocess
import sys

import nbeval


def test_python_m_nbeval_runs_the_command() -> None:
    version = subprocess.run(
        [sys.executable, "-m", "nbeval", "--version"], capture_output=True, text=True, check=False, cwd="/"
    )
    assert version.returncode == 0, version.stderr
    assert nbeval.__version__ in version.stdout
    wrong = subprocess.run(
        [sys.executable, "-m", "nbeval", "rnu"], capture_output=True, text=True, check=False, cwd="/"
    )
    assert wrong.returncode == 2 and "invalid choice: 'rnu'" in wrong.stderr
