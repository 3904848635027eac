"""How many of nbeval's functions carry a docstring: prints the share, of all functions and of the public ones.

Reads nbeval/ and widgets/ (the notebook kit) with :mod:`ast`, so nothing is imported. A function is
every ``def`` and ``async def``: module functions, methods and nested helpers alike. A public one is a
module-level function or a method of a module-level class whose names have no leading underscore, in
a module whose path has none. With ``--rev`` the files are read from that git revision instead of the
working tree (``--rev HEAD~3``), to compare before and after.

    python scripts/docstring_coverage.py [--rev REV] [--missing]
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("nbeval", "widgets")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def sources(rev: str | None) -> Iterator[tuple[str, str]]:
    """(path relative to the repository, source) of every Python file in :data:`FOLDERS`."""
    if rev is None:
        for folder in FOLDERS:
            for path in sorted((ROOT / folder).rglob("*.py")):
                yield path.relative_to(ROOT).as_posix(), path.read_text(encoding="utf-8")
        return
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "--", *FOLDERS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for name in sorted(listing.stdout.split()):
        if name.endswith(".py"):
            shown = subprocess.run(
                ["git", "show", f"{rev}:{name}"], cwd=ROOT, capture_output=True, text=True, check=True
            )
            yield name, shown.stdout


def functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """(qualified name, node, whether it is public) of every function in ``tree``, nested ones included."""

    def visit(
        node: ast.AST, prefix: str, public: bool, in_function: bool
    ) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, FUNCTIONS):
                name = prefix + child.name
                is_public = public and not in_function and not child.name.startswith("_")
                yield name, child, is_public
                yield from visit(child, name + ".", False, True)
            elif isinstance(child, ast.ClassDef):
                is_public = public and not in_function and not child.name.startswith("_")
                yield from visit(child, prefix + child.name + ".", is_public, in_function)
            else:
                yield from visit(child, prefix, public, in_function)

    yield from visit(tree, "", True, False)


def main() -> None:
    """Print the shares (and with ``--missing`` the public functions that lack a docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="read the files from this git revision instead of the working tree")
    parser.add_argument("--missing", action="store_true", help="list the public functions with no docstring")
    args = parser.parse_args()
    total = documented = public = public_documented = 0
    missing: list[str] = []
    for path, source in sources(args.rev):
        module_public = not any(part.startswith("_") and part != "__init__.py" for part in path.split("/"))
        for name, node, is_public in functions(ast.parse(source, path)):
            has_doc = bool((ast.get_docstring(node) or "").strip())
            total += 1
            documented += has_doc
            if is_public and module_public:
                public += 1
                public_documented += has_doc
                if not has_doc:
                    missing.append(f"{path}: {name}")
    print(f"all functions:    {documented}/{total} documented ({documented / max(total, 1):.1%})")
    print(f"public functions: {public_documented}/{public} documented ({public_documented / max(public, 1):.1%})")
    if args.missing:
        print("\n".join(missing))


if __name__ == "__main__":
    main()
