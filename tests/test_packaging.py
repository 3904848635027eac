"""The library stays thin and its public surface is complete."""

from __future__ import annotations

import ast
import functools
import importlib
import subprocess
import sys
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from tests.support.public_modules import public_modules

ROOT = Path(__file__).resolve().parents[1]
HEAVY = (
    "torch",
    "transformers",
    "sentence_transformers",
    "ragas",
    "instructor",
    "langchain_core",
    "openai",
    "ipywidgets",
    "altair",
    "pandas",
    "detoxify",
    "nltk",
    "rouge_score",
    "numpy",
    "fastapi",
    "uvicorn",
    "starlette",
    "phonenumbers",
    "stdnum",
    "detect_secrets",
    "dask",
    "distributed",
    "pyarrow",
    "xllamacpp",
)


def test_import_nbeval_pulls_in_nothing_heavy() -> None:
    code = "import sys, nbeval; print(' '.join(m for m in %r if m in sys.modules))" % (HEAVY,)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == ""


# ---------------------------------------------------------------------------------------------
# __all__ is the public surface of every public module (httpx's test, for the whole package)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _bound(
    body: list[ast.stmt], defined: set[str], imported: set[str], checking: set[str], *, type_checking: bool = False
) -> None:
    """Sort the names a module body binds at top level: by def, class or assignment (``defined``),
    by an import (``imported``), by an import for type checkers only (``checking``)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = {(a.asname or a.name).split(".")[0] for a in node.names}
            (checking if type_checking else imported).update(names)
        elif isinstance(node, ast.If):
            inner = type_checking or _is_type_checking(node.test)
            _bound(node.body, defined, imported, checking, type_checking=inner)
            _bound(node.orelse, defined, imported, checking, type_checking=type_checking)
        elif isinstance(node, ast.Try):
            for block in (node.body, *(h.body for h in node.handlers), node.orelse, node.finalbody):
                _bound(block, defined, imported, checking, type_checking=type_checking)


def _lazy_names(module: types.ModuleType, candidates: set[str]) -> set[str]:
    """The ``candidates`` that ``module`` hands out through a module-level ``__getattr__`` (PEP 562)."""
    getter = vars(module).get("__getattr__")
    if getter is None:
        return set()
    found = set()
    for name in candidates:  # also the names it has handed out already (they sit in its namespace now)
        try:
            getter(name)
        except AttributeError:
            continue
        found.add(name)
    return found


@functools.cache
def _surface() -> dict[str, dict[str, set[str]]]:
    """Per public module: the public names it defines, imports, imports for type checkers only
    and hands out lazily, read from its source and its namespace (never from ``__all__``)."""
    out: dict[str, dict[str, set[str]]] = {}
    for name in public_modules():
        module = importlib.import_module(name)
        defined: set[str] = set()
        imported: set[str] = set()
        checking: set[str] = set()
        _bound(ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8")).body, defined, imported, checking)
        namespace = vars(module)
        out[name] = {
            # Public: not _-prefixed, actually bound (not only in a branch not taken), not a type variable.
            "defined": {
                n
                for n in defined
                if not n.startswith("_") and n in namespace and not isinstance(namespace[n], typing.TypeVar)
            },
            "imported": {n for n in imported if not isinstance(namespace.get(n), types.ModuleType)},
            "checking": {n for n in checking if not n.startswith("_")},
        }
    candidates = set().union(*(s["defined"] for s in out.values()))
    for name, s in out.items():
        module = sys.modules[name]
        s["lazy"] = _lazy_names(module, candidates | set(getattr(module, "__all__", ())))
    return out


# Modules whose __all__ leaves out public names they define. They belong to other parts of the
# project; the fix is to list the names in __all__ or to give them a leading underscore. The mark
# is strict, so the test says when a fix lands and the entry can go.
ALL_GAPS: dict[str, str] = {}


def _module_params() -> list[Any]:
    return [
        pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=f"__all__ lacks {ALL_GAPS[m]}"))
        if m in ALL_GAPS
        else m
        for m in public_modules()
    ]


@pytest.mark.parametrize("name", _module_params())
def test_all_is_the_public_surface(name: str) -> None:
    """``__all__`` lists every public name the module defines or hands out lazily, and besides
    them only names it imports on purpose to re-export; each one resolves."""
    module = importlib.import_module(name)
    surface = _surface()[name]
    listed = set(getattr(module, "__all__", ()))
    for n in sorted(listed):
        assert getattr(module, n, None) is not None, f"{name}.__all__ names {n!r}, which does not resolve"
    assert len(listed) == len(getattr(module, "__all__", ())), f"{name}.__all__ repeats a name"
    public = surface["defined"] | surface["lazy"]
    assert sorted(public - listed) == [], f"public in {name} but not in its __all__: list them or prefix them with _"
    assert sorted(listed - public - surface["imported"]) == [], f"in {name}.__all__ but neither defined nor imported"


def test_type_checkers_see_the_lazy_exports() -> None:
    """A package that hands out names lazily imports the same names under TYPE_CHECKING, so type
    checkers and IDEs know them."""
    for name, surface in _surface().items():
        if surface["lazy"] and surface["checking"]:
            assert surface["checking"] == surface["lazy"], name


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
