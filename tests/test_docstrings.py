"""Every public name of nbeval and of its notebook kit says what it is for.

A public name is one listed in the ``__all__`` of ``nbeval``, ``nbeval.widgets`` or any module
below them whose path has no ``_``-prefixed part. Each needs a non-empty docstring where it is
defined: a function or class its own docstring, a constant (anything else) a ``#:`` comment above
its assignment (heading the block of lines it sits in, so one comment can cover a group of related
constants) or a string just below it. A class that a factory makes at import time (no ``class``
statement for it in the source, as ``rating_judge`` makes the rating judges) and that is assigned to
the public name counts as documented when the factory gave it a non-empty ``__doc__``. Every
public method of a public class defined here needs one too, unless it overrides a method whose
docstring it inherits (``help()`` shows that one). And every public module has a docstring.

Names are resolved by importing the modules (as tests/test_packaging.py does); whether a
definition carries a docstring is read from its source with :mod:`ast`, so a docstring that a
library writes for a class (a dataclass's signature) does not count.
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from tests.support.public_modules import public_modules

ROOT = Path(__file__).resolve().parents[1]
#: Where the source of each top-level package lives (the kit is the folder widgets/).
FOLDERS = {"nbeval.widgets": ROOT / "widgets", "nbeval": ROOT / "nbeval"}


def _source_file(module: str) -> Path | None:
    """The file that defines ``module``, when it is one of ours."""
    for prefix, folder in FOLDERS.items():
        if module == prefix or module.startswith(prefix + "."):
            parts = module[len(prefix) :].strip(".").split(".") if module != prefix else []
            base = folder.joinpath(*parts)
            for path in (base / "__init__.py", base.with_suffix(".py")):
                if parts or path.name == "__init__.py":
                    if path.is_file():
                        return path
    return None


def _has_doc(node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return bool((ast.get_docstring(node) or "").strip())


class _Source:
    """What one module's source documents: functions and classes by qualified name, constants by name."""

    def __init__(self, path: Path) -> None:
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        self.lines = path.read_text(encoding="utf-8").splitlines()
        self.module_doc = _has_doc(tree)
        #: qualified name -> whether any of its definitions (an overload, a setter) has a docstring
        self.defs: dict[str, bool] = {}
        #: class qualified name -> its public methods' names
        self.methods: dict[str, set[str]] = {}
        #: constant name -> whether a ``#:`` comment above or a string below documents it
        self.constants: dict[str, bool] = {}
        #: the name of every ``class`` statement anywhere in the module (in functions too)
        self.class_names = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        self._visit(tree.body, "", top=True)

    def _visit(self, body: list[ast.stmt], prefix: str, *, top: bool) -> None:
        for i, node in enumerate(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                self.defs[name] = self.defs.get(name, False) or _has_doc(node)
                if isinstance(node, ast.ClassDef):
                    self.methods[name] = {
                        n.name
                        for n in node.body
                        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.name.startswith("_")
                    }
                    self._visit(node.body, name + ".", top=False)
            elif top and isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                following = body[i + 1] if i + 1 < len(body) else None
                string_below = (
                    isinstance(following, ast.Expr)
                    and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)
                    and bool(following.value.value.strip())
                )
                documented = string_below or self._comment_above(node.lineno)
                for name in (n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)):
                    self.constants[name] = self.constants.get(name, False) or documented
            elif top and isinstance(node, (ast.If, ast.Try)):
                for block in (node.body, node.orelse, *(getattr(node, "handlers", ()))):
                    self._visit(block if isinstance(block, list) else block.body, prefix, top=True)

    def _comment_above(self, lineno: int) -> bool:
        """Whether a ``#:`` comment heads the block of lines (no blank one between) that holds line
        ``lineno`` (1-based): one comment may document a group of related constants."""
        above = lineno - 2
        while above >= 0 and self.lines[above].strip() and not self.lines[above].lstrip().startswith("#:"):
            above -= 1
        return (
            above >= 0 and self.lines[above].lstrip().startswith("#:") and bool(self.lines[above].lstrip()[2:].strip())
        )


@functools.cache
def _source(path: Path) -> _Source:
    return _Source(path)


