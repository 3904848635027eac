"""A run partitioned across Dask workers, on disk: the input's rows in buckets, the result in parts.

A partitioned run (:mod:`nbeval.engine.dask_parts`) keeps everything in one run folder that every
worker can read and write:

* ``stage/s-NNNNN.arrow``: one input slice's rows (a few Parquet row groups, or a byte range of a
  JSONL file) as an Arrow IPC file with one record batch per *bucket*. A row's bucket is a stable
  hash of its test case's key (:func:`bucket_of`), so every row of a test case, whatever model
  answered it, lands in one bucket: the checks and evaluators that look at a whole test case see
  it whole. The columns are ``dataset.parquet``'s (:mod:`~nbeval.results.storage.dataset_file`)
  plus ``_row``, the row's 0-based position in the input. ``stage/l-NNNNN.arrow`` holds the
  slice's links to other test cases, batched by the bucket of the key they point at.
* ``parts/p-NNNNN/``: one bucket's result, written by the worker that scored it and committed by
  renaming its hidden folder into place (the first attempt wins): ``scores.parquet`` (the long
  table with its order columns, ``_row_pos`` being the input position), ``summary.json`` (counts
  and the exact sums the aggregates are made of) and, for an evaluator with its own aggregate,
  ``own-K.pkl`` (its rows and scores, which that aggregate needs).

* ``batch/round-NNN/b-NNNNN.pkl``: with ``batch=True``, the requests a bucket still needs in a
  round (the client sends them, :mod:`nbeval.engine.dask_batches`), and ``batch/failed.json``
  the errors of those a batch could not answer.

The result opens lazily: :class:`PartScores` reads the long table from the parts only when it is
asked for, :class:`PartDataset` the rows from the stage. Sums are exact (:func:`exact_partials`):
the parts' partial sums added with :func:`math.fsum` give the correctly rounded sum of every value,
whatever the partitioning.
"""

from __future__ import annotations

import math
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.model import LlmDataset
from nbeval.results.storage.dataset_file import _chunk_columns, _rows_of_batch, _schema

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

    from nbeval.data.rows import Row

__all__ = [
    "BATCH_FOLDER",
    "FAILED_FILE",
    "PARTS_FOLDER",
    "ROW_COLUMN",
    "STAGE_FOLDER",
    "PartDataset",
    "PartScores",
    "batch_folder",
    "bucket_of",
    "exact_partials",
    "exact_total",
    "link_file",
    "link_schema",
    "part_folder",
    "read_bucket_rows",
    "rows_of_table",
    "stage_batches",
    "stage_file",
    "stage_schema",
    "write_link_file",
    "write_stage_file",
]

#: The run folder's folder of staged input.
STAGE_FOLDER = "stage"
#: The run folder's folder of committed parts.
PARTS_FOLDER = "parts"
#: The run folder's folder of a batched run's rounds (the requests each bucket still needs).
BATCH_FOLDER = "batch"
#: In :data:`BATCH_FOLDER`: the cache keys a batch answered with an error, and the error (JSON).
FAILED_FILE = "failed.json"
#: The column holding a staged row's 0-based position in the input.
ROW_COLUMN = "_row"


def bucket_of(key: str, n_buckets: int) -> int:
    """The bucket of a test case's ``key``: the same in every process and on every machine.

    Args:
        key: The test case's key.
        n_buckets: How many buckets the run has.

    Returns:
        A number in ``range(n_buckets)``.
    """
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % n_buckets


def stage_file(run_dir: Path, slice_id: int) -> Path:
    """The staged rows of input slice ``slice_id``."""
    return run_dir / STAGE_FOLDER / f"s-{slice_id:05d}.arrow"


def link_file(run_dir: Path, slice_id: int) -> Path:
    """The links to other test cases of input slice ``slice_id``, batched by the target's bucket."""
    return run_dir / STAGE_FOLDER / f"l-{slice_id:05d}.arrow"


def batch_folder(run_dir: Path, batch_round: int | None = None) -> Path:
    """The folder of a batched run's rounds, or of round ``batch_round``'s requests (one file per bucket)."""
    folder = run_dir / BATCH_FOLDER
    return folder if batch_round is None else folder / f"round-{batch_round:03d}"


