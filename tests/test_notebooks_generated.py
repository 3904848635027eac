"""The committed tutorials are what scripts/make_notebooks.py generates from their sources in
notebooks/src/ (one percent-format file per notebook): the sources are the truth, so an edit made
to a .ipynb by hand (or a source edit never regenerated) fails here.

Compared: the set of notebooks, the notebook metadata and format version, and per cell its type,
id, source and metadata (tags). Outputs and execution counts are not: the script records the
checked cells' printed output by running the notebooks, which nbval compares on its own.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "make_notebooks.py"
REGENERATE = ".venv/bin/python scripts/make_notebooks.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_notebooks", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE = _script()


def _cells(nb) -> list[dict]:
    return [
        {"cell_type": c.cell_type, "id": c.get("id"), "source": c.source, "metadata": dict(c.metadata)}
        for c in nb.cells
    ]


def test_every_committed_notebook_is_generated_and_every_generated_one_committed() -> None:
    committed = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    hint = f"one source notebooks/src/NAME.py per notebook NAME.ipynb; regenerate with {REGENERATE}"
    assert committed == sorted(MAKE.SOURCES), hint
    assert all(path.parent == ROOT / "notebooks" / "src" for path in MAKE.SOURCES.values())


@pytest.mark.parametrize("name", sorted(MAKE.SOURCES))
def test_committed_notebook_equals_what_the_script_generates(name: str) -> None:
    generated = MAKE.generate(name)
    committed = nbformat.read(ROOT / "notebooks" / name, as_version=nbformat.NO_CONVERT)
    source = MAKE.SOURCES[name].relative_to(ROOT)
    hint = f"notebooks/{name} differs from {source}: edit the source, then run {REGENERATE}"
    assert (committed.nbformat, committed.nbformat_minor) == (generated.nbformat, generated.nbformat_minor), hint
    assert dict(committed.metadata) == dict(generated.metadata), hint
    got, want = _cells(committed), _cells(generated)
    for i, (have, should) in enumerate(zip(got, want, strict=False)):
        assert have == should, f"{hint} (cell {i}, id {should['id']})"
    assert len(got) == len(want), hint


def test_generate_writes_nothing_and_out_writes_elsewhere(tmp_path: Path) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in (ROOT / "notebooks").glob("*.ipynb")}
    name = sorted(MAKE.SOURCES)[0]
    nb = MAKE.generate(name)
    assert all(not c.get("outputs") for c in nb.cells)  # not run: every output empty
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--no-run", "--out", str(tmp_path), name],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert _cells(nbformat.read(tmp_path / name, as_version=4)) == _cells(nb)
    assert {p.name: p.stat().st_mtime_ns for p in (ROOT / "notebooks").glob("*.ipynb")} == before
