"""Loading datasets, suites and labs from any source, in every shape nbeval accepts.

Shapes read (detected from the content, not the file name):

* an LLM dataset: ``{"inputs": [row, ...]}`` or a bare list of rows (``input``, ``actual_output``...);
* a test lab: ``{"raw_dataset": ..., "dataset": ..., "models": [...]}``;
* a test suite ``{"name", "tests": [...]}``, a test ``{"documents", "test_cases"}``, a test case;
* agent-evaluation eval sets: ``request``, ``response``, ``expected_response``,
  ``retrieved_context[].content/.doc_uri``, ``expected_retrieved_context[].doc_uri``, ``guidelines``;
* DB-GPT evaluation records: ``query``, ``contexts``, ``prediction``, ``doc_name``;
* agent traces: OTLP JSON with OpenInference attributes (``{"resourceSpans": [...]}``, one per
  line of a ``.jsonl`` file, as the OpenTelemetry collector writes them) and MLflow trace JSON
  (``{"info", "data": {"spans"}}``), one row per trace with its conversation in ``messages``
  (see :mod:`~nbeval.data.traces`);
* CSV and pandas DataFrames with the LLM dataset's columns (lists as JSON in the cell);
* Parquet files of rows (``.parquet``; needs pyarrow), read ``_READ_CHUNK_ROWS`` rows at a
  time; JSONL files larger than ``_CHUNKED_JSONL_BYTES`` are read line by line the same way,
  so a file of millions of rows is never held as text and as parsed objects at once.

JSON is read leniently: trailing commas (as in some published examples) are accepted. Files are
UTF-8, with or without a byte-order mark (as Excel writes them). Every problem raises
:class:`~nbeval.errors.DataError` naming the source, the row and the field; what loads but was
repaired or looks wrong (text that cannot be encoded, a key given twice in one JSON object, one
key with different prompts for two models, a relationship pointing at no key) is a
:class:`~nbeval.data.fields.DataWarning` naming them.

The work is done below this module, each part with one job: :mod:`~nbeval.data.jsonio` (JSON
files and text, shape detection), :mod:`~nbeval.data.tabular` (CSV and DataFrames),
:mod:`~nbeval.data.styles` (other tools' column names), :mod:`~nbeval.data.fields` (checks per
field), :mod:`~nbeval.data.traces` (agent traces) and the classes of :mod:`~nbeval.data.model`.
Inside ``nbeval.data`` imports point one way, down that list (pyproject.toml's import-linter
contract): the model never imports readers.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from nbeval.data.jsonio import SUITE_SHAPES, _parse_json, is_csv_path, json_shape, load_json, write_json
from nbeval.data.model import LlmDataset, TestLab, TestSuite, count_nan_expected, warn_nan_expected
from nbeval.data.rows import rows_from_chunks, rows_from_records
from nbeval.data.tabular import is_dataframe
from nbeval.data.traces import is_trace_file, read_traces, trace_records
from nbeval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "jsonl_slice_records",
    "jsonl_slices",
    "load",
    "load_json",
    "parquet_slice_records",
    "read_csv",
    "read_dataset",
    "read_jsonl_rows",
    "read_lab",
    "read_pandas",
    "read_parquet",
    "read_suite",
    "read_traces",
    "rows_from_records",
    "write_csv",
    "write_json",
]

_is_dataframe = is_dataframe  # an older name, kept for callers outside nbeval

#: Rows parsed and converted at a time when a large file is read in chunks.
_READ_CHUNK_ROWS = 50_000
#: JSONL files at least this large are read line by line (smaller ones whole, as any JSON).
_CHUNKED_JSONL_BYTES = 32 * 1024 * 1024


def _suffix(source: Any) -> str:
    return os.fspath(source).lower().rsplit(".", 1)[-1] if isinstance(source, (str, os.PathLike)) else ""


def load(source: Any) -> LlmDataset | TestLab | TestSuite:
    """Load any supported file or object: a dataset, a lab or a suite, as found.

    The shape is detected from the content (see the module docstring); Parquet files, trace files
    and large JSONL files are read as datasets.

    Args:
        source: A path (JSON, JSONL, CSV or Parquet), JSON text, the parsed JSON or a pandas
            DataFrame.

    Returns:
        A test lab or a test suite when ``source`` holds one, otherwise a dataset of rows (agent
        traces give a row per trace).
    """
    if _suffix(source) in ("parquet", "pq"):
        return read_parquet(source)
    if _suffix(source) == "jsonl" and os.path.isfile(source) and is_trace_file(source):
        return _trace_dataset(read_traces(source), os.fspath(source))
    if _suffix(source) == "jsonl" and os.path.isfile(source) and os.path.getsize(source) >= _CHUNKED_JSONL_BYTES:
        return read_jsonl_rows(source)
    if is_dataframe(source) or is_csv_path(source):
        return LlmDataset.from_json(source)
    data, name = load_json(source)
    shape = json_shape(data)
    if shape == "traces":
        return _trace_dataset(trace_records(data, source=name), name)
    if shape == "lab":
        return TestLab.from_dict(data, source=name)
    if shape in SUITE_SHAPES:
        return TestSuite.from_dict(data, source=name)
    return LlmDataset.from_dict(data, source=name)


def _trace_dataset(records: list[dict[str, Any]], name: str) -> LlmDataset:
    return LlmDataset(rows_from_records(records, source=name), source=name)


def read_dataset(source: Any) -> LlmDataset:
    """A dataset from any shape nbeval reads.

    A lab gives its answered ``dataset``, a suite its unanswered rows, traces a row per trace.
    """
    found = load(source)
    if isinstance(found, TestLab):
        return found.dataset
    if isinstance(found, TestSuite):
        return found.to_dataset()
    return found


def read_lab(source: Any) -> TestLab:
    """A test lab from a path, JSON text or parsed object."""
    return TestLab.from_json(source)


def read_suite(source: Any) -> TestSuite:
    """A test suite (or one test, or one test case) from a path, JSON text or parsed object."""
    return TestSuite.from_json(source)


def read_csv(path: str | os.PathLike[str]) -> LlmDataset:
    """Rows from a CSV written by :func:`write_csv` or by hand (list cells as JSON or plain text)."""
    return LlmDataset.from_csv(path)


def read_pandas(df: pd.DataFrame) -> LlmDataset:
    """Rows from a DataFrame with the LLM dataset's columns (or a supported column style)."""
    return LlmDataset.from_pandas(df)


