"""The worker's side of a run partitioned across a Dask cluster (see :mod:`nbeval.engine.dask_run`).

A worker unpickles the run's evaluators and :class:`~nbeval.options.RunOptions` once per run
(:func:`score_partition`), builds one :class:`WorkerResources` from them for all the run's partitions it
scores, and sends back per row the score (or the skip) and its notes in a
:class:`PartitionResult`, with the judge replies it fetched for the client's cache: a worker reads
the client's reply cache file read-only (:class:`SnapshotCache`) and never writes it. Judge calls
take their slots from one ``distributed.Semaphore`` shared by the whole cluster; Cancel reaches
the worker through a ``distributed.Event``, checked between chunks.

distributed is imported only when a worker scores a partition.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import pickle
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbeval.chat.cache import ChatCache, default_cache_path
from nbeval.evaluators.base import Evaluator, Score
from nbeval.evaluators.case import is_case_level
from nbeval.options import RunOptions
from nbeval.runtime import Resources

if TYPE_CHECKING:
    from nbeval.chat.base import ChatReply

__all__ = [
    "COOL_DOWN_MAX_S",
    "COOL_DOWN_POLL_S",
    "PartitionResult",
    "SnapshotCache",
    "WorkerResources",
    "end_run",
    "merge_usage",
    "reply_cache_file",
    "score_partition",
    "shipped_options",
    "worker_resources",
]


def shipped_options(options: RunOptions) -> RunOptions:
    """Return what the workers get of the client's ``options``.

    They are pickled once, in the run's payload: the same options, but the reply cache as the file
    path the workers read (``False``: the run uses none), no scheduler (the client is the one
    connected to it) and no progress bar.
    """
    return options.merged(cache=reply_cache_file(options.cache) or False, scheduler=None, progress=False)


def reply_cache_file(cache: Any) -> str | None:
    """The reply cache's file, as a worker can open it (``None``: the run uses no cache)."""
    if cache is None or cache is False:
        return None
    if cache is True:
        return str(default_cache_path())
    if isinstance(cache, ChatCache):
        return str(cache.path.resolve())
    return str(ChatCache(cache).path.resolve())


class SnapshotCache(ChatCache):
    """A reply cache a worker reads but never writes.

    Lookups go to the client's cache file, opened read-only (no lookups when this machine cannot see
    it); new replies are collected in :attr:`new` for the client to store.
    """

    def __init__(self, path: str | None) -> None:
        super().__init__(path if path is not None else default_cache_path())
        self._given = path is not None
        self._seen = False
        self.new: list[tuple[str, str, ChatReply]] = []
        """The replies put since the last :meth:`take_new`, as ``(key, identity, reply)``."""
        self._new_lock = threading.Lock()

    @property
    def readable(self) -> bool:
        """Whether the client's cache file can be read here; looked for again until it is there.

        A file the client makes later (its first reply, a batched run's first round's answers)
        is found then.
        """
        if not self._seen and self._given:
            self._seen = self.path.is_file()
        return self._seen

    def _connection(self) -> Any:
        import sqlite3

        if self._conn is None:
            self._conn = sqlite3.connect(
                f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False, timeout=self.busy_timeout_s
            )
        return self._conn

    def get(self, key: str) -> ChatReply | None:
        """Return the client's cached reply under ``key``, or ``None`` (always when its file is unreadable here)."""
        return super().get(key) if self.readable else None

    def contains(self, keys: Any) -> set[str]:
        """Return the subset of ``keys`` the client's cache file holds (none when it is unreadable here)."""
        return super().contains(keys) if self.readable else set()

    def put(self, key: str, identity: str, reply: ChatReply) -> None:
        """Collect ``reply`` in :attr:`new` for the client to store, writing nothing."""
        with self._new_lock:
            self.new.append((key, identity, reply))

    def take_new(self) -> list[tuple[str, str, ChatReply]]:
        """The replies collected since the last call."""
        with self._new_lock:
            out, self.new = self.new, []
            return out


#: Seconds between two looks at the scheduler for a judge model's cool-down.
COOL_DOWN_POLL_S = 0.1
#: Seconds a cool-down read from another worker holds calls at most (a bound on clock skew).
COOL_DOWN_MAX_S = 600.0


def _client() -> Any:
    """This worker's client of the scheduler."""
    from distributed import get_client

    return get_client()


