"""The small pieces the HTML report is built from.

Escaped cells, verdict marks, anchors, and tables that keep to a size budget and fold their long
tails away.

Every text that came from a model, a judge or a dataset goes through :func:`cell` (escaped with
:func:`html.escape` and cut to :data:`~nbeval.results.storage.limits.MAX_SHOWN_CHARS`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import TYPE_CHECKING, Any

from nbeval.results.reporting.numbers import SHOWN_CI, format_value
from nbeval.results.storage.limits import MAX_SHOWN_CHARS, truncate_text

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = [
    "MAX_DETAIL_ROWS",
    "MAX_TABLE_BYTES",
    "SHOWN_ROWS",
    "VERDICT_WORDS",
    "Anchors",
    "Facts",
    "bar",
    "cell",
    "fixed_table",
    "folded",
    "missing",
    "passed_mark",
    "tally_text",
    "verdict",
    "within_budget",
]

#: The most rows a detail table of the report shows.
MAX_DETAIL_ROWS = 5000
#: The most bytes (UTF-8) of HTML rows a detail table (or the case blocks) of the report holds.
MAX_TABLE_BYTES = 1_500_000
#: How many rows of a long table are shown before the rest is folded into a ``<details>``.
SHOWN_ROWS = 10


def missing(value: Any) -> bool:
    """``None``, NaN, or pandas' ``<NA>`` (a nullable column's missing value, e.g. an unknowable pass)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ == "NAType"


def cell(value: Any, limit: int = MAX_SHOWN_CHARS) -> str:
    """``value`` as escaped text, cut to ``limit`` characters with a marker saying its full size."""
    if missing(value):
        return ""
    return escape(truncate_text(str(value), limit))


def within_budget(rows: Iterable[str], total: int, what: str, budget: int = MAX_TABLE_BYTES) -> tuple[list[str], str]:
    """Keep the HTML pieces of ``rows`` that fit the budget, and say how many are shown.

    The pieces kept fit in :data:`MAX_DETAIL_ROWS` and ``budget`` bytes (at least one is kept); a
    line says how many of ``total`` are shown when some are left out.
    """
    kept: list[str] = []
    size = 0
    for row in rows:
        n = len(row.encode("utf-8"))
        if len(kept) >= MAX_DETAIL_ROWS or (kept and size + n > budget):
            break
        kept.append(row)
        size += n
    note = ""
    if len(kept) < total:
        note = (
            f"<p class='muted'>first {len(kept):,} of {total:,} {what} shown (a report table holds at most "
            f"{MAX_DETAIL_ROWS:,} rows and {budget / 1e6:g} MB); the saved result (result.save) "
            "has them all</p>"
        )
    return kept, note


