"""Shared checks of refused input: a tampered result folder, a bad file given to ``nbeval run``."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from nbeval.errors import DataError


def tampered_folder_error(saved: Path, tamper: Callable[[Path], None], tmp_path: Path) -> str:
    """The one-line :class:`DataError` of loading a copy of ``saved`` after ``tamper``; the
    untouched copy must load first."""
    folder = tmp_path / "r"
    shutil.copytree(saved, folder)
    nbeval.load_result(folder)  # untouched, it loads
    tamper(folder)
    with pytest.raises(DataError) as info:
        nbeval.load_result(folder)
    text = str(info.value)
    assert "\n" not in text, text
    return text


def run_error_line(path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line ``nbeval run FILE -e exact_match`` prints for a bad file, after checking the
    exit status is 2 and no traceback was printed."""
    code = main(["run", str(path), "-e", "exact_match", "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]
