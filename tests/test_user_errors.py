"""Every error a user can cause is an NbevalError.

The packages below raise no bare builtin exception (``ValueError``, ``KeyError``, ``TypeError``...):
a user's mistake raises the fitting :mod:`nbeval.errors` class, which also subclasses the builtin
(``BadParameter`` is a ``ValueError``), so ``except ValueError`` still catches it. The test reads
the packages with :mod:`ast`. ``NotImplementedError`` (an abstract method) is always allowed; other
genuine programming errors and protocol exceptions are listed in :data:`ALLOWED`, each with why.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

from nbeval import errors

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ["data", "detectors", "results", "evaluators", "chat", "resources", "perturbation"]
BUILTIN_ERRORS = {
    name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)
} - {"NotImplementedError"}

#: (file under nbeval/, enclosing function's qualified name, exception class) raised on purpose.
ALLOWED = {
    # fences are chosen by nbeval's own prompt builders, never by a user: another character is a bug in nbeval
    ("data/delimiters.py", "_delimiter_pattern", "ValueError"),
    # the attribute protocol: __getattr__ must raise AttributeError
    ("evaluators/ragas/bridge.py", "SchemaOnce.__getattr__", "AttributeError"),
    ("resources/__init__.py", "__getattr__", "AttributeError"),
    # an OS error like the one the file system would raise (ENAMETOOLONG): callers handle it as one
    ("results/storage/files.py", "_check_name_lengths", "OSError"),
    # a type annotation nbeval's own parameter declarations cannot hold: a bug in nbeval, not a user's
    ("evaluators/params.py", "_from_node", "ValueError"),
}


def _raises(path: Path) -> list[tuple[str, int, str]]:
    """(enclosing function's qualified name, line, builtin exception class) per bare builtin raise."""
    found: list[tuple[str, int, str]] = []

    def visit(node: ast.AST, scope: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, (*scope, child.name))
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                if isinstance(exc, ast.Name) and exc.id in BUILTIN_ERRORS:
                    found.append((".".join(scope), child.lineno, exc.id))
            visit(child, scope)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), ())
    return found


def _all_raises() -> list[tuple[str, str, int, str]]:
    out: list[tuple[str, str, int, str]] = []
    for package in PACKAGES:
        for path in sorted((ROOT / "nbeval" / package).rglob("*.py")):
            rel = path.relative_to(ROOT / "nbeval").as_posix()
            out.extend((rel, scope, line, exc) for scope, line, exc in _raises(path))
    return out


def test_user_errors_are_nbeval_errors() -> None:
    bare = [r for r in _all_raises() if (r[0], r[1], r[3]) not in ALLOWED]
    assert not bare, (
        "raise the fitting nbeval.errors class (it subclasses the builtin), or list a genuine "
        "programming error in ALLOWED with why:\n"
        + "\n".join(f"  nbeval/{f}:{line} {scope}: {exc}" for f, scope, line, exc in bare)
    )


def test_the_allow_list_holds_no_fixed_raise() -> None:
    used = {(f, scope, exc) for f, scope, _, exc in _all_raises()}
    assert not ALLOWED - used, f"no longer raised, remove from ALLOWED: {sorted(ALLOWED - used)}"


def test_the_scan_sees_a_bare_raise(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text(
        "class A:\n    def f(self):\n        raise ValueError('x')\n"
        "def g():\n    raise NotImplementedError\n    raise errors.BadParameter('y')\n"
    )
    assert _raises(path) == [("A.f", 3, "ValueError")]


@pytest.mark.parametrize("name", [n for n in errors.__all__ if isinstance(getattr(errors, n), type)])
def test_each_error_class_is_an_nbeval_error(name: str) -> None:
    cls = getattr(errors, name)
    if cls is errors.Interrupted:  # a KeyboardInterrupt on purpose: Ctrl-C must get through
        return
    assert issubclass(cls, errors.NbevalError)


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [(errors.BadParameter, ValueError), (errors.BadArgumentType, TypeError), (errors.NotFound, KeyError)],
)
def test_the_new_classes_are_their_builtins(cls: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(cls, builtin)
    assert str(cls("no model 'x'")) == "no model 'x'"  # not quoted, as KeyError would
