"""Partitioned runs: ``nbeval.evaluate("answers.parquet", evaluators, scheduler=...)`` with a client that holds no rows.

When the data is a Parquet or JSON-lines file that every worker can read, the client reads only
the file's layout (Parquet row groups; for JSONL, one pass over its bytes to cut it at line ends)
and hands the rest to the workers; a Dask DataFrame is read the same way, a partition per slice
(computed on the workers) (:mod:`nbeval.engine.dask_part_tasks`), in a run folder
(``run_dir=``, by default a new temporary folder) every worker can read and write:

1. **Stage.** Each slice of the file is read, checked and converted by a worker exactly as a local
   read does, and its rows staged by bucket: a stable hash of the test case's key, so every row of
   a test case lands in one bucket.
2. **Check.** Each bucket gets the whole-dataset checks (a key given twice for one model is the
   same error, naming the same rows, as a local read's; a key with two prompts and a link to no
   key the same warnings). Then the evaluators' own checks and the judges' configuration are
   checked on the client, against a few witness rows: every error is raised before anything is
   spent.
3. **Score.** Each bucket is scored by a worker as a local run scores its rows and written as one
   part (its long table, a summary of counts and exact sums), committed by renaming it into
   place. The client folds the summaries: the aggregates are exact (an evaluator with its own
   aggregate, such as classification's macro F1, gets its rows and scores from the parts: that
   evaluator's rows are held on the client), the progress bar and ``on_progress`` move as parts come
   back, and ``on_progress`` gets a :class:`PartitionedLive` view.
4. **Result.** An :class:`~nbeval.results.EvaluationResult` whose long table and dataset are read
   from the run folder only when asked for (``result.scores``, ``result.dataset.rows``): its
   aggregates, leaderboard and ``len(result)`` cost nothing per row. The dataset's fingerprint is
   computed by a worker streaming the staged rows.

A run stopped midway (the kernel or the client killed, Ctrl-C) resumes: run again with the same
``run_dir``, the parts written are kept (a part marked cancelled is scored again) and the stage is
reused when the input file and the evaluators are unchanged (``plan.json`` says what they were; a
changed input is a :class:`~nbeval.errors.BadParameter`).

Judge calls work as in :mod:`nbeval.engine.dask_run`: one limit per judge model across the cluster,
workers read the reply cache and the client stores the replies they fetched.

The client-side path of :mod:`nbeval.engine.dask_run` stays for everything else: data in memory
(records, a pandas DataFrame, a dataset), other files, an evaluator with ``max_rows`` (a model's first
rows are a whole-file order), and a cluster whose workers cannot see the file or the run folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pickle
import shutil
import tempfile
import time
import uuid
import warnings
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.fields import DataWarning
from nbeval.data.model import LlmDataset, warn_nan_expected
from nbeval.engine.dask_batches import next_round, send_round
from nbeval.engine.dask_connect import connect
from nbeval.engine.dask_part_tasks import (
    BucketCheck,
    InputSlice,
    StageSummary,
    check_bucket,
    fingerprint_stage,
    score_bucket,
    stage_frame,
    stage_slice,
)
from nbeval.engine.dask_run import (
    IN_FLIGHT_PER_WORKER,
    MAX_PARTITION_ROWS,
    PARTITIONS_PER_WORKER,
    WORKER_WAIT_S,
    _payload,
    _store_replies,
    _usage,
    _wait_for_workers,
    merge_usage,
)
from nbeval.engine.dask_worker import shipped_options
from nbeval.engine.planning import preflight, seat_jury
from nbeval.errors import BadParameter, DataError, Interrupted
from nbeval.evaluators.base import Aggregate, Evaluator
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.progress import progress_bar
from nbeval.results.aggregates import add_aggregate_rows, aggregates_table, metrics_table, model_labels, run_meta
from nbeval.results.run_facts import run_facts, run_start
from nbeval.results.statistics.part_summaries import PartSummaries, sample_bar
from nbeval.results.storage.partitions import (
    FAILED_FILE,
    PARTS_FOLDER,
    STAGE_FOLDER,
    PartDataset,
    PartScores,
    batch_folder,
    part_folder,
    stage_file,
)

if TYPE_CHECKING:
    import threading

    import pandas as pd

    from nbeval.options import RunOptions
    from nbeval.results.result import EvaluationResult
    from nbeval.runtime import Resources

__all__ = [
    "MAX_BUCKETS",
    "MAX_SLICES",
    "MIN_PARTITION_ROWS",
    "PLAN_VERSION",
    "SLICE_ROWS",
    "PartitionedInput",
    "PartitionedLive",
    "partitioned_input",
    "run_partitioned",
]

#: Input rows one staging task reads, about (a Parquet row group is never split).
SLICE_ROWS = 50_000
#: Rows of a bucket, at least about: fewer buckets than workers × :data:`PARTITIONS_PER_WORKER`
#: for a small file, rather than tasks of a few rows each.
MIN_PARTITION_ROWS = 1_000
#: Input slices at most: past it, slices grow (every bucket reads its batch from every slice's
#: file, so a billion rows in 50,000-row slices would mean 20,000 files read per bucket).
MAX_SLICES = 1_000
#: Buckets at most: past it, buckets grow beyond :data:`MAX_PARTITION_ROWS` rows.
MAX_BUCKETS = 5_000
#: What ``plan.json`` is written as.
PLAN_VERSION = 2


@dataclass(frozen=True)
class PartitionedInput:
    """What a partitioned run reads on the workers: a file, or a Dask DataFrame."""

    path: str
    """The file; for a Dask DataFrame, the name its rows' errors give (``"DataFrame"``)."""
    kind: str
    """``"parquet"``, ``"jsonl"`` or ``"frame"``."""
    frame: Any = field(default=None, compare=False, repr=False)
    """The Dask DataFrame."""


