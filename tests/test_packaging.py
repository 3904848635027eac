"""The library stays thin and its public surface is complete."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import nbeval

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "sentence_transformers", "ragas", "openai", "ipywidgets", "altair", "pandas",
         "detoxify", "nltk", "rouge_score", "numpy")


def test_import_nbeval_pulls_in_nothing_heavy() -> None:
    code = ("import sys, nbeval; print(' '.join(m for m in %r if m in sys.modules))" % (HEAVY,))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == ""


def test_every_export_resolves_and_all_is_complete() -> None:
    for name in nbeval.__all__:
        assert getattr(nbeval, name) is not None, name
    public = {n for n in nbeval._EXPORTS}
    assert public | {"__version__"} == set(nbeval.__all__)


def _packages(base: str, folder: Path) -> set[str]:
    return {".".join([base, *p.parent.relative_to(folder).parts]) for p in folder.rglob("__init__.py")}


def test_pyproject_lists_every_package() -> None:
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = _packages("nbeval", ROOT / "nbeval") | _packages("nbeval.widgets", ROOT / "widgets")
    assert found <= listed, f"add to pyproject packages: {sorted(found - listed)}"


def test_widget_kit_is_nbeval_widgets_never_a_bare_module() -> None:
    out = subprocess.run([sys.executable, "-c", "import widgets"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode != 0
    assert "nbeval.widgets" in out.stderr or "No module named 'widgets'" in out.stderr
