"""Write the tutorial notebooks in ``notebooks/`` from their sources in ``notebooks/src/``.

    .venv/bin/python scripts/make_notebooks.py              # write all, run them, keep only checked outputs
    .venv/bin/python scripts/make_notebooks.py 01_quickstart  # only this one (name, .ipynb or source path)
    .venv/bin/python scripts/make_notebooks.py --no-run     # write with every output cleared
    .venv/bin/python scripts/make_notebooks.py --out DIR    # write into DIR instead of notebooks/

Each tutorial has one readable source, ``notebooks/src/NAME.py`` for ``notebooks/NAME.ipynb``,
in (a subset of) jupytext's "percent" format, read by :func:`read_percent` below (no jupytext
needed)::

    # %% [markdown] id="c00"
    # # A title
    #
    # Markdown text, every line behind "# " (an empty line is a lone "#").

    # %% id="c01" tags=["chart"]
    result = nbeval.evaluate(lab, ["rouge"], progress=False)
    result

``# %%`` at the start of a line opens a code cell, ``# %% [markdown]`` a markdown cell. After
it come ``key=value`` pairs whose values are JSON: ``id`` is the cell's id (required and unique
within the notebook, so that a regenerated file diffs only where a cell changed), any other key
goes into the cell's metadata, e.g. ``tags=["chart"]`` (scripts/browser_check.py then requires
a drawn Vega chart in the cell's output). Blank lines between cells belong to no cell. Magics
(``%load_ext nbeval``, ``%%nbeval_suite``) are written as typed, not commented out as jupytext
would write them. Edit the sources, never the .ipynb files: tests/test_notebooks_generated.py
checks that the committed notebooks are what :func:`generate` makes from them (cells, ids, tags
and metadata; outputs aside).

Every output is cleared except the printed (stdout) output of cells marked
``# NBVAL_CHECK_OUTPUT``: nbval compares those against what a fresh run prints, so they are
recorded by running the notebook once here (offline, with the repository's .venv).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
SOURCES_DIR = NOTEBOOKS / "src"
CHECK = "# NBVAL_CHECK_OUTPUT"

METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python", "version": "3.11"},
}


# ---------------------------------------------------------------------------------------------
# The percent format (the subset the tutorials use)

MARKER = "# %%"
_MARKER_RE = re.compile(r"^# %%(?P<rest>(?: .*)?)$")
# What jupytext would also take for a cell marker (indented, "#%%"): refused, never read as code.
_NEAR_MARKER_RE = re.compile(r"^\s*#\s*%%(?:\s|$)")
_KIND_RE = re.compile(r"\s*\[(?P<kind>[^\]]*)\]")
_KEY_RE = re.compile(r"\s*(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)=")
_KINDS = {"markdown": "markdown", "md": "markdown"}


class PercentFormatError(ValueError):
    """A source that is not in the supported subset of the percent format (with file and line)."""


class Cell(NamedTuple):
    """One cell of a percent source: ``kind`` is ``"code"`` or ``"markdown"``."""

    kind: str
    source: str
    id: str | None = None
    metadata: Mapping[str, Any] = MappingProxyType({})


def _parse_header(rest: str, where: str) -> tuple[str, str | None, dict[str, Any]]:
    kind = "code"
    match = _KIND_RE.match(rest)
    if match:
        if match["kind"] not in _KINDS:
            raise PercentFormatError(f"{where}: unknown cell type [{match['kind']}] (use [markdown] or none)")
        kind = _KINDS[match["kind"]]
        rest = rest[match.end() :]
    decoder = json.JSONDecoder()
    cell_id: str | None = None
    metadata: dict[str, Any] = {}
    seen: set[str] = set()
    pos = 0
    while rest[pos:].strip():
        match = _KEY_RE.match(rest, pos)
        if not match:
            raise PercentFormatError(f"{where}: expected key=value after {MARKER!r}, found {rest[pos:].strip()!r}")
        key = match["key"]
        try:
            value, pos = decoder.raw_decode(rest, match.end())
        except json.JSONDecodeError as exc:
            raise PercentFormatError(f"{where}: the value of {key} is not JSON ({exc.msg})") from None
        if pos < len(rest) and not rest[pos].isspace():
            raise PercentFormatError(f"{where}: put a space after the value of {key}")
        if key in seen:
            raise PercentFormatError(f"{where}: {key} given twice")
        seen.add(key)
        if key == "id":
            if not isinstance(value, str):
                raise PercentFormatError(f"{where}: id must be a string")
            cell_id = value
        else:
            metadata[key] = value
    return kind, cell_id, metadata


def _body(kind: str, lines: list[tuple[int, str]], origin: str) -> str:
    while lines and not lines[0][1].strip():
        lines = lines[1:]
    while lines and not lines[-1][1].strip():
        lines = lines[:-1]
    if kind == "code":
        return "\n".join(line for _, line in lines)
    text = []
    for number, line in lines:
        if line == "#":
            text.append("")
        elif line.startswith("# "):
            text.append(line[2:])
        else:
            raise PercentFormatError(f"{origin}:{number}: a markdown line must start with '# ' (or be a lone '#')")
    return "\n".join(text)


def read_percent(text: str, origin: str = "<string>") -> list[Cell]:
    """The cells of a percent-format source; ``origin`` (a file name) prefixes error messages."""
    cells: list[Cell] = []
    header: tuple[str, str | None, dict[str, Any]] | None = None
    lines: list[tuple[int, str]] = []

    def close() -> None:
        if header is not None:
            kind, cell_id, metadata = header
            cells.append(Cell(kind, _body(kind, lines, origin), cell_id, metadata))

    for number, line in enumerate(text.splitlines(), start=1):
        match = _MARKER_RE.match(line)
        if match:
            close()
            header, lines = _parse_header(match["rest"], f"{origin}:{number}"), []
        elif _NEAR_MARKER_RE.match(line):
            raise PercentFormatError(f"{origin}:{number}: write a cell marker as {MARKER!r} at the start of the line")
        elif header is None:
            if line.strip():
                raise PercentFormatError(f"{origin}:{number}: text before the first cell marker ({MARKER!r})")
        else:
            lines.append((number, line))
    close()
    return cells


def write_percent(cells: list[Cell]) -> str:
    """The percent-format source of ``cells``; :func:`read_percent` gives them back unchanged."""
    parts = []
    for cell in cells:
        if cell.kind not in ("code", "markdown"):
            raise ValueError(f"cell {cell.id}: unknown kind {cell.kind!r}")
        header = MARKER + (" [markdown]" if cell.kind == "markdown" else "")
        items = ({"id": cell.id} if cell.id is not None else {}) | dict(cell.metadata)
        header += "".join(f" {key}={json.dumps(value, ensure_ascii=False)}" for key, value in items.items())
        lines = cell.source.split("\n") if cell.source else []
        if cell.kind == "markdown":
            lines = [f"# {line}" if line else "#" for line in lines]
        elif lines and (not lines[0].strip() or not lines[-1].strip()):
            raise ValueError(f"cell {cell.id}: a code cell cannot start or end with a blank line")
        if any(_NEAR_MARKER_RE.match(line) for line in lines):
            raise ValueError(f"cell {cell.id}: a line would read as a cell marker")
        parts.append("\n".join([header, *lines]) + "\n")
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# Sources to notebooks


def sources() -> dict[str, Path]:
    """Notebook file name -> its source, for every ``notebooks/src/*.py``."""
    return {f"{path.stem}.ipynb": path for path in sorted(SOURCES_DIR.glob("*.py"))}


SOURCES = sources()


def read_source(name: str) -> list[Cell]:
    path = SOURCES[name]
    return read_percent(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))


def build(cells: list[Cell], origin: str = "<cells>") -> nbformat.NotebookNode:
    """A notebook of ``cells``, without outputs; every cell needs its own ``id``."""
    if not cells:
        raise PercentFormatError(f"{origin}: no cells")
    seen: set[str] = set()
    nb = new_notebook()
    nb.metadata = nbformat.from_dict(METADATA)
    for i, cell in enumerate(cells):
        if not cell.id:
            raise PercentFormatError(f'{origin}: cell {i} has no id (add id="..." after {MARKER!r})')
        if cell.id in seen:
            raise PercentFormatError(f"{origin}: cell id {cell.id!r} is used twice")
        seen.add(cell.id)
        node = new_markdown_cell(cell.source) if cell.kind == "markdown" else new_code_cell(cell.source)
        node["id"] = cell.id
        node.metadata.update(nbformat.from_dict(dict(cell.metadata)))
        nb.cells.append(node)
    return nb


def keep_checked_outputs(nb: nbformat.NotebookNode) -> None:
    """Clear every output except the stdout of ``# NBVAL_CHECK_OUTPUT`` cells.

    Those keep their execution count too: nbval refuses a reference output on a cell that was
    never run ("Unrun reference cell has outputs"). The notebook metadata goes back to the kernel
    and language only: running stores every widget's state there (megabytes of chart specs and
    bundled scripts), which must never be committed.
    """
    nb.metadata = nbformat.from_dict(METADATA)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "tags"}  # drop execution timings
        if CHECK in cell.source and cell.execution_count is not None:
            cell.outputs = [o for o in cell.outputs if o.get("output_type") == "stream" and o.get("name") == "stdout"]
        else:
            cell.outputs = []
            cell.execution_count = None


def generate(name: str, *, execute: bool = False) -> nbformat.NotebookNode:
    """The notebook ``name`` (a key of :data:`SOURCES`) as this script writes it, without writing
    it: built from its source, run when ``execute`` is true, then stripped to the checked outputs
    (with ``execute=False`` every output is empty, as ``--no-run`` writes it)."""
    nb = build(read_source(name), str(SOURCES[name].relative_to(ROOT)))
    if execute:
        run(nb, name)
    keep_checked_outputs(nb)
    nbformat.validate(nb)
    return nb


def run(nb: nbformat.NotebookNode, name: str) -> None:
    from nbclient import NotebookClient

    started = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    print(f"  ran {name} in {time.perf_counter() - started:.1f} s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true", help="write the notebooks with every output cleared")
    parser.add_argument(
        "--out",
        type=Path,
        default=NOTEBOOKS,
        help="folder to write into (default: notebooks/; runs still start in notebooks/)",
    )
    parser.add_argument(
        "names", nargs="*", help="only these notebooks (01_quickstart, 01_quickstart.ipynb or its source path)"
    )
    args = parser.parse_args(argv)
    wanted = {f"{Path(name).stem}.ipynb" for name in args.names}
    if unknown := sorted(wanted - set(SOURCES)):
        parser.error(f"no source in notebooks/src/ for {', '.join(unknown)}")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        if wanted and name not in wanted:
            continue
        nb = generate(name, execute=not args.no_run)
        path = out / name
        nbformat.write(nb, path)
        shown = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        size = path.stat().st_size
        if size > 100_000:  # a tutorial's source is a few tens of kB; more means outputs slipped in
            msg = f"{shown} is {size:,} bytes: outputs or widget state were not cleared"
            raise SystemExit(msg)
        print(f"wrote {shown} ({size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
