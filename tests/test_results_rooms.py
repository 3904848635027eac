"""Inside nbeval.results the rooms import downward (runs -> live -> result -> reporting ->
leaderboard -> statistics -> storage -> ...): every room and core module has its place in the
contract that says so (pyproject.toml), and the contract breaks on an import pointing up."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "nbeval" / "results"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _results_contract() -> dict:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c.get("containers") == ["nbeval.results"])


def test_every_room_and_core_module_has_its_place_in_the_contract() -> None:
    names = [name.strip() for layer in _results_contract()["layers"] for name in layer.replace(":", "|").split("|")]
    required = {name for name in names if not name.startswith("(")}
    optional = {name.strip("()") for name in names if name.startswith("(")}  # may not exist yet
    children = {p.stem for p in RESULTS.glob("*.py") if p.stem != "__init__"}
    children |= {p.parent.name for p in RESULTS.glob("*/__init__.py")}
    assert {"storage", "statistics", "reporting", "runs", "result"} <= children
    assert required <= children, f"the contract names modules that are gone: {sorted(required - children)}"
    unplaced = children - required - optional
    assert not unplaced, f"give each new module of nbeval/results/ its layer in pyproject.toml: {sorted(unplaced)}"


def test_the_only_exception_is_loading_building_the_result() -> None:
    assert _results_contract().get("ignore_imports") == ["nbeval.results.storage.loading -> nbeval.results.result"]


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is installed with the dev extra")
def test_results_contract_catches_statistics_importing_reporting(tmp_path: Path) -> None:
    # A copy of the package where a statistics module asks reporting for something, inside a function.
    shutil.copytree(ROOT / "nbeval", tmp_path / "nbeval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    stats = tmp_path / "nbeval" / "results" / "statistics" / "stats.py"
    upward = "\n\ndef _upward():\n    from nbeval.results.reporting.numbers import format_value\n"
    stats.write_text(stats.read_text(encoding="utf-8") + upward, encoding="utf-8")
    run = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode != 0
    assert "nbeval.results.statistics is not allowed to import nbeval.results.reporting" in run.stdout
