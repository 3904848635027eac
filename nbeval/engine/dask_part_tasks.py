"""The workers' tasks of a partitioned run (see :mod:`nbeval.engine.dask_parts`).

Each task reads from and writes to the run folder (:mod:`nbeval.results.storage.partitions`) and
sends back only something small:

* :func:`stage_slice` reads one slice of the input file, checks and converts its rows as a local
  read does, and stages them by bucket; it returns a :class:`StageSummary`.
* :func:`check_bucket` runs the whole-dataset checks on one bucket (a test case never spans two):
  a key given twice for one model, a key with two prompts, a link to no key; :class:`BucketCheck`.
* :func:`score_bucket` scores one bucket exactly as a local run scores its rows, writes the
  bucket's part and commits it by renaming it into place; it returns the part's summary.
* :func:`fingerprint_stage` streams every staged row in the fingerprint's canonical order.

distributed is imported only where a task needs it (the cancel event).
"""

from __future__ import annotations

import json
import math
import os
import pickle
import shutil
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.conversation import CONVERSATION_FIELDS
from nbeval.data.fields import ROW_FIELDS
from nbeval.data.model import LlmDataset, count_nan_expected
from nbeval.data.readers import jsonl_slice_records, parquet_slice_records
from nbeval.data.rows import Row, field_missing
from nbeval.engine.chunks import run_chunk, settle
from nbeval.engine.dask_worker import _cancel_flag, _worker_run, merge_usage
from nbeval.engine.planning import planned_state
from nbeval.errors import DataError
from nbeval.results.storage.partitions import (
    FAILED_FILE,
    PARTS_FOLDER,
    ROW_COLUMN,
    batch_folder,
    bucket_of,
    link_file,
    part_folder,
    read_bucket_rows,
    stage_batches,
    stage_file,
    write_link_file,
    write_stage_file,
)

if TYPE_CHECKING:
    from nbeval.chat.base import ChatReply

__all__ = [
    "CANCEL_CHECK_S",
    "MAX_WARNINGS",
    "WITNESS_FIELDS",
    "BucketCheck",
    "InputSlice",
    "StageSummary",
    "check_bucket",
    "fingerprint_stage",
    "score_bucket",
    "stage_frame",
    "stage_slice",
]

#: Fields a witness row is kept for: what ``Evaluator.check_dataset`` may ask a dataset about.
WITNESS_FIELDS = (*ROW_FIELDS, *CONVERSATION_FIELDS)
#: Warnings a task sends back at most (the rest are counted).
MAX_WARNINGS = 200


@dataclass(frozen=True)
class InputSlice:
    """One slice of the input file, read by one task."""

    id: int
    path: str
    kind: str
    """``"parquet"``, ``"jsonl"`` or ``"frame"`` (a Dask DataFrame's partition ``id``)."""
    first_row: int
    """The 0-based position in the input of the slice's first row."""
    rows: int
    row_groups: tuple[int, ...] = ()
    """Parquet: the row groups."""
    byte_range: tuple[int, int] = (0, 0)
    """JSONL: the bytes ``[start, end)``."""
    first_line: int = 1
    """JSONL: the line number of the first line."""


@dataclass
class StageSummary:
    """What staging one slice found."""

    slice_id: int
    rows: int
    witnesses: list[tuple[int, Row]]
    """Per field a row has a value for, and per named guideline, the slice's first such row (with its position)."""
    nan_expected: int
    warnings: list[str] = field(default_factory=list)
    """The data warnings reading the rows gave, as text (at most :data:`MAX_WARNINGS`)."""
    more_warnings: int = 0
    links: bool = False
    perturbed: int = 0
    """Rows perturbed from another test case (with a ``perturbation_source``)."""


@dataclass
class BucketCheck:
    """What the whole-dataset checks found in one bucket."""

    bucket: int
    rows: int
    duplicate: tuple[int, str] | None
    """The first row (0-based) whose key and model an earlier row has, and the error's text."""
    warnings: list[tuple[int, str]]
    """(row, text) of the data warnings, in row order (at most :data:`MAX_WARNINGS`)."""
    models: dict[str, int]
    """Each model's first row (0-based position) in the bucket."""
    keys: int = 0
    """Test cases (distinct keys) in the bucket."""