def _definition(value: Any) -> tuple[Path, str] | None:
    """(source file, qualified name) where a function or class of ours is defined."""
    value = inspect.unwrap(value) if callable(value) else value
    module, qualname = getattr(value, "__module__", None), getattr(value, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<locals>" in qualname:
        return None
    path = _source_file(module)
    return (path, qualname) if path is not None else None


def _inherited_doc(cls: type, name: str) -> bool:
    """Whether a base class of ``cls`` documents the method ``name`` it overrides."""
    for base in cls.__mro__[1:]:
        attr = base.__dict__.get(name)
        if attr is None:
            continue
        func = getattr(attr, "__func__", None) or getattr(attr, "fget", None) or attr
        if (getattr(func, "__doc__", None) or "").strip():
            return True
    return False


def _undocumented(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    path = _source_file(module_name)
    assert path is not None, module_name
    missing = [] if _source(path).module_doc else [f"{module_name} (the module)"]
    for name in getattr(module, "__all__", ()):
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            continue
        where = _definition(value) if isinstance(value, (type, types.FunctionType)) or callable(value) else None
        if where is None or where[1] not in _source(where[0]).defs:
            # a constant, or a callable made at import time: documented where this module, or the
            # module it comes from, assigns it (a class a factory made: by the docstring it was given)
            assigned = _assigning_source(module_name, name)
            if assigned is None or not (assigned.constants[name] or _made_with_a_docstring(value)):
                missing.append(f"{module_name}.{name}")
            continue
        source, qualname = _source(where[0]), where[1]
        if not source.defs[qualname]:
            missing.append(f"{module_name}.{name}")
        if isinstance(value, type) and value.__module__ == module_name:
            for method in sorted(source.methods.get(qualname, ())):
                if not source.defs.get(f"{qualname}.{method}") and not _inherited_doc(value, method):
                    missing.append(f"{module_name}.{name}.{method}")
    return missing


def _assigning_source(module_name: str, name: str) -> _Source | None:
    """The source of the module that assigns ``name`` (this one, or the one it imports it from);
    ``None`` when no module of ours does."""
    seen = set()
    current = module_name
    while current not in seen:
        seen.add(current)
        path = _source_file(current)
        if path is None:
            return None
        source = _source(path)
        if name in source.constants:
            return source
        origin = _imported_from(path, current, name)
        if origin is None:
            return None
        current = origin
    return None


def _made_with_a_docstring(value: Any) -> bool:
    """Whether ``value`` is a class of ours that a factory made (no ``class`` statement of its
    name in the module it says it comes from) and gave a non-empty docstring of its own."""
    if not isinstance(value, type) or not (value.__dict__.get("__doc__") or "").strip():
        return False
    where = _definition(value)
    if where is None:
        return False
    source = _source(where[0])
    names = {value.__name__, where[1], where[1].rsplit(".", 1)[-1]}
    return where[1] not in source.defs and not names & source.class_names


def _imported_from(path: Path, module_name: str, name: str) -> str | None:
    """The module that ``module_name`` imports ``name`` from, read from its source."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            if node.level == 0:
                return node.module
            base = module_name.split(".")
            base = base[: len(base) - node.level + (1 if is_package else 0)]
            return ".".join(base + ([node.module] if node.module else []))
    return None


@pytest.mark.parametrize("module_name", public_modules())
def test_every_public_name_has_a_docstring(module_name: str) -> None:
    assert _undocumented(module_name) == [], "write a docstring for each (a #: comment for a constant)"


SAMPLE = '''"""A module."""

#: documented above
LIMIT = 3
#: one comment for a group
LOW = 1
HIGH = 2

BARE = 4

BELOW = 5
"""Documented below."""


def documented() -> None:
    """Says what it does."""


def bare() -> None:
    pass


class Thing:
    """A thing."""

    def said(self) -> None:
        """Said."""

    def unsaid(self) -> None:
        pass

    def _private(self) -> None:
        pass
'''


def test_the_check_tells_documented_from_bare(tmp_path: Path) -> None:
    path = tmp_path / "sample.py"
    path.write_text(SAMPLE, encoding="utf-8")
    source = _Source(path)
    assert source.module_doc
    assert source.constants == {"LIMIT": True, "LOW": True, "HIGH": True, "BARE": False, "BELOW": True}
    assert source.defs == {"documented": True, "bare": False, "Thing": True, "Thing.said": True, "Thing.unsaid": False,
                           "Thing._private": False}  # fmt: skip
    assert source.methods == {"Thing": {"said", "unsaid"}}


MADE = '''"""A module whose classes a factory makes."""

__all__ = ["Documented", "Undocumented", "LIMIT", "Written", "Alias"]


def _make(name, doc):
    return type(name, (), {"__doc__": doc, "__module__": __name__, "__qualname__": name})


Documented = _make("Documented", "Made by the factory, which wrote this.")
Undocumented = _make("Undocumented", None)
LIMIT = 3


class Written:
    pass


Written.__doc__ = "Set after the class statement: not where it is defined."


class _Hidden:
    pass


_Hidden.__doc__ = "Set afterwards too."
Alias = _Hidden
'''


def test_a_factory_made_class_counts_only_with_a_docstring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "docsample_pkg"
    package.mkdir()
    (package / "__init__.py").write_text('"""Samples."""\n', encoding="utf-8")
    (package / "made.py").write_text(MADE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(FOLDERS, "docsample_pkg", package)
    try:
        missing = _undocumented("docsample_pkg.made")
    finally:
        for name in ("docsample_pkg.made", "docsample_pkg"):
            sys.modules.pop(name, None)
    assert missing == [
        "docsample_pkg.made.Undocumented",
        "docsample_pkg.made.LIMIT",
        "docsample_pkg.made.Written",
        "docsample_pkg.made.Alias",
    ]
