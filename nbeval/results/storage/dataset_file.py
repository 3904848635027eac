"""A result's dataset as ``dataset.parquet``: one Parquet row per dataset row, written and read in chunks.

A saved result keeps the rows it evaluated. As JSON (``dataset.json``, still read) a million rows
make a 558 MB text that is built whole in memory before it is written and parsed whole when it is
read. Here each :class:`~nbeval.data.model.Row` field is a column instead: text as strings,
``actual_duration`` and ``cost`` as doubles, ``corpus``/``categories``/``guidelines``/warnings as
lists of strings, contexts as lists of ``{content, doc_uri}`` and relationships as lists of
``{type, target, target_type}``. Only ``extra`` (fields nbeval does not know, of any JSON shape)
and ``named_guidelines`` (guidelines given by name) are JSON text, and ``null`` when a row has
none, which is the common case. ``named_guidelines`` is optional: files written before it was
added read as rows without names.

Rows are written :data:`DATASET_CHUNK_ROWS` at a time with a ``ParquetWriter`` and read back one
record batch at a time, straight into rows (no per-row JSON parse, no second validation: the
file was written from rows that were validated when they were read). The file's key-value
metadata ``nbeval.dataset`` holds the layout version and the row count.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.conversation import CONVERSATION_FIELDS, check_messages, check_tool_calls, conversation_parts
from nbeval.data.fields import ROW_FIELDS, Chunk, Relationship, check_str_list
from nbeval.data.model import LlmDataset
from nbeval.data.rows import Row
from nbeval.errors import DataError
from nbeval.results.storage.columnar import check_arrow_text

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["DATASET_CHUNK_ROWS", "DATASET_LAYOUT", "READ_BATCH_ROWS", "read_dataset_parquet", "write_dataset_parquet"]

#: Rows converted and written per Parquet row group (bounds the memory a save adds).
DATASET_CHUNK_ROWS = 50_000
#: Rows read per record batch: small batches keep the short-lived Python lists of a batch small
#: (the memory they leave fragmented counts in the peak of a large load).
READ_BATCH_ROWS = 10_000
#: Version of the column layout below, kept in the file's metadata.
DATASET_LAYOUT = 1
_META_KEY = b"nbeval.dataset"

_TEXT_FIELDS = ("key", "model_key", "input", "expected_output", "output_condition", "actual_output", "error")
_NUMBER_FIELDS = ("actual_duration", "cost")
_TEXT_LIST_FIELDS = ("corpus", "categories", "guidelines", "warnings")
_CHUNK_FIELDS = ("context", "expected_context")
#: Column order in the file: the row fields, then what a row carries beyond them.
_COLUMNS = (*ROW_FIELDS, "extra", "warnings")
#: Columns written after those, which a file may lack (it was written before they were added).
_OPTIONAL_COLUMNS = ("named_guidelines", "conversation")


def _schema() -> pa.Schema:
    import pyarrow as pa

    chunk = pa.list_(pa.struct([("content", pa.string()), ("doc_uri", pa.string())]))
    relationship = pa.list_(pa.struct([("type", pa.string()), ("target", pa.string()), ("target_type", pa.string())]))
    types: dict[str, pa.DataType] = {
        name: pa.string() for name in (*_TEXT_FIELDS, "extra", "named_guidelines", "conversation")
    }
    types.update({name: pa.float64() for name in _NUMBER_FIELDS})
    types.update({name: pa.list_(pa.string()) for name in _TEXT_LIST_FIELDS})
    types.update({name: chunk for name in _CHUNK_FIELDS})
    types["relationships"] = relationship
    return pa.schema([(name, types[name]) for name in (*_COLUMNS, *_OPTIONAL_COLUMNS)])


def _chunk_columns(rows: Sequence[Row]) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {}
    for name in (*_TEXT_FIELDS, *_NUMBER_FIELDS, *_TEXT_LIST_FIELDS):
        cols[name] = [getattr(r, name) for r in rows]
    for name in _CHUNK_FIELDS:
        cols[name] = [[{"content": c.content, "doc_uri": c.doc_uri} for c in getattr(r, name)] for r in rows]
    cols["relationships"] = [
        [{"type": x.type, "target": x.target, "target_type": x.target_type} for x in r.relationships] for r in rows
    ]
    # what JSON cannot hold is written as text, as dataset.json did
    cols["extra"] = [json.dumps(r.extra, ensure_ascii=False, default=str) if r.extra else None for r in rows]
    cols["named_guidelines"] = [
        json.dumps(r.named_guidelines, ensure_ascii=False) if r.named_guidelines else None for r in rows
    ]
    cols["conversation"] = [_conversation_json(r) for r in rows]
    return cols


def _conversation_json(row: Row) -> str | None:
    """Return a row's conversation fields as one JSON object.

    ``None`` for a row without any (``expected_tool_calls: []``, no call expected, is one).
    """
    parts = conversation_parts(row)
    return json.dumps(parts, ensure_ascii=False) if parts else None


def write_dataset_parquet(path: Path, dataset: LlmDataset) -> None:
    """Write ``dataset``'s rows to ``path`` as Parquet, :data:`DATASET_CHUNK_ROWS` rows at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = {_META_KEY: json.dumps({"layout": DATASET_LAYOUT, "rows": len(dataset.rows)}).encode()}
    schema = _schema().with_metadata(meta)
    rows = dataset.rows
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for lo in range(0, max(len(rows), 1), DATASET_CHUNK_ROWS):
            chunk = rows[lo : lo + DATASET_CHUNK_ROWS]
            try:
                table = pa.Table.from_pydict(_chunk_columns(chunk), schema=schema)
            except UnicodeEncodeError:
                # text changed after its row was made (rows repair what they are given): repair it
                # now, with the row's own note and warning, rather than fail the save
                for row in chunk:
                    row._repair()
                table = pa.Table.from_pydict(_chunk_columns(chunk), schema=schema)
            writer.write_table(table)