def read_parquet(path: str | os.PathLike[str], *, chunk_rows: int = _READ_CHUNK_ROWS) -> LlmDataset:
    """Rows from a Parquet file with the LLM dataset's columns (or a supported column style), ``chunk_rows`` at a time.

    Cells read as the values of a JSON row would: a null is a missing value, a list column (``context``,
    ``expected_context_ids``...) a list; a nested column a JSON object.
    """
    try:
        import pyarrow.parquet as pq
    except ImportError:
        from nbeval.errors import MissingDependency

        raise MissingDependency("reading Parquet needs pyarrow: pip install pyarrow") from None
    import pyarrow as pa

    name = os.fspath(path)

    def chunks(batches: Iterator[Any]) -> Iterator[list[dict[str, Any]]]:
        offset = 0
        for batch in batches:
            yield [{k: v for k, v in rec.items() if v is not None} for rec in _batch_records(batch, name, offset)]
            offset += batch.num_rows

    try:
        batches = pq.ParquetFile(name).iter_batches(batch_size=max(1, int(chunk_rows)))
        return LlmDataset(rows_from_chunks(chunks(batches), source=name), source=name)
    except FileNotFoundError:
        raise DataError("no such file", source=name) from None
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"not a readable Parquet file: {exc}", source=name) from None


def _batch_records(batch: Any, name: str, offset: int) -> list[dict[str, Any]]:
    """The rows of a Parquet record batch as dicts.

    A cell Python cannot hold (a string column whose bytes are not UTF-8) is a DataError naming its
    row and column.
    """
    try:
        records: list[dict[str, Any]] = batch.to_pylist()
        return records
    except (UnicodeDecodeError, ValueError, RecursionError):
        pass
    for column, field in zip(batch.columns, batch.schema.names, strict=True):
        for i in range(len(column)):
            try:
                column[i].as_py()
            except UnicodeDecodeError:
                msg = "the text is not valid UTF-8 (a string column must hold UTF-8)"
                raise DataError(msg, source=name, row=offset + i + 1, field=field) from None
            except (ValueError, RecursionError) as exc:
                raise DataError(
                    f"the cell cannot be read: {exc}", source=name, row=offset + i + 1, field=field
                ) from None
    records = batch.to_pylist()
    return records


def read_jsonl_rows(path: str | os.PathLike[str], *, chunk_rows: int = _READ_CHUNK_ROWS) -> LlmDataset:
    """Rows from a JSON-lines file (one row object per line), read and converted ``chunk_rows`` lines at a time.

    A line that is not JSON is a DataError naming its line number.
    """
    name = os.fspath(path)
    nan_expected = [0]

    def chunks() -> Iterator[list[Any]]:
        part: list[Any] = []
        with open(name, encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    part.append(_parse_json(line, name, row=lineno))
                if len(part) >= chunk_rows:
                    nan_expected[0] += count_nan_expected(part)
                    yield part
                    part = []
        if part:
            nan_expected[0] += count_nan_expected(part)
            yield part

    try:
        dataset = LlmDataset(rows_from_chunks(chunks(), source=name), source=name)
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start} of a line)", source=name) from None
    warn_nan_expected(nan_expected[0], name)  # once for the whole file
    return dataset


