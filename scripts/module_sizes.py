"""The largest modules and functions of nbeval and its notebook kit, for review.

No length is a rule (a module is split by job, not by size: issue 44); a module or function near
the top of these lists is one to look at when it grows: does it still do one thing?

    python scripts/module_sizes.py            # the 15 largest of each
    python scripts/module_sizes.py --top 40
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("nbeval", "widgets")


def python_files(root: Path = ROOT) -> list[Path]:
    """Every ``.py`` file of the library and the notebook kit."""
    return sorted(p for folder in FOLDERS for p in (root / folder).rglob("*.py"))


def module_lines(path: Path) -> int:
    """The lines of a module, as ``ruff format`` writes it."""
    return len(path.read_text(encoding="utf-8").splitlines())


def function_lines(path: Path) -> list[tuple[str, int]]:
    """Each function and method of a module (``Class.method`` for methods), with its length in
    lines from its first decorator to its last line."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                found.append((prefix + child.name, (child.end_lineno or child.lineno) - start + 1))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return found


def main(argv: list[str] | None = None) -> None:
    """Print the largest modules and the largest functions."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="how many of each to list (default 15)")
    args = parser.parse_args(argv)
    files = python_files()
    modules = sorted(((module_lines(p), p.relative_to(ROOT).as_posix()) for p in files), reverse=True)
    functions = sorted(
        ((n, f"{p.relative_to(ROOT).as_posix()}:{name}") for p in files for name, n in function_lines(p)),
        reverse=True,
    )
    print(f"largest modules (of {len(modules)}):")
    for n, where in modules[: args.top]:
        print(f"  {n:5d}  {where}")
    print(f"largest functions (of {len(functions)}):")
    for n, where in functions[: args.top]:
        print(f"  {n:5d}  {where}")


if __name__ == "__main__":
    main()
