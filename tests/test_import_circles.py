"""No import circle among nbeval's modules (issue 44).

A circle is a set of modules that reach one another through their imports: each job should have
one home, so the module both sides need lives below them. The walk reads the code's own imports,
everywhere they run (module level, class bodies, inside functions), except ``if TYPE_CHECKING:``
blocks, which never run:

- ``import a.b.c`` and ``from a.b import c``, absolute or relative: c a module imports ``a.b.c``,
  c a name defined in ``a/b/__init__`` imports ``a.b``;
- ``importlib.import_module("a.b")`` / ``import_module(".b", ...)`` with a literal name (a
  registry that loads its built-ins by name still depends on them);
- importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so it counts as importing
  those packages too (except a package the importer is inside: that one is already running).

The notebook kit's folder ``widgets/`` is the package ``nbeval.widgets``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Folder on disk -> package name it installs as (pyproject's package-dir).
PACKAGES = {"nbeval": "nbeval", "widgets": "nbeval.widgets"}


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` imports ``target`` at ``line`` (its text, for the failure message)."""

    source: str
    target: str
    line: int
    text: str


def module_files(root: Path, packages: dict[str, str]) -> dict[str, Path]:
    """Every module under the package folders of ``root``, by its dotted import name."""
    found: dict[str, Path] = {}
    for folder, package in packages.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(name: str, level: int, module: str, is_package: bool) -> str:
    """The absolute name of a relative import ``level`` dots up from ``module``."""
    if not level:
        return name
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, name] if name else base)


def _import_module_name(call: ast.Call) -> tuple[str, int] | None:
    """The literal module name of an ``importlib.import_module("...")`` call, with its dots."""
    func = call.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if called not in ("import_module", "__import__") or not call.args:
        return None
    first = call.args[0]
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        return None
    name = first.value
    level = len(name) - len(name.lstrip("."))
    return name[level:], level


