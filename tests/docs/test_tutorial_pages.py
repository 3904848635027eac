"""The tutorials on the site: executed with their widgets' state, charts' scripts shared, nothing fetched.

docs/_ext/nbeval_tutorials.py runs each notebook and writes it for myst-nb; scripts/docs_browser_check.py
then opens the built pages in Chromium (CI runs it). These tests cover what can be checked without a
browser: the execution (a real kernel), the sharing of identical widget scripts, the cache key, and
that every script the pages load is in the repository.
"""

from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import nbeval_tutorials as tut
import nbformat
import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"
STATE = "application/vnd.jupyter.widget-state+json"


def _nb_with_state(models: dict) -> dict:
    return {"cells": [], "metadata": {"widgets": {STATE: {"version_major": 2, "version_minor": 0, "state": models}}}}


def _anywidget(esm: str) -> dict:
    return {"model_module": "anywidget", "model_name": "AnyModel", "state": {"_esm": esm, "spec": {"mark": "bar"}}}


def test_identical_widget_scripts_become_one_shared_file(tmp_path):
    controls = {"model_module": "@jupyter-widgets/controls", "model_name": "HTMLModel", "state": {"_esm": "not mine"}}
    nb = _nb_with_state({"a": _anywidget("export default {}"), "b": _anywidget("export default {}"),
                         "c": _anywidget("export const other = 1"), "d": controls})  # fmt: skip
    before = copy.deepcopy(nb)

    shared = tut.share_widget_scripts(nb, tmp_path)

    assert nb == before  # the notebook given is not changed
    state = shared["metadata"]["widgets"][STATE]["state"]
    files = sorted(p.name for p in tmp_path.iterdir())
    assert len(files) == 2
    assert state["a"]["state"]["_esm_file"] == state["b"]["state"]["_esm_file"] != state["c"]["state"]["_esm_file"]
    assert {state[k]["state"]["_esm"] for k in "abc"} == {""}
    assert (tmp_path / state["a"]["state"]["_esm_file"]).read_text() == "export default {}"
    assert (tmp_path / state["c"]["state"]["_esm_file"]).read_text() == "export const other = 1"
    assert state["a"]["state"]["spec"] == {"mark": "bar"}  # the rest of the state is kept
    assert state["d"] == controls  # only anywidgets' scripts move


def test_a_notebook_without_widgets_is_copied_unchanged(tmp_path):
    nb = {"cells": [{"cell_type": "markdown", "source": "# hi", "metadata": {}}], "metadata": {}}
    assert tut.share_widget_scripts(nb, tmp_path) == nb
    assert list(tmp_path.iterdir()) == []


def test_the_cache_key_follows_the_notebook(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    notebook.write_text("one", encoding="utf-8")
    first = tut.source_digest(notebook)
    assert tut.source_digest(notebook) == first
    notebook.write_text("two", encoding="utf-8")
    assert tut.source_digest(notebook) != first


def _notebook(path: Path, *sources: str) -> Path:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, path)
    return path


@pytest.fixture
def site_folders(tmp_path, monkeypatch):
    """The extension's folders moved under tmp_path."""
    for name in ("TUTORIALS", "CACHE", "SCRIPTS"):
        folder = tmp_path / name.lower()
        folder.mkdir()
        monkeypatch.setattr(tut, name, folder)
    return tmp_path


def test_tutorials_are_run_with_their_outputs_and_widget_state_in_their_own_folder(site_folders):
    source = site_folders / "notebooks"
    source.mkdir()
    (source / "data.txt").write_text("read from the notebook's folder", encoding="utf-8")
    nb = _notebook(
        source / "01_demo.ipynb",
        "print(open('data.txt').read())",
        "import ipywidgets as w\nw.IntSlider(value=7)",
    )

    (written,) = tut.write_tutorials([nb], workers=1)

    assert written == tut.TUTORIALS / "01_demo.ipynb"
    out = json.loads(written.read_text(encoding="utf-8"))
    assert out["cells"][0]["outputs"][0]["text"] == "read from the notebook's folder\n"
    view = out["cells"][1]["outputs"][0]["data"]["application/vnd.jupyter.widget-view+json"]
    state = out["metadata"]["widgets"][STATE]["state"]
    assert state[view["model_id"]]["state"]["value"] == 7
    # run again: the cached run is used (no kernel), and the page is not rewritten
    mtime = written.stat().st_mtime_ns
    cached = list(tut.CACHE.glob("01_demo-*.ipynb"))
    assert len(cached) == 1
    tut.write_tutorials([nb], workers=1)
    assert written.stat().st_mtime_ns == mtime


def test_a_cell_that_raises_fails_the_build(site_folders):
    from nbclient.exceptions import CellExecutionError

    nb = _notebook(site_folders / "02_broken.ipynb", "raise ValueError('a tutorial cell broke')")
    with pytest.raises(CellExecutionError, match="a tutorial cell broke"):
        tut.write_tutorials([nb], workers=1)
    assert not (tut.TUTORIALS / "02_broken.ipynb").exists()


def _conf_value(name: str):
    tree = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return ast.literal_eval(value)
    raise AssertionError(f"docs/conf.py sets no {name}")


def test_every_script_and_style_the_pages_load_is_in_the_repository():
    scripts = _conf_value("nb_ipywidgets_js")
    assert scripts, "the widget manager's scripts must be listed"
    for path in list(scripts) + _conf_value("html_css_files"):
        assert "://" not in path, f"{path} would be fetched from the network"
        assert (DOCS / "_static" / path).is_file(), path
    # the manager's icon fonts sit where the anywidget stand-in points require.js
    shim = (DOCS / "_static" / "nbeval-anywidget.js").read_text(encoding="utf-8")
    manager = next(p for p in scripts if "html-manager" in p)
    folder = (DOCS / "_static" / manager).parent
    assert f'"{folder.relative_to(DOCS / "_static").as_posix()}"' in shim
    assert list(folder.glob("*.woff2"))


def test_the_vendored_files_say_where_they_come_from_and_their_licence():
    for folder in (DOCS / "_static" / "vendor").iterdir():
        readme = (folder / "SOURCE.md").read_text(encoding="utf-8")
        assert "npm" in readme and "License" in readme, folder
        assert (folder / "LICENSE").is_file(), folder


def _browser_check():
    import importlib.util

    path = DOCS.parent / "scripts" / "docs_browser_check.py"
    spec = importlib.util.spec_from_file_location("docs_browser_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_browser_check_wants_as_many_views_as_the_notebook_has(tmp_path):
    check = _browser_check()
    view = {"application/vnd.jupyter.widget-view+json": {"model_id": "m"}}
    nb = {"cells": [{"outputs": [{"data": view}, {"data": {"text/plain": "x"}}]}, {"outputs": [{"data": view}]}, {}]}
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    assert check.expected_views(path) == 2
    assert check.expected_views(tmp_path / "missing.ipynb") is None
    seen = {"views": 0, "undrawnViews": 0, "placeholders": 0, "widgetErrors": 0, "charts": 0, "emptyCharts": 0,
            "stateHasCharts": False}  # fmt: skip
    # a page whose widget outputs were all lost shows nothing wrong by itself: the notebook's count catches it
    assert check.page_problems(seen) == []
    assert check.page_problems(seen, 2) == ["the page has 0 widget view(s), its notebook 2"]
    assert check.page_problems({**seen, "views": 2}, 2) == []
