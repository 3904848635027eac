"""``%load_ext nbeval``: cheap, idempotent, undone by ``%unload_ext``; the magics guide's magics run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from tests.extension.conftest import Shell
from tests.test_packaging import HEAVY

ROOT = Path(__file__).resolve().parents[2]


def test_loading_imports_nothing_that_import_nbeval_does_not() -> None:
    code = """
import sys
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
import nbeval
before = set(sys.modules)
ip.run_line_magic("load_ext", "nbeval")
assert "nbeval" in ip.extension_manager.loaded
new = sorted(set(sys.modules) - before)
print(" ".join(new))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    new = run.stdout.split()
    assert [m for m in new if m.split(".")[0] in HEAVY] == []
    # the extension's own modules and the exception tree; besides them only IPython and the standard library
    ours = [m for m in new if m.split(".")[0] == "nbeval"]
    assert ours and all(m.startswith("nbeval.extension") or m == "nbeval.errors" for m in ours), ours
    others = {m.split(".")[0] for m in new if m.split(".")[0] != "nbeval"}
    assert others <= {"IPython", *sys.stdlib_module_names}, others


def test_load_ext_twice_and_unload(shell: Shell) -> None:
    ip = shell.ip
    assert shell.cell("%load_ext nbeval").success  # IPython: already loaded, nothing happens
    assert "nbeval" in ip.magics_manager.magics["line"]
    assert "nbeval_suite" in ip.magics_manager.magics["cell"]
    ip.run_line_magic("unload_ext", "nbeval")
    try:
        assert "nbeval" not in ip.magics_manager.magics["line"]
        assert "nbeval_suite" not in ip.magics_manager.magics["cell"]
        ran = shell.cell("%nbeval evaluators")
        assert not ran.success
    finally:
        ip.run_line_magic("load_ext", "nbeval")
    assert shell.cell("%nbeval show rouge").success


def _readme_magics() -> list[str]:
    """The lines of the ``ipython`` fence of the magics guide (the README's "In a notebook: magics"
    before issue 45 moved it to docs/guides/magics.md)."""
    from markdown_it import MarkdownIt

    text = (ROOT / "docs" / "guides" / "magics.md").read_text(encoding="utf-8")
    fences = [t for t in MarkdownIt("commonmark").parse(text) if t.type == "fence" and t.info.strip() == "ipython"]
    assert len(fences) == 1, "the magics guide has one ipython fence"
    return [str(fences[0].content)]


@pytest.mark.parametrize("source", _readme_magics())
def test_the_readme_magics_run(source: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    ip = InteractiveShell.instance()
    monkeypatch.chdir(tmp_path)
    for var in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    from IPython.utils.capture import capture_output

    cells = [c.strip() for c in source.split("\n\n") if c.strip()]  # a blank line separates the cells
    try:
        for cell in cells:
            with capture_output() as captured:
                ran = ip.run_cell(cell, store_history=False)
            assert ran.success, f"{cell}\n{captured.stdout}"
        assert ip.user_ns["_nbeval"].evaluators == ["rouge", "exact_match"]
    finally:
        assert ip.extension_manager is not None
        if "nbeval" in ip.extension_manager.loaded:
            ip.run_line_magic("unload_ext", "nbeval")
        for name in ("_nbeval", "faq"):
            ip.user_ns.pop(name, None)