def partitioned_input(data: Any, evaluators: Sequence[Evaluator]) -> PartitionedInput | None:
    """The file ``data`` names when a run with a scheduler can read it on the workers; ``None`` otherwise.

    A Parquet file, a JSON-lines file of rows (not traces), or a Dask DataFrame; not when an
    evaluator has ``max_rows`` (which rows come first for a model is a whole-file order).
    """
    from nbeval.data.traces import is_trace_file

    if any(ev.settings.max_rows is not None for ev in evaluators):
        return None
    if _is_dask_frame(data):
        return PartitionedInput("DataFrame", "frame", data)
    if not isinstance(data, (str, os.PathLike)):
        return None
    path = os.path.abspath(os.fspath(data))
    suffix = path.lower().rsplit(".", 1)[-1]
    if not os.path.isfile(path):
        return None
    if suffix in ("parquet", "pq"):
        return PartitionedInput(path, "parquet")
    if suffix == "jsonl" and not is_trace_file(path):
        return PartitionedInput(path, "jsonl")
    return None


def _slices(source: PartitionedInput) -> list[InputSlice]:
    """Cut the input into slices of about :data:`SLICE_ROWS` rows (:data:`MAX_SLICES` at most), from its layout."""
    return _fewer_slices(_cut(source), MAX_SLICES)


def _is_dask_frame(data: Any) -> bool:
    from_dask = type(data).__module__.split(".", 1)[0] == "dask"
    return from_dask and hasattr(data, "to_delayed") and hasattr(data, "npartitions")


def _cut(source: PartitionedInput) -> list[InputSlice]:
    if source.kind == "frame":  # one slice per partition: their lengths are one pass over it, on the cluster
        lengths = [int(n) for n in source.frame.map_partitions(len).compute()]
        starts = [sum(lengths[:i]) for i in range(len(lengths))]
        return [InputSlice(i, source.path, "frame", starts[i], n) for i, n in enumerate(lengths)]
    if source.kind == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            meta = pq.ParquetFile(source.path).metadata
        except (pa.ArrowException, OSError) as exc:
            raise DataError(f"not a readable Parquet file: {exc}", source=source.path) from None
        out: list[InputSlice] = []
        groups: list[int] = []
        first = rows = 0
        for g in range(meta.num_row_groups):
            groups.append(g)
            rows += meta.row_group(g).num_rows
            if rows >= SLICE_ROWS:
                out.append(InputSlice(len(out), source.path, "parquet", first, rows, row_groups=tuple(groups)))
                first, rows, groups = first + rows, 0, []
        if groups or not out:
            out.append(InputSlice(len(out), source.path, "parquet", first, rows, row_groups=tuple(groups)))
        return out
    from nbeval.data.readers import jsonl_slices

    return [
        InputSlice(i, source.path, "jsonl", before, n, byte_range=(start, end), first_line=line)
        for i, (start, end, line, before, n) in enumerate(jsonl_slices(source.path, SLICE_ROWS))
    ]


