"""JSON in and out: files, JSON text and parsed objects, read leniently; and which shape a document has.

Published examples are not always strict JSON, so trailing commas are accepted; ``.jsonl`` files
are read a line at a time. Files are UTF-8, with or without a byte-order mark. Nothing here knows
the data model's classes: it returns plain Python data, and :func:`json_shape` tells a lab, a
suite, a test, a test case, rows and traces (OTLP JSON, MLflow traces) apart by content.

A file that cannot be read (missing, a folder, not UTF-8, empty, not JSON, nested too deeply)
raises :class:`~nbeval.errors.DataError` naming it; an object that gives one key twice loads
(the last value wins, as in every JSON parser) with a :class:`~nbeval.data.fields.DataWarning`
naming the row and the key.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from nbeval.data.fields import warn_data
from nbeval.data.text import read_text_file, repair_text
from nbeval.data.trace_shapes import is_phoenix_export
from nbeval.errors import DataError

__all__ = ["SUITE_SHAPES", "Shape", "is_csv_path", "json_lines", "json_shape", "load_json", "write_json"]

#: The kinds of JSON document the readers recognise (see :func:`json_shape`); ``"unknown"`` when none fits.
Shape = Literal["lab", "suite", "test", "test_case", "dataset", "records", "record", "traces", "unknown"]

#: The shapes a test suite can be given in: the suite, one test, or one test case.
SUITE_SHAPES: tuple[Shape, ...] = ("suite", "test", "test_case")

_TRAILING_COMMA = re.compile(r'("(?:[^"\\]|\\.)*")|,(\s*[\]}])', re.S)


def _strip_trailing_commas(text: str) -> str:
    # Strings are matched first and kept, so a comma inside a string is never touched.
    return _TRAILING_COMMA.sub(lambda m: m.group(1) if m.group(1) is not None else m.group(2), text)


def load_json(source: Any) -> tuple[Any, str]:
    """Parse ``source`` (path, JSON text, or already-parsed object); return (data, source name)."""
    if isinstance(source, (dict, list)):
        return source, "<object>"
    if isinstance(source, str) and source.lstrip("\ufeff \t\r\n").startswith(("{", "[")):
        return _parse_json(source.lstrip("\ufeff"), "<json text>"), "<json text>"
    if not isinstance(source, (str, os.PathLike)):
        msg = f"cannot read a {type(source).__name__}; give a path, JSON text, a dict or a list"
        raise DataError(msg)
    name = str(source)
    text = read_text_file(source)
    if name.lower().endswith(".jsonl"):
        return _parse_jsonl(text, name), name
    return _parse_json(text, name), name


def _parse_json(text: str, name: str, row: int | None = None) -> Any:
    """One JSON document (trailing commas tolerated); every failure is a DataError."""
    dups = _Duplicates()
    try:
        try:
            data = json.loads(text, object_pairs_hook=dups.hook)
        except json.JSONDecodeError:
            try:
                dups = _Duplicates()
                data = json.loads(_strip_trailing_commas(text), object_pairs_hook=dups.hook)
            except json.JSONDecodeError as exc:
                where = f"line {exc.lineno}, column {exc.colno}" if row is None else f"column {exc.colno}"
                raise DataError(f"not valid JSON: {exc.msg} ({where})", source=name, row=row) from None
    except RecursionError:
        msg = "not readable: the JSON is nested too deeply (hundreds of levels of lists or objects)"
        raise DataError(msg, source=name, row=row) from None
    except DataError:  # said above already (a DataError is a ValueError too)
        raise
    except ValueError as exc:  # not a JSONDecodeError: an integer with thousands of digits
        digits = re.search(r"has (\d+) digits", str(exc))
        # Python's own advice (sys.set_int_max_str_digits) is no help to someone loading a file
        what = f"a number of {digits.group(1)} digits" if digits else str(exc)
        msg = f"not valid JSON: {what}, longer than any count, time or score can be; the file is damaged or not data"
        raise DataError(msg, source=name, row=row) from None
    dups.warn(data, name, row)
    return data


#: The line ends of JSON lines: ``\n``, ``\r\n`` or ``\r`` (as a file read line by line splits),
#: never ``str.splitlines``'s others (U+0085, U+2028, ...), which JSON text holds unescaped.
_LINE_END = re.compile(r"\r\n|\r|\n")


def json_lines(text: str) -> list[str]:
    """The lines of JSON-lines ``text``.

    ``str.splitlines`` would also cut at U+0085, U+2028, U+2029 and a few control characters, which may stand unescaped
    inside a JSON string (a row written with ``ensure_ascii=False``), breaking that row in two.
    """
    return _LINE_END.split(text)


def _parse_jsonl(text: str, name: str) -> list[Any]:
    out = []
    for lineno, line in enumerate(json_lines(text), 1):
        if line.strip():
            out.append(_parse_json(line, name, row=lineno))
    return out


class _Duplicates:
    """An ``object_pairs_hook`` that notes objects giving a key twice, then warns where they are."""

    def __init__(self) -> None:
        self.found: dict[int, list[str]] = {}

    def hook(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            twice: list[str] = []
            for k, _ in pairs:
                if k in seen and k not in twice:
                    twice.append(k)
                seen.add(k)
            self.found[id(obj)] = twice
        return obj

    def warn(self, data: Any, name: str, row: int | None) -> None:
        if not self.found:
            return
        stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
        while stack:  # find each marked object's path (no recursion: depth is no concern)
            node, path = stack.pop()
            if isinstance(node, dict):
                for key in self.found.get(id(node), ()):
                    at_row, field = _locate((*path, key), row)
                    warn_data(
                        f"the key '{repair_text(key)[0]}' is given twice in one object; the last value is kept",
                        source=name,
                        row=at_row,
                        field=field,
                        stacklevel=6,
                    )
                stack.extend((v, (*path, k)) for k, v in node.items())
            elif isinstance(node, list):
                stack.extend((v, (*path, i)) for i, v in enumerate(node))


_ROW_LISTS = frozenset({"inputs", "tests", "test_cases", "models"})


def _locate(path: tuple[Any, ...], row: Any) -> tuple[Any, str]:
    """The row and the field of a place in a document, named as the loaders name them.

    Rows are 1-based (``[2, "context", 0]`` is row 3, ``("tests", 0, "test_cases", 1)`` is
    ``tests[1].test_cases[2]``), places inside a row 0-based (field ``context[0]``).
    """
    cut = 0
    if row is None:
        for n, part in enumerate(path):
            if isinstance(part, int) and (n == 0 or path[n - 1] in _ROW_LISTS):
                cut = n + 1
    head, tail = path[:cut], path[cut:]
    if head:
        plain = len(head) == 1 or (len(head) == 2 and head[0] == "inputs")
        row = head[-1] + 1 if plain else _dotted(head, 1)
    return row, _dotted(tail, 0)


def _dotted(parts: tuple[Any, ...], base: int) -> str:
    out = ""
    for part in parts:
        out += f"[{part + base}]" if isinstance(part, int) else f"{'.' if out else ''}{repair_text(part)[0]}"
    return out


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    """Write ``data`` as indented UTF-8 JSON.

    Values JSON cannot hold are written as text; text that cannot be encoded is repaired, with a
    warning, rather than leave a file half-written.
    """
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    text, repaired = repair_text(text)
    if repaired:
        from nbeval.data.text import REPAIR_NOTE

        warn_data(REPAIR_NOTE, source=str(path))
    Path(path).write_text(text, encoding="utf-8")


def is_csv_path(source: Any) -> bool:
    """Whether ``source`` names a CSV file (by its extension)."""
    return isinstance(source, (str, os.PathLike)) and str(source).lower().endswith(".csv")


def _is_trace(data: Any) -> bool:
    """Whether ``data`` is an OTLP trace export, an MLflow trace or Phoenix span JSON.

    See :mod:`nbeval.data.traces` for those shapes.
    """
    if not isinstance(data, dict):
        return False
    if "resourceSpans" in data or "resource_spans" in data or is_phoenix_export(data):
        return True
    info, body = data.get("info"), data.get("data")
    return isinstance(info, dict) and isinstance(body, dict) and "spans" in body and "input" not in data


def json_shape(data: Any) -> Shape:
    """Which of the shapes nbeval reads ``data`` is, from its content (see :mod:`nbeval.data.readers`)."""
    if isinstance(data, list):
        return "traces" if data and _is_trace(data[0]) else "records"
    if not isinstance(data, dict):
        return "unknown"
    if _is_trace(data):
        return "traces"
    if "raw_dataset" in data or ("dataset" in data and "models" in data):
        return "lab"
    if "tests" in data:
        return "suite"
    if "test_cases" in data:
        return "test"
    if "inputs" in data:
        return "dataset"
    if "prompt" in data:
        return "test_case"
    if any(k in data for k in ("input", "request", "query")):
        return "record"
    return "unknown"
