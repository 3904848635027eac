"""A static, self-contained HTML report of an EvaluationResult.

No scripts and no network: tables and CSS bars, plus the leaderboard charts as inline SVG when
the notebook kit (Altair + vl-convert) is installed. Every piece of text that came from a model,
a judge or a dataset goes through :func:`html.escape`.

The report stays small whatever the run's size:

* each cell shows at most :data:`~nbeval.results.limits.MAX_SHOWN_CHARS` (2,000) characters, then
  a marker with the text's full size (``… [truncated: 5,000,000 characters, showing the first
  2,000]``); the saved result keeps more (see :mod:`nbeval.results.limits`);
* each detail table (insights, problems, scores, cases) shows at most :data:`MAX_DETAIL_ROWS`
  (5,000) rows and stops before its rows pass :data:`MAX_TABLE_BYTES` (1.5 MB of HTML), with a
  line saying how many rows are shown of how many.

So a report is at most about 6 MB plus its leaderboards (one row per model and evaluator).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from html import escape
from typing import TYPE_CHECKING, Any

from nbeval.results.leaderboard import SHOWN_CI, format_interval, format_value
from nbeval.results.limits import MAX_SHOWN_CHARS, truncate_text

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["MAX_DETAIL_ROWS", "MAX_TABLE_BYTES", "report_html", "summary_html"]

#: The most rows a detail table of the report shows.
MAX_DETAIL_ROWS = 5000
#: The most bytes (UTF-8) of HTML rows a detail table of the report holds.
MAX_TABLE_BYTES = 1_500_000
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#1b1f24;max-width:1200px}
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #d0d7de;padding-bottom:.2em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}th,td{border:1px solid #d0d7de;padding:.3em .6em;
text-align:left;vertical-align:top}th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;height:.8em;background:#4c78a8;margin-right:.4em;vertical-align:middle}
.ci{color:#667085;font-size:.9em}.fail{color:#b42318}.pass{color:#067647}.muted{color:#667085}.skip{color:#667085;font-style:italic}
td.text{max-width:38em;white-space:pre-wrap;word-break:break-word}.meta{color:#667085}
"""


#: How the report names each interval method.
_CI_WORDS = {"wilson": "Wilson score interval of a share", "bootstrap": "bootstrap over test cases, seeded"}


def _missing(value: Any) -> bool:
    """``None``, NaN, or pandas' ``<NA>`` (a nullable column's missing value, e.g. an unknowable pass)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or type(value).__name__ == "NAType"


def _cell(value: Any) -> str:
    """``value`` as escaped text, cut to :data:`~nbeval.results.limits.MAX_SHOWN_CHARS` with a marker."""
    if _missing(value):
        return ""
    return escape(truncate_text(str(value), MAX_SHOWN_CHARS))


def _within_budget(rows: Iterable[str], total: int, what: str) -> tuple[str, str]:
    """The HTML rows that fit in :data:`MAX_DETAIL_ROWS` and :data:`MAX_TABLE_BYTES` (at least
    one), and a line saying how many of ``total`` are shown when some are left out."""
    kept: list[str] = []
    size = 0
    for row in rows:
        n = len(row.encode("utf-8"))
        if len(kept) >= MAX_DETAIL_ROWS or (kept and size + n > MAX_TABLE_BYTES):
            break
        kept.append(row)
        size += n
    note = ""
    if len(kept) < total:
        note = (f"<p class='muted'>first {len(kept):,} of {total:,} {what} shown (a report table holds at most "
                f"{MAX_DETAIL_ROWS:,} rows and {MAX_TABLE_BYTES / 1e6:g} MB); the saved result (result.save) "
                "has them all</p>")
    return "".join(kept), note


def _bar(value: float | None, lo: float, hi: float) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)) or not math.isfinite(hi) or hi <= lo:
        return ""
    width = max(0.0, min(1.0, (value - lo) / (hi - lo))) * 8
    return f'<span class="bar" style="width:{width:.2f}em"></span>'


def _passed(p: Any) -> str:
    """A pass or fail mark; nothing where the pass is unknowable. ``p`` may be a numpy bool (a
    nullable boolean column's value) or ``<NA>``, so it is never tested with ``is True``."""
    if _missing(p):
        return ""
    return '<span class="pass">pass</span>' if bool(p) else '<span class="fail">fail</span>'


def _leaderboards(result: EvaluationResult) -> str:
    parts = []
    for ev in result.evaluators:
        agg = result.aggregates[result.aggregates["evaluator"] == ev]
        metrics = result.metrics[result.metrics["evaluator"] == ev]
        board = result.leaderboard(ev, ci=SHOWN_CI)
        methods = board.attrs["ci"]["method"]
        head = "".join(f"<th>{escape(m)}{' ★' if p else ''}</th>"
                       for m, p in zip(metrics["metric"], metrics["primary"], strict=True))
        rows = []
        for model_key in board.index:
            cells = []
            for m in metrics.itertuples():
                a = agg[(agg["model_key"] == model_key) & (agg["metric"] == m.metric)]
                if a.empty:
                    cells.append("<td></td>")
                    continue
                a = a.iloc[0]
                row = board.loc[model_key]
                interval = format_interval(row[f"{m.metric}_lo"], row[f"{m.metric}_hi"])
                shown = f' <span class="ci">{interval}</span>' if interval else ""
                cells.append(f'<td class="num">{_bar(a["value"], m.lo, m.hi)}{format_value(a["value"])} '
                             f'<span class="muted">({a["n"]}/{a["N"]})</span>{shown} {_passed(a["passed"])}</td>')
            rows.append(f"<tr><td>{_cell(result.label(str(model_key)))}</td>{''.join(cells)}</tr>")
        primary = result.primary_metric(ev)
        t = metrics.loc[metrics["metric"] == primary, "threshold"].iloc[0]
        used = sorted({v for v in methods.values() if v != "none"})
        ci_note = f"; [lo, hi] = 95% interval ({escape(', '.join(_CI_WORDS[u] for u in used))})" if used else ""
        parts.append(f"<h3>{escape(ev)}</h3><p class='meta'>ranked on {escape(primary)}; threshold "
                     f"{format_value(t)}; (n/N) = rows measured / rows of the model{ci_note}</p>"
                     f"<table><tr><th>model</th>{head}</tr>{''.join(rows)}</table>")
    return "".join(parts)


def _table(df: Any, columns: list[str], text_columns: tuple[str, ...] = (), what: str = "rows") -> str:
    if df.empty:
        return "<p class='muted'>none</p>"
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)

    def rows() -> Iterator[str]:
        for rec in df[columns].head(MAX_DETAIL_ROWS).itertuples(index=False):
            cells = []
            for c, v in zip(columns, rec, strict=True):
                cls = ' class="text"' if c in text_columns else (' class="num"' if isinstance(v, float) else "")
                shown = format_value(v) if isinstance(v, float) else _cell(v)
                cells.append(f"<td{cls}>{shown}</td>")
            yield f"<tr>{''.join(cells)}</tr>"

    body, note = _within_budget(rows(), len(df), what)
    return f"{note}<table><tr>{head}</tr>{body}</table>"