def stage_slice(piece: InputSlice, run_dir: str, n_buckets: int) -> StageSummary:
    """Read one slice of the input file, check and convert its rows as a local read does, and stage them by bucket."""
    chunks = (
        parquet_slice_records(piece.path, list(piece.row_groups), piece.first_row)
        if piece.kind == "parquet"
        else jsonl_slice_records(piece.path, piece.byte_range, piece.first_line)
    )
    return _stage(piece, chunks, run_dir, n_buckets, count_nan=piece.kind == "jsonl")


def stage_frame(piece: InputSlice, frame: Any, run_dir: str, n_buckets: int) -> StageSummary:
    """Stage one partition of a Dask DataFrame (a pandas DataFrame here), as a local run reads a DataFrame."""
    from nbeval.data.tabular import dataframe_records

    return _stage(piece, [dataframe_records(frame, source=piece.path)], run_dir, n_buckets, count_nan=False)


def _stage(piece: InputSlice, chunks: Any, run_dir: str, n_buckets: int, *, count_nan: bool) -> StageSummary:
    """Check and convert the records of one slice as a local read does, and stage them by bucket."""
    folder = Path(run_dir)
    name = piece.path
    buckets: list[list[tuple[int, Row]]] = [[] for _ in range(n_buckets)]
    links: list[list[tuple[str, int, int, str]]] = [[] for _ in range(n_buckets)]
    witnesses: dict[str, tuple[int, Row]] = {}
    nan = perturbed = 0
    pos = piece.first_row
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for records in chunks:
            if count_nan:
                nan += count_nan_expected(records)
            for raw in records:
                if not isinstance(raw, dict):
                    raise DataError(f"a row must be an object, got {type(raw).__name__}", source=name, row=pos + 1)
                row = Row.from_record(raw, source=name, row=pos + 1)
                buckets[bucket_of(row.key, n_buckets)].append((pos, row))
                perturbed += bool(row.perturbation_source)
                for j, rel in enumerate(row.relationships):
                    if rel.target_type == "test_case":
                        links[bucket_of(rel.target, n_buckets)].append((rel.target, pos, j, rel.type))
                for f in WITNESS_FIELDS:
                    if f not in witnesses and not field_missing(f, getattr(row, f, None)):
                        witnesses[f] = (pos, row)
                for g in row.named_guidelines:
                    witnesses.setdefault(f"guideline:{g}", (pos, row))
                pos += 1
    write_stage_file(stage_file(folder, piece.id), buckets)
    has_links = any(links)
    if has_links:
        write_link_file(link_file(folder, piece.id), links)
    texts = [str(w.message) for w in caught]
    return StageSummary(
        slice_id=piece.id,
        rows=pos - piece.first_row,
        witnesses=sorted({id(r): (p, r) for p, r in witnesses.values()}.values(), key=lambda pr: pr[0]),
        nan_expected=nan,
        warnings=texts[:MAX_WARNINGS],
        more_warnings=max(0, len(texts) - MAX_WARNINGS),
        links=has_links,
        perturbed=perturbed,
    )


def check_bucket(run_dir: str, n_slices: int, bucket: int, source: str) -> BucketCheck:
    """The whole-dataset checks of a local read, on one bucket: the same errors and warnings, naming the same rows."""
    from nbeval.errors import DataError

    folder = Path(run_dir)
    found: list[tuple[int, str, str, str | None]] = []
    for batch in stage_batches(
        [stage_file(folder, s) for s in range(n_slices)], bucket, ["key", "model_key", "input", ROW_COLUMN]
    ):
        found.extend(
            zip(
                batch.column(ROW_COLUMN).to_pylist(),
                batch.column("key").to_pylist(),
                batch.column("model_key").to_pylist(),
                batch.column("input").to_pylist(),
                strict=True,
            )
        )
    found.sort(key=lambda item: item[0])
    seen: dict[tuple[str, str], int] = {}
    prompts: dict[str, tuple[str | None, str, int]] = {}
    models: dict[str, int] = {}
    notes: list[tuple[int, str]] = []
    duplicate: tuple[int, str] | None = None
    for pos, key, model, prompt in found:
        if (key, model) in seen:
            msg = (
                f"duplicate key '{key}' for model '{model}' (also row {seen[(key, model)] + 1}); "
                "give each test case its own key"
            )
            duplicate = (pos, str(DataError(msg, source=source, row=pos + 1, field="key")))
            break
        seen[(key, model)] = pos
        models.setdefault(model, pos)
        first = prompts.setdefault(key, (prompt, model, pos))
        if first[0] != prompt and len(notes) < MAX_WARNINGS:
            msg = (
                f"the key '{key}' has a different prompt for model '{model}' than for model '{first[1]}' "
                f"(row {first[2] + 1}); each key should name one test case"
            )
            notes.append((pos, str(DataError(msg, source=source, row=pos + 1, field="input"))))
    for batch in stage_batches([link_file(folder, s) for s in range(n_slices)], bucket):
        for target, pos, j, kind in zip(*(batch.column(c).to_pylist() for c in batch.schema.names), strict=True):
            if target not in prompts and len(notes) < MAX_WARNINGS:
                msg = f"the relationship '{kind}' points at the key '{target}', which no row has"
                notes.append((pos, str(DataError(msg, source=source, row=pos + 1, field=f"relationships[{j}]"))))
    return BucketCheck(bucket, len(found), duplicate, sorted(notes), models, len(prompts))


