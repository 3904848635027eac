"""Which trace format a parsed JSON document is in, told from its keys alone.

:mod:`nbeval.data.jsonio` asks it to tell a trace file from a file of rows, and the trace readers
to pick their reader; it imports nothing, so both can (see :mod:`nbeval.data.phoenix_spans` for
Phoenix's span JSON).
"""

from __future__ import annotations

from typing import Any

__all__ = ["is_phoenix_export", "is_phoenix_span", "phoenix_frame_hint", "phoenix_listed"]


def is_phoenix_span(doc: Any) -> bool:
    """Whether ``doc`` is one span in Phoenix's JSON (``context`` with ``trace_id`` and ``span_id``)."""
    context = doc.get("context") if isinstance(doc, dict) else None
    return (
        isinstance(context, dict)
        and "trace_id" in context
        and "span_id" in context
        and ("span_kind" in doc or "start_time" in doc)
        and "info" not in doc
    )


def phoenix_listed(doc: Any) -> list[Any] | None:
    """The spans of a REST answer (``data``) or a CLI trace (``spans``), when ``doc`` is one."""
    if not isinstance(doc, dict) or "info" in doc:
        return None
    for key in ("data", "spans"):
        items = doc.get(key)
        if isinstance(items, list) and items and is_phoenix_span(items[0]):
            return items
    return None


def is_phoenix_export(doc: Any) -> bool:
    """Whether ``doc`` is a Phoenix span, a REST answer of spans or a CLI trace."""
    return is_phoenix_span(doc) or phoenix_listed(doc) is not None


def phoenix_frame_hint(record: Any) -> str:
    """A hint to add to the error for a row without an input, when ``record`` is a row of Phoenix's spans dataframe.

    That dataframe (``get_spans_dataframe()``: ``context.trace_id``, ``attributes.input.value``,
    ...) is not read; the hint is ``""`` for any other record.
    """
    if not isinstance(record, dict) or "context.trace_id" not in record or "context.span_id" not in record:
        return ""
    return (
        "; this looks like Phoenix's spans dataframe (get_spans_dataframe()), which nbeval does not read: "
        "save Phoenix's span JSON instead (client.spans.get_spans(...) as a JSON list, or the REST answer)"
    )
