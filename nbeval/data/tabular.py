"""Tables in and out: CSV files and pandas DataFrames as plain records, cell by cell.

A table gives every row every column, so a few conventions make the round trip lossless:

* list fields and non-text extras are JSON in their cells (a hand-written list cell may also be
  plain text: one item);
* an empty cell is a missing value, and an empty string is written ``""``;
* an extra column that is empty in a row was absent from that row.

CSV files are read as UTF-8 with or without a byte-order mark (as Excel's "CSV UTF-8" writes
them), with cells of up to :data:`CSV_FIELD_LIMIT` characters. A header that names a column twice,
a row with more cells than the header, a cell over the limit or text that is not UTF-8 raises
:class:`~nbeval.errors.DataError` naming the file and the row. In a DataFrame, a column of whole
numbers that pandas made float because a cell is empty (``1.0``, ``NaN``) is read back as the
integers it held, so a label ``1`` stays ``"1"``.

The records returned use the LLM dataset's field names; :mod:`nbeval.data.model` validates them.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.conversation import CONVERSATION_FIELDS, EMPTY_IS_A_VALUE
from nbeval.data.csvsafe import csv_safe, csv_unsafe
from nbeval.data.fields import ROW_FIELDS, is_null, warn_data
from nbeval.data.text import REPAIR_NOTE, read_text_file, repair_text
from nbeval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["CSV_FIELD_LIMIT", "csv_records", "dataframe_records", "is_dataframe", "records_to_csv"]

#: The most characters one CSV cell may hold (Python's csv module stops at 131,072 by default,
#: which a cell of retrieved context can pass). Raised for nbeval's own reads only.
CSV_FIELD_LIMIT = 64 * 1024 * 1024
_CSV_LIMIT_LOCK = threading.Lock()

_LIST_FIELDS = (
    "corpus",
    "context",
    "categories",
    "relationships",
    "expected_context",
    "guidelines",
    *CONVERSATION_FIELDS,
)

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
        # cells a spreadsheet would run as formulas get a leading ' (taken off again when read back)
        writer.writerow({k: csv_safe(_cell_to_json(k, r.get(k))) for k in columns})
    text, repaired = repair_text(buf.getvalue())
    if repaired:
        warn_data(REPAIR_NOTE, source=str(path) if path is not None else "CSV")
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
        return _empty_list(name) if name in _LIST_FIELDS else value
    if isinstance(value, str) and value == "":
        return _empty_list(name) if name in _LIST_FIELDS else None
    if csv_text and isinstance(value, str):
        value = csv_unsafe(value)
    if value == _EMPTY_STRING_CELL:
        return ""
    if name in _LIST_FIELDS and isinstance(value, str):
        if value.lstrip().startswith(("[", "{")):
            try:
                return _cell_json(value, source, row, name)
            except json.JSONDecodeError as exc:
                raise DataError(f"list cell is not valid JSON: {exc.msg}", source=source, row=row, field=name) from None
        return [value]
    if (
        name not in ROW_FIELDS
        and isinstance(value, str)
        and (value[:1] in '[{"' or value in ("true", "false", "null") or _NUMBER.fullmatch(value))
    ):
        try:
            return _cell_json(value, source, row, name)
        except json.JSONDecodeError:
            return value
    return value


def _empty_list(name: str) -> list[Any] | None:
    """What an empty cell of the list field ``name`` holds: ``[]``, or ``None`` (not given).

    ``None`` is for a field whose ``[]`` says something (``expected_tool_calls``: no call expected,
    written ``[]``).
    """
    return None if name in EMPTY_IS_A_VALUE else []


def _cell_json(value: str, source: str, row: int, name: str) -> Any:
    """``value`` parsed as JSON.

    A cell nested too deeply for Python, or holding an integer too long to convert, is a DataError
    naming the cell (a JSONDecodeError is left to the caller).
    """
    try:
        return json.loads(value)
    except RecursionError:
        msg = "the JSON in this cell is nested too deeply (hundreds of levels of lists or objects)"
        raise DataError(msg, source=source, row=row, field=name) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer of thousands of digits (Python's int-string limit)
        msg = (
            f"the cell holds a number longer than the {sys.get_int_max_str_digits():,} digits Python reads; "
            "write it as quoted JSON text to keep it"
        )
        raise DataError(msg, source=source, row=row, field=name) from None


def _drop_empty_extras(rec: dict[str, Any]) -> dict[str, Any]:
    # A table gives every row every column; an extra field that is empty in a row was absent there.
    return {k: v for k, v in rec.items() if k in ROW_FIELDS or v is not None}


def csv_records(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Records from a CSV written by :func:`records_to_csv` or by hand (list cells as JSON or plain text)."""
    name = str(path)
    text = read_text_file(path)
    records = [
        _drop_empty_extras({k: _parse_cell(k, v, name, i) for k, v in raw.items()})
        for i, raw in enumerate(_csv_rows(text, name), 1)
    ]
    for rec in records:
        for numeric in ("actual_duration", "cost"):
            if rec.get(numeric) in ("", None):
                rec[numeric] = None
    return records