def _cluster_slots_name(run_id: str, model: str, leases: int) -> str:
    """The name of the cluster-wide semaphore for one judge model's calls in one run.

    One per model identity (as a local run has one client, and so one limit, per model) and per
    lease count (a juror's own ``concurrency`` is its own limit): a semaphore's lease count is fixed
    by whichever worker makes it first, so two limits must not share a name.

    Args:
        run_id: The run's id.
        model: The model's cache identity (:meth:`~nbeval.chat.base.ChatModel.cache_identity`).
        leases: How many calls to the model may run at once across the cluster.

    Returns:
        The semaphore's name.
    """
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:16]
    return f"nbeval-judge-{run_id}-{digest}-{leases}"


class _ClusterSlots:
    """Judge-call slots shared by the whole cluster, and one cool-down per model for all its workers.

    A ``distributed.Semaphore`` that a :class:`~nbeval.chat.client.ChatClient` uses as it uses its
    own ``BoundedSemaphore``. When a call to the model is told to wait (a 429 with
    ``Retry-After``), the client calls :meth:`cool_down`: the wait is written to the scheduler's
    metadata under the model's name, and every worker's slots for that model, looking there at
    most every :data:`COOL_DOWN_POLL_S` seconds before a call, hold new calls for that long,
    counted from when the worker saw it (so the machines' clocks need not agree). Without it each
    worker would find the provider's limit by getting its own 429s.
    """

    def __init__(self, name: str, leases: int) -> None:
        from distributed import Semaphore

        self._semaphore = Semaphore(max_leases=leases, name=name)
        self._key = ["nbeval-cool-down", name]
        self._lock = threading.Lock()
        self._until = 0.0
        """``time.monotonic()`` before which no call starts."""
        self._seen: str | None = None
        """The id of the last cool-down read from the scheduler."""
        self._looked = -math.inf

    def cool_down(self, seconds: float) -> None:
        """Hold every worker's calls to this model for ``seconds``, starting now."""
        mark = uuid.uuid4().hex
        with self._lock:
            self._until = max(self._until, time.monotonic() + seconds)
            self._seen = mark
        with contextlib.suppress(Exception):  # without a scheduler to tell, this worker still waits
            _client().set_metadata(self._key, [mark, time.time() + float(seconds)])

    def _look(self) -> None:
        """Take in a cool-down another worker wrote, at most every :data:`COOL_DOWN_POLL_S` seconds."""
        now = time.monotonic()
        if now - self._looked < COOL_DOWN_POLL_S:
            return
        self._looked = now
        try:
            found = _client().get_metadata(self._key, default=None)
        except Exception:
            return
        if found and found[0] != self._seen:
            # the end of the wait, by the wall clock of the worker that was told (a cool-down that
            # is over is not waited for again), within what the provider asked for
            left = min(max(0.0, float(found[1]) - time.time()), COOL_DOWN_MAX_S)
            with self._lock:
                self._seen = found[0]
                self._until = max(self._until, time.monotonic() + left)

    def __enter__(self) -> _ClusterSlots:
        self._wait_out()
        self._semaphore.acquire()
        # a call that waited for its slot may have waited into a cool-down: it keeps the slot
        # (no call could use it) and waits that out too
        self._looked = -math.inf
        self._wait_out()
        return self

    def _wait_out(self) -> None:
        self._look()
        while (wait := self._until - time.monotonic()) > 0:
            time.sleep(min(wait, COOL_DOWN_POLL_S))
            self._look()

    def __exit__(self, *exc: object) -> None:
        self._semaphore.release()


class WorkerResources(Resources):
    """A worker's resources for one run.

    Chat clients read the :class:`SnapshotCache` and take their slots from the cluster-wide
    semaphore. Shared by the worker's threads (the chat handler makes a client once per model under
    ``resources.lock``). Made from the shipped options by :func:`worker_resources`.
    """

    def __init__(self, *, run_id: str, snapshot: SnapshotCache, **keywords: Any) -> None:
        super().__init__(**keywords)
        self.snapshot = snapshot
        self.run_id = run_id


def worker_resources(options: RunOptions, run_id: str) -> WorkerResources:
    """The worker's resources for the run configured by ``options`` (:func:`shipped_options`)."""
    path = options.cache if isinstance(options.cache, str) else None
    snapshot = SnapshotCache(path)
    return WorkerResources.from_options(
        options,
        run_id=run_id,
        snapshot=snapshot,
        cache=snapshot if path is not None else False,
        # a client's own slots would allow `concurrency` calls per worker: the cluster shares them
        chat_slots=lambda n, model: _ClusterSlots(_cluster_slots_name(run_id, model, n), n),
    )


@dataclass
class _WorkerRun:
    """What a worker process keeps of one run for all its partitions."""

    resources: WorkerResources
    evaluators: list[Evaluator]
    options: RunOptions
    batched_usage: list[dict[str, Any]] = field(default_factory=list)
    """The usage of the batched rounds' own chat clients, for the parts they wrote."""


