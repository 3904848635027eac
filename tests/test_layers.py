"""The layers hold: the core never imports the notebook kit, and the import-linter contract in
pyproject.toml is green and would catch an upward import (it is not vacuous)."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _imported_modules(path: Path) -> list[tuple[int, str]]:
    """Every module ``path`` imports, at any depth (function-level and TYPE_CHECKING imports too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_no_core_module_imports_the_notebook_kit() -> None:
    # nbeval.widgets lives in widgets/, outside import-linter's graph of nbeval/, so this is checked here.
    offenders = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted((ROOT / "nbeval").rglob("*.py"))
        for line, name in _imported_modules(path)
        if name == "nbeval.widgets" or name.startswith("nbeval.widgets.")
    ]
    assert offenders == []


def test_an_installed_kit_is_found_through_the_renderer_entry_points() -> None:
    # In a fresh process that never imports nbeval.widgets, the core still finds the kit's renderers.
    code = (
        "import sys; from nbeval.results.renderers import get_renderer; "
        "print(get_renderer('mimebundle').__module__, get_renderer('report_charts').__name__)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert run.stdout.split() == ["nbeval.widgets.display", "report_charts"]


def test_renderers_registered_by_hand_win_and_can_be_removed() -> None:
    from nbeval.results import renderers

    def mine(result: object) -> dict[str, str]:
        return {"text/plain": "mine"}

    before = renderers.get_renderer("mimebundle")
    renderers.register_renderer("mimebundle", mine)
    try:
        assert renderers.get_renderer("mimebundle") is mine
    finally:
        renderers.unregister_renderer("mimebundle")
        if before is not None:
            renderers.register_renderer("mimebundle", before)
    assert renderers.get_renderer("mimebundle") is before


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is installed with the dev extra")
def test_layers_contract_is_kept() -> None:
    run = subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is installed with the dev extra")
def test_layers_contract_catches_an_upward_import(tmp_path: Path) -> None:
    # A copy of the package where the data model (the leaf) imports the engine: the contract must break.
    shutil.copytree(ROOT / "nbeval", tmp_path / "nbeval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    model = tmp_path / "nbeval" / "data" / "model.py"
    model.write_text(
        model.read_text(encoding="utf-8") + "\n\ndef _upward():\n    from nbeval.engine import evaluate\n",
        encoding="utf-8",
    )
    run = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode != 0
    assert "nbeval.data.model -> nbeval.engine" in run.stdout
