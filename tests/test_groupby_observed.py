"""Every ``groupby`` in the library says ``observed=True``.

The long table's key columns are pandas categoricals. Under pandas 2 (which nbeval supports),
``groupby`` on a categorical defaults to ``observed=False`` and yields a group for every
combination of categories, empty ones included: a leaderboard row for a model that never ran
an evaluator, an insight about an empty group. pandas 3 changed the default; the code must not
depend on which one is installed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _groupby_calls_without_observed(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "groupby"
        and not any(k.arg == "observed" for k in node.keywords)
    ]


def test_every_groupby_names_observed() -> None:
    missing = {
        str(p.relative_to(ROOT)): lines
        for folder in ("nbeval", "widgets")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if (lines := _groupby_calls_without_observed(p))
    }
    assert missing == {}, f"groupby without observed=True: {missing}"


def test_the_check_finds_a_call_without_observed(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text("df.groupby('a').size()\ndf.groupby('a', observed=True).size()\n", encoding="utf-8")
    assert _groupby_calls_without_observed(planted) == [1]
