"""JSON in and out: files, JSON text and parsed objects, read leniently; and which shape a document has.

Published examples are not always strict JSON, so trailing commas are accepted; ``.jsonl`` files
are read a line at a time. Nothing here knows the data model's classes: it returns plain Python
data, and :func:`json_shape` tells a lab, a suite, a test, a test case and rows apart by content.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Literal

from nbeval.errors import DataError

__all__ = ["SUITE_SHAPES", "Shape", "is_csv_path", "json_shape", "load_json", "write_json"]

Shape = Literal["lab", "suite", "test", "test_case", "dataset", "records", "record", "unknown"]

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
    if isinstance(source, os.PathLike) or (isinstance(source, str) and not source.lstrip().startswith(("{", "["))):
        path = Path(source)
        if not path.exists():
            raise DataError(f"file not found: {path}", source=str(path))
        text = path.read_text(encoding="utf-8")
        name = str(path)
        if path.suffix.lower() == ".jsonl":
            return _parse_jsonl(text, name), name
    else:
        text, name = str(source), "<json text>"
    try:
        return json.loads(text), name
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(_strip_trailing_commas(text)), name
    except json.JSONDecodeError as exc:
        msg = f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise DataError(msg, source=name) from None


def _parse_jsonl(text: str, name: str) -> list[Any]:
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DataError(f"not valid JSON: {exc.msg}", source=name, row=lineno) from None
    return out


def write_json(data: Any, path: str | os.PathLike[str]) -> None:
    """Write ``data`` as indented UTF-8 JSON (values JSON cannot hold are written as text)."""
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str), encoding="utf-8")


def is_csv_path(source: Any) -> bool:
    """Whether ``source`` names a CSV file (by its extension)."""
    return isinstance(source, (str, os.PathLike)) and str(source).lower().endswith(".csv")


def json_shape(data: Any) -> Shape:
    """Which of the shapes nbeval reads ``data`` is, from its content (see :mod:`nbeval.data.readers`)."""
    if isinstance(data, list):
        return "records"
    if not isinstance(data, dict):
        return "unknown"
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
