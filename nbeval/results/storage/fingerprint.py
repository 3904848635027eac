"""The fingerprint of an evaluated dataset: a SHA-256 of its rows' content.

It tells whether two runs measured the same data.

What it covers: every field a saved result keeps of a row (``dataset.parquet``, see
:mod:`nbeval.results.storage.dataset_file`): key, model key, input, corpus, context, categories,
relationships, expected output, output condition, actual output, duration, cost, expected
context, guidelines (named ones too), error and the extra fields. Not the ``warnings``: they are
nbeval's notes about how a row was read, not its content.

How it is made, so that it is the same in every process and for every nbeval that keeps
:data:`FINGERPRINT_VERSION`:

* **Row order does not count.** The rows are taken in a canonical order, sorted by ``key`` and
  then ``model_key`` (bytewise, UTF-8; rows sharing both keep their dataset order), so a shuffled
  file has the fingerprint of the original. Everything else counts: one changed character of one
  answer gives another fingerprint.
* **Columnar.** Each field is one stream of bytes (a list field one stream of lengths and one
  per part of its items): text as each value's length in characters (-1 for null) as
  little-endian int64s, then the UTF-8 bytes of all the values back to back (Arrow builds both
  from a column at once); numbers as little-endian doubles with a null flag (every NaN the same).
  Only ``extra`` and named guidelines are written value by value, as JSON with sorted keys, and
  only where a row has some. A value of another type (in a row built in code) counts as its
  text, or for a number as NaN when it is none. Columns are built :data:`CHUNK_ROWS` rows at a
  time; the streams do not depend on that size. A million rows take seconds (about ten of CPU
  on a slow shared core, about a tenth of what scoring them with ``exact_match`` takes).
* The streams' digests are combined, by name, into one SHA-256: the hex string returned.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from nbeval.data.conversation import conversation_parts

if TYPE_CHECKING:
    from nbeval.data.model import LlmDataset
    from nbeval.data.rows import Row

__all__ = ["CHUNK_ROWS", "FINGERPRINT_FIELDS", "FINGERPRINT_VERSION", "dataset_fingerprint", "fingerprint_of_sorted"]

#: Bumped when what a fingerprint covers, or how it is computed, changes.
FINGERPRINT_VERSION = 1

_TEXT = ("key", "model_key", "input", "expected_output", "output_condition", "actual_output", "error")
_NUMBERS = ("actual_duration", "cost")
_TEXT_LISTS = ("corpus", "categories", "guidelines")
_JSON = ("extra", "named_guidelines")
#: The parts of each item of a list-of-objects field.
_ITEM_PARTS = {
    "context": ("content", "doc_uri"),
    "expected_context": ("content", "doc_uri"),
    "relationships": ("type", "target", "target_type"),
}
#: The conversation fields, as one JSON object per row (the ``conversation`` column of
#: ``dataset.parquet``); fed only when some row has one, so the fingerprint of a dataset without
#: conversations is what it was before they existed.
_CONVERSATION = "conversation"
#: The row fields a fingerprint covers (every column of ``dataset.parquet`` but ``warnings``).
FINGERPRINT_FIELDS = (*_TEXT, *_NUMBERS, *_TEXT_LISTS, *_ITEM_PARTS, *_JSON, _CONVERSATION)
_JSON_TEXT = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
#: Rows turned into columns at a time (bounds the memory a fingerprint adds; the result does not
#: depend on it).
CHUNK_ROWS = 50_000


class _Streams:
    """One SHA-256 per named stream, and the way each kind of column is fed to them."""

    def __init__(self) -> None:
        self._hashes: dict[str, Any] = {}

    def update(self, name: str, data: bytes | memoryview) -> None:
        if name not in self._hashes:
            self._hashes[name] = hashlib.sha256()
        self._hashes[name].update(data)

    def text(self, name: str, values: list[str | None]) -> None:
        """Text values: their lengths (-1 for null), then their UTF-8 bytes back to back."""
        import pyarrow as pa
        import pyarrow.compute as pc

        try:
            arr = pa.array(values, pa.large_string())
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # a row built in code may hold another type
            arr = pa.array([v if v is None or isinstance(v, str) else str(v) for v in values], pa.large_string())
        lengths = pc.utf8_length(arr).fill_null(-1).to_numpy(zero_copy_only=False).astype("<i8")
        self.update(f"{name}:len", lengths.tobytes())
        self.update(f"{name}:utf8", _utf8_bytes(arr))

    def numbers(self, name: str, values: list[float | None]) -> None:
        """Numbers: a null flag each, then the values as doubles (null as 0, every NaN the same)."""
        import numpy as np
        import pyarrow as pa

        try:
            arr = pa.array(values, pa.float64())
        except (pa.ArrowTypeError, pa.ArrowInvalid):  # a row built in code may hold another type
            arr = pa.array([v if v is None else _float(v) for v in values], pa.float64())
        nulls = arr.is_null().to_numpy(zero_copy_only=False).astype(np.uint8)
        doubles = arr.fill_null(0.0).to_numpy(zero_copy_only=False).astype("<f8")  # a copy
        doubles[np.isnan(doubles)] = np.nan
        self.update(f"{name}:null", nulls.tobytes())
        self.update(f"{name}:f64", doubles.tobytes())

    def lengths(self, name: str, values: list[Sequence[Any]]) -> None:
        import numpy as np

        self.update(f"{name}:len", np.fromiter(map(len, values), dtype="<i8", count=len(values)).tobytes())

    def digest(self, rows: int) -> str:
        whole = hashlib.sha256(f"nbeval-dataset-fingerprint-v{FINGERPRINT_VERSION}\n{rows}\n".encode())
        for name in sorted(self._hashes):
            whole.update(f"{name}\n".encode())
            whole.update(self._hashes[name].digest())
        return whole.hexdigest()


def dataset_fingerprint(dataset: LlmDataset) -> str:
    """The hex SHA-256 of ``dataset``'s rows (see the module for what it covers)."""
    streams = _Streams()
    rows = _canonical_order(dataset.rows)
    conversations = any(r.messages or r.expected_tool_calls is not None or r.reference_topics for r in rows)
    for lo in range(0, len(rows), CHUNK_ROWS):
        _feed_rows(streams, rows[lo : lo + CHUNK_ROWS], conversations)
    return streams.digest(len(rows))


