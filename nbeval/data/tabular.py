"""Tables in and out: CSV files and pandas DataFrames as plain records, cell by cell.

A table gives every row every column, so a few conventions make the round trip lossless:

* list fields and non-text extras are JSON in their cells (a hand-written list cell may also be
  plain text: one item);
* an empty cell is a missing value, and an empty string is written ``""``;
* an extra column that is empty in a row was absent from that row.

The records returned use the LLM dataset's field names; :mod:`nbeval.data.model` validates them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.fields import ROW_FIELDS, is_null
from nbeval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["csv_records", "dataframe_records", "is_dataframe", "records_to_csv"]

_LIST_FIELDS = ("corpus", "context", "categories", "relationships", "expected_context", "guidelines")

#: How an empty string is written to CSV, so it survives apart from a missing value (empty cell).
_EMPTY_STRING_CELL = '""'

_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


def is_dataframe(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame (checked without importing pandas)."""
    return type(obj).__name__ == "DataFrame" and hasattr(obj, "to_dict")


# -- writing ----------------------------------------------------------------------------------


def _cell_to_json(name: str, value: Any) -> Any:
    if value is None:
        return ""
    if value == "" and isinstance(value, str):
        return _EMPTY_STRING_CELL
    if isinstance(value, (list, dict)) or (name not in ROW_FIELDS and not isinstance(value, str)):
        return json.dumps(value, ensure_ascii=False)
    return value


def records_to_csv(records: Sequence[dict[str, Any]], path: str | os.PathLike[str] | None = None) -> str:
    """CSV text of ``records`` (the row fields first, then extras by name); written to ``path`` when given."""
    columns = list(ROW_FIELDS) + sorted({k for r in records for k in r if k not in ROW_FIELDS})
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    for r in records:
        writer.writerow({k: _cell_to_json(k, r.get(k)) for k in columns})
    text = buf.getvalue()
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


# -- reading ----------------------------------------------------------------------------------


def _parse_cell(name: str, value: Any, source: str, row: int, *, csv_text: bool = True) -> Any:
    if is_null(value):
        return None
    if not csv_text and not isinstance(value, str):
        return value
    if not csv_text and (name not in _LIST_FIELDS or value == ""):
        return [] if name in _LIST_FIELDS else value
    if isinstance(value, str) and value == "":
        return [] if name in _LIST_FIELDS else None
    if value == _EMPTY_STRING_CELL:
        return ""
    if name in _LIST_FIELDS and isinstance(value, str):
        if value.lstrip().startswith(("[", "{")):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise DataError(f"list cell is not valid JSON: {exc.msg}", source=source, row=row, field=name) from None
        return [value]
    if name not in ROW_FIELDS and isinstance(value, str) and (value[:1] in '[{"' or value in ("true", "false", "null")
                                                            or _NUMBER.fullmatch(value)):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _drop_empty_extras(rec: dict[str, Any]) -> dict[str, Any]:
    # A table gives every row every column; an extra field that is empty in a row was absent there.
    return {k: v for k, v in rec.items() if k in ROW_FIELDS or v is not None}


def csv_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Records from a CSV written by :func:`records_to_csv` or by hand (list cells as JSON or plain text)."""
    name = str(path)
    if not Path(path).exists():
        raise DataError(f"file not found: {path}", source=name)
    with open(path, newline="", encoding="utf-8") as fh:
        records = [_drop_empty_extras({k: _parse_cell(k, v, name, i) for k, v in raw.items() if k is not None})
                   for i, raw in enumerate(csv.DictReader(fh), 1)]
    for rec in records:
        for numeric in ("actual_duration", "cost"):
            if rec.get(numeric) in ("", None):
                rec[numeric] = None
    return records


def _unbox(v: Any) -> Any:
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return v.tolist()  # numpy arrays and scalars from pandas
    return v


def dataframe_records(df: pd.DataFrame, *, source: str = "DataFrame") -> list[dict[str, Any]]:
    """Records from a DataFrame's rows (cells keep their Python types; NaN is a missing value)."""
    return [_drop_empty_extras({str(k): _parse_cell(str(k), _unbox(v), source, i, csv_text=False)
                                for k, v in rec.items()})
            for i, rec in enumerate(df.to_dict(orient="records"), 1)]
