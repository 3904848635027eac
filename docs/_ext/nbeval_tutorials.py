"""The tutorials on the site, run and shown with their outputs: a Sphinx extension.

When the builder starts, each notebook of ``notebooks/`` is executed in a fresh kernel (its own
folder as the working directory, as nbval and JupyterLab run it) and written with its outputs and
its widgets' state to ``docs/tutorials/<name>.ipynb``, which myst-nb renders. A cell that raises
fails the build, as in nbval.

Charts and widgets render on the page as they do in JupyterLab, with no network: the widget
manager (``@jupyter-widgets/html-manager``) and require.js are vendored under
``docs/_static/vendor``, and ``docs/_static/nbeval-anywidget.js`` stands in for the ``anywidget``
front end that Altair's offline ``JupyterChart`` needs. Each chart widget's state carries the same
~0.9 MB script (Vega bundled by vl-convert); :func:`share_widget_scripts` moves identical scripts
into one static file that every page loads, so a page with seven charts does not carry seven copies.

Executed notebooks are kept in ``docs/_build/.tutorials`` under a digest of the notebook and of
nbeval's source, so a rebuild with nothing changed runs no kernel.
"""

from __future__ import annotations

import concurrent.futures
import copy
import functools
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sphinx.application import Sphinx

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
NOTEBOOKS = ROOT / "notebooks"
#: Where the executed notebooks are written for myst-nb to render (gitignored).
TUTORIALS = DOCS / "tutorials"
#: Executed notebooks by digest, and the shared widget scripts the pages load.
CACHE = DOCS / "_build" / ".tutorials"
SCRIPTS = CACHE / "static"
#: The widget state's MIME type inside a notebook's metadata.
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
#: A cell may run this long (seconds) before the build gives up on the notebook.
CELL_TIMEOUT_S = 600


@functools.cache
def _code_digest() -> str:
    """A digest of nbeval's source and of this extension, read once per build (not per notebook)."""
    digest = hashlib.sha256()
    for folder in (ROOT / "nbeval", ROOT / "widgets"):
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                digest.update(str(path.relative_to(ROOT)).encode())
                digest.update(path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()


def source_digest(notebook: Path) -> str:
    """A digest of ``notebook`` and of every source file that its outputs depend on."""
    digest = hashlib.sha256(notebook.read_bytes())
    digest.update(_code_digest().encode())
    return digest.hexdigest()[:16]


def execute(notebook: Path) -> dict[str, Any]:
    """``notebook`` run top to bottom in a fresh kernel, with its outputs and widget state.

    Raises:
        nbclient.exceptions.CellExecutionError: When a cell raises (the build stops, naming it).
    """
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(notebook.parent)}},
        store_widget_state=True,
    )
    client.execute()
    return dict(nb)


def share_widget_scripts(nb: dict[str, Any], out: Path) -> dict[str, Any]:
    """``nb`` with each anywidget's ``_esm`` script moved to ``out/anywidget-<digest>.js``.

    The widget keeps ``_esm_file`` (the file's name under the site's ``_static``) in its place;
    ``nbeval-anywidget.js`` loads it from there. The notebook given is not changed.

    Returns:
        A copy of ``nb`` whose widget state names the shared files.
    """
    nb = copy.deepcopy(nb)
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for model in state.values():
        fields = model.get("state", {})
        script = fields.get("_esm")
        if model.get("model_module") != "anywidget" or not isinstance(script, str) or not script:
            continue
        name = f"anywidget-{hashlib.sha256(script.encode()).hexdigest()[:16]}.js"
        target = out / name
        if not target.exists():
            out.mkdir(parents=True, exist_ok=True)
            target.write_text(script, encoding="utf-8")
        fields["_esm"] = ""
        fields["_esm_file"] = name
    return nb


def _executed(notebook: Path) -> dict[str, Any]:
    """The executed ``notebook``: from the cache when its digest is there, else run now."""
    cached = CACHE / f"{notebook.stem}-{source_digest(notebook)}.ipynb"
    if cached.is_file():
        return dict(json.loads(cached.read_text(encoding="utf-8")))
    nb = execute(notebook)
    CACHE.mkdir(parents=True, exist_ok=True)
    for stale in CACHE.glob(f"{notebook.stem}-*.ipynb"):
        stale.unlink()
    cached.write_text(json.dumps(nb), encoding="utf-8")
    return nb


def write_tutorials(notebooks: Iterable[Path], workers: int = 2) -> list[Path]:
    """Execute ``notebooks`` (``workers`` kernels at a time) into :data:`TUTORIALS`.

    Returns:
        The rendered notebooks' paths, in the order given.
    """
    notebooks = list(notebooks)
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        executed = list(pool.map(_executed, notebooks))
    written = []
    for notebook, nb in zip(notebooks, executed, strict=True):
        target = TUTORIALS / notebook.name
        text = json.dumps(share_widget_scripts(nb, SCRIPTS), indent=1, ensure_ascii=False) + "\n"
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def _on_builder_inited(app: Sphinx) -> None:
    notebooks = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    for stale in TUTORIALS.glob("*.ipynb"):
        if not (NOTEBOOKS / stale.name).is_file():
            stale.unlink()
    workers = max(1, min(len(notebooks), os.cpu_count() or 1, 4))
    write_tutorials(notebooks, workers=workers)


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the tutorials' execution (Sphinx calls this when it loads the extension).

    Args:
        app: The Sphinx application.

    Returns:
        The extension's metadata.
    """
    SCRIPTS.mkdir(parents=True, exist_ok=True)  # conf.py lists it in html_static_path
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1", "parallel_read_safe": True}
