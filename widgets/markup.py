"""Small HTML builders for the kit. Every piece of data goes through :func:`esc`.

Model answers, prompts, contexts, judge rationales, error messages, model names and even
evaluator names may hold markup; none of it is ever inserted into HTML unescaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["FAIL_BG", "PASS_BG", "esc", "summary_html", "table", "text_block", "value_cell"]

#: The background tints of a value that passes its threshold and of one that fails it.
PASS_BG = "#e3f4e8"
FAIL_BG = "#fbe3e6"
_MUTED = "color:#777"


def esc(value: Any) -> str:
    """``value`` as HTML-escaped text (``None`` and NaN as an empty string); quotes escaped too."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return html.escape(str(value), quote=True)


def text_block(value: Any, *, empty: str = "—", max_chars: int | None = None) -> str:
    """Escaped text in a block that keeps line breaks and wraps long lines."""
    text = "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars] + "…"
    if not text:
        return f'<span style="{_MUTED}">{esc(empty)}</span>'
    return f'<div style="white-space:pre-wrap;word-break:break-word;margin:0">{esc(text)}</div>'


def table(header: Sequence[str], rows: Iterable[Sequence[str]], *, raw: bool = False) -> str:
    """An HTML table. Cells are escaped unless ``raw`` (then they must already be safe HTML)."""
    cell = (lambda c: c) if raw else esc
    head = "".join(f'<th style="text-align:left;padding:2px 8px">{esc(h)}</th>' for h in header)
    body = "".join(
        "<tr>" + "".join(f'<td style="vertical-align:top;padding:2px 8px">{cell(c)}</td>' for c in r) + "</tr>"
        for r in rows
    )
    return f'<table style="border-collapse:collapse"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def value_cell(value: Any, passed: Any, suffix: str = "") -> str:
    """A metric value as safe HTML, tinted green/red when it passes/fails its threshold."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        shown = "–"
    else:
        shown = f"{float(value):.3f}"
    bg = PASS_BG if passed is True else FAIL_BG if passed is False else None
    style = f' style="background:{bg};padding:0 4px"' if bg else ""
    return f"<span{style}>{esc(shown)}{esc(suffix)}</span>"


def _passed(v: Any) -> bool | None:
    if v is None or (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType":
        return None
    return bool(v)


def summary_html(result: EvaluationResult, *, max_problems: int = 5) -> str:
    """A compact summary: counts, each model's primary metrics (value and n/N), the top problems."""
    models, evaluators = result.model_keys, result.evaluators
    problems = result.problems
    facts = [
        f"{len(models)} model{'s' * (len(models) != 1)}",
        f"{len(evaluators)} evaluator{'s' * (len(evaluators) != 1)}",
        f"{len(result.scores):,} scores",
        f"{len(problems)} problem{'s' * (len(problems) != 1)}",
    ]
    if result.record.cancelled:
        facts.append("cancelled before the end")
    parts = [f"<div><b>nbeval result</b>: {esc(', '.join(facts))}</div>"]
    a = result.aggregates[result.aggregates["primary"].astype(bool)]
    header = ["model", *[f"{ev}.{result.primary_metric(ev)}" for ev in evaluators]]
    rows = []
    for mk in models:
        cells = [esc(result.label(mk))]
        for ev in evaluators:
            hit = a[(a["model_key"] == mk) & (a["evaluator"] == ev)]
            if hit.empty:
                cells.append(esc("–"))
                continue
            r = hit.iloc[0]
            cells.append(value_cell(r["value"], _passed(r["passed"]), f" ({r['n']}/{r['N']})"))
        rows.append(cells)
    if rows:
        parts.append(table(header, rows, raw=True))
    if len(problems):
        items = "".join(f"<li>{esc(m)}</li>" for m in problems["message"].head(max_problems))
        more = len(problems) - max_problems
        tail = f'<li style="{_MUTED}">… and {more} more (result.problems)</li>' if more > 0 else ""
        parts.append(f'<div>Problems:</div><ul style="margin-top:0">{items}{tail}</ul>')
    return '<div class="nbeval-summary">' + "".join(parts) + "</div>"