def _bucket_count(rows: int, n_workers: int) -> int:
    want = min(n_workers * PARTITIONS_PER_WORKER, -(-rows // MIN_PARTITION_ROWS))
    return min(MAX_BUCKETS, max(1, want, -(-rows // MAX_PARTITION_ROWS)))


def _fewer_slices(slices: list[InputSlice], most: int) -> list[InputSlice]:
    """``slices`` joined, consecutive ones together, into at most ``most``."""
    if len(slices) <= most:
        return slices
    per = -(-len(slices) // most)
    out: list[InputSlice] = []
    for lo in range(0, len(slices), per):
        group = slices[lo : lo + per]
        first, last = group[0], group[-1]
        out.append(
            InputSlice(
                len(out),
                first.path,
                first.kind,
                first.first_row,
                sum(g.rows for g in group),
                row_groups=tuple(rg for g in group for rg in g.row_groups),
                byte_range=(first.byte_range[0], last.byte_range[1]),
                first_line=first.first_line,
            )
        )
    return out


def _input_identity(source: PartitionedInput) -> dict[str, Any]:
    if source.kind == "frame":  # dask names a collection by a hash of its graph
        return {"kind": "frame", "name": str(source.frame._name), "npartitions": int(source.frame.npartitions)}
    st = os.stat(source.path)
    return {"path": source.path, "kind": source.kind, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def _evaluators_digest(evs: Sequence[Evaluator]) -> str:
    """What scores depend on, of the evaluators: their names, ids and settings."""
    text = json.dumps([[ev.name, ev.spec.id, repr(ev.settings), repr(sorted(ev.params.items()))] for ev in evs])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _Folded:
    """The summaries of the parts filed so far, folded: what the aggregates are made of."""

    outcomes: int = 0
    scores: int = 0
    cancelled: bool = False
    buckets: list[int] = field(default_factory=list)
    groups: dict[tuple[int, str], int] = field(default_factory=dict)
    """Per (evaluator position, model): its outcomes ``N`` (the sums are in :attr:`stats`)."""
    own: dict[tuple[int, str], tuple[list[Any], list[Any]]] = field(default_factory=dict)
    """Per (evaluator position, model) of an evaluator with its own aggregate: its rows and scores."""
    stats: PartSummaries = field(default_factory=lambda: PartSummaries([]))
    """What the statistics (intervals, comparisons, problems) read."""

    def add(self, summary: dict[str, Any], folder: Path) -> None:
        self.buckets.append(int(summary["bucket"]))
        self.outcomes += int(summary["outcomes"])
        self.scores += int(summary["scores"])
        self.cancelled = self.cancelled or bool(summary["cancelled"])
        for k, mk, n, _sums in summary["groups"]:
            self.groups[(k, mk)] = self.groups.get((k, mk), 0) + n
        self.stats.add(summary)
        for path in sorted(folder.glob("own-*.pkl")):
            k = int(path.stem.split("-", 1)[1])
            with open(path, "rb") as fh:
                for mk, (rows, scores) in pickle.load(fh).items():
                    have = self.own.setdefault((k, mk), ([], []))
                    have[0].extend(rows)
                    have[1].extend(scores)


def _aggregates(
    evs: Sequence[Evaluator], folded: _Folded, model_order: dict[str, int]
) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
    """The aggregates table and explanations from the folded summaries, as a local run's live view builds them."""
    rows: list[list[Any]] = []
    explanations: dict[str, dict[str, Any]] = {}
    for k, mk in sorted(folded.groups, key=lambda km: (km[0], model_order.get(km[1], len(model_order)))):
        n = folded.groups[(k, mk)]
        ev = evs[k]
        if type(ev).aggregate is not Evaluator.aggregate:
            own_rows, own_scores = folded.own.get((k, mk), ([], []))
            aggs = ev.aggregate(own_rows, own_scores) if own_scores else {}
        else:
            aggs = {}
            for m in ev.spec.metrics:
                measured, mean, _ = folded.stats.moments(ev.name, mk, m.name)  # the exact mean, rounded once
                aggs[m.name] = Aggregate(mean, measured) if measured else Aggregate(None, 0)
            if not any(a.n for a in aggs.values()):
                aggs = {}
        add_aggregate_rows(rows, explanations, ev, mk, aggs, n)
    return aggregates_table(rows), explanations


class PartitionedLive:
    """A partitioned run so far: what ``on_progress`` gets (the local run's ``LiveResult`` has the same reads).

    ``aggregates``, ``leaderboard()`` and ``value()`` are the parts filed so far; ``result()`` is
    their :class:`~nbeval.results.EvaluationResult`, whose long table is read from the parts when
    asked for.
    """

    def __init__(self, run: _Run) -> None:
        self._run = run
        self.status = ""
        """A line about what the run waits for, where it waits."""

    @property
    def done(self) -> int:
        """Scores finished so far (one per row and evaluator, skipped ones included)."""
        return self._run.folded.outcomes

    @property
    def total(self) -> int:
        """Scores the run makes."""
        return self._run.total

    @property
    def evaluators(self) -> list[str]:
        """The evaluators' names, in the run's order."""
        return [ev.name for ev in self._run.evs]

    @property
    def model_keys(self) -> list[str]:
        """The models with at least one finished score, in input order."""
        order = self._run.model_order
        return sorted({mk for _, mk in self._run.folded.groups}, key=lambda mk: order.get(mk, len(order)))

    @property
    def aggregates(self) -> pd.DataFrame:
        """Per model, evaluator and metric so far."""
        return self._run.aggregates()[0]

    @property
    def metrics(self) -> pd.DataFrame:
        """What each reported metric is."""
        return metrics_table(self._run.evs)

    def value(self, evaluator: str, model_key: str, metric: str | None = None) -> float | None:
        """The aggregate so far of ``metric`` (default: the primary) for one evaluator and model."""
        table = self.aggregates
        ev = next((e for e in self._run.evs if e.name == evaluator), None)
        if ev is None:
            from nbeval.errors import NotFound

            raise NotFound(f"no evaluator '{evaluator}' in this run; it has {self.evaluators}")
        name = metric or ev.spec.primary.name
        ev.spec.metric(name)
        hit = table[(table["evaluator"] == evaluator) & (table["model_key"] == model_key) & (table["metric"] == name)]
        return None if hit.empty or hit["value"].isna().iloc[0] else float(hit["value"].iloc[0])

    def leaderboard(self, evaluator: str | None = None, metric: str | None = None) -> pd.DataFrame:
        """The leaderboard so far."""
        return self.result().leaderboard(evaluator, metric)

    def result(self) -> EvaluationResult:
        """The result of the parts filed so far."""
        return self._run.result(duration=None)


@dataclass
class _Run:
    """One partitioned run on the client."""

    evs: list[Evaluator]
    options: RunOptions
    resources: Resources
    run_dir: Path
    slices: list[InputSlice]
    source: PartitionedInput
    n_buckets: int
    rows: int
    model_order: dict[str, int]
    started: float = field(default_factory=time.perf_counter)
    start_facts: dict[str, Any] = field(default_factory=run_start)
    folded: _Folded = field(default_factory=_Folded)
    fingerprint: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    _cache: tuple[int, Any] | None = None

    @property
    def total(self) -> int:
        return self.rows * len(self.evs)

    def aggregates(self) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
        if self._cache is None or self._cache[0] != len(self.folded.buckets):
            self._cache = (len(self.folded.buckets), _aggregates(self.evs, self.folded, self.model_order))
        table, explanations = self._cache[1]
        return table.copy(), explanations

    def result(self, *, duration: float | None) -> EvaluationResult:
        from nbeval.results.result import EvaluationResult

        table, explanations = self.aggregates()
        usage = merge_usage(self.resources.usage_totals(), self.usage)
        dataset = PartDataset(
            [stage_file(self.run_dir, s.id) for s in self.slices], self.n_buckets, self.rows, self.source.path
        )
        facts = run_facts(self.start_facts, dataset, self.evs, self.resources, fingerprint=self.fingerprint or "")
        meta = run_meta(
            self.evs,
            duration_s=time.perf_counter() - self.started if duration is None else duration,
            usage=usage,
            cancelled=self.folded.cancelled,
            run=facts,
        )
        meta["run_dir"] = str(self.run_dir)
        result = EvaluationResult(
            PartScores(self.run_dir, sorted(self.folded.buckets), self.folded.scores),
            table,
            metrics_table(self.evs),
            dataset,
            meta=meta,
            explanations=explanations,
            model_labels=model_labels(None),
        )
        result.part_summaries = self.folded.stats
        return result


def run_partitioned(
    data: Any,
    evaluators: Any,
    options: RunOptions,
    resources: Resources,
    *,
    cancel: threading.Event | None = None,
    on_progress: Callable[[Any, int, int], None] | None = None,
) -> EvaluationResult | None:
    """Run ``evaluators`` on the file ``data`` across the cluster of ``options.scheduler``, partitioned.

    Returns ``None``, having spent nothing, when the run is not one for this path (see the module):
    the caller runs it the client-side way.
    """
    evs = resolve_evaluators(evaluators)
    source = partitioned_input(data, evs)
    if source is None:
        return None
    run_dir = Path(options.run_dir) if options.run_dir is not None else Path(tempfile.mkdtemp(prefix="nbeval-run-"))
    run_dir = run_dir.resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    client, owned = connect(options.scheduler)
    try:
        n_workers = _wait_for_workers(client)
        if not _workers_see(client, source.path if source.kind != "frame" else None, run_dir):
            return None
        evs = seat_jury(evs, resources)
        _payload(evs, shipped_options(options))  # what cannot travel fails now, before the file is read
        run = _prepare(client, source, evs, options, resources, run_dir, n_workers)
        _score(client, run, cancel, on_progress)
        return run.result(duration=None)
    finally:
        if owned:
            client.close()


def _workers_see(client: Any, path: str | None, run_dir: Path) -> bool:
    """Whether every worker can read ``path`` (a file; ``None``: none to read) and write in ``run_dir``."""
    probe = run_dir / f".probe-{uuid.uuid4().hex}"
    probe.write_text("", encoding="utf-8")
    try:
        seen = client.run(_can_see, path, str(probe), on_error="return")
    finally:
        probe.unlink(missing_ok=True)
    return bool(seen) and all(v is True for v in seen.values())


def _can_see(path: str | None, probe: str) -> bool:
    readable = path is None or os.path.isfile(path)
    return readable and os.access(os.path.dirname(probe), os.W_OK) and os.path.exists(probe)


def _prepare(
    client: Any,
    source: PartitionedInput,
    evs: list[Evaluator],
    options: RunOptions,
    resources: Resources,
    run_dir: Path,
    n_workers: int,
) -> _Run:
    """Stage and check the input (or reuse the stage of an earlier attempt), then check the configuration."""
    plan_path = run_dir / "plan.json"
    identity = _input_identity(source)
    digest = _evaluators_digest(evs)
    done_path = run_dir / STAGE_FOLDER / "_DONE.pkl"
    plan = json.loads(plan_path.read_text(encoding="utf-8")) if plan_path.is_file() else None
    if plan is not None:
        differs = [
            what
            for what, same in (
                ("the run folder's format", plan.get("version") == PLAN_VERSION),
                ("the input file", plan.get("input") == identity),
                ("the evaluators", plan.get("evaluators") == digest),
            )
            if not same
        ]
        if differs and any((run_dir / PARTS_FOLDER).glob("p-*")):
            msg = (
                f"the run folder {run_dir} holds a run of another input or other evaluators ({' and '.join(differs)} "
                "changed since): give another run_dir, or remove that one to start again"
            )
            raise BadParameter(msg)
        if differs:  # nothing was scored (the input was refused, say): start again
            shutil.rmtree(run_dir / STAGE_FOLDER, ignore_errors=True)
            plan_path.unlink()
            plan = None
    if plan is not None and done_path.is_file():
        with open(done_path, "rb") as fh:
            slices, n_buckets, stages, checks = pickle.load(fh)
    else:
        slices = _slices(source)
        rows = sum(s.rows for s in slices)
        n_buckets = _bucket_count(rows, n_workers)
        (run_dir / STAGE_FOLDER).mkdir(exist_ok=True)
        (run_dir / PARTS_FOLDER).mkdir(exist_ok=True)
        stages = _stage(client, source, slices, run_dir, n_buckets)
        checks = _gather(
            client,
            [
                client.submit(check_bucket, str(run_dir), len(slices), b, source.path, pure=False)
                for b in range(n_buckets)
            ],
        )
        plan = {
            "version": PLAN_VERSION,
            "input": identity,
            "evaluators": digest,
            "buckets": n_buckets,
            "sample_salt": os.urandom(16).hex(),  # the run's own sample (see part_summaries.key_hash)
        }
        plan_path.write_text(json.dumps(plan), encoding="utf-8")
        with open(done_path, "wb") as fh:
            pickle.dump((slices, n_buckets, stages, checks), fh)
    _report_checks(source, stages, checks)
    witnesses = sorted((pr for st in stages for pr in st.witnesses), key=lambda pr: pr[0])
    preflight(evs, LlmDataset([r for _, r in witnesses], source=source.path), resources)
    order: dict[str, int] = {}
    for check in checks:
        for mk, pos in check.models.items():
            order[mk] = min(pos, order.get(mk, pos))
    model_order = {mk: i for i, mk in enumerate(sorted(order, key=order.__getitem__))}
    (run_dir / PARTS_FOLDER).mkdir(exist_ok=True)
    keys = sum(c.keys for c in checks)
    stats = PartSummaries(
        [ev.name for ev in evs],
        bar=sample_bar(keys),
        salt=str(plan["sample_salt"]),
        keys=keys,
        model_order=model_order,
        perturbed=sum(st.perturbed for st in stages),
    )
    return _Run(
        evs=evs,
        options=options,
        resources=resources,
        run_dir=run_dir,
        slices=slices,
        source=source,
        n_buckets=n_buckets,
        rows=sum(st.rows for st in stages),
        model_order=model_order,
        folded=_Folded(stats=stats),
    )


def _stage(
    client: Any, source: PartitionedInput, slices: list[InputSlice], run_dir: Path, n_buckets: int
) -> list[StageSummary]:
    """Stage every slice on the workers (a Dask DataFrame's partitions are computed there, one per task)."""
    if source.kind != "frame":
        return _gather(client, [client.submit(stage_slice, s, str(run_dir), n_buckets, pure=False) for s in slices])
    from dask.delayed import delayed

    tasks = [
        delayed(stage_frame, pure=False)(piece, part, str(run_dir), n_buckets)
        for piece, part in zip(slices, source.frame.to_delayed(), strict=True)
    ]
    return _gather(client, client.compute(tasks))


def _gather(client: Any, futures: list[Any]) -> list[Any]:
    """The futures' results in order; the first task's error is raised as it is (a DataError names the row)."""
    try:
        return list(client.gather(futures))
    finally:
        for fut in futures:
            fut.release()


def _report_checks(source: PartitionedInput, stages: Sequence[StageSummary], checks: Sequence[BucketCheck]) -> None:
    """Raise the first duplicate key a local read would, and give the warnings it would."""
    duplicates = [c.duplicate for c in checks if c.duplicate is not None]
    if duplicates:
        raise DataError(min(duplicates)[1])
    for st in stages:
        for text in st.warnings:
            warnings.warn(text, DataWarning, stacklevel=4)
        if st.more_warnings:
            warnings.warn(f"{source.path}: {st.more_warnings} more data warnings", DataWarning, stacklevel=4)
    for _, text in sorted(n for c in checks for n in c.warnings):
        warnings.warn(text, DataWarning, stacklevel=4)
    if source.kind == "jsonl":
        warn_nan_expected(sum(st.nan_expected for st in stages), source.path)


def _score(
    client: Any, run: _Run, cancel: threading.Event | None, on_progress: Callable[[Any, int, int], None] | None
) -> None:
    """Score every bucket not written yet, folding each part's summary as it comes back."""
    from distributed import Event, as_completed

    payload = _payload(run.evs, shipped_options(run.options))
    run_id = uuid.uuid4().hex
    cancel_event = Event(f"nbeval-cancel-{run_id}", client=client)
    live = PartitionedLive(run)
    bar = progress_bar(run.total, run.options.progress)
    shown = 0

    def report() -> None:
        nonlocal shown
        bar.update(live.done - shown)
        shown = live.done
        if on_progress is not None:
            on_progress(live, live.done, live.total)

    try:
        todo: deque[int] = deque()
        for b in range(run.n_buckets):
            summary = _committed(run.run_dir, b)
            if summary is not None:
                run.folded.add(summary, part_folder(run.run_dir, b))
            else:
                todo.append(b)
        report()
        known = run.run_dir / STAGE_FOLDER / "_FINGERPRINT"  # the stage's: computed once, by a worker
        fingerprint = (
            None
            if known.is_file()
            else client.submit(fingerprint_stage, str(run.run_dir), len(run.slices), run.source.path, pure=False)
        )
        [payload_f] = client.scatter([payload], broadcast=True, hash=False, timeout=WORKER_WAIT_S)
        batch_round = 1 if run.resources.batch is not None else 0  # batched: rounds (see dask_batches)
        waiting: list[int] = []

        def send_next() -> None:
            b = todo.popleft()
            fut = client.submit(
                score_bucket,
                payload_f,
                run_id,
                str(run.run_dir),
                len(run.slices),
                b,
                run.source.path,
                run.folded.stats.bar,
                run.folded.stats.salt,
                batch_round,
                pure=False,
            )
            futures[fut] = b
            seq.add(fut)

        n_workers = max(1, len(client.nthreads()))
        if batch_round:  # an earlier run's failed requests are asked again, as a local run asks them
            (batch_folder(run.run_dir) / FAILED_FILE).unlink(missing_ok=True)
        try:
            while True:
                if batch_round:
                    shutil.rmtree(batch_folder(run.run_dir, batch_round), ignore_errors=True)  # an earlier attempt's
                seq = as_completed([], loop=client.loop)
                futures: dict[Any, int] = {}
                for _ in range(min(IN_FLIGHT_PER_WORKER * n_workers, len(todo))):
                    send_next()
                _file_parts(run, futures, seq, todo, send_next, cancel, cancel_event, report, waiting)
                if not waiting or (cancel is not None and cancel.is_set()):
                    break
                send_round(run.resources, run.run_dir, batch_round, cancel, live)
                if cancel is not None and cancel.is_set():
                    break
                todo.extend(sorted(waiting))
                waiting.clear()
                batch_round = next_round(batch_round)
        except KeyboardInterrupt:
            cancel_event.set()  # the parts running stop at their next chunk
            run.folded.cancelled = True
            note = (
                f"the parts written are kept in {run.run_dir} (the partial result holds them); run the same "
                f"evaluate(..., run_dir={str(run.run_dir)!r}) again to score the rest"
            )
            raise Interrupted(run.result(duration=None), note=note) from None
        if waiting:  # cancelled while the round's batches waited: those buckets are not in the result
            run.folded.cancelled = True
        if fingerprint is not None:
            known.write_text(fingerprint.result(timeout=None), encoding="utf-8")
        run.fingerprint = known.read_text(encoding="utf-8").strip()
        run.usage = _usage(client, run_id)
    finally:
        bar.close()
        with contextlib.suppress(Exception):
            cancel_event.clear()


def _file_parts(
    run: _Run,
    futures: dict[Any, int],
    seq: Any,
    todo: deque[int],
    send_next: Callable[[], None],
    cancel: threading.Event | None,
    cancel_event: Any,
    report: Callable[[], None],
    waiting: list[int],
) -> None:
    """File each part's summary as its task ends, sending the next bucket in its place.

    A bucket waiting for its round's batch (no summary: nothing written) goes to ``waiting``.
    """
    while futures:
        if cancel is not None and cancel.is_set() and not cancel_event.is_set():
            cancel_event.set()  # parts running stop at their next chunk; the rest are written as cancelled
        batch = seq.next_batch(block=False)
        if not batch:
            time.sleep(0.05)
            continue
        for fut in batch:
            futures.pop(fut)
            bucket, summary, replies = fut.result(timeout=WORKER_WAIT_S)
            fut.release()
            _store_replies(run.resources, replies)
            if summary is None:
                waiting.append(bucket)
            else:
                run.folded.add(summary, part_folder(run.run_dir, int(summary["bucket"])))
            if todo:
                send_next()
        report()


def _committed(run_dir: Path, bucket: int) -> dict[str, Any] | None:
    """A written part's summary; ``None`` when the bucket must be scored (not written, or written as cancelled)."""
    folder = part_folder(run_dir, bucket)
    path = folder / "summary.json"
    if not path.is_file():
        return None
    summary: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if summary.get("cancelled"):
        aside = folder.with_name(f".{folder.name}.cancelled-{uuid.uuid4().hex}")
        os.rename(folder, aside)
        shutil.rmtree(aside, ignore_errors=True)
        return None
    return summary
