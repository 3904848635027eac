"""Arize Phoenix's span JSON read into :class:`~nbeval.data.spans.Span`.

Phoenix's REST API and its Python client (``client.spans.get_spans(...)``) give spans in this
shape (``v1.Span``)::

    {"name": "ChatOpenAI", "context": {"trace_id": "...", "span_id": "..."}, "parent_id": "...",
     "span_kind": "LLM", "start_time": "2026-07-09T00:00:01+00:00", "end_time": "...",
     "status_code": "OK" | "ERROR" | "UNSET", "status_message": "...",
     "attributes": {"llm.input_messages.0.message.role": "user", ...},
     "events": [{"name": "exception", "timestamp": "...", "attributes": {...}}]}

Read as a list of them (a ``.json`` file), one a line (``.jsonl``), the REST answer
``{"data": [...], "next_cursor": ...}``, or Phoenix's CLI traces ``{"traceId", "spans": [...]}``.
Attributes are plain JSON values, flattened (``llm.input_messages.0.message.role``) or nested
(``{"llm": {"input_messages": [{"message": {"role": ...}}]}}``); ids are kept as Phoenix gives
them (text); times are ISO 8601 (no zone: UTC) or nanoseconds. ``span_kind`` is the span's kind
where the attributes do not give ``openinference.span.kind``. Nothing here reads a file.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from nbeval.data.span_fields import error_of, iso_time, shown
from nbeval.data.span_messages import messages_from_values
from nbeval.data.spans import Span, span_from_attributes
from nbeval.data.trace_shapes import phoenix_listed
from nbeval.errors import DataError

__all__ = ["phoenix_spans"]

#: Attributes whose value is one value even when it is an object: not flattened further.
_LEAVES = ("input.value", "output.value", "tool.parameters", "metadata", "llm.invocation_parameters")


def _text_id(value: Any, source: str, where: str, name: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value) if abs(value) < 10**40 else None
    if isinstance(value, str) and value.strip() and len(value) <= 200:
        return value.strip()
    msg = f'{shown(value)} is not an id; Phoenix gives ids as text, e.g. "1f6a24f8d2c1b3e4"'
    raise DataError(msg, source=source, row=where, field=name)


def _flat(attrs: Any, source: str, where: str) -> dict[str, Any]:
    """Phoenix's attributes under OpenInference's flattened names.

    Nested objects, and lists of objects, become ``a.b.0.c``; flattened without recursion, so any
    depth is read.
    """
    if attrs is None:
        return {}
    if not isinstance(attrs, dict):
        raise DataError("must be an object of attributes", source=source, row=where, field="attributes")
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any]] = [(str(k), v) for k, v in reversed(list(attrs.items()))]
    while stack:
        key, value = stack.pop()
        nested = isinstance(value, dict) and value and not key.endswith(_LEAVES)
        if not nested and isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
            nested = not key.endswith(_LEAVES)
            value = dict(enumerate(value)) if nested else value
        if nested:
            stack.extend((f"{key}.{k}", v) for k, v in reversed(list(value.items())))
        else:
            out[key] = value
    return out


def _span(sp: Any, source: str, place: str, at: str) -> Span:
    if not isinstance(sp, dict) or not isinstance(sp.get("context"), dict):
        msg = 'a Phoenix span must be an object with a "context": {"trace_id", "span_id"}'
        raise DataError(msg, source=source, row=place)
    context = sp["context"]
    trace = _text_id(context.get("trace_id"), source, place, "context.trace_id")
    own = _text_id(context.get("span_id"), source, place, "context.span_id")
    where = f"trace {trace} span {own}{at}"
    parent = sp.get("parent_id")
    start = iso_time(sp.get("start_time"), source, where, "start_time")
    if start is None:
        raise DataError("is missing; every span needs its start time", source=source, row=where, field="start_time")
    attrs = _flat(sp.get("attributes"), source, where)
    given = sp.get("events")
    events = [
        {"name": e.get("name"), "attributes": e.get("attributes")}
        for e in (given if isinstance(given, list) else [])
        if isinstance(e, dict)
    ]
    span = Span(
        trace_id=trace,
        span_id=own,
        parent_id=None if parent in (None, "") else _text_id(parent, source, where, "parent_id"),
        start=start,
        end=iso_time(sp.get("end_time"), source, where, "end_time"),
        where=where,
        error=error_of(sp.get("status_code"), sp.get("status_message"), events),
    )
    name = sp.get("name")
    span = span_from_attributes(span, attrs, name if isinstance(name, str) else "", source, kind=sp.get("span_kind"))
    return messages_from_values(span, source)


def phoenix_spans(doc: Any, source: str, at: str) -> Iterator[Span]:
    """The spans of ``doc``: one Phoenix span, a REST answer or a CLI trace.

    ``at`` says where ``doc`` is in the file, as " (line 3)".
    """
    listed = phoenix_listed(doc)
    if listed is None:
        yield _span(doc, source, at.strip(" ()") or "1", at)
        return
    key = "data" if doc.get("data") is listed else "spans"
    for k, sp in enumerate(listed, 1):
        yield _span(sp, source, f"{key}[{k}]{at}", at)