def merge_usage(*usages: dict[str, Any]) -> dict[str, Any]:
    """Token and cost totals added up (cost stays ``None`` only when no part knows one)."""
    totals: dict[str, Any] = {}
    for usage in usages:
        for k, v in usage.items():
            if k == "cost":
                totals[k] = v if totals.get(k) is None else totals[k] + (v or 0.0)
            else:
                totals[k] = totals.get(k, 0) + v
    return totals


#: One :class:`_WorkerRun` per run in each worker process, kept for all its partitions.
_WORKER_RUNS: dict[str, _WorkerRun] = {}
_WORKER_LOCK = threading.Lock()


def _worker_run(payload: bytes, run_id: str) -> _WorkerRun:
    """The run's evaluators and resources in this worker process, unpickled from ``payload`` once."""
    with _WORKER_LOCK:
        found = _WORKER_RUNS.get(run_id)
        if found is None:
            evaluators, options = pickle.loads(payload)
            found = _WORKER_RUNS[run_id] = _WorkerRun(worker_resources(options, run_id), evaluators, options)
        return found


def end_run(run_id: str) -> dict[str, Any]:
    """Run on every worker when the run ends: its usage totals, and the run's resources let go."""
    with _WORKER_LOCK:
        found = _WORKER_RUNS.pop(run_id, None)
    return merge_usage(found.resources.usage_totals(), *found.batched_usage) if found is not None else {}


@dataclass
class PartitionResult:
    """What a worker sends back for one partition."""

    outcomes: list[tuple[int, int, Score | None, str | None, list[str]]] = field(default_factory=list)
    """Per scored or skipped row: (evaluator position, dataset row position, score, skip reason, notes)."""
    replies: list[tuple[str, str, ChatReply]] = field(default_factory=list)
    """Judge replies fetched for this partition, for the client's cache."""


def score_partition(payload: bytes, run_id: str, items: list[tuple[int, int, Any, int]]) -> PartitionResult:
    """Score one partition on a worker.

    ``payload`` is the run's evaluators and its :class:`~nbeval.options.RunOptions`
    (:func:`shipped_options`), pickled by the client (see :mod:`nbeval.engine.dask_run`); ``items``
    are (evaluator position, row position, row, position of the row that starts its scoring) in the
    order a local run starts them, scored the options' ``chunk_rows`` dataset rows at a time. A
    case-level evaluator's rows of one test case come together, each carrying the position of the
    case's last row.
    """
    from nbeval.engine.drive import drive, row_outcomes

    run = _worker_run(payload, run_id)
    resources, evs = run.resources, run.evaluators
    chunk_rows = max(1, run.options.chunk_rows)
    cancelled = _cancel_flag(run_id)
    out = PartitionResult()
    lo = 0
    while lo < len(items):
        chunk = items[lo][3] // chunk_rows  # the local run's chunk: rows [chunk * chunk_rows, (chunk + 1) * chunk_rows)
        hi = lo
        while hi < len(items) and items[hi][3] // chunk_rows == chunk:
            hi += 1
        if cancelled():
            out.outcomes.extend((k, pos, None, "cancelled", []) for k, pos, _, _ in items[lo:])
            break
        started = _start(evs, items[lo:hi])
        drive([(gen, o) for _, _, gen, o in started if gen is not None], resources, cancelled)
        out.outcomes.extend(
            (k, pos, one.score, one.skip_reason, one.warnings)
            for k, positions, _, o in started
            for pos, one in zip(positions, row_outcomes(o), strict=True)
        )
        lo = hi
    out.replies = resources.snapshot.take_new()
    return out


def _start(evs: list[Evaluator], items: list[tuple[int, int, Any, int]]) -> list[tuple[int, list[int], Any, Any]]:
    """Start each row's scoring (each test case's for a case-level evaluator).

    Returns, for each, (evaluator position, the rows' positions, scorer or ``None``, outcome).
    """
    from nbeval.engine.drive import start_case, start_row

    started: list[tuple[int, list[int], Any, Any]] = []
    i = 0
    while i < len(items):
        k, _, row, at = items[i]
        ev, j = evs[k], i + 1
        if is_case_level(ev):
            while j < len(items) and items[j][0] == k and items[j][3] == at:
                j += 1
            started.append((k, [p for _, p, _, _ in items[i:j]], *start_case(ev, [r for _, _, r, _ in items[i:j]])))
        else:
            started.append((k, [items[i][1]], *start_row(ev, row)))
        i = j
    return started


def _cancel_flag(run_id: str) -> Callable[[], bool]:
    from distributed import Event

    event = Event(f"nbeval-cancel-{run_id}")
    return event.is_set