def bar(value: float | None, lo: float, hi: float) -> str:
    """A small horizontal bar, ``value``'s place between ``lo`` and ``hi``; nothing when unknowable."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or not math.isfinite(hi) or hi <= lo:
        return ""
    width = max(0.0, min(1.0, (value - lo) / (hi - lo))) * 6
    return f'<span class="bar" style="width:{width:.2f}em"></span>'


def passed_mark(p: Any) -> str:
    """A leaderboard's pass or fail mark; nothing where the pass is unknowable.

    ``p`` may be a numpy bool (a nullable boolean column's value) or ``<NA>``, so it is never tested with ``is True``.
    """
    if missing(p):
        return ""
    return '<span class="pass">pass</span>' if bool(p) else '<span class="fail">fail</span>'


def verdict(*, passed: Any, value: Any, skipped: Any = False, error: Any = None, label: Any = None) -> tuple[str, str]:
    """Return the verdict of one score as ``(kind, badge HTML)``.

    The kind is ``pass``, ``fail``, ``value`` (a value and no threshold), ``none`` (no value, no
    error), ``skip``, ``error`` or ``unrated``.
    """
    from nbeval.evaluators.base import UNRATED_LABELS

    if not missing(skipped) and bool(skipped):
        return "skip", '<span class="badge skip">skipped</span>'
    if missing(value) and not missing(label) and str(label) in UNRATED_LABELS:
        return "unrated", f'<span class="badge err">{cell(label)}</span>'
    if missing(value) and not missing(error):
        return "error", '<span class="badge err">error</span>'
    if missing(value):
        return "none", '<span class="badge none">no value</span>'
    shown = f' <span class="val">{format_value(float(value))}</span>'
    if missing(passed):
        return "value", f'<span class="badge none">{format_value(float(value))}</span>'
    if bool(passed):
        return "pass", f'<span class="badge ok">✓ pass</span>{shown}'
    return "fail", f'<span class="badge bad">✗ fail</span>{shown}'


#: How a tally names each kind of verdict, in the order it lists them.
VERDICT_WORDS = {
    "pass": "pass",
    "fail": "fail",
    "error": "error",
    "unrated": "unrated",
    "value": "value",
    "none": "no value",
    "skip": "skipped",
}


def tally_text(tally: Mapping[str, int], html: bool = False) -> str:
    """Count each kind of verdict (see :func:`verdict`) as text, such as ``"16 pass, 3 fail"``.

    The kinds come in a fixed order; with ``html`` each count is a ``<span class="tally KIND">``.
    """
    parts = [(k, f"{tally[k]:,} {w}") for k, w in VERDICT_WORDS.items() if tally.get(k)]
    if html:
        return " ".join(f"<span class='tally {k}'>{t}</span>" for k, t in parts)
    return ", ".join(t for _, t in parts)


class Anchors:
    """Unique, safe ``id`` values made from any text (a test case key, an evaluator name)."""

    def __init__(self) -> None:
        self._used: set[str] = set()
        self._ids: dict[tuple[str, str], str] = {}

    def __call__(self, prefix: str, text: str) -> str:
        """The id of ``text`` under ``prefix``; the same text always gets the same id."""
        key = (prefix, text)
        if key not in self._ids:
            slug = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:48] or "x"
            base = candidate = f"{prefix}-{slug}"
            n = 2
            while candidate in self._used:
                candidate, n = f"{base}-{n}", n + 1
            self._used.add(candidate)
            self._ids[key] = candidate
        return self._ids[key]


def fixed_table(head: Sequence[tuple[str, str]], rows: Sequence[str], cls: str = "") -> str:
    """Build a table of fixed layout, whose text wraps inside the columns instead of widening the page.

    ``head`` is ``(title, width)`` per column (width as CSS, ``""`` to share what is left).
    """
    cols = "".join(f'<col style="width:{w}">' if w else "<col>" for _, w in head)
    ths = "".join(f"<th>{escape(t).replace('_', '_<wbr>')}</th>" for t, _ in head)  # wraps after a _
    return f'<table class="fixed {cls}"><colgroup>{cols}</colgroup><tr>{ths}</tr>{"".join(rows)}</table>'


def folded(
    head: Sequence[tuple[str, str]], rows: Sequence[str], what: str, shown: int = SHOWN_ROWS, cls: str = ""
) -> str:
    """The first ``shown`` rows as a table, the rest in a collapsed ``<details>`` below it."""
    if len(rows) <= shown:
        return fixed_table(head, rows, cls)
    rest = rows[shown:]
    return (
        fixed_table(head, rows[:shown], cls)
        + f"<details class='more'><summary>{len(rest):,} more {escape(what)}</summary>"
        + fixed_table(head, rest, cls)
        + "</details>"
    )


@dataclass
class Facts:
    """What the report's sections read, each derived once from the result."""

    result: EvaluationResult
    """The result reported."""
    primary: pd.DataFrame
    """The long table's rows on each evaluator's primary metric (one per dataset row and evaluator)."""
    problems: pd.DataFrame
    """``result.problems``."""
    insights: pd.DataFrame
    """``result.insights``."""
    boards: dict[str, pd.DataFrame]
    """Each evaluator's leaderboard with its 95% intervals, best first."""
    anchors: Anchors = field(default_factory=Anchors)
    """The ids of evaluators' sections and test cases' blocks."""

    @classmethod
    def of(cls, result: EvaluationResult) -> Facts:
        """Gather the facts of ``result`` the report is written from.

        Each primary metric's scores, the problems, the insights and each evaluator's leaderboard.
        """
        primary = result.metrics.loc[result.metrics["primary"], ["evaluator", "metric"]]
        return cls(
            result,
            result.scores.merge(primary, on=["evaluator", "metric"]),
            result.problems,
            result.insights,
            {ev: result.leaderboard(ev, ci=SHOWN_CI) for ev in result.evaluators},
        )
