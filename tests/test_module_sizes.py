"""No module of the library or the notebook kit passes 500 lines: one that grows past it is split
(issue 28; design.md: "split a module that passes ~500")."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 500
MODULES = sorted([*(ROOT / "nbeval").rglob("*.py"), *(ROOT / "widgets").rglob("*.py")])


def test_the_modules_are_found() -> None:
    assert len(MODULES) > 100 and ROOT / "nbeval" / "engine" / "run.py" in MODULES


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_passes_500_lines(path: Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines; split it (at most {MAX_LINES})"