def part_folder(run_dir: Path, bucket: int) -> Path:
    """Where bucket ``bucket``'s committed result is."""
    return run_dir / PARTS_FOLDER / f"p-{bucket:05d}"


def stage_schema() -> pa.Schema:
    """The columns of a staged batch: ``dataset.parquet``'s, then :data:`ROW_COLUMN`."""
    import pyarrow as pa

    return _schema().append(pa.field(ROW_COLUMN, pa.int64(), nullable=False))


def link_schema() -> pa.Schema:
    """The columns of a batch of links: the key pointed at, the row (0-based), the link's index and type."""
    import pyarrow as pa

    return pa.schema([("target", pa.string()), (ROW_COLUMN, pa.int64()), ("index", pa.int64()), ("type", pa.string())])


def write_stage_file(path: Path, batches: Sequence[Sequence[tuple[int, Row]]]) -> None:
    """Write one slice's rows to ``path``: a record batch per bucket, rows as ``(position, row)``.

    Written aside and renamed into place, so a reader never sees half a file.
    """
    import pyarrow as pa

    schema = stage_schema()
    tmp = path.with_name(f".{path.name}.tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for bucket in batches:
            cols: dict[str, Any] = _chunk_columns([row for _, row in bucket])
            cols[ROW_COLUMN] = [pos for pos, _ in bucket]
            writer.write_batch(pa.RecordBatch.from_pydict(cols, schema=schema))
    tmp.replace(path)


def write_link_file(path: Path, batches: Sequence[Sequence[tuple[str, int, int, str]]]) -> None:
    """Write one slice's links, a record batch per bucket of the key pointed at."""
    import pyarrow as pa

    schema = link_schema()
    tmp = path.with_name(f".{path.name}.tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for bucket in batches:
            cols = {name: [link[i] for link in bucket] for i, name in enumerate(schema.names)}
            writer.write_batch(pa.RecordBatch.from_pydict(cols, schema=schema))
    tmp.replace(path)


def stage_batches(paths: Iterable[Path], bucket: int, columns: Sequence[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Bucket ``bucket``'s batch of each staged file in ``paths`` (memory-mapped: only what is read is loaded)."""
    import pyarrow as pa

    for path in paths:
        if not path.is_file():
            continue
        with pa.memory_map(str(path)) as source:
            batch = pa.ipc.open_file(source).get_batch(bucket)
            yield batch.select(list(columns)) if columns is not None else batch


def read_bucket_rows(paths: Iterable[Path], bucket: int, source: str) -> tuple[list[Row], list[int]]:
    """The rows of bucket ``bucket`` across the staged files ``paths``, and their input positions, in input order."""
    rows: list[Row] = []
    positions: list[int] = []
    model_keys: dict[str, str] = {}
    for batch in stage_batches(paths, bucket):
        cols = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        positions.extend(cols[ROW_COLUMN])
        rows.extend(_rows_of_batch(cols, len(rows) + 1, Path(source), model_keys))
    order = sorted(range(len(rows)), key=positions.__getitem__)
    return [rows[i] for i in order], [positions[i] for i in order]


def rows_of_table(table: Any, source: str) -> list[Row]:
    """The rows of a staged Arrow table (or batch), in its order."""
    cols = {name: table.column(name).to_pylist() for name in table.schema.names}
    return list(_rows_of_batch(cols, 1, Path(source), {}))


def exact_partials(values: Iterable[float]) -> list[float]:
    """A few floats whose exact total is the exact sum of ``values``.

    Partials of several groups of values, added with :func:`exact_total`, give the correctly
    rounded sum of all of them: a sum that does not depend on how the values were split or
    ordered. Values that are not finite are kept apart, as their own sum.

    :func:`math.fsum` rounds the exact sum correctly, so taking it, then the rounded sum of what
    it left out, and so on until nothing is left, gives such partials at C speed (two or three
    passes for scores); values whose running sum passes a float's range are summed as fractions.
    """
    finite: list[float] = []
    special = 0.0
    for x in values:
        if math.isfinite(x):
            finite.append(x)
        else:
            special += x
    partials: list[float] = []
    try:
        while True:
            rest = math.fsum([*finite, *(-p for p in partials)])
            if not rest:
                break
            partials.append(rest)
    except OverflowError:
        partials = _exact_by_fractions(finite)
    return [*partials, special] if special else partials


def _exact_by_fractions(values: list[float]) -> list[float]:
    """The partials of finite ``values`` whose sum :func:`math.fsum` cannot take (an intermediate overflow).

    Summed exactly as fractions, then cut into floats by rounding what is left (a sum beyond a
    float's range takes several of the largest floats).
    """
    from fractions import Fraction

    rest = sum(map(Fraction, values), Fraction(0))
    partials: list[float] = []
    while rest:
        try:
            p = float(rest)
        except OverflowError:  # beyond a float: the largest float of its sign, and the rest after it
            p = sys.float_info.max if rest > 0 else -sys.float_info.max
        partials.append(p)
        rest -= Fraction(p)
    return partials


def exact_total(partials: Iterable[float]) -> float:
    """The correctly rounded sum of every value whose partials are given (NaN where infinities cancel)."""
    values = list(partials)
    try:
        return math.fsum(values)
    except ValueError:  # inf and -inf
        return math.nan
    except OverflowError:  # an intermediate sum beyond a float's range: exactly, as fractions
        from fractions import Fraction

        try:
            return float(sum(map(Fraction, values), Fraction(0)))
        except OverflowError:  # the total itself is beyond a float
            return math.inf if sum(map(Fraction, values), Fraction(0)) > 0 else -math.inf


class PartScores:
    """The long table of a partitioned run, read from its parts when first asked for.

    Args:
        run_dir: The run folder.
        buckets: The buckets whose parts make the table.
        rows: Its number of rows (from the parts' summaries).
    """

    def __init__(self, run_dir: Path, buckets: Sequence[int], rows: int) -> None:
        self.run_dir = run_dir
        self.buckets = list(buckets)
        self.rows = rows

    def __len__(self) -> int:
        return self.rows

    def load(self) -> pd.DataFrame:
        """The long table, typed, in a finished result's order (by evaluator, then input row)."""
        import pyarrow.parquet as pq

        from nbeval.results.storage.columnar import KEY_COLUMNS, ordered_scores

        tables = [
            pq.read_table(
                part_folder(self.run_dir, b) / "scores.parquet",
                read_dictionary=[*KEY_COLUMNS, "label", "error", "skip_reason"],
            )
            for b in self.buckets
        ]
        return ordered_scores(tables)


class PartDataset(LlmDataset):
    """The rows of a partitioned run, read from its staged files when first asked for.

    ``len()`` is known without reading them.

    Args:
        stage_files: The run's staged files, one per input slice.
        n_buckets: How many buckets each file holds.
        n_rows: How many rows they hold.
        source: The input's name.
    """

    def __init__(self, stage_files: Sequence[Path], n_buckets: int, n_rows: int, source: str) -> None:
        self._stage_files = list(stage_files)
        self._n_buckets = n_buckets
        self._n_rows = n_rows
        self._rows: list[Row] | None = None
        self.source = source

    @property
    def rows(self) -> list[Row]:
        """The rows, in input order (read from the staged files the first time)."""
        if self._rows is None:
            rows: list[Row] = []
            positions: list[int] = []
            for b in range(self._n_buckets):
                got, at = read_bucket_rows(self._stage_files, b, self.source or "<input>")
                rows.extend(got)
                positions.extend(at)
            order = sorted(range(len(rows)), key=positions.__getitem__)
            self._rows = [rows[i] for i in order]
        return self._rows

    @rows.setter
    def rows(self, rows: list[Row]) -> None:
        self._rows = list(rows)

    @property
    def loaded(self) -> bool:
        """Whether the rows were read."""
        return self._rows is not None

    def __len__(self) -> int:
        return self._n_rows if self._rows is None else len(self._rows)