def parquet_slice_records(
    path: str | os.PathLike[str], row_groups: list[int], first_row: int, *, chunk_rows: int = _READ_CHUNK_ROWS
) -> Iterator[list[dict[str, Any]]]:
    """The records of some row groups of a Parquet file, ``chunk_rows`` at a time, as :func:`read_parquet` reads them.

    ``first_row`` is the 0-based position in the file of the first group's first row: errors name
    rows counted from the file's start.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = os.fspath(path)
    offset = first_row
    try:
        batches = pq.ParquetFile(name).iter_batches(batch_size=max(1, int(chunk_rows)), row_groups=row_groups)
        for batch in batches:
            yield [{k: v for k, v in rec.items() if v is not None} for rec in _batch_records(batch, name, offset)]
            offset += batch.num_rows
    except FileNotFoundError:
        raise DataError("no such file", source=name) from None
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"not a readable Parquet file: {exc}", source=name) from None


#: Where a line ends in Python's text mode (universal newlines).
_LINE_END = re.compile(rb"\r\n|\r|\n")


def _byte_lines(name: str, start: int = 0) -> Iterator[tuple[bytes, int]]:
    r"""Each line of a file from byte ``start``, with its end, and the byte just past it.

    Lines end where Python's text mode ends them (``\n``, ``\r\n`` or a bare ``\r``), so that a
    file cut into byte ranges reads as :func:`read_jsonl_rows` reads it whole.
    """
    with open(name, "rb") as fh:
        fh.seek(start)
        pos, buf = start, b""  # pos: where buf starts in the file
        while True:
            block = fh.read(1 << 20)
            buf += block
            i = 0
            for end in _LINE_END.finditer(buf):
                if block and end.end() == len(buf) and end.group() == b"\r":
                    break  # a \r at the block's end: a \n may follow in the next one
                yield buf[i : end.end()], pos + end.end()
                i = end.end()
            pos, buf = pos + i, buf[i:]
            if not block:
                if buf:
                    yield buf, pos + len(buf)
                return


def jsonl_slices(path: str | os.PathLike[str], records_per_slice: int) -> list[tuple[int, int, int, int, int]]:
    r"""Cut a JSON-lines file into slices of about ``records_per_slice`` records, reading it once in flat memory.

    Returns per slice ``(start byte, end byte, first line number, records before it, records in it)``;
    a slice ends at a line's end, lines ending as in Python's text mode (a bare ``\r`` too). An
    empty file has one empty slice.
    """
    name = os.fspath(path)
    out: list[tuple[int, int, int, int, int]] = []
    pos = line = records = 0
    start, start_line, start_records = 0, 1, 0
    try:
        for raw, pos in _byte_lines(name):
            line += 1
            text = raw.decode("utf-8", "replace")  # blank as text mode sees it (Unicode spaces too)
            if (text.removeprefix("\ufeff") if line == 1 else text).strip():
                records += 1
            if records - start_records >= records_per_slice:
                out.append((start, pos, start_line, start_records, records - start_records))
                start, start_line, start_records = pos, line + 1, records
    except FileNotFoundError:
        raise DataError("no such file", source=name) from None
    if records > start_records or not out:
        out.append((start, pos, start_line, start_records, records - start_records))
    return out


def jsonl_slice_records(
    path: str | os.PathLike[str], byte_range: tuple[int, int], first_line: int, *, chunk_rows: int = _READ_CHUNK_ROWS
) -> Iterator[list[Any]]:
    """The parsed lines of one slice of a JSON-lines file (:func:`jsonl_slices`), ``chunk_rows`` at a time.

    Read as :func:`read_jsonl_rows` reads them (the same line ends; a BOM at the file's start is
    dropped); a line that is not JSON or not UTF-8 is a DataError naming its line number in the file.
    """
    name = os.fspath(path)
    start, end = byte_range
    part: list[Any] = []
    lineno = first_line - 1
    if start >= end:
        return
    for raw, pos in _byte_lines(name, start):
        lineno += 1
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(f"not UTF-8 text (byte {exc.start} of the line)", source=name, row=lineno) from None
        if lineno == 1:
            line = line.removeprefix("\ufeff")
        if line.strip():
            part.append(_parse_json(line, name, row=lineno))
        if len(part) >= chunk_rows:
            yield part
            part = []
        if pos >= end:
            break
    if part:
        yield part


def write_csv(dataset: LlmDataset, path: str | os.PathLike[str] | None = None) -> str:
    """Write rows as CSV; list fields and non-scalar extras are JSON in their cells."""
    return dataset.to_csv(path)