def _charts_svg(result: EvaluationResult) -> str:
    from nbeval.results.renderers import get_renderer

    render = get_renderer("report_charts")  # the notebook kit's; the report stands without charts
    if render is None:
        return ""
    try:
        return str(render(result))
    except Exception:
        return ""


def _agreements(result: EvaluationResult) -> str:
    """A table of each labelled evaluator's agreement with the human labels; nothing without labels."""
    labels = result.labels
    if labels.empty:
        return ""
    rows = []
    for ev in dict.fromkeys(labels["evaluator"]):
        a = result.agreement(str(ev))
        rows.append(f"<tr><td>{_cell(ev)}</td><td class='num'>{a.n}</td><td class='num'>{format_value(a.kappa)}</td>"
                    f"<td class='num'>{format_value(a.agreement)}</td><td class='num'>{format_value(a.auc)}</td>"
                    f"<td class='num'>{format_value(a.best_threshold)}</td></tr>")
    return ("<h3>Judge agreement with human labels</h3><p class='meta'>kappa: Cohen's kappa (1 perfect, 0 chance); "
            "best threshold: the score threshold that best matches human pass/fail (largest Youden J)</p>"
            "<table><tr><th>evaluator</th><th>labelled rows</th><th>kappa</th><th>agreement</th><th>AUC</th>"
            f"<th>best threshold</th></tr>{''.join(rows)}</table>")


def _cases(result: EvaluationResult) -> str:
    def rows() -> Iterator[str]:
        for r in result.dataset.rows[:MAX_DETAIL_ROWS]:
            ctx = "\n---\n".join(c.text for c in r.context)
            yield (f"<tr><td>{_cell(r.key)}</td><td>{_cell(result.label(r.model_key))}</td>"
                   f"<td class='text'>{_cell(r.input)}</td><td class='text'>{_cell(r.expected_output)}</td>"
                   f"<td class='text'>{_cell(r.actual_output)}</td><td class='text'>{_cell(ctx)}</td></tr>")

    body, note = _within_budget(rows(), len(result.dataset), "cases")
    return (f"{note}<table><tr><th>key</th><th>model</th><th>prompt</th><th>expected</th><th>answer</th>"
            f"<th>retrieved context</th></tr>{body}</table>")


def summary_html(result: EvaluationResult) -> str:
    """A compact summary for notebook display: models, evaluators, problems."""
    probs = result.problems
    items = "".join(f"<li>{_cell(m)}</li>" for m in probs["message"].head(8))
    more = f"<li class='muted'>… {len(probs) - 8} more</li>" if len(probs) > 8 else ""
    models = ", ".join(_cell(result.label(m)) for m in result.model_keys)
    return (f"<div><b>nbeval result</b>: {len(result.model_keys)} models ({models}); "
            f"evaluators: {escape(', '.join(result.evaluators))}; {len(probs)} problems"
            f"<ul>{items}{more}</ul></div>")


def report_html(result: EvaluationResult, title: str = "nbeval report") -> str:
    """The whole report as one HTML document."""
    usage = result.meta.get("usage") or {}
    usage_line = ", ".join(f"{escape(str(k))}: {escape(str(v))}" for k, v in usage.items())
    duration = result.meta.get("duration_s")
    meta = (f"{len(result.model_keys)} models, {len(result.evaluators)} evaluators, {len(result.dataset)} rows"
            + (f", {duration:.1f} s" if isinstance(duration, (int, float)) else "")
            + (f"; {usage_line}" if usage_line else "")
            + ("; <b>cancelled before the end</b>" if result.meta.get("cancelled") else ""))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<style>{_CSS}</style></head><body>
<h1>{escape(title)}</h1><p class="meta">{meta}</p>
<h2>Insights</h2>{_table(result.insights, ["kind", "evaluator", "message"], ("message",), "insights")}
<h2>Problems</h2>{_table(result.problems, ["kind", "severity", "evaluator", "message"], ("message",), "problems")}
<h2>Leaderboards</h2>{_charts_svg(result)}{_leaderboards(result)}{_agreements(result)}
<h2>Scores</h2>{_table(result.scores, ["key", "model_key", "evaluator", "metric", "value", "passed", "label",
                                     "rationale", "error", "skip_reason"], ("rationale", "error"), "scores")}
<h2>Cases</h2>{_cases(result)}
</body></html>
"""
