"""The fields every trace format shares, read and checked: ids, times, status and exceptions.

:mod:`nbeval.data.traces` (OTLP JSON, MLflow) and :mod:`nbeval.data.phoenix_spans` (Phoenix's
span JSON) read a span's id, its parent's, its start and end and whether it ended in error with
these. Every value that is not what the format allows raises :class:`~nbeval.errors.DataError`
naming the file, the span and the field, whatever the value: a number of 4,300 digits, a time
past the year 2554, a digit that is not ASCII. Nothing here reads a file.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from datetime import datetime, timezone
from typing import Any

from nbeval.errors import DataError

__all__ = ["MAX_TIME_NS", "cut", "error_of", "iso_time", "nanos", "shown", "span_id", "start_time"]

#: The latest time a span may carry: OTLP's times are unsigned 64-bit nanoseconds (the year 2554).
#: A larger one is a broken file, and it would overflow a float when a duration is computed.
MAX_TIME_NS = 2**64 - 1
#: Text longer than this is not a time or an id; it is cut before being parsed, so a value of
#: thousands of digits costs nothing and never reaches ``int()``'s limit on long numbers.
_MAX_NUMBER_CHARS = 40
_ERROR_CODES = frozenset({2, "2", "STATUS_CODE_ERROR", "ERROR"})
_ISO = re.compile(
    r"(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:[.,](\d{1,9})\d*)?(Z|[+-]\d{2}:?\d{2})?", re.ASCII | re.IGNORECASE
)


def cut(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters for an error message.

    An attribute's name or a value can be thousands of characters long; the message stays one
    readable line.
    """
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: Any, limit: int = 60) -> str:
    """``value`` as JSON text cut to ``limit`` characters, for an error message.

    It never fails: a huge number is cut before it is written.
    """
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**_MAX_NUMBER_CHARS:
        return f"a number of more than {_MAX_NUMBER_CHARS} digits"
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        text = repr(type(value).__name__)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def span_id(value: Any, size: int, source: str, where: str, name: str) -> str:
    """A trace id (``size`` 16) or span id (8) as lower-case hex, from hex or base64."""
    if isinstance(value, str) and len(value) <= 4 * size:
        text = value[2:] if len(value) == 2 * size + 2 and value[:2] in ("0x", "0X") else value  # MLflow 2
        raw = b""
        if len(text) == 2 * size:
            try:
                raw = bytes.fromhex(text)
            except ValueError:
                raw = b""
        else:
            try:
                raw = base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError):
                raw = b""
        if len(raw) == size and any(raw):
            return raw.hex()
        if len(raw) == size:
            raise DataError("is all zeros, which OTLP reserves for 'no id'", source=source, row=where, field=name)
    what = "traceId" if size == 16 else "spanId"
    if value in (None, ""):
        raise DataError(f"is missing; every span needs its {what}", source=source, row=where, field=name)
    msg = f"{shown(value)} is not a {what}: give {size} bytes as {2 * size} hex digits or in base64"
    raise DataError(msg, source=source, row=where, field=name)


def start_time(value: Any, source: str, where: str, name: str) -> int:
    """A span's start time (required) in nanoseconds since 1970."""
    if value in (None, ""):
        raise DataError("is missing; every span needs its start time", source=source, row=where, field=name)
    return nanos(value, source, where, name) or 0


def nanos(value: Any, source: str, where: str, name: str) -> int | None:
    """A time in nanoseconds since 1970, from text or a whole number.

    ``None`` when absent or 0; at most :data:`MAX_TIME_NS`.
    """
    if value in (None, "", 0, "0"):
        return None
    n = -1
    if isinstance(value, int) and not isinstance(value, bool):
        n = value if value <= MAX_TIME_NS else -1
    elif isinstance(value, str) and len(value) <= _MAX_NUMBER_CHARS and value.isascii() and value.isdigit():
        n = int(value)  # ASCII digits only: int() also takes other scripts' digits, spaces and "_"
    if 0 <= n <= MAX_TIME_NS:
        return n
    msg = f"{shown(value)} is not a time: give nanoseconds since 1970 as a whole number below 2**64"
    raise DataError(msg + ', e.g. "1700000000000000000"', source=source, row=where, field=name)


def iso_time(value: Any, source: str, where: str, name: str) -> int | None:
    """A time written in ISO 8601, in nanoseconds since 1970.

    The text is as Phoenix writes it (``"2026-07-09T00:00:01.5+00:00"``; no zone: UTC); ``None``
    when absent; nanoseconds as text or a number are read too.
    """
    if value in (None, ""):
        return None
    if isinstance(value, int) or (isinstance(value, str) and value.isascii() and value.isdigit()):
        return nanos(value, source, where, name)
    match = _ISO.fullmatch(value.strip()) if isinstance(value, str) and len(value) <= 64 else None
    if match is not None:
        day, clock, fraction, zone = match.groups()
        zone = "+00:00" if zone is None or zone.upper() == "Z" else zone
        try:
            moment = datetime.fromisoformat(f"{day}T{clock}{zone}")
        except ValueError:
            moment = None
        if moment is not None:
            whole = moment - datetime(1970, 1, 1, tzinfo=timezone.utc)
            n = (whole.days * 86_400 + whole.seconds) * 10**9 + int((fraction or "0").ljust(9, "0"))
            if 0 <= n <= MAX_TIME_NS:
                return n
    msg = f'{shown(value)} is not a time: give it in ISO 8601 after 1970, e.g. "2026-07-09T00:00:01.250+00:00"'
    raise DataError(msg, source=source, row=where, field=name)


def error_of(code: Any, message: Any, events: Any) -> str | None:
    """Why a span ended in error (``None`` when it did not).

    That is its status ``message``, else the message of its ``exception`` event (OpenTelemetry's
    ``exception.type`` and ``exception.message``), else a default text. ``events``: a list of
    ``{"name", "attributes"}`` whose attributes are a dict (the OTLP key-value list already made
    one).
    """
    if not isinstance(code, (int, str)) or code not in _ERROR_CODES:
        return None
    if isinstance(message, str) and message.strip():
        return message
    for event in events if isinstance(events, list) else []:
        attrs = event.get("attributes") if isinstance(event, dict) else None
        if isinstance(attrs, dict) and event.get("name") == "exception":
            kind, text = attrs.get("exception.type"), attrs.get("exception.message")
            parts = [p for p in (kind, text) if isinstance(p, str) and p.strip()]
            if parts:
                return ": ".join(parts)
    return "the span ended in error"
