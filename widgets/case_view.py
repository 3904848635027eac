"""The HTML of one test case across models: the case, every answer side by side, every score.

An evaluator run with a jury shows, in place of its rationale, each model's jurors side by side
(:mod:`nbeval.widgets.jury_view`): every juror's value, label and rationale, a parse failure
marked, then the row's value, how the jury made it and the counts.

Rows that carry a conversation (``messages``) show it as turns above their verdicts, tool calls
and results included (:mod:`nbeval.widgets.conversation_view`); expected tool calls are listed
with the case's fields.

Everything shown (prompt, expected output, contexts, answers, rationales, errors, labels, model
and evaluator names) is escaped through :mod:`nbeval.widgets.markup`; a rationale holding
``<script>`` or ``<img onerror=...>`` is shown as text.

Every text is cut to ``max_chars`` (default 4,000) characters, ending with the marker of
:func:`nbeval.results.storage.limits.truncate_text` that gives its full size, so a 5 MB answer or
rationale never reaches the browser whole.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbeval.results.storage.limits import truncate_text
from nbeval.widgets.conversation_view import conversation_html, expected_calls_html, shared_turns
from nbeval.widgets.jury_view import jury_html, jury_of, metric_passes
from nbeval.widgets.markup import esc, text_block, value_cell

if TYPE_CHECKING:
    from nbeval.data.model import Chunk, Row
    from nbeval.results import EvaluationResult

__all__ = ["MAX_CHARS", "case_html", "case_rows"]

#: How many characters of each text a case shows by default.
MAX_CHARS = 4000
#: How many characters of a name (model, test-case key, document URI) are shown.
_NAME_CHARS = 200
#: How many chunks of a context are shown (each cut to ``max_chars``).
_MAX_CHUNKS = 20

_CELL = "vertical-align:top;padding:4px 8px;border-top:1px solid #e4e4e4;min-width:200px;max-width:460px"
_HEAD = "text-align:left;vertical-align:top;padding:4px 8px;color:#555;font-weight:600;white-space:nowrap"
_HIGHLIGHT = "background:#fff8dc"
_MUTED = "color:#777"


def case_rows(result: EvaluationResult) -> dict[str, list[Row]]:
    """The dataset rows grouped by test-case key, in dataset order."""
    out: dict[str, list[Row]] = {}
    for r in result.dataset.rows:
        out.setdefault(r.key, []).append(r)
    return out


def _missing(v: Any) -> bool:
    """Whether ``v`` is a missing cell: ``None``, NaN or pandas' ``NA``."""
    return v is None or (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType"


def _text(value: Any, max_chars: int) -> str:
    """``value`` as an escaped text block, cut to ``max_chars`` with the size marker."""
    return text_block(None if _missing(value) else truncate_text(str(value), max_chars))


def _name(value: Any) -> str:
    """A short name, escaped and cut."""
    return esc(None if _missing(value) else truncate_text(str(value), _NAME_CHARS))


def _chunks(chunks: Sequence[Chunk], max_chars: int) -> str:
    """Render the context chunks as numbered HTML blocks.

    Each block shows its source and its text cut to ``max_chars``; a dash stands for no chunks.
    """
    if not chunks:
        return f'<span style="{_MUTED}">—</span>'
    parts = []
    for i, c in enumerate(chunks[:_MAX_CHUNKS], 1):
        source = f' <span style="{_MUTED}">[{_name(c.doc_uri)}]</span>' if c.doc_uri else ""
        parts.append(
            f'<div style="margin-bottom:6px"><span style="{_MUTED}">#{i}</span>{source}'
            f"{_text(c.content, max_chars)}</div>"
        )
    if len(chunks) > _MAX_CHUNKS:
        parts.append(f'<div style="{_MUTED}">… and {len(chunks) - _MAX_CHUNKS} more chunks</div>')
    return "".join(parts)


def _case_fields(row: Row, max_chars: int, shared: int, messages: list[dict[str, Any]]) -> str:
    """Render the case's fields as an HTML table.

    When every model's conversation begins with the same ``shared`` messages, those (the first of
    ``messages``) are shown instead of the prompt.
    """
    if shared:
        prompt = ("conversation", conversation_html(messages, stop=shared, max_chars=max_chars))
    else:
        prompt = ("prompt", _text(row.input, max_chars))
    fields = [
        prompt,
        ("expected output", _text(row.expected_output, max_chars)),
        ("condition", _text(row.output_condition, max_chars)),
        ("guidelines", _text("\n".join(f"• {g}" for g in row.guidelines), max_chars)),
        ("categories", _text(", ".join(row.categories), max_chars)),
        ("expected context", _chunks(row.expected_context, max_chars)),
    ]
    if row.expected_tool_calls is not None:  # [] too: the case says no tool should be called
        fields.append(("expected tool calls", expected_calls_html(row.expected_tool_calls, max_chars=max_chars)))
    body = "".join(
        f'<tr><th style="{_HEAD}">{esc(name)}</th><td style="{_CELL}">{html}</td></tr>' for name, html in fields
    )
    return f'<table style="border-collapse:collapse;margin-bottom:10px">{body}</table>'


def case_html(
    result: EvaluationResult,
    key: str,
    highlight: str | None = None,
    *,
    max_chars: int = MAX_CHARS,
    rows: dict[str, list[Row]] | None = None,
) -> str:
    """Render one test case across models as HTML.

    The case ``key`` shows its fields, then one column per model with its conversation (when the
    rows have messages: :mod:`.conversation_view`, the messages every model shares shown once with
    the case's fields), the answer, retrieved context, every metric (tinted by pass/fail), each
    evaluator's rationale and any error or skip reason.

    Args:
        result: The evaluation result the case is read from.
        key: The test-case key of the case to show.
        highlight: Model key whose column is tinted (the heatmap cell that was clicked); ``None``
            tints none.
        max_chars: How many characters of each text are shown before it is cut.
        rows: The dataset rows grouped by test-case key, as :func:`case_rows` returns them;
            ``None`` groups them here.

    Returns:
        The HTML of the case, or a short note when ``result`` has no test case ``key``.
    """
    grouped = rows if rows is not None else case_rows(result)
    case = grouped.get(key)
    if not case:
        return f'<div style="{_MUTED}">no test case with key {_name(key)} in this result</div>'
    by_model = {r.model_key: r for r in case}
    models = [m for m in result.model_keys if m in by_model] + [m for m in by_model if m not in result.model_keys]
    s = result.scores[result.scores["key"] == key]
    scores = {(r.model_key, r.evaluator, r.metric): r for r in s.itertuples(index=False)}

    def column_style(m: str) -> str:
        """The style of a model's cells: highlighted for the model in focus."""
        return f"{_CELL};{_HIGHLIGHT}" if m == highlight else _CELL

    def line(name: str, cells: list[str]) -> str:
        """One table row: the field's name, then one cell per model."""
        tds = "".join(f'<td style="{column_style(m)}">{c}</td>' for m, c in zip(models, cells, strict=True))
        return f'<tr><th style="{_HEAD}">{esc(name)}</th>{tds}</tr>'

    head = "".join(
        f'<th style="{_HEAD};{_HIGHLIGHT if m == highlight else ""}">{_name(result.label(m))}</th>' for m in models
    )
    shared = shared_turns(case)
    talks = [r.messages for r in case if r.messages]
    body = [_conversations(line, [by_model[m] for m in models], shared, max_chars)] if talks else []
    body += [
        line(
            "answer",
            [
                _text(by_model[m].actual_output, max_chars)
                + (_text(f"answer not collected: {by_model[m].error}", max_chars) if by_model[m].error else "")
                for m in models
            ],
        ),
        line("retrieved context", [_chunks(by_model[m].context, max_chars) for m in models]),
    ]
    for ev in result.evaluators:
        metrics = list(result.metrics.loc[result.metrics["evaluator"] == ev, "metric"])
        for metric in metrics:
            body.append(line(f"{ev}.{metric}", [_score_cell(scores.get((m, ev, metric))) for m in models]))
        first = [scores.get((m, ev, metrics[0])) if metrics else None for m in models]
        juries = [jury_of(r.details) if r is not None else None for r in first]
        if any(juries):
            body.append(line(f"{ev}: jury", _jury_cells(result, ev, scores, models, juries, max_chars)))
        elif any(r is not None and not (_missing(r.rationale) and _missing(r.label)) for r in first):
            body.append(line(f"{ev}: rationale", [_rationale(r, max_chars) for r in first]))
        if any(r is not None and (not _missing(r.error) or r.skipped) for r in first):
            body.append(line(f"{ev}: error / skipped", [_problem(r, max_chars) for r in first]))
    table = (
        f'<table style="border-collapse:collapse"><thead><tr><th></th>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    fields = _case_fields(case[0], max_chars, shared, talks[0] if talks else [])
    return (
        f'<div class="nbeval-case"><div style="{_MUTED}">test case {_name(key)}</div>'
        f'{fields}<div style="overflow-x:auto">{table}</div>'
        f"{_comparisons(result, s, {m: r.actual_output for m, r in by_model.items()}, max_chars)}</div>"
    )


def _jury_cells(
    result: EvaluationResult,
    ev: str,
    scores: dict[tuple[Any, Any, Any], Any],
    models: list[str],
    juries: list[dict[str, Any] | None],
    max_chars: int,
) -> list[str]:
    """Render each model's jury on ``ev`` as one table cell per model (:mod:`.jury_view`).

    A cell shows every juror's value of the primary metric, label and rationale, then the row's
    value and how it was made; a row without a jury shows its rationale as usual.
    """
    metric = result.primary_metric(ev)
    passes = metric_passes(result, ev, metric)
    cells = []
    for m, panel in zip(models, juries, strict=True):
        r = scores.get((m, ev, metric))
        if panel is None or r is None:
            cells.append(_rationale(r, max_chars))
            continue
        value = None if _missing(r.value) else float(r.value)
        label = None if _missing(r.label) else r.label
        cells.append(jury_html(panel, metric, value=value, label=label, passes=passes, max_chars=max_chars))
    return cells


def _conversations(line: Any, rows: list[Row], shared: int, max_chars: int) -> str:
    """Render the table line of each model's conversation (:mod:`.conversation_view`).

    Each conversation starts at the first message after the ``shared`` ones shown with the case.
    """
    cells = []
    for r in rows:
        if not r.messages:
            cells.append(f'<span style="{_MUTED}">no conversation</span>')
            continue
        note = f"messages 1–{shared}: the conversation above" if shared > 1 else "message 1: above"
        if len(r.messages) <= shared:
            note += f"; no message after message {shared}"
        cell = f'<div style="{_MUTED};font-size:12px">{note}</div>' if shared else ""
        cells.append(cell + conversation_html(r.messages, start=shared, max_chars=max_chars))
    return str(line("conversation", cells))


def _comparisons(result: EvaluationResult, scores: Any, answers: dict[str, Any], max_chars: int) -> str:
    """Each head-to-head evaluator's comparisons of the case, pair by pair (:mod:`.pair_view`)."""
    from nbeval.widgets.pair_view import pairs_html

    parts = []
    for ev in result.metrics.loc[result.metrics["metric"] == "win_rate", "evaluator"].astype(str).unique():
        html = pairs_html(result.label, scores.loc[scores["evaluator"] == ev, "details"], answers, max_chars=max_chars)
        if html:
            parts.append(f'<div style="margin-top:10px"><div style="{_HEAD}">{esc(ev)}: comparisons</div>{html}</div>')
    return "".join(parts)


def _score_cell(r: Any) -> str:
    """Render a score's table cell: its value tinted by pass or fail.

    A score without a value shows why there is none (not evaluated, skipped, an error).
    """
    if r is None:
        return f'<span style="{_MUTED}">not evaluated</span>'
    if r.skipped:
        return f'<span style="{_MUTED}">skipped</span>'
    if _missing(r.value):
        return f'<span style="{_MUTED}">{"error" if not _missing(r.error) else "no value"}</span>'
    passed = None if _missing(r.passed) else bool(r.passed)
    return value_cell(r.value, passed)


def _rationale(r: Any, max_chars: int) -> str:
    """A score's rationale as HTML, its label above it; a dash when the row was not scored."""
    if r is None:
        return f'<span style="{_MUTED}">—</span>'
    label = f'<div style="{_MUTED}">label: {_name(r.label)}</div>' if not _missing(r.label) else ""
    return label + _text(r.rationale, max_chars)


def _problem(r: Any, max_chars: int) -> str:
    """Why a score has no value, as HTML (the skip reason or the error, in red); empty when it has one."""
    if r is None:
        return ""
    if r.skipped:
        return _text(f"skipped: {r.skip_reason or 'no reason given'}", max_chars)
    if not _missing(r.error):
        return f'<div style="color:#b3261e">{_text(r.error, max_chars)}</div>'
    return ""