def fingerprint_of_sorted(chunks: Iterable[Sequence[Row]], rows: int, conversations: bool) -> str:
    """The fingerprint of rows given already in the canonical order, a chunk at a time.

    What :func:`dataset_fingerprint` returns for the same rows, in flat memory: a partitioned run
    streams its rows this way. ``rows`` counts them; ``conversations`` says whether any has a
    conversation (:func:`~nbeval.data.conversation.conversation_parts` not empty).
    """
    streams = _Streams()
    for chunk in chunks:
        _feed_rows(streams, chunk, conversations)
    return streams.digest(rows)


def _feed_rows(streams: _Streams, rows: Sequence[Row], conversations: bool) -> None:
    """Feed one chunk of rows, field by field."""
    for name in _TEXT:
        streams.text(name, list(map(attrgetter(name), rows)))
    for name in _NUMBERS:
        streams.numbers(name, list(map(attrgetter(name), rows)))
    for name in _TEXT_LISTS:
        lists = list(map(attrgetter(name), rows))
        streams.lengths(name, lists)
        streams.text(f"{name}[]", [v for values in lists for v in values])
    for name, parts in _ITEM_PARTS.items():
        lists = list(map(attrgetter(name), rows))
        streams.lengths(name, lists)
        items = [item for values in lists for item in values]
        for part in parts:
            streams.text(f"{name}[].{part}", list(map(attrgetter(part), items)))
    for name in _JSON:  # free-form JSON: the one field written value by value (only where a row has one)
        streams.text(name, [_JSON_TEXT.encode(v) if v else None for v in map(attrgetter(name), rows)])
    if conversations:
        streams.text(_CONVERSATION, [_conversation_text(r) for r in rows])


def _conversation_text(row: Row) -> str | None:
    # expected_tool_calls: [] (no call expected) counts, None (not given) does not: a dataset
    # without the field keeps the fingerprint it had before [] was kept apart
    parts = conversation_parts(row)
    return _JSON_TEXT.encode(parts) if parts else None


def _canonical_order(rows: Sequence[Row]) -> list[Row]:
    """``rows`` sorted by key, then model key (a stable sort: ties keep their order)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    keys = pa.table(
        {
            "key": pa.array(list(map(attrgetter("key"), rows)), pa.large_string()),
            "model": pa.array(list(map(attrgetter("model_key"), rows)), pa.large_string()),
        }
    )
    order = pc.sort_indices(keys, sort_keys=[("key", "ascending"), ("model", "ascending")])
    return [rows[i] for i in order.to_pylist()]


def _float(value: Any) -> float:
    """``value`` as a number; NaN when it is none."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _utf8_bytes(arr: Any) -> bytes | memoryview:
    """The UTF-8 bytes of every value of the large-string array ``arr``, back to back."""
    import numpy as np

    if len(arr) == 0:
        return b""
    _validity, offsets_buf, data = arr.buffers()
    offsets = np.frombuffer(offsets_buf, dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    if data is None or offsets[-1] == offsets[0]:
        return b""
    return memoryview(data)[int(offsets[0]) : int(offsets[-1])]