def score_bucket(
    payload: bytes,
    run_id: str,
    run_dir: str,
    n_slices: int,
    bucket: int,
    source: str,
    bar: int,
    salt: str = "",
    batch_round: int = 0,
) -> tuple[int, dict[str, Any] | None, list[tuple[str, str, ChatReply]]]:
    """Score one bucket as a local run scores its rows, write its part and commit it.

    ``bar`` and ``salt`` choose the test cases of the run's sample
    (:func:`~nbeval.results.statistics.part_summaries.sample_bar`). Returns the bucket, the
    part's summary (what ``summary.json`` holds) and the judge replies fetched for it (for the
    client's cache). A part committed already (a duplicate attempt) is not written twice: its
    summary is read back.

    ``batch_round`` > 0: the run batches its judge calls (:mod:`~nbeval.engine.dask_batches`).
    Replies come from the cache only; the requests it lacks are written to the round's folder
    for the client to send, and then the bucket's part is not written (its summary is ``None``):
    the next round scores the bucket again, with their answers in the cache.
    """
    folder = Path(run_dir)
    final = part_folder(folder, bucket)
    run = _worker_run(payload, run_id)
    resources, evs = run.resources, run.evaluators
    asked: list[Any] = []
    if batch_round:
        from nbeval.chat.batch_options import BatchOptions
        from nbeval.request_kinds.chat import Chat

        failed_file = batch_folder(folder) / FAILED_FILE
        failed = json.loads(failed_file.read_text(encoding="utf-8")) if failed_file.is_file() else {}
        resources = resources.with_batch(BatchOptions(collect=asked.extend, failed=failed), fresh=[Chat])
    rows, positions = read_bucket_rows([stage_file(folder, s) for s in range(n_slices)], bucket, source)
    dataset = LlmDataset(rows, source=source)
    cancelled = _now_and_then(_cancel_flag(run_id))
    state = planned_state(dataset, None, evs, resources, cancelled, keep_outcomes=False, row_pos=positions)
    live = state.live
    chunk_rows = max(1, run.options.chunk_rows)
    while not state.finished:
        run_chunk(state, chunk_rows)
    settle(state)
    if asked:  # waiting for the round's batch: asked again next round, when the cache has the answers
        spool = batch_folder(folder, batch_round) / f"b-{bucket:05d}.pkl"
        spool.parent.mkdir(parents=True, exist_ok=True)
        tmp_spool = spool.with_name(f".{spool.name}.{uuid.uuid4().hex}")
        with open(tmp_spool, "wb") as fh:
            pickle.dump(asked, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp_spool, spool)
        return bucket, None, []
    if batch_round:
        run.batched_usage.append(_calls_made_here(resources))
    tmp = folder / PARTS_FOLDER / f".p-{bucket:05d}.{uuid.uuid4().hex}"
    tmp.mkdir(parents=True)
    table, groups = live.write_part(tmp / "scores.parquet")
    primary = {k: ev.spec.primary.name for k, ev in enumerate(evs)}
    summary = _summary(bucket, len(rows), table, groups, primary, (bar, salt), cancelled=state.cancelled_count > 0)
    for k in sorted({k for (k, _), (_, own_rows, _) in groups.items() if own_rows}):
        own = {mk: (r, s) for (kk, mk), (_, r, s) in groups.items() if kk == k}
        with open(tmp / f"own-{k}.pkl", "wb") as fh:
            pickle.dump(own, fh, protocol=pickle.HIGHEST_PROTOCOL)
    (tmp / "summary.json").write_text(json.dumps(summary), encoding="utf-8")
    replies = resources.snapshot.take_new()
    try:
        os.rename(tmp, final)  # the first attempt to commit wins: a folder is never renamed over another
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        summary = json.loads((final / "summary.json").read_text(encoding="utf-8"))
    return bucket, summary, replies


