"""Plain-text summaries of a result that stay readable in a notebook cell or a terminal.

Every line fits :data:`WIDTH` columns. :func:`summary_text` is the full one (``result.summary()``);
:func:`brief_text` the first screen of ``nbeval demo`` (``result.summary(brief=True)``).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from typing import TYPE_CHECKING

from nbeval.results.leaderboard import leaderboard
from nbeval.results.reporting.insights import AHEAD_KIND, LEADER_KINDS
from nbeval.results.reporting.numbers import SHOWN_CI, format_interval, format_value

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["LABEL_WIDTH", "WIDTH", "brief_text", "problem_counts", "summary_text", "wrap_item"]

#: The widest line a summary writes.
WIDTH = 100
#: The widest model label a table shows; longer ones are cut and named in full under ``models:``.
LABEL_WIDTH = 30
_GAP = 2  # spaces between table columns


def wrap_item(text: str, bullet: str = "- ", width: int = WIDTH) -> list[str]:
    """Format ``text`` as a list item with a hanging indent.

    ``bullet`` goes on its first line and the rest is indented under the text; words longer than a
    line are broken.
    """
    return textwrap.wrap(
        text, width=width, initial_indent=bullet, subsequent_indent=" " * len(bullet), break_on_hyphens=False
    ) or [bullet.rstrip()]


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _short_labels(result: EvaluationResult, models: list[str]) -> tuple[dict[str, str], list[str]]:
    """Return each model's label as the tables show it, and the legend of the cut ones.

    A label is at most :data:`LABEL_WIDTH`; the legend names the cut ones in full (empty when none
    is cut).
    """
    shown: dict[str, str] = {}
    legend: list[str] = []
    for key in models:
        label = str(result.label(key))
        if len(label) <= LABEL_WIDTH:
            shown[key] = label
            continue
        mark = f"[{len(legend) + 1}] "
        shown[key] = mark + _cut(label, LABEL_WIDTH - len(mark))
        legend.extend(wrap_item(label, bullet=mark))
    return shown, (["models:", *("  " + line for line in legend)] if legend else [])


def _table(first: str, rows: list[tuple[str, list[str]]], headers: list[str]) -> list[str]:
    """Lay out rows of a label and cells under ``headers``, the labels left and the cells right aligned.

    Columns that would pass :data:`WIDTH` go to a further block below (the labels repeated).
    """
    label_w = max([len(first), *(len(label) for label, _ in rows)])
    widths = [max([len(h), *(len(cells[i]) for _, cells in rows)]) for i, h in enumerate(headers)]
    blocks: list[list[int]] = []
    used = WIDTH  # start a block on the first column
    for i, w in enumerate(widths):
        if used + _GAP + w > WIDTH and (not blocks or blocks[-1]):
            blocks.append([])
            used = label_w
        blocks[-1].append(i)
        used += _GAP + w
    lines: list[str] = []
    for b, cols in enumerate(blocks):
        if b:
            lines.append("")
        gap = " " * _GAP
        lines.append(f"{first:<{label_w}}" + "".join(gap + f"{headers[i]:>{widths[i]}}" for i in cols))
        lines.extend(
            f"{label:<{label_w}}" + "".join(gap + f"{cells[i]:>{widths[i]}}" for i in cols) for label, cells in rows
        )
    return [line.rstrip() for line in lines]


def summary_text(result: EvaluationResult) -> str:
    """Summarise a result in plain text, for notebooks, terminals and CI logs.

    Leaderboards of every evaluator's metrics with 95% intervals (one block per evaluator, a row per
    model; metrics that do not fit beside each other stacked below), whether the leader's lead is
    real, then problems. No line passes :data:`WIDTH` columns: long model labels are cut in the
    tables and named in full above them, long messages are wrapped under their bullet.
    """
    models = [str(k) for k in dict.fromkeys(result.aggregates["model_key"])]
    shown, legend = _short_labels(result, models)
    lines: list[str] = [*legend, ""] if legend else []
    for ev in result.evaluators:
        board = leaderboard(result, evaluator=ev, ci=SHOWN_CI)
        metrics = [str(m) for m in result.metrics.loc[result.metrics["evaluator"] == ev, "metric"]]
        primary = result.primary_metric(ev)
        methods = board.attrs["ci"]["method"]
        used = sorted({methods[m] for m in metrics if methods.get(m, "none") != "none"})
        ranked = "arena rating; see below" if "rating" in board.columns else primary
        lines.extend(wrap_item(f"== {ev} (ranked on {ranked}) ==", bullet=""))
        if used:
            lines.append(f"[lo, hi]: 95% intervals ({', '.join(used)})")
        rows = []
        for model_key, r in board.iterrows():
            cells = []
            for m in metrics:
                interval = format_interval(r[f"{m}_lo"], r[f"{m}_hi"])
                cells.append(" ".join(x for x in (format_value(r[m]), f"({r[f'{m}_n']}/{r['N']})", interval) if x))
            rows.append((shown.get(str(model_key), _cut(str(result.label(str(model_key))), LABEL_WIDTH)), cells))
        lines.extend(_table("model", rows, [_cut(m, WIDTH - LABEL_WIDTH - _GAP) for m in metrics]))
        lines.append("")
    lines.extend(_arena_lines(result, shown))
    leaders = result.insights
    leaders = leaders[leaders["kind"].isin((*LEADER_KINDS, AHEAD_KIND))]  # a tied leader says so too
    if not leaders.empty:
        lines.append("== is the lead real? ==")
        for message in leaders["message"]:
            lines.extend(wrap_item(str(message)))
        lines.append("")
    probs = result.problems
    lines.append(f"== problems ({len(probs)}) ==")
    for message in probs["message"]:
        lines.extend(wrap_item(str(message)))
    if probs.empty:
        lines.append("none")
    return "\n".join(lines)


def _arena_lines(result: EvaluationResult, shown: dict[str, str]) -> list[str]:
    """Write a block per head-to-head evaluator: arena ratings and each judge's first-slot preference.

    Each model's arena rating comes with its 95% interval and its wins, losses and ties, best first.
    """
    from nbeval.results.statistics.head_to_head import arena_fit, bias_sentence, head_to_head_evaluators, rating_text

    lines: list[str] = []
    for ev in head_to_head_evaluators(result):
        fit = arena_fit(result, ev)
        lines.extend(
            wrap_item(f"== {ev}: arena ratings (1000 = the mean model; first-slot preference removed) ==", bullet="")
        )
        table = fit.arena_table()
        if table.empty:
            lines.extend(["no verdict could be read: no ratings", ""])
            continue
        rows = [
            (
                shown.get(str(r.model_key), _cut(str(result.label(str(r.model_key))), LABEL_WIDTH)),
                [rating_text(r.rating, r.rating_lo, r.rating_hi), f"{r.wins}-{r.losses}-{r.ties}"],
            )
            for r in table.itertuples()
        ]
        lines.extend(_table("model", rows, ["rating [95%]", "W-L-T"]))
        for b in fit.position_bias_table().itertuples():
            lines.extend(wrap_item(bias_sentence(b)))
        lines.append("")
    return lines


def problem_counts(result: EvaluationResult) -> str:
    """``"17 problems: 12 threshold, 5 perturbation"`` (kinds most frequent first), or ``"no problems"``."""
    kinds = Counter(str(k) for k in result.problems["kind"])
    if not kinds:
        return "no problems"
    total = sum(kinds.values())
    return f"{total} problem{'s' if total != 1 else ''}: " + ", ".join(f"{n} {k}" for k, n in kinds.most_common())


def brief_text(result: EvaluationResult) -> str:
    """Show the result at a glance.

    One table of every evaluator's primary metric (a row per evaluator, a column per model, ``*`` on
    the leader), then the problems counted by kind. :func:`summary_text` has the rest (intervals,
    every metric, the messages).
    """
    models = [str(k) for k in dict.fromkeys(result.aggregates["model_key"])]
    shown, legend = _short_labels(result, models)
    rows = []
    for ev in result.evaluators:
        primary = result.primary_metric(ev)
        board = leaderboard(result, evaluator=ev)
        values = board[primary] if primary in board else None
        best = None
        if values is not None and len(values) and values.notna().iloc[0]:
            if len(values) == 1 or values.iloc[0] != values.iloc[1]:
                best = str(board.index[0])
        cells = []
        for key in models:
            value = values.get(key) if values is not None else None
            cells.append(format_value(None if value is None else float(value)) + ("*" if key == best else " "))
        rows.append((_cut(f"{ev}.{primary}", 40), cells))
    lines = [*legend, *([""] if legend else [])]
    if rows:
        lines.extend(_table("evaluator.metric", rows, [shown[k] + " " for k in models]))
        if any(cell.endswith("*") for _, cells in rows for cell in cells):
            lines.append("* leads on that metric (result.insights says whether the lead is significant)")
    lines.append("")
    lines.extend(wrap_item(problem_counts(result), bullet=""))
    return "\n".join(lines)
