r"""The lines of a batch's output and error files, read as untrusted text.

A provider's file is JSONL: each line ``{"id", "custom_id", "response": {"status_code", "body"} |
null, "error": {"code", "message"} | null}``. Nothing in it is taken on trust: a field of the wrong
type (``"status_code": "200 OK"``, a body that is no object) is not an exception that stops the
run (and every rerun, which resumes the same batch) but an :class:`OutputLine` whose
``problem`` says which field holds what, so that line's request gets a row error and the other
lines their replies.

The file is read as it arrives (:func:`split_lines` over the download's chunks), one line at a
time, on ``\n`` only: a file of 250 MB never sits in memory whole, and a JSON string holding
U+2028 or a form feed (which :meth:`str.splitlines` would cut at) stays one line.
"""

from __future__ import annotations

import json
import math
import reprlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["OutputLine", "parse_line", "read_lines", "split_lines"]

#: How a field's value is shown in a problem: short, whatever its size or depth (a hostile field
#: may be huge or nested deep).
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 2, 40, 40, 3, 3


@dataclass(frozen=True)
class OutputLine:
    """One line of a batch's output or error file."""

    custom_id: str
    """The request it answers (nbeval's cache key of it)."""
    status_code: int | None
    body: Any
    """The response's JSON body (a chat completion when ``status_code`` is 200)."""
    error: str | None
    """The line's error (``code: message``), or the error body's message for a non-200 response."""
    problem: str | None = None
    """A field nbeval cannot read (``"its response.status_code is '200 OK', not a number"``): the
    line answers its request with an error saying so."""


def split_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    r"""Split a file arriving in ``chunks`` into lines.

    Each line comes without its ``\n`` (blank ones skipped); at most one line is held at a time.
    """
    pending: list[bytes] = []
    for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            pending.append(chunk[start:end])
            line = b"".join(pending)
            pending.clear()
            start = end + 1
            if line.strip():
                yield line
        if start < len(chunk):
            pending.append(chunk[start:])
    last = b"".join(pending)
    if last.strip():
        yield last


def read_lines(text: str) -> Iterator[OutputLine]:
    """The lines of a whole file's ``text`` that carry a ``custom_id`` (see :func:`parse_line`)."""
    for raw in split_lines([text.encode("utf-8", "surrogatepass")]):
        line = parse_line(raw)
        if line is not None:
            yield line


def parse_line(raw: bytes | str) -> OutputLine | None:
    """Read one line of an output or error file.

    ``None`` for a line that names no request (not JSON, not an object, no ``custom_id``). Never
    raises for what the line holds.
    """
    try:
        line = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's depth
        return None
    if not isinstance(line, dict) or "custom_id" not in line:
        return None
    custom_id = _custom_id(line["custom_id"])
    got = line.get("response")
    if got is not None and not isinstance(got, dict):
        return OutputLine(custom_id, None, None, None, f"its response is {_show(got)}, not an object")
    response: dict[str, Any] = got or {}
    status, body = response.get("status_code"), response.get("body")
    if status is not None and not _is_count(status):
        return OutputLine(
            custom_id, None, body, None, f"its response.status_code is {_show(status)}, not an HTTP status"
        )
    code = None if status is None else int(status)
    error = _error_text(line.get("error"))
    if error is None and code is not None and code != 200:
        inner = body.get("error") if isinstance(body, dict) else None
        message = inner.get("message") if isinstance(inner, dict) else None
        error = f"HTTP {code}: {message if isinstance(message, str) else _dump(body)}"
    problem = None
    if error is None and code is None:
        problem = "it has neither a response nor an error"
    elif error is None:
        problem = _body_problem(body)
    return OutputLine(custom_id, code, body, error, problem)


def _custom_id(value: Any) -> str:
    # Only a string can be one of nbeval's keys; anything else is shown as it came, matching none.
    return value if isinstance(value, str) else _dump(value)


def _error_text(err: Any) -> str | None:
    """A line's ``error`` field as ``code: message``; ``None`` when it says nothing."""
    if err is None or err == {} or err == "":
        return None
    if isinstance(err, str):
        return f"error: {err[:300]}"
    if isinstance(err, dict):
        code, message = err.get("code"), err.get("message")
        if not code and not message:
            return None
        code_text = code[:100] if isinstance(code, str) and code else ("error" if not code else _dump(code)[:100])
        message_text = message if isinstance(message, str) else ("" if message is None else _dump(message))
        return f"{code_text}: {message_text[:300]}".strip()
    return f"error: {_show(err)}"


def _body_problem(body: Any) -> str | None:
    """What in a 200 response's ``body`` is not an object.

    (A usage no call can have is not a problem of the line: the reply is kept with its usage unknown, as a synchronous
    call's is.)
    """
    return None if isinstance(body, dict) else f"its response.body is {_show(body)}, not an object"


def _is_count(value: Any) -> bool:
    """A whole, finite, non-negative number (``true`` is not one)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return value >= 0
    return isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer()


def _show(value: Any) -> str:
    return _REPR.repr(value)


def _dump(value: Any) -> str:
    try:
        return json.dumps(value)[:300]
    except (ValueError, TypeError, RecursionError):
        return _show(value)
