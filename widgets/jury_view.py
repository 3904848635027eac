"""A jury's verdicts on one row, side by side, and the cases ordered by how far the jurors disagree.

A judge evaluator run with a jury (:mod:`nbeval.evaluators.jury`) keeps every juror's values,
label, rationale and error in the row's ``details["jury"]``, with how they were combined
(``jury_aggregate``) and the counts (``jury_votes``, ``jury_parse_failures``, ``jury_failed``).
:func:`jury_html` draws them as a small table, one line per juror: its name, its value of the
evaluator's primary metric (tinted pass/fail by the threshold), its label and its rationale (the
start shown, the rest folded past ``fold_chars``); a juror whose reply could not be read is
marked *parse failure*, one whose call failed *call failed*, each with its error. Under the table:
the row's value and how it was made (``majority of 2 votes``), and the counts. Every text (juror
names, labels, rationales, errors) is escaped through :func:`nbeval.widgets.markup.esc` and cut to
``max_chars`` first.

:func:`cases_by_disagreement` orders test cases by the jurors' disagreement
(:meth:`~nbeval.results.result.EvaluationResult.jury_values`), highest first, and
:func:`jury_evaluators` names the evaluators of a result that were run with a jury.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from nbeval.results.storage.limits import truncate_text
from nbeval.widgets.markup import esc, value_cell

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["FOLD_CHARS", "cases_by_disagreement", "jury_evaluators", "jury_html", "jury_of", "metric_passes"]

#: Past this many characters a juror's rationale or error shows its start, the rest folded.
FOLD_CHARS = 300
_NAME_CHARS = 120
_CELL = "vertical-align:top;padding:2px 6px;border-top:1px solid #eee"
_HEAD = "text-align:left;padding:2px 6px;color:#555;font-weight:600;font-size:12px"
_MUTED = "color:#777"
_PRE = "white-space:pre-wrap;word-break:break-word"
_FAILED_ROW = "background:#fdf1f2"
_BADGE = (
    "display:inline-block;white-space:nowrap;padding:0 5px;border-radius:3px;font-size:11px;font-weight:600;color:#fff"
)
_PARSE_BADGE = f"{_BADGE};background:#b3261e"
_FAILED_BADGE = f"{_BADGE};background:#8a5a00"
_HOW = {
    "majority": "majority",
    "mean": "mean",
    "unanimous": "unanimous (the worst value)",
    "any": "any (the best value)",
}


def jury_of(details: Any) -> dict[str, Any] | None:
    """Read the jury out of a row's ``details``, if they hold one.

    A jury is a non-empty list under ``"jury"``; its entries that are not dicts are dropped.

    Args:
        details: The row's details, as JSON text or a dict.

    Returns:
        The details with the jury kept to its dict entries, or ``None`` when they hold no jury (or
        cannot be read).
    """
    if isinstance(details, str):
        if '"jury"' not in details:  # most rows: no need to parse
            return None
        try:
            details = json.loads(details)
        except ValueError:  # cut short by the stored-size limit
            return None
    if not isinstance(details, dict):
        return None
    jurors = details.get("jury")
    if not isinstance(jurors, list) or not jurors:
        return None
    return {**details, "jury": [j for j in jurors if isinstance(j, dict)]}


def _missing(v: Any) -> bool:
    """Whether ``v`` is a missing cell: ``None``, NaN or pandas' ``NA``."""
    return v is None or (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType"


def _fold(value: Any, max_chars: int, fold_chars: int) -> str:
    """``value`` escaped, cut to ``max_chars``; past ``fold_chars`` its start, the rest folded."""
    if _missing(value) or not str(value):
        return f'<span style="{_MUTED}">—</span>'
    text = truncate_text(str(value), max_chars)
    if len(text) <= fold_chars:
        return f'<div style="{_PRE}">{esc(text)}</div>'
    cut = text.rfind(" ", fold_chars - 60, fold_chars)
    cut = cut if cut > 0 else fold_chars
    rest = text[cut:]
    return (
        f'<div style="{_PRE}">{esc(text[:cut])}</div>'
        f'<details class="nbeval-fold"><summary style="cursor:pointer;{_MUTED};font-size:12px">'
        f"… {len(rest):,} more characters</summary>"
        f'<div style="{_PRE}">{esc(rest)}</div></details>'
    )


def _number(value: Any) -> str:
    """A number in three significant digits, or a dash when missing."""
    return "–" if _missing(value) else f"{float(value):.3g}"


def _juror_row(
    j: dict[str, Any], metric: str, passes: Callable[[float], bool | None], max_chars: int, fold_chars: int
) -> str:
    """Render one juror's table row as HTML.

    The row shows the juror's value on ``metric`` (tinted by ``passes``, or a badge for a failed
    call or an unreadable reply), its other values, its label and its folded rationale and error.
    """
    given = j.get("values")
    values: dict[str, Any] = given if isinstance(given, dict) else {}
    value: Any = values.get(metric)
    label = j.get("label")
    error = j.get("error")
    parse_failure = label == "parse_failure"
    failed = not parse_failure and _missing(value) and not _missing(error)
    if parse_failure:
        shown = f'<span style="{_PARSE_BADGE}" title="the reply could not be read">parse failure</span>'
    elif failed:
        shown = f'<span style="{_FAILED_BADGE}" title="the call failed">call failed</span>'
    elif _missing(value):
        shown = f'<span style="{_MUTED}">no value</span>'
    else:
        shown = value_cell(value, passes(float(value)))
    others = [f"{esc(truncate_text(str(k), _NAME_CHARS))} {esc(_number(v))}" for k, v in values.items() if k != metric]
    if others:
        shown += f'<div style="{_MUTED};font-size:11px">{"<br>".join(others)}</div>'
    why = _fold(j.get("rationale"), max_chars, fold_chars)
    if not _missing(error) and str(error):
        why += f'<div style="color:#b3261e">{_fold(error, max_chars, fold_chars)}</div>'
    name = esc(truncate_text(str(j.get("juror", "juror")), _NAME_CHARS))
    tint = f";{_FAILED_ROW}" if parse_failure or failed else ""
    cls = "nbeval-juror nbeval-juror-parse-failure" if parse_failure else "nbeval-juror"
    cls += " nbeval-juror-failed" if failed else ""
    label_html = esc(label) if not _missing(label) and not parse_failure else f'<span style="{_MUTED}">—</span>'
    return (
        f'<tr class="{cls}"><td style="{_CELL}{tint};font-weight:600">{name}</td>'
        f'<td style="{_CELL}{tint}">{shown}</td><td style="{_CELL}{tint}">{label_html}</td>'
        f'<td style="{_CELL}{tint};min-width:160px">{why}</td></tr>'
    )


def jury_html(
    panel: dict[str, Any],
    metric: str,
    *,
    value: Any = None,
    label: Any = None,
    passes: Callable[[float], bool | None] | None = None,
    max_chars: int = 4000,
    fold_chars: int = FOLD_CHARS,
) -> str:
    """Render a jury as an HTML table of its jurors, then the row's verdict and the counts.

    The table gives each juror's ``metric`` value, label and rationale; below it come the row's
    ``value`` and ``label`` with how they were made, and the counts of votes, parse failures and
    failed calls.

    Args:
        panel: The jury: a row's details as :func:`jury_of` returns them.
        metric: The metric whose juror values are shown first.
        value: The row's value, made from the jurors' values; ``None`` when no juror gave one.
        label: The row's label, shown beside its value; ``None`` for none.
        passes: Says whether a value passes (``True``/``False``/``None``) to tint it; ``None``
            tints nothing.
        max_chars: How many characters of each text are shown before it is cut.
        fold_chars: Past this many characters a rationale or error shows its start, the rest folded.

    Returns:
        The HTML of the jury.
    """
    tint = passes if passes is not None else (lambda _v: None)
    jurors = panel.get("jury") or []
    rows = "".join(_juror_row(j, metric, tint, max_chars, fold_chars) for j in jurors)
    head = "".join(f'<th style="{_HEAD}">{h}</th>' for h in ("juror", esc(metric), "label", "rationale"))
    how = str(panel.get("jury_aggregate") or "majority")
    votes = panel.get("jury_votes")
    n_votes = f"{votes} vote{'s' * (votes != 1)}" if isinstance(votes, int) else "the votes"
    made = f"{esc(_HOW.get(how, how))} of {esc(n_votes)}"
    given = [v for j in jurors if isinstance(j.get("values"), dict) and not _missing(v := j["values"].get(metric))]
    if how == "majority" and given and all(v in (0, 1) for v in given) and 2 * sum(given) == len(given):
        made += ", an even split going to the worse side"
    if _missing(value):
        outcome = f'<span style="{_MUTED}">no value</span>: no juror gave one'
    else:
        outcome = value_cell(value, tint(float(value))) + (f" ({esc(label)})" if not _missing(label) else "")
    counts = [
        ("votes", panel.get("jury_votes")),
        ("parse failures", panel.get("jury_parse_failures")),
        ("failed", panel.get("jury_failed")),
    ]
    count_html = " · ".join(
        f'{name} <b style="color:#b3261e">{esc(n)}</b>' if name != "votes" and n else f"{name} <b>{esc(n)}</b>"
        for name, n in counts
        if n is not None
    )
    return (
        f'<div class="nbeval-jury"><table style="border-collapse:collapse;font-size:13px">'
        f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        f'<div style="margin-top:4px;font-size:12px">jury: {outcome} by {made}</div>'
        f'<div style="{_MUTED};font-size:12px">{count_html} of {len(jurors)} juror{"s" * (len(jurors) != 1)}</div>'
        "</div>"
    )


def jury_evaluators(result: EvaluationResult) -> list[str]:
    """The evaluators of ``result`` some of whose rows were scored by a jury."""
    s = result.scores
    out = []
    for ev in result.evaluators:
        rows = s[(s["evaluator"] == ev) & (s["metric"] == result.primary_metric(ev))]
        if any(jury_of(d) is not None for d in rows["details"].dropna()):
            out.append(ev)
    return out


def cases_by_disagreement(
    result: EvaluationResult, evaluator: str, keys: Sequence[str] | None = None, *, metric: str | None = None
) -> list[tuple[str, float | None]]:
    """Order test cases by juror disagreement on ``evaluator``, the most first.

    A case's disagreement is the largest over its models (ties go to the larger mean over the
    models, then to dataset order). Cases no jury scored (or with fewer than two jurors' values)
    come last, in their order, with ``None``.

    Args:
        result: The evaluation result whose cases are ordered.
        evaluator: Id of the evaluator run with a jury.
        keys: The test-case keys to order; ``None`` takes every case, in dataset order.
        metric: The metric whose juror values are compared; ``None`` takes the primary metric.

    Returns:
        The cases, each with its disagreement (``None`` for a case not ranked).

    Raises:
        EvaluatorError: When the evaluator was not run with a jury (see
            :class:`~nbeval.errors.EvaluatorError`).
    """
    table = result.jury_values(evaluator, metric)
    per_case: dict[str, list[float]] = {}
    for key, d in zip(table["key"], table["disagreement"], strict=True):
        if not _missing(d):
            per_case.setdefault(str(key), []).append(float(d))
    order = list(dict.fromkeys(keys if keys is not None else (r.key for r in result.dataset.rows)))
    scored = [k for k in order if k in per_case]
    rest = [k for k in order if k not in per_case]
    at = {k: i for i, k in enumerate(order)}
    scored.sort(key=lambda k: (-max(per_case[k]), -sum(per_case[k]) / len(per_case[k]), at[k]))
    return [(k, max(per_case[k])) for k in scored] + [(k, None) for k in rest]


def metric_passes(result: EvaluationResult, evaluator: str, metric: str) -> Callable[[float], bool | None]:
    """Whether a value of ``evaluator``'s ``metric`` passes its threshold (``None`` without one)."""
    from nbeval.results.aggregates import passes

    m = result.metrics
    spec = m[(m["evaluator"] == evaluator) & (m["metric"] == metric)]
    if spec.empty or _missing(spec["threshold"].iloc[0]):
        return lambda _v: None
    threshold, higher = float(spec["threshold"].iloc[0]), str(spec["direction"].iloc[0]) == "higher"
    return lambda v: passes(v, threshold, higher)
