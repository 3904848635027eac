"""The front door's docstrings say, in Google style, what goes in, what comes out and what is raised.

The front door is every name in ``nbeval.__all__`` and ``nbeval.widgets.__all__`` (what the getting
started page and the guides import) and the public methods its classes define. The API reference
renders these sections (napoleon), so a user reads each parameter, the return value and the errors
raised without opening the source. Checked here, from the live objects and their source:

* every parameter (``self`` and ``cls`` aside) has an entry under ``Args:``, and no entry names a
  parameter that does not exist (a renamed keyword leaves none behind);
* a function whose return annotation is not ``None`` has a ``Returns:`` section (``Yields:`` for a
  generator); a property needs neither;
* every exception a function raises itself (``raise Name(...)`` in its own body, not in a nested
  function) is named under ``Raises:``;
* a class's constructor parameters are entries under ``Args:`` or ``Attributes:`` of the class
  docstring, or carry a ``#:`` comment or a string below the field (autodoc shows those).

The rest of the code base follows the same layout; ruff's pydocstyle rules (Google convention) keep
its form, see ``[tool.ruff.lint]`` in pyproject.toml.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import re
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Section headers of a Google docstring, by the name this test files them under.
SECTION_NAMES = {
    "Args": "Args",
    "Arguments": "Args",
    "Keyword Args": "Args",
    "Keyword Arguments": "Args",
    "Attributes": "Attributes",
    "Returns": "Returns",
    "Return": "Returns",
    "Yields": "Returns",
    "Raises": "Raises",
}
_HEADER = re.compile(r"^([A-Z][A-Za-z ]*):\s*$")
_ENTRY = re.compile(r"^\**([A-Za-z_][A-Za-z0-9_.]*)\s*(\([^)]*\))?\s*:")


def sections(doc: str) -> dict[str, list[str]]:
    """The Google sections of ``doc``: section -> the names its entries start with (``Returns``
    maps to its lines, stripped).
    """
    lines = inspect.cleandoc(doc).splitlines()
    found: dict[str, list[str]] = {}
    current: str | None = None
    entry_indent: int | None = None
    for line in lines:
        header = _HEADER.match(line)
        if header and not line.startswith(" "):
            current = SECTION_NAMES.get(header.group(1))
            entry_indent = None
            if current is not None:
                found.setdefault(current, [])
            continue
        if current is None or not line.strip():
            continue
        if not line.startswith(" "):
            current = None  # prose at the left margin ends the section
            continue
        indent = len(line) - len(line.lstrip())
        if entry_indent is None:
            entry_indent = indent
        if indent != entry_indent:
            continue  # a continuation line of the entry above
        if current == "Returns":
            found[current].append(line.strip())
            continue
        entry = _ENTRY.match(line.strip())
        if entry:
            found[current].append(entry.group(1))
    return found


def _parameters(func: Any) -> list[str]:
    """The parameters a docstring must describe (``self``/``cls`` aside), ``*args``/``**kw`` by name."""
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return []
    names = list(signature.parameters)
    if names and names[0] in ("self", "cls") and not isinstance(func, staticmethod):
        names = names[1:]
    return names


@functools.cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _function_node(func: Any) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The ``def`` of ``func`` in our source (the one with the docstring when overloads repeat it)."""
    func = inspect.unwrap(func)
    code = getattr(func, "__code__", None)
    if code is None:
        return None
    path = Path(code.co_filename)
    if ROOT not in path.parents:
        return None
    for node in ast.walk(_tree(path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.__name__:
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            if first <= code.co_firstlineno <= node.lineno or node.lineno == code.co_firstlineno:
                return node
    return None


def _raised(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The exception names a function raises in its own body (nested functions and classes aside)."""
    names: set[str] = set()
    todo: list[ast.AST] = list(node.body)
    while todo:
        current = todo.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(current, ast.Raise) and current.exc is not None:
            exc = current.exc.func if isinstance(current.exc, ast.Call) else current.exc
            if isinstance(exc, ast.Name) and exc.id[:1].isupper():
                names.add(exc.id)
            elif isinstance(exc, ast.Attribute):
                names.add(exc.attr)
        todo.extend(ast.iter_child_nodes(current))
    return names


def _is_generator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    todo: list[ast.AST] = list(node.body)
    while todo:
        current = todo.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(current, (ast.Yield, ast.YieldFrom)):
            return True
        todo.extend(ast.iter_child_nodes(current))
    return False


def function_problems(func: Any, label: str) -> list[str]:
    """What the docstring of ``func`` lacks, each problem naming ``label``."""
    node = _function_node(func)
    doc = (ast.get_docstring(node) if node is not None else None) or inspect.getdoc(func) or ""
    if not doc.strip():
        return [f"{label}: no docstring"]
    found = sections(doc)
    problems = []
    params = _parameters(func)
    described = set(found.get("Args", []))
    for name in params:
        if name not in described:
            problems.append(f"{label}: parameter {name!r} is not under Args:")
    for name in sorted(described - set(params)):
        problems.append(f"{label}: Args: names {name!r}, which is not a parameter")
    if node is not None:
        returns = node.returns
        says_none = returns is None or (isinstance(returns, ast.Constant) and returns.value is None)
        says_none = says_none or (isinstance(returns, ast.Name) and returns.id in ("None", "NoReturn", "Never"))
        if not says_none and node.name != "__init__" and not found.get("Returns"):
            problems.append(f"{label}: no {'Yields' if _is_generator(node) else 'Returns'}: section")
        listed = set(found.get("Raises", []))
        for exc in sorted(_raised(node) - listed):
            problems.append(f"{label}: raises {exc} but Raises: does not name it")
    return problems


def _documented_fields(cls: type) -> set[str]:
    """Fields of ``cls`` documented beside their declaration (a ``#:`` comment or a string below)."""
    try:
        path = Path(inspect.getsourcefile(cls) or "")
    except TypeError:
        return set()
    if ROOT not in path.parents:
        return set()
    lines = path.read_text(encoding="utf-8").splitlines()
    documented: set[str] = set()
    for node in ast.walk(_tree(path)):
        if not (isinstance(node, ast.ClassDef) and node.name == cls.__name__):
            continue
        for i, stmt in enumerate(node.body):
            if not isinstance(stmt, ast.AnnAssign) or not isinstance(stmt.target, ast.Name):
                continue
            above = lines[stmt.lineno - 2].strip() if stmt.lineno >= 2 else ""
            below = node.body[i + 1] if i + 1 < len(node.body) else None
            string_below = isinstance(below, ast.Expr) and isinstance(below.value, ast.Constant)
            if above.startswith("#:") or string_below:
                documented.add(stmt.target.id)
    return documented


def class_problems(cls: type, label: str) -> list[str]:
    """What the docstring of ``cls`` (and of the methods it defines) lacks."""
    problems = []
    doc = cls.__dict__.get("__doc__") or ""
    found = sections(doc)
    described = set(found.get("Args", [])) | set(found.get("Attributes", [])) | _documented_fields(cls)
    init = cls.__dict__.get("__init__")
    if dataclasses.is_dataclass(cls):
        params = [f.name for f in dataclasses.fields(cls) if f.init]
    elif isinstance(init, types.FunctionType) and _function_node(init) is not None:
        params = _parameters(init)
        init_doc = sections(inspect.getdoc(init) or "")
        described |= set(init_doc.get("Args", []))
    else:
        params = []
    for name in params:
        if name not in described and not name.startswith("_"):
            problems.append(f"{label}: constructor parameter {name!r} is not under Args: or Attributes:")
    for name, attr in sorted(cls.__dict__.items()):
        if name.startswith("_"):
            continue
        func = attr.__func__ if isinstance(attr, (classmethod, staticmethod)) else attr
        if isinstance(func, types.FunctionType) and _function_node(func) is not None:
            if (func.__doc__ or "").strip() or not _inherits_doc(cls, name):
                problems.extend(function_problems(func, f"{label}.{name}"))
    return problems


def _inherits_doc(cls: type, name: str) -> bool:
    return any((getattr(base.__dict__.get(name), "__doc__", None) or "").strip() for base in cls.__mro__[1:])


def front_door() -> list[tuple[str, Any]]:
    """(label, object) for every function and class of the front door, in ``__all__`` order."""
    import nbeval
    import nbeval.widgets

    items = []
    for module in (nbeval, nbeval.widgets):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) or isinstance(value, types.FunctionType):
                items.append((f"{module.__name__}.{name}", value))
    return items


def front_door_problems(label: str, value: Any) -> list[str]:
    """What ``value``'s docstrings lack."""
    if isinstance(value, type):
        return class_problems(value, label)
    return function_problems(value, label)


@pytest.mark.parametrize(("label", "value"), front_door(), ids=[label for label, _ in front_door()])
def test_front_door_docstrings_have_their_sections(label: str, value: Any) -> None:
    assert front_door_problems(label, value) == [], "write the Google sections (Args:, Returns:, Raises:)"


SAMPLE = '''
def scale(values, factor=2, *extra, **options):
    """Multiply each value.

    Args:
        values (list[float]): the numbers,
            one per case.
        factor: how much.
        *extra: more values.
        **options: passed on.
        gone: a keyword that was renamed.

    Returns:
        The scaled values.

    Raises:
        ValueError: when a value is not a number.
    """
'''


def test_sections_reads_entries_and_ignores_continuations() -> None:
    func = ast.parse(textwrap.dedent(SAMPLE)).body[0]
    assert isinstance(func, ast.FunctionDef)
    doc = ast.get_docstring(func)
    assert doc is not None
    assert sections(doc) == {
        "Args": ["values", "factor", "extra", "options", "gone"],
        "Returns": ["The scaled values."],
        "Raises": ["ValueError"],
    }


def _sample_function(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> dict[str, Any]:
    """The functions of ``source``, written to a file the check reads as ours."""
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    path = tmp_path / "pkg" / "sample.py"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    return namespace


def test_the_check_finds_each_missing_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = _sample_function(
        tmp_path,
        monkeypatch,
        '''
        def lacking(a, b) -> int:
            """Sum, badly documented.

            Args:
                a: first.
                c: not a parameter.
            """
            if a is None:
                raise ValueError("no a")
            return a + b


        def complete(a) -> None:
            """Check ``a``.

            Args:
                a: the value.

            Raises:
                TypeError: when it is not an int.
            """
            if not isinstance(a, int):
                raise TypeError("not an int")
        ''',
    )
    assert function_problems(namespace["lacking"], "lacking") == [
        "lacking: parameter 'b' is not under Args:",
        "lacking: Args: names 'c', which is not a parameter",
        "lacking: no Returns: section",
        "lacking: raises ValueError but Raises: does not name it",
    ]
    assert function_problems(namespace["complete"], "complete") == []
