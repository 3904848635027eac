"""A :class:`~nbeval.results.runs.diff.RunDiff` as text and as HTML.

As text for ``str(diff)`` and the CLI, as HTML for its notebook display: warnings, regressions,
improvements, flips and usage. The HTML escapes every text it shows (model keys, evaluator names and
labels are user data).
"""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

from nbeval.results.reporting.numbers import format_interval, format_value
from nbeval.results.reporting.text import WIDTH, wrap_item
from nbeval.results.runs.diff_changes import UNKNOWN_USAGE
from nbeval.results.runs.diff_gate import coverage_lines

if TYPE_CHECKING:
    from nbeval.results.runs.diff import RunDiff

__all__ = ["diff_html", "diff_text"]


def _change_cells(row: Any) -> list[str]:
    """Return the cells of a comparison as the text and the HTML show it.

    What, model, before, after, change, interval, test and adjusted p-value, pairs.
    """
    p = "" if math.isnan(row.p_holm) else "p_holm ≈ 0" if row.p_holm == 0 else f"p_holm {row.p_holm:.3g}"
    return [
        f"{row.evaluator}.{row.metric}",
        str(row.model_key),
        format_value(row.mean_before),
        format_value(row.mean_after),
        f"{row.diff:+.3f}",
        format_interval(row.diff_lo, row.diff_hi),
        f"{row.test} {p}".strip(),
        f"n {row.n:,}",
    ]


def _flip_cells(row: Any) -> list[str]:
    """A flip as the text and the HTML show it: change, evaluator, model, key, before, after."""
    values = [format_value(row.value_before), format_value(row.value_after)]
    return [row.change, str(row.evaluator), str(row.model_key), str(row.key), *values]


#: Digits after the point of each usage figure (tokens and calls are whole numbers).
_DIGITS = {"cost (USD)": 4, "duration (s)": 1}


def _amount(what: str, value: float, sign: str = "") -> str:
    return "?" if math.isnan(value) else f"{value:{sign},.{_DIGITS.get(what, 0)}f}"


def _usage_rows(d: RunDiff) -> list[list[str]]:
    known = d.usage[d.usage[["before", "after"]].notna().any(axis=1)]
    return [[w, _amount(w, b), _amount(w, a), _amount(w, c, "+")] for w, b, a, c in known.itertuples(index=False)]


def _counts(d: RunDiff) -> str:
    t = d.table
    tested = int(t["p_value"].notna().sum())
    effect = f", a change of at least {d.min_effect:g}" if d.min_effect else ""
    return (
        f"{len(t)} comparisons (evaluator, metric, model), {tested} tested: p-values {t.attrs.get('family', '')}; "
        f"significant below alpha {t.attrs.get('alpha', 0.05):g}{effect}"
    )


def diff_text(d: RunDiff, max_flips: int) -> str:
    """Render ``str(diff)``, every line at most :data:`~nbeval.results.reporting.text.WIDTH` columns.

    Warnings, regressions, improvements, flips, new and gone rows, usage.
    """
    lines = ["nbeval diff: before → after"]
    for name, run in zip(("before", "after"), d.runs, strict=True):
        lines += wrap_item(f"{name}: {run}", bullet="  ") if run else []
    if d.warnings:
        lines += ["", "warnings:"]
        lines += [line for w in d.warnings for line in wrap_item(w)]
    gaps = coverage_lines(d)
    if gaps:  # before "regressions: none", which reads as good news when nothing was compared
        lines += ["", "not compared:"]
        lines += [line for g in gaps for line in wrap_item(g)]
    lines += ["", *wrap_item(_counts(d), bullet="")]
    for title, part in (("regressions", d.regressions), ("improvements", d.improvements)):
        lines += ["", f"{title}: {len(part) or 'none'}"]
        for row in part.itertuples(index=False):
            c = _change_cells(row)
            lines += wrap_item(f"{c[0]} · {c[1]}: {c[2]} → {c[3]} ({c[4]}, 95% CI {c[5]}; {', '.join(c[6:])})")
    f = d.flips
    fails = int((f["change"] == "now fails").sum())
    lines += ["", f"flips (pass/fail verdict on the primary metric): {fails:,} now fail, {len(f) - fails:,} now pass"]
    for row in f.head(max_flips).itertuples(index=False):
        c = _flip_cells(row)
        lines += wrap_item(f"{c[0]}: {c[1]} · {c[2]} · {c[3]}: {c[4]} → {c[5]}")
    if len(f) > max_flips:
        lines.append(f"  … and {len(f) - max_flips:,} more (RunDiff.flips has them all)")
    if len(d.new_rows) or len(d.gone_rows):
        lines += [
            "",
            f"rows: {len(d.new_rows):,} new (RunDiff.new_rows), {len(d.gone_rows):,} gone (RunDiff.gone_rows)",
        ]
    usage_rows = _usage_rows(d)
    if usage_rows:
        lines += ["", "usage: before → after (change)"]
        lines += [f"  {w:<18} {b:>14} → {a:<14} ({c})" for w, b, a, c in usage_rows]
        if UNKNOWN_USAGE in set(d.usage["what"]):
            lines.append(f"  cost (USD) is a lower bound where {UNKNOWN_USAGE} is above 0: they were not priced")
    return "\n".join(line if len(line) <= WIDTH else line[: WIDTH - 1] + "…" for line in lines)


def _html_table(headers: list[str], rows: list[list[str]]) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def diff_html(d: RunDiff, max_flips: int) -> str:
    """The notebook view of a diff: the same sections as :func:`diff_text`, every text escaped."""
    e = html.escape
    parts = ["<div class='nbeval-diff'><b>nbeval diff</b>: before → after"]
    parts += [f"<br>{e(name)}: {e(run)}" for name, run in zip(("before", "after"), d.runs, strict=True) if run]
    if d.warnings:
        items = "".join(f"<li>{e(w)}</li>" for w in d.warnings)
        parts.append(f"<p><b>warnings</b></p><ul style='color:#a4461b'>{items}</ul>")
    gaps = coverage_lines(d)
    if gaps:
        items = "".join(f"<li>{e(g)}</li>" for g in gaps)
        parts.append(f"<p><b>not compared</b></p><ul style='color:#a4461b'>{items}</ul>")
    parts.append(f"<p>{e(_counts(d))}</p>")
    headers = ["metric", "model", "before", "after", "change", "95% CI", "test", "pairs"]
    for title, part in (("regressions", d.regressions), ("improvements", d.improvements)):
        parts.append(f"<p><b>{title}</b>: {len(part) or 'none'}</p>")
        parts += [_html_table(headers, [_change_cells(r) for r in part.itertuples(index=False)])] if len(part) else []
    f = d.flips
    fails = int((f["change"] == "now fails").sum())
    parts.append(f"<p><b>flips</b>: {fails:,} now fail, {len(f) - fails:,} now pass</p>")
    if len(f):
        rows = [_flip_cells(r) for r in f.head(max_flips).itertuples(index=False)]
        parts.append(_html_table(["change", "evaluator", "model", "key", "before", "after"], rows))
        parts += (
            [f"<p>… and {len(f) - max_flips:,} more (RunDiff.flips has them all)</p>"] if len(f) > max_flips else []
        )
    parts.append(f"<p>rows: {len(d.new_rows):,} new, {len(d.gone_rows):,} gone</p>")
    usage_rows = _usage_rows(d)
    parts += [_html_table(["usage", "before", "after", "change"], usage_rows)] if usage_rows else []
    return "".join(parts) + "</div>"