def _open(path: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except FileNotFoundError:
        msg = f"the saved result is incomplete: {path.name} is missing; save the result again"
        raise DataError(msg, source=str(path)) from None
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a damaged column name is not UTF-8
        msg = f"not a readable Parquet file ({exc}); the file was changed after it was saved"
        raise DataError(msg, source=str(path)) from None


def _check_schema(file: Any, path: Path) -> None:
    expected = _schema()
    have = file.schema_arrow
    for name in _COLUMNS:
        if have.get_field_index(name) < 0:
            raise DataError(
                "the column is missing; the file was changed after it was saved", source=str(path), field=name
            )
        if not have.field(name).type.equals(expected.field(name).type):
            msg = f"must be {expected.field(name).type}, got {have.field(name).type}"
            raise DataError(msg, source=str(path), field=name)
    raw = (have.metadata or {}).get(_META_KEY)
    layout = _layout_info(raw, path).get("layout") if raw else None
    if layout != DATASET_LAYOUT:
        msg = f"written in dataset layout {layout!r}, which this nbeval cannot read (it reads {DATASET_LAYOUT})"
        raise DataError(msg, source=str(path))


def _layout_info(raw: bytes, path: Path) -> dict[str, Any]:
    """The file's metadata ``nbeval.dataset`` (a JSON object); anything else is a DataError."""
    where = f"the file's metadata {_META_KEY.decode()}"
    try:
        info = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        reason = "is not UTF-8"
    except RecursionError:
        reason = "is JSON nested too deeply"
    except ValueError:
        reason = "is not valid JSON"
    else:
        if isinstance(info, dict):
            return info
        reason = f"must be a JSON object, got {type(info).__name__}"
    raise DataError(f"{where} {reason}; the file was changed after it was saved", source=str(path))


def _rows_of_batch(cols: dict[str, list[Any]], first: int, path: Path, model_keys: dict[str, str]) -> Iterator[Row]:
    named_column = cols.get("named_guidelines") or [None] * len(cols["key"])
    conversation_column = cols.get("conversation") or [None] * len(cols["key"])
    for i in range(len(cols["key"])):
        key, model_key = cols["key"][i], cols["model_key"][i]
        if not key or not model_key:
            field = "key" if not key else "model_key"
            raise DataError(
                "is empty; the file was changed after it was saved", source=str(path), row=first + i, field=field
            )
        extra = cols["extra"][i]
        try:
            extra_dict = json.loads(extra) if extra is not None else {}
        except ValueError:
            raise DataError(
                "not valid JSON; the file was changed after it was saved",
                source=str(path),
                row=first + i,
                field="extra",
            ) from None
        if not isinstance(extra_dict, dict):
            raise DataError("must be a JSON object", source=str(path), row=first + i, field="extra")
        named = named_column[i]
        try:
            named_dict = json.loads(named) if named is not None else {}
        except ValueError:
            named_dict = None
        if not isinstance(named_dict, dict):
            raise DataError(
                "not a JSON object; the file was changed after it was saved",
                source=str(path),
                row=first + i,
                field="named_guidelines",
            )
        conversation = _read_conversation(conversation_column[i], path, first + i)
        yield Row(
            input=cols["input"][i],
            key=key,
            # one string per model, shared by its rows, not one per row
            model_key=model_keys.setdefault(model_key, sys.intern(model_key)),
            corpus=cols["corpus"][i] or [],
            context=[Chunk(content=c["content"], doc_uri=c["doc_uri"]) for c in cols["context"][i] or ()],
            categories=cols["categories"][i] or [],
            relationships=[Relationship(**r) for r in cols["relationships"][i] or ()],
            expected_output=cols["expected_output"][i],
            output_condition=cols["output_condition"][i],
            actual_output=cols["actual_output"][i],
            actual_duration=cols["actual_duration"][i],
            cost=cols["cost"][i],
            expected_context=[
                Chunk(content=c["content"], doc_uri=c["doc_uri"]) for c in cols["expected_context"][i] or ()
            ],
            guidelines=cols["guidelines"][i] or [],
            error=cols["error"][i],
            extra=extra_dict,
            warnings=cols["warnings"][i] or [],
            named_guidelines=named_dict,
            messages=conversation.get("messages", []),
            expected_tool_calls=conversation.get("expected_tool_calls"),
            reference_topics=conversation.get("reference_topics", []),
            _repaired=True,
        )


def _read_conversation(text: str | None, path: Path, row: int) -> dict[str, Any]:
    """The conversation fields of a row, checked as when a row is read (the column is JSON text)."""
    if text is None:
        return {}
    try:
        parts = json.loads(text)
    except (ValueError, RecursionError):
        parts = None
    if not isinstance(parts, dict) or set(parts) - set(CONVERSATION_FIELDS):
        raise DataError(
            "not the JSON object of a row's conversation; the file was changed after it was saved",
            source=str(path),
            row=row,
            field="conversation",
        )
    where = str(path)
    return {
        "messages": check_messages(parts.get("messages"), where, row),
        "expected_tool_calls": check_tool_calls(parts.get("expected_tool_calls"), where, row),
        "reference_topics": check_str_list(parts.get("reference_topics"), where, row, "reference_topics"),
    }


def read_dataset_parquet(path: Path) -> LlmDataset:
    """The dataset :func:`write_dataset_parquet` wrote to ``path``.

    A missing or damaged file (metadata that is not the JSON object written, text that is not UTF-8), a column missing
    or of another type, or an empty key is a :class:`~nbeval.errors.DataError` naming the file (and the row and field
    where there is one).
    """
    import pyarrow as pa

    file = _open(path)
    _check_schema(file, path)
    rows: list[Row] = []
    model_keys: dict[str, str] = {}
    have = file.schema_arrow
    columns = [*_COLUMNS, *(name for name in _OPTIONAL_COLUMNS if have.get_field_index(name) >= 0)]
    try:
        for batch in file.iter_batches(batch_size=READ_BATCH_ROWS, columns=columns):
            check_arrow_text(batch, str(path), first_row=len(rows) + 1)
            cols = {name: batch.column(name).to_pylist() for name in columns}
            rows.extend(_rows_of_batch(cols, len(rows) + 1, path, model_keys))
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a damaged column name is not UTF-8
        msg = f"cannot read the rows ({exc}); the file was changed after it was saved"
        raise DataError(msg, source=str(path)) from None
    pa.default_memory_pool().release_unused()  # the batches' buffers, kept by the allocator otherwise
    return LlmDataset(rows, source=str(path))
