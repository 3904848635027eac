"""Inside nbeval.data imports point one way (readers -> model -> ... -> patterns), and the contract
that says so would catch the old model <-> readers cycle."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "nbeval" / "data"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _data_contract() -> dict:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c.get("containers") == ["nbeval.data"])


def test_every_data_module_has_its_place_in_the_contract() -> None:
    listed = {name.strip() for layer in _data_contract()["layers"] for name in layer.split("|")}
    modules = {p.stem for p in DATA.glob("*.py") if p.stem != "__init__"}
    assert modules == listed, "add new modules of nbeval/data/ to the layers in pyproject.toml"


def test_the_model_never_imports_the_readers() -> None:
    tree = ast.parse((DATA / "model.py").read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "nbeval.data.readers" not in imported


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is installed with the dev extra")
def test_data_contract_catches_the_model_importing_the_readers(tmp_path: Path) -> None:
    # A copy of the package where the model imports the readers inside a function, as it once did.
    shutil.copytree(ROOT / "nbeval", tmp_path / "nbeval", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    model = tmp_path / "nbeval" / "data" / "model.py"
    upward = "\n\ndef _upward():\n    from nbeval.data.readers import load\n"
    model.write_text(model.read_text(encoding="utf-8") + upward, encoding="utf-8")
    run = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert run.returncode != 0
    assert "nbeval.data.model is not allowed to import nbeval.data.readers" in run.stdout
    assert "nbeval.data inside" in run.stdout


def test_names_that_moved_are_still_importable_from_where_they_were() -> None:
    from nbeval.data import model, readers

    for name in (
        "Chunk",
        "Relationship",
        "Row",
        "Test",
        "TestCase",
        "derive_key",
        "is_missing",
        "DEFAULT_MODEL_KEY",
        "ROW_FIELDS",
    ):
        assert getattr(model, name) is not None, name
    for name in readers.__all__:
        assert callable(getattr(readers, name)), name
    assert callable(readers._is_dataframe)  # nbeval.engine imports it
