"""The long table stored as Parquet, and spooled to Parquet part files while a run runs.

The table itself (its columns and the one way it is typed) is :mod:`nbeval.results.score_table`;
its names are handed out here too.

:class:`ScoreSpool` holds a run's scores while it runs: rows are converted as each batch
finishes and written to Parquet part files in a private temporary folder, so a run of millions of
rows keeps no per-row Python objects. pyarrow is imported only when Parquet is read or written.
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.results.score_table import (
    KEY_COLUMNS,
    ORDER_COLUMNS,
    SCORE_COLUMNS,
    TEXT_COLUMNS,
    append_typed,
    outcome_columns,
    typed_scores,
)
from nbeval.results.storage.limits import STORED_CAPS, stored_length_limit

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from nbeval.evaluators.base import Evaluator
    from nbeval.results.outcome import RowOutcome


__all__ = [
    "KEY_COLUMNS",
    "ORDER_COLUMNS",
    "SCORE_COLUMNS",
    "SPOOL_PART_ROWS",
    "TEXT_COLUMNS",
    "WRITE_SLICE_ROWS",
    "ScoreSpool",
    "check_arrow_text",
    "ordered_scores",
    "outcome_columns",
    "read_scores_parquet",
    "typed_scores",
    "write_scores_parquet",
]

#: Long-table rows a spool buffers (as compact Arrow tables) before it writes them as one Parquet part file.
SPOOL_PART_ROWS = 262_144


# ---------------------------------------------------------------------------------------------
# Parquet


def _arrow_schema(with_order: bool = False) -> pa.Schema:
    import pyarrow as pa

    fields = [pa.field(c, pa.string(), nullable=False) for c in KEY_COLUMNS]
    fields += [pa.field("value", pa.float64()), pa.field("passed", pa.bool_())]
    fields += [pa.field(c, pa.string()) for c in ("label", "rationale", "error")]
    fields += [
        pa.field("skipped", pa.bool_(), nullable=False),
        pa.field("skip_reason", pa.string()),
        pa.field("details", pa.string()),
    ]
    if with_order:
        fields += [pa.field(c, pa.int64(), nullable=False) for c in ORDER_COLUMNS]
    return pa.schema(fields)


def _arrow_table(columns: Mapping[str, Any], schema: pa.Schema) -> pa.Table:
    import pandas as pd
    import pyarrow as pa

    arrays = []
    for f in schema:
        got = columns[f.name]
        if isinstance(got, pd.Series):
            got = got.astype(object).where(got.notna(), None) if f.name != "value" else got
        arrays.append(pa.array(got, type=f.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=schema)


#: Long-table rows converted to Arrow and written at a time (one Parquet row group each).
WRITE_SLICE_ROWS = 1_000_000


def write_scores_parquet(path: str | Path, scores: pd.DataFrame) -> None:
    """Write the long table as Parquet, :data:`WRITE_SLICE_ROWS` rows at a time.

    Compressed with zstd; repeated text such as keys and names is stored once per column chunk by
    Parquet's dictionary encoding. Converted whole, the Arrow copy of nine million scores would add
    most of a gigabyte.
    """
    import pyarrow.parquet as pq

    schema = _arrow_schema()
    with pq.ParquetWriter(path, schema, compression="zstd") as writer:
        for lo in range(0, max(len(scores), 1), WRITE_SLICE_ROWS):
            writer.write_table(_arrow_table(scores.iloc[lo : lo + WRITE_SLICE_ROWS], schema))


def read_scores_parquet(path: str | Path) -> pd.DataFrame:
    """Read a long table written by :func:`write_scores_parquet`, typed.

    A file that is not one (not Parquet, other columns or types, a null key, text that is not UTF-8
    or longer than :data:`~nbeval.results.storage.limits.STORED_CAPS` allows) is a
    :class:`~nbeval.errors.DataError` naming it (and the row and column where there is one).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nbeval.errors import DataError

    source = str(path)
    try:
        schema = pq.read_schema(path)
        expected = _arrow_schema()
        names = list(schema.names)
        for f in expected:
            if f.name not in names:
                raise DataError("the column is missing", source=source, field=f.name)
            got = schema.field(f.name).type
            if got != f.type:
                raise DataError(f"must hold {f.type}, holds {got}", source=source, field=f.name)
        unknown = [n for n in names if n not in expected.names]
        if unknown:
            raise DataError(
                f"unknown column (this file has {', '.join(SCORE_COLUMNS)})", source=source, field=unknown[0]
            )
        # the key columns come as Parquet stored them, dictionary-encoded: millions of repeated
        # strings are never made, in Arrow or in pandas
        table = pq.read_table(path, columns=SCORE_COLUMNS, read_dictionary=list(KEY_COLUMNS))
    except FileNotFoundError:
        msg = f"the saved result is incomplete: {Path(path).name} is missing; save the result again"
        raise DataError(msg, source=source) from None
    except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:  # a damaged column name is not UTF-8
        msg = f"not a readable Parquet file ({exc}); the file was changed after it was saved"
        raise DataError(msg, source=source) from None
    for f in expected:
        if not f.nullable and table.column(f.name).null_count:
            raise DataError("must have a value in every row", source=source, field=f.name)
    check_arrow_text(table, source, caps=STORED_CAPS)
    arrow = {name: table.column(name) for name in SCORE_COLUMNS}
    del table  # the columns are converted one at a time and let go as they go
    scores = _columns_to_pandas(arrow)
    pa.default_memory_pool().release_unused()  # Arrow's buffers, which its allocator would keep for itself
    return scores