def _calls_made_here(resources: Any) -> dict[str, Any]:
    """The usage of a batched round's chat clients that called their model from this worker.

    A model with a Batch API was asked by the run's client, which counted each call; the worker
    only read the answers from the cache (counting them again would count every call twice). A
    model with none (a Python function, a local model) was asked here.
    """
    from nbeval.chat.batch import can_batch
    from nbeval.request_kinds.chat import Chat

    return merge_usage(*(c.usage_totals().to_dict() for c in resources.state(Chat).values() if not can_batch(c)))


#: Seconds a worker trusts what it last heard of the run's cancel event.
CANCEL_CHECK_S = 0.25


def _now_and_then(flag: Callable[[], bool]) -> Callable[[], bool]:
    """``flag``, asked at most every :data:`CANCEL_CHECK_S` seconds.

    A local run asks whether it was cancelled before every row; asking a ``distributed.Event``
    is a round trip to the scheduler, which would cost more than scoring the row.
    """
    last = [-math.inf, False]

    def cancelled() -> bool:
        now = time.monotonic()
        if not last[1] and now - last[0] >= CANCEL_CHECK_S:
            last[0], last[1] = now, flag()
        return bool(last[1])

    return cancelled


def _summary(
    bucket: int,
    rows: int,
    table: Any,
    groups: dict[tuple[int, str], tuple[int, list[Any], list[Any]]],
    primary: dict[int, str],
    sample: tuple[int, str],
    *,
    cancelled: bool,
) -> dict[str, Any]:
    """A part's summary: per (evaluator, model) its outcome count, then what the statistics add up.

    Per metric the measured rows and exact partial sums (the aggregates), the tallies of the
    problems and the sampled rows (:func:`~nbeval.results.statistics.part_summaries.part_statistics`).
    """
    from nbeval.results.statistics.part_summaries import part_statistics

    stats = part_statistics(table, primary, *sample)
    sums: dict[tuple[int, str], dict[str, list[Any]]] = {}
    for (k, mk, m), got in stats["sums"].items():
        sums.setdefault((k, mk), {})[m] = got
    return {
        "bucket": bucket,
        "rows": rows,
        "scores": table.num_rows,
        "outcomes": sum(n for n, _, _ in groups.values()),
        "cancelled": cancelled,
        "groups": [[k, mk, n, sums.get((k, mk), {})] for (k, mk), (n, _, _) in sorted(groups.items())],
        "tallies": stats["tallies"],
        "sample": stats["sample"],
        "hardest": stats["hardest"],
    }


def fingerprint_stage(run_dir: str, n_slices: int, source: str) -> str:
    """The fingerprint of every staged row (what :func:`~nbeval.results.storage.fingerprint.dataset_fingerprint` gives).

    The staged files are memory-mapped and the rows taken in the canonical order a chunk at a
    time, so the worker holds one chunk of rows.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    from nbeval.results.storage.fingerprint import CHUNK_ROWS, fingerprint_of_sorted
    from nbeval.results.storage.partitions import rows_of_table

    folder = Path(run_dir)
    tables = []
    for s in range(n_slices):
        path = stage_file(folder, s)
        if path.is_file():
            tables.append(pa.ipc.open_file(pa.memory_map(str(path))).read_all())
    if not tables:
        return fingerprint_of_sorted([], 0, False)
    table = pa.concat_tables(tables)
    keys = pa.table(
        {
            "key": table.column("key").cast(pa.large_string()),
            "model": table.column("model_key").cast(pa.large_string()),
        }
    )
    order = pc.sort_indices(keys, sort_keys=[("key", "ascending"), ("model", "ascending")])
    conversations = table.column("conversation").null_count < table.num_rows

    def chunks() -> Any:
        for lo in range(0, table.num_rows, CHUNK_ROWS):
            yield rows_of_table(table.take(order.slice(lo, CHUNK_ROWS)), source)

    return fingerprint_of_sorted(chunks(), table.num_rows, conversations)