def _statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node that runs at some point, skipping the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _is_type_checking(child.test):
            for node in child.orelse:
                yield node
                yield from _statements(node)
            continue
        yield child
        yield from _statements(child)


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> list[Edge]:
    """The imports of one module that land on another module of ``modules``."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    is_package = path.name == "__init__.py"
    edges: list[Edge] = []

    def add(target: str, node: ast.stmt | ast.expr) -> None:
        text = lines[node.lineno - 1].strip()
        # The named module and the packages above it, which run first.
        parts = target.split(".")
        for end in range(len(parts), 0, -1):
            name = ".".join(parts[:end])
            explicit = end == len(parts)
            if name not in modules or name == module:
                continue
            if not explicit and module.startswith(name + "."):
                continue  # a package the importer is inside is already running
            edges.append(Edge(module, name, node.lineno, text))

    for node in _statements(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, module, is_package)
            for alias in node.names:
                # ``from a import b`` with b a module imports a.b (a only as its parent); with b a
                # name defined in a, it imports a itself
                add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base, node)
        elif isinstance(node, ast.Call) and (named := _import_module_name(node)):
            add(_absolute(named[0], named[1], module, is_package), node)
    return edges


def import_graph(root: Path, packages: dict[str, str]) -> dict[str, dict[str, Edge]]:
    """Module -> the modules it imports, each with the first import line that does it."""
    modules = module_files(root, packages)
    graph: dict[str, dict[str, Edge]] = {name: {} for name in modules}
    for name, path in modules.items():
        for edge in imports_of(name, path, modules):
            graph[name].setdefault(edge.target, edge)
    return graph


def circles(graph: dict[str, dict[str, Edge]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph.get(target, {})))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def describe(circle: frozenset[str], graph: dict[str, dict[str, Edge]]) -> str:
    """The modules of a circle and, for each import between them, the line that makes it."""
    lines = [f"circle of {len(circle)}: {', '.join(sorted(circle))}"]
    for source in sorted(circle):
        for target, edge in sorted(graph[source].items()):
            if target in circle:
                lines.append(f"  {source} -> {target}  (line {edge.line}: {edge.text})")
    return "\n".join(lines)


def test_no_import_circle() -> None:
    graph = import_graph(ROOT, PACKAGES)
    assert len(graph) > 200 and "nbeval.widgets.charts" in graph  # the walk found the code
    found = circles(graph)
    assert not found, "import circles (give each shared job one home below both sides):\n" + "\n".join(
        describe(circle, graph) for circle in sorted(found, key=sorted)
    )


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_walk_finds_a_circle_through_each_kind_of_import(tmp_path: Path) -> None:
    _package(
        tmp_path,
        {
            "pkg/__init__.py": "",
            # a -> b by a relative import inside a function, b -> c by a literal import_module,
            # c -> a through a plain import of a submodule.
            "pkg/a.py": "def f():\n    from . import b\n",
            "pkg/b.py": "import importlib\nimportlib.import_module('pkg.sub.c')\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "import pkg.a\n",
            # d <-> e only under TYPE_CHECKING one way: no circle.
            "pkg/d.py": "from pkg import e\n",
            "pkg/e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import d\n",
            # f imports the package g/, whose __init__ imports f: a circle through the package.
            "pkg/f.py": "from pkg.g.h import x\n",
            "pkg/g/__init__.py": "from ..f import *\n",
            "pkg/g/h.py": "x = 1\n",
        },
    )
    graph = import_graph(tmp_path, {"pkg": "pkg"})
    found = set(circles(graph))
    assert found == {frozenset({"pkg.a", "pkg.b", "pkg.sub.c"}), frozenset({"pkg.f", "pkg.g"})}
    text = describe(frozenset({"pkg.a", "pkg.b", "pkg.sub.c"}), graph)
    assert "pkg.a -> pkg.b  (line 2: from . import b)" in text
    assert "pkg.b -> pkg.sub.c  (line 2: importlib.import_module('pkg.sub.c'))" in text
    assert "pkg.sub.c -> pkg.a  (line 1: import pkg.a)" in text


def test_a_package_importing_its_own_submodules_is_no_circle(tmp_path: Path) -> None:
    # pkg/__init__ imports pkg.a, which imports pkg.b: pkg runs first anyway, so no edge back to it.
    _package(
        tmp_path,
        {"pkg/__init__.py": "from pkg.a import A\n", "pkg/a.py": "from pkg.b import B\nA = B\n", "pkg/b.py": "B = 1\n"},
    )
    assert circles(import_graph(tmp_path, {"pkg": "pkg"})) == []


def test_from_a_package_import_a_name_reads_the_package(tmp_path: Path) -> None:
    # pkg/__init__ imports pkg.a; pkg.a taking the module pkg.b through ``from pkg import b`` does not
    # read pkg/__init__, but pkg.c taking the name NAME from it does.
    _package(
        tmp_path,
        {
            "pkg/__init__.py": "NAME = 1\nfrom pkg import a, c\n",
            "pkg/a.py": "from pkg import b\n",
            "pkg/b.py": "",
            "pkg/c.py": "from pkg import NAME\n",
        },
    )
    graph = import_graph(tmp_path, {"pkg": "pkg"})
    assert set(graph["pkg.a"]) == {"pkg.b"}
    assert circles(graph) == [frozenset({"pkg", "pkg.c"})]


@pytest.mark.parametrize("kind", ["else branch", "typing.TYPE_CHECKING"])
def test_only_the_type_checking_branch_is_skipped(tmp_path: Path, kind: str) -> None:
    guard = (
        "import typing\nif typing.TYPE_CHECKING:\n    pass\nimport pkg.b\n"
        if kind == "typing.TYPE_CHECKING"
        else "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    pass\nelse:\n    import pkg.b\n"
    )
    _package(tmp_path, {"pkg/__init__.py": "", "pkg/a.py": guard, "pkg/b.py": "import pkg.a\n"})
    assert circles(import_graph(tmp_path, {"pkg": "pkg"})) == [frozenset({"pkg.a", "pkg.b"})]