def _csv_rows(text: str, name: str) -> list[dict[str, str]]:
    """The rows of CSV ``text`` as dicts by header name; every problem a DataError."""
    reader = csv.reader(io.StringIO(text, newline=""))
    rows: list[dict[str, str]] = []
    with _CSV_LIMIT_LOCK:
        old = csv.field_size_limit()
        csv.field_size_limit(CSV_FIELD_LIMIT)
        try:
            header = next(reader, None)
            if header is None:
                raise DataError("the file is empty", source=name)
            twice = sorted({h for h in header if header.count(h) > 1})
            if twice:
                msg = f"the header names the column '{twice[0]}' more than once; give each column its own name"
                raise DataError(msg, source=name, row="header", field=twice[0])
            for cells in reader:
                if not cells:
                    continue  # a blank line
                if len(cells) > len(header):
                    msg = (
                        f"has {len(cells)} cells but the header names {len(header)} columns "
                        f"(line {reader.line_num}); quote cells that contain a comma"
                    )
                    raise DataError(msg, source=name, row=len(rows) + 1)
                rows.append(dict(zip(header, cells + [""] * (len(header) - len(cells)), strict=True)))
        except csv.Error as exc:
            reason = str(exc)
            if "field limit" in reason:
                reason = (
                    f"a cell is longer than {csv.field_size_limit():,} characters, the most nbeval reads in one cell"
                )
            raise DataError(
                f"not readable as CSV: {reason} (line {reader.line_num})", source=name, row=len(rows) + 1
            ) from None
        finally:
            csv.field_size_limit(old)
    return rows


def _unbox(v: Any) -> Any:
    if hasattr(v, "tolist") and not isinstance(v, (str, bytes)):
        return v.tolist()  # numpy arrays and scalars from pandas
    return v


def dataframe_records(df: pd.DataFrame, *, source: str = "DataFrame") -> list[dict[str, Any]]:
    """Records from a DataFrame's rows.

    Cells keep their Python types; NaN is a missing value; a column of whole numbers made float by
    an empty cell gives its integers back.
    """
    whole = _whole_number_columns(df)
    out = []
    for i, rec in enumerate(df.to_dict(orient="records"), 1):
        row = {}
        for k, v in rec.items():
            v = _unbox(v)
            if k in whole and isinstance(v, float) and not math.isnan(v):
                v = int(v)
            row[str(k)] = _parse_cell(str(k), v, source, i, csv_text=False)
        out.append(_drop_empty_extras(row))
    return out


def _whole_number_columns(df: pd.DataFrame) -> set[Any]:
    """Float columns with an empty cell whose other cells are all whole numbers.

    These are integer columns that pandas turned float to hold the NaN.
    """
    out = set()
    for name in df.columns:
        col = df[name]
        if getattr(col, "ndim", 1) != 1 or getattr(col.dtype, "kind", "") != "f" or not col.isna().any():
            continue
        values = col.dropna()
        if len(values) and bool(((values % 1) == 0).all()) and bool((values.abs() < 2**53).all()):
            out.add(name)
    return out