def check_arrow_text(table: Any, source: str, *, caps: Mapping[str, int] | None = None, first_row: int = 1) -> None:
    """Check that the text in ``table`` is UTF-8 and within its caps.

    Raise :class:`~nbeval.errors.DataError` naming the row and column of ``table`` (an Arrow table
    or record batch; its rows counted from ``first_row``) that holds text that is not UTF-8 (Parquet
    stores the bytes it is given: the file was changed after it was saved) or, for a column of
    ``caps``, a text longer than its cap allows (see :mod:`nbeval.results.storage.limits`).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from nbeval.errors import DataError

    for name in table.column_names:
        column = table.column(name)
        try:
            column.validate(full=True)
        except pa.ArrowInvalid as exc:
            row = _row_not_utf8(column)
            what = "holds text that is not UTF-8" if row is not None else f"holds damaged data ({exc})"
            raise DataError(
                f"{what}; the file was changed after it was saved",
                source=source,
                row=None if row is None else first_row + row,
                field=name,
            ) from None
        cap = (caps or {}).get(name)
        if cap is None or not len(column) or not pa.types.is_string(column.type):
            continue
        lengths = pc.utf8_length(column)
        over = pc.index(pc.greater(lengths, stored_length_limit(cap)), True).as_py()
        if over >= 0:
            msg = (
                f"a text of {lengths[over].as_py():,} characters, where nbeval stores at most {cap:,}; "
                "the file was changed after it was saved"
            )
            raise DataError(msg, source=source, row=first_row + over, field=name)


def _row_not_utf8(column: Any) -> int | None:
    """Find the first value of ``column`` whose text is not UTF-8.

    ``column`` is an Arrow array or chunked array; returns the value's position, or ``None``. It
    looks a value at a time, so only once the column is known to hold one.
    """
    chunks = getattr(column, "chunks", [column])
    offset = 0
    for chunk in chunks:
        for j in range(len(chunk)):
            try:
                chunk[j].as_py()
            except UnicodeDecodeError:
                return offset + j
        offset += len(chunk)
    return None


def _columns_to_pandas(arrow: dict[str, Any], order: Any = None) -> pd.DataFrame:
    """The typed long table from Arrow columns, taken in ``order`` when given.

    Columns are converted one at a time and removed from ``arrow`` as they go, so at most one column exists twice (a
    million-row table would otherwise be held whole in Arrow, sorted, and in pandas).
    """
    import pyarrow as pa

    columns: dict[str, Any] = {}
    for name in list(arrow):
        chunked = arrow.pop(name)
        if name in KEY_COLUMNS:  # dictionary-encode before pandas sees it: a categorical, not millions of str
            chunked = chunked.dictionary_encode() if not pa.types.is_dictionary(chunked.type) else chunked
            chunked = (
                pa.chunked_array(chunked.chunks, type=chunked.type).unify_dictionaries()
                if chunked.num_chunks > 1
                else chunked
            )
        if order is not None:
            chunked = chunked.take(order)
        columns[name] = chunked.to_pandas()
        del chunked
    return typed_scores(columns)


def ordered_scores(tables: Sequence[pa.Table]) -> pd.DataFrame:
    """The typed long table of Arrow ``tables`` that carry the order columns, in a finished result's order.

    By evaluator, then dataset row; stable, so a row's metrics keep their order.
    """
    import numpy as np
    import pyarrow as pa

    if not tables:
        return typed_scores({c: [] for c in SCORE_COLUMNS})
    table = pa.concat_tables(list(tables))
    order = pa.array(np.lexsort((table.column(ORDER_COLUMNS[1]).to_numpy(), table.column(ORDER_COLUMNS[0]).to_numpy())))
    arrow = {name: table.column(name) for name in SCORE_COLUMNS}
    del table
    return _columns_to_pandas(arrow, order)


def _copy_on_write() -> bool:
    """Whether pandas copies a shared table's data before changing it (always from pandas 3)."""
    import pandas as pd

    if int(pd.__version__.split(".", 1)[0]) >= 3:
        return True
    return bool(pd.options.mode.copy_on_write is True)


# ---------------------------------------------------------------------------------------------
# The spool of a running run


