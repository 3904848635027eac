"""No nbeval module is named after an installed library: code run from inside a package folder
has that folder first on ``sys.path``, so a module there named like a library is imported instead
of it (``nbeval/requests.py`` once made the RAGAS evaluators report ``requests`` not installed)."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Names allowed to match: nbeval itself, and the RAGAS family's package, which is named after the
#: library it bridges to and lives three folders down (nbeval/evaluators/ragas), where no script runs.
ALLOWED = {"nbeval", "ragas"}


def module_names() -> dict[str, list[str]]:
    """Every module and package basename under nbeval/ and widgets/, with where it is."""
    names: dict[str, list[str]] = {}
    for folder in ("nbeval", "widgets"):
        for path in (ROOT / folder).rglob("*.py"):
            name = path.parent.name if path.name == "__init__.py" else path.stem
            names.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return names


def test_no_module_is_named_after_an_installed_library() -> None:
    installed = set(importlib.metadata.packages_distributions())
    assert "requests" in installed  # the environment holds the library this test guards against shadowing
    clashes = {n: where for n, where in module_names().items() if n in installed and n not in ALLOWED}
    assert clashes == {}


def test_the_scan_sees_packages_and_modules() -> None:
    names = module_names()
    assert "request_kinds" in names  # a module
    assert "runtime" in names  # a package, seen through its __init__.py
