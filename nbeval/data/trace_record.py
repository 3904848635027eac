"""The spans of one trace made one row record, by the rule in :mod:`nbeval.data.traces`.

Nothing here reads a file: :mod:`nbeval.data.traces` and :mod:`nbeval.data.phoenix_spans` read
the spans, :mod:`nbeval.data.span_conversation` builds the conversation.
"""

from __future__ import annotations

from typing import Any

from nbeval.data.fields import warn_data
from nbeval.data.span_conversation import conversation
from nbeval.data.spans import Span
from nbeval.errors import DataError

__all__ = ["trace_record"]


def _roots(spans: list[Span]) -> list[Span]:
    """The root spans of a trace: those without a parent.

    Where a partial export lost the root, those whose parent is not in the file; failing both (a
    loop of parents), the first span.
    """
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None] or [s for s in spans if s.parent_id not in ids]
    return roots or spans[:1]


def _tool_errors(spans: list[Span]) -> list[str]:
    """``"<tool>: <why>"`` for each TOOL span that ended in error, in time order.

    Every such span counts, wherever it ran (a sub-agent's tools too), since a failed tool is worth
    knowing even when the agent went on.
    """
    return [f"{s.tool.name}: {s.error}" for s in spans if s.kind == "TOOL" and s.tool is not None and s.error]


def trace_record(
    spans: list[Span], *, key: str, source: str, session_id: str | None = None, trace_id: str | None = None
) -> dict[str, Any]:
    """The row record of one trace's ``spans`` (see :mod:`nbeval.data.traces` for the rule)."""
    unique: dict[str, Span] = {}
    for s in spans:  # a span exported twice (a retried batch) counts once
        unique.setdefault(s.span_id, s)
    ordered = sorted(unique.values(), key=lambda s: (s.start, s.order))
    roots = _roots(ordered)
    # Roots that end at the same nanosecond: the one that started last, so the file's order of
    # spans never decides which answer a row gets (found by the order-invariance property test).
    first, last = roots[0], max(roots, key=lambda s: (s.end or s.start, s.start, s.order))
    messages = conversation(ordered)
    prompt = next((m["content"] for m in reversed(messages) if m["role"] == "user" and m["content"]), None)
    prompt = prompt or first.input_value
    if prompt is None:
        msg = (
            "the trace has no user message in its LLM spans and its root span no 'input.value'; "
            "nbeval needs one of them as the row's input"
        )
        raise DataError(msg, source=source, row=first.where, field="input.value")
    after = messages[max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1) + 1 :]
    answer = next((m["content"] for m in reversed(after) if m["role"] == "assistant" and m["content"]), None)
    record: dict[str, Any] = {"key": key, "input": prompt, "actual_output": answer or last.output_value}
    models = {s.model for s in ordered if s.kind == "LLM" and s.model}
    if len(models) == 1:
        record["model_key"] = models.pop()
    if messages:
        record["messages"] = messages
    context = [d for s in ordered if s.kind == "RETRIEVER" for d in s.documents]
    if context:
        record["context"] = context
    ends = [s.end for s in roots if s.end]
    if ends:
        duration = (max(ends) - min(s.start for s in roots)) / 1e9
        if duration >= 0:
            record["actual_duration"] = duration
        else:  # a clock that ran backwards: no duration, rather than a negative one shown as measured
            where = min(roots, key=lambda s: s.start).where
            warn_data(
                f"the trace ends {-duration:g} s before it starts; its duration is left unknown",
                source=source,
                row=where,
                field="end time",
            )
    if first.error is not None or last.error is not None:
        record["error"] = first.error or last.error
    failed = _tool_errors(ordered)
    if failed:
        record["tool_errors"] = failed
    record["trace_id"] = trace_id or first.trace_id
    session = session_id or next((s.session_id for s in [*roots, *ordered] if s.session_id), None)
    if session:
        record["session_id"] = session
    record["span_count"] = len(ordered)
    return record