class ScoreSpool:
    """A run's long table while it runs, in Parquet part files in a private temporary folder.

    :meth:`add` converts a batch of finished outcomes (each once) to an Arrow table at once (the
    Python lists of one batch are all that exist as objects); tables are buffered and written as
    a part file every :data:`SPOOL_PART_ROWS` rows. :meth:`scores` reads back everything so far, in the order
    added or (``ordered=True``) in a finished result's order: by evaluator, then dataset row.

    Read in the order added (what the live view shows during a run), the spool writes nothing and
    converts only the rows added since the last such read: the part files written since then
    (each read from disk once) and the buffered tables, appended to the typed table of the rows
    read before (kept for the next read; it is the long table the live view hands out, shared,
    not copied). A spool never read keeps nothing but its buffer.
    The folder is removed by :meth:`close`, or when the spool is garbage-collected.
    """

    def __init__(self, evaluators: Sequence[Evaluator], row_pos: Mapping[int, int]) -> None:
        self._evaluator_pos = {id(ev): k for k, ev in enumerate(evaluators)}
        self._row_pos = row_pos
        self._schema = _arrow_schema(with_order=True)
        self._buffer: list[pa.Table] = []
        self._buffered = 0
        self._parts: list[Path] = []
        self._part_rows: list[int] = []
        self._folder: Path | None = None
        self._cleanup: Any = None
        self._seen: pd.DataFrame | None = None
        """The typed long table of the first rows added, as the last read in the order added built it."""
        self.rows = 0
        """Long-table rows added so far."""

    def add(self, outcomes: Iterable[RowOutcome]) -> None:
        """Convert finished outcomes to long-table rows and spool them."""
        cols = outcome_columns(outcomes, self._evaluator_pos, self._row_pos)
        n = len(cols["key"])
        if not n:
            return
        self._buffer.append(_arrow_table(cols, self._schema))
        self._buffered += n
        self.rows += n
        if self._buffered >= SPOOL_PART_ROWS:
            self._flush()

    def _flush(self) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self._buffer:
            return
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="nbeval-scores-"))
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(self._folder), True)
        path = self._folder / f"part-{len(self._parts):05d}.parquet"
        pq.write_table(pa.concat_tables(self._buffer), path, compression="zstd")
        self._parts.append(path)
        self._part_rows.append(self._buffered)
        self._buffer, self._buffered = [], 0

    def scores(self, *, ordered: bool = False) -> pd.DataFrame:
        """The long table so far (typed); ``ordered``: sorted by evaluator, then dataset row."""
        if not ordered:
            return self._scores_as_added()
        import pyarrow.parquet as pq

        self._flush()  # everything in part files, read back with names and keys dictionary-encoded
        return ordered_scores(
            [pq.read_table(p, read_dictionary=[*KEY_COLUMNS, "label", "error", "skip_reason"]) for p in self._parts]
        )

    def write_ordered(self, path: str | Path) -> pa.Table:
        """Write everything spooled to ``path`` as one Parquet file, order columns kept, sorted by them.

        Returns the table written (what a partitioned run's worker sums its values from).
        """
        import numpy as np
        import pyarrow as pa
        import pyarrow.parquet as pq

        self._flush()
        tables = [pq.read_table(p) for p in self._parts]
        table = pa.concat_tables(tables) if tables else self._schema.empty_table()
        order = np.lexsort((table.column(ORDER_COLUMNS[1]).to_numpy(), table.column(ORDER_COLUMNS[0]).to_numpy()))
        table = table.take(pa.array(order))
        pq.write_table(table, path, compression="zstd")
        return table

    def _scores_as_added(self) -> pd.DataFrame:
        """Return the long table so far, in the order added; nothing is written.

        The table of the last such read plus the rows added since, read from the part files written
        since (each once) and the buffer. Handed out shallow under pandas' copy-on-write (a change
        to it copies), else copied.
        """
        import pyarrow as pa
        import pyarrow.parquet as pq

        seen = 0 if self._seen is None else len(self._seen)
        if seen < self.rows:
            new: list[pa.Table] = []
            start = 0
            for path, n in zip(self._parts, self._part_rows, strict=True):
                if start + n > seen:
                    table = pq.read_table(path)
                    if not table.schema.equals(self._schema):
                        table = table.cast(self._schema)
                    new.append(table.slice(max(0, seen - start)))
                start += n
            for table in self._buffer:
                if start + table.num_rows > seen:
                    new.append(table.slice(max(0, seen - start)))
                start += table.num_rows
            if new:  # none only once the spool was closed
                combined = pa.concat_tables(new)
                del new
                arrow = {name: combined.column(name) for name in SCORE_COLUMNS}
                del combined
                fresh = _columns_to_pandas(arrow)
                self._seen = fresh if self._seen is None else append_typed(self._seen, fresh)
        if self._seen is None:
            return typed_scores({c: [] for c in SCORE_COLUMNS})
        return self._seen.copy(deep=not _copy_on_write())

    def close(self) -> None:
        """Remove the spool's files."""
        if self._cleanup is not None:
            self._cleanup()
        self._parts, self._part_rows, self._seen = [], [], None
