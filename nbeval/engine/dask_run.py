"""Runs partitioned across a Dask cluster: ``nbeval.evaluate(data, evaluators, scheduler=...)``.

The client plans the run as a local run does (:func:`nbeval.engine.plan_run`: every
configuration error is raised before anything is sent, rows beyond ``max_rows`` are skipped
there), then cuts the dataset into partitions of consecutive rows and submits one task per
partition. A worker scores its rows chunk by chunk exactly as :func:`nbeval.engine.run_chunk`
does and sends back, per row, the score (or the skip) and its notes; the client files them in
partition order, so the live view, the aggregates and the long table are the ones a local run
makes, row for row. A case-level evaluator's test case goes, whole, to the partition holding its
last row (the chunk a local run scores it in).

Shared things, decided here:

* **Heavy resources** (embedders, cross-encoders, classifiers, local models) load once per worker
  process: they come from the process-wide caches of :mod:`nbeval.resources`, and each worker
  keeps one :class:`~nbeval.runtime.Resources` per run (keyed by the run) for all its partitions.
* **Judge concurrency** is one limit per judge model for the whole cluster, as a local run has
  one per model: every call to a model on every worker takes a lease of that model's
  ``distributed.Semaphore``, which has ``concurrency`` leases.
* **The reply cache** is written by the client only. A worker reads the client's cache file
  read-only where it can see it (the same machine, or a shared file system), and keeps the
  replies it had to fetch in memory; they travel back with the partition's scores and the
  client stores them. So SQLite is never written from many machines at once, a worker that
  cannot see the file still gives correct (uncached) answers, and a reply fetched once is
  cached for every later run.
* **Progress and Cancel**: the client updates the bar and calls ``on_progress`` as partitions
  come back; Cancel stops new partitions at once and running ones between rounds (through a
  ``distributed.Event``); rows never scored are reported as cancelled.
* **No wait without an end**: connecting to an address gives up after
  ``NBEVAL_SCHEDULER_TIMEOUT`` seconds (:data:`CONNECT_TIMEOUT_S` by default), whatever answers
  there; a run waits at most :data:`WORKER_WAIT_S` for a first worker (and for a result, for the
  workers' usage totals at the end). The evaluators are pickled on the client before anything is
  sent, so one that cannot travel is named in an error instead of failing inside Dask.

This module is the client's side; what runs on a worker is :mod:`nbeval.engine.dask_worker`
(its names are handed out here too). dask and distributed are imported only here, there and in
:mod:`nbeval.engine.dask_connect`, when a run names a scheduler (``pip install 'nbeval[dask]'``).
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nbeval.chat.cache import ChatCache
from nbeval.engine.cases import case_end
from nbeval.engine.dask_connect import CONNECT_TIMEOUT_S, connect, connect_timeout
from nbeval.engine.dask_worker import (
    PartitionResult,
    SnapshotCache,
    WorkerResources,
    end_run,
    merge_usage,
    reply_cache_file,
    score_partition,
    shipped_options,
)
from nbeval.errors import NbevalError
from nbeval.evaluators.base import Evaluator, Score
from nbeval.evaluators.case import is_case_level
from nbeval.results.outcome import RowOutcome

if TYPE_CHECKING:
    from nbeval.chat.base import ChatReply
    from nbeval.engine import RunState
    from nbeval.options import RunOptions
    from nbeval.runtime import Resources

__all__ = [
    "CONNECT_TIMEOUT_S",
    "IN_FLIGHT_PER_WORKER",
    "MAX_PARTITION_ROWS",
    "PARTITIONS_PER_WORKER",
    "WORKER_WAIT_S",
    "PartitionResult",
    "SnapshotCache",
    "WorkerResources",
    "connect",
    "connect_timeout",
    "merge_usage",
    "partitions",
    "run_on_cluster",
    "score_partition",
    "shipped_options",
]

#: Partitions per worker, at least (more give finer progress and balance; each costs a round trip).
PARTITIONS_PER_WORKER = 8
#: Rows of one partition, at most.
MAX_PARTITION_ROWS = 20_000
#: Partitions sent ahead per worker: one running, one waiting, so no worker idles between them.
IN_FLIGHT_PER_WORKER = 2
#: Seconds a run waits for the cluster to have a worker, and for a finished partition's result.
WORKER_WAIT_S = 120.0


def partitions(n_rows: int, n_workers: int, chunk_rows: int) -> list[tuple[int, int]]:
    """Split the dataset's rows into partitions ``[lo, hi)`` for the workers.

    About :data:`PARTITIONS_PER_WORKER` per worker, each a whole number of chunks and at most
    :data:`MAX_PARTITION_ROWS` rows (unless one chunk is more).
    """
    want = max(1, n_workers) * PARTITIONS_PER_WORKER
    size = max(chunk_rows, min(MAX_PARTITION_ROWS, -(-n_rows // want)))
    size = -(-size // chunk_rows) * chunk_rows
    return [(lo, min(lo + size, n_rows)) for lo in range(0, n_rows, size)]


def run_on_cluster(state: RunState, options: RunOptions, *, on_batch: Callable[[int], None]) -> dict[str, Any]:
    """Score every planned row of ``state`` on the cluster of ``options.scheduler``.

    Rows are scored ``chunk_rows`` dataset rows at a time, filing outcomes with ``state.record`` in
    dataset order; the workers get the run's ``options`` (:func:`shipped_options`), the same object
    the client's run was configured by. ``on_batch(n)`` is called after each partition is filed with
    its ``n`` outcomes. On Cancel, the partitions sent end at their next chunk (judge calls in
    flight finish; up to :data:`WORKER_WAIT_S`) and are filed, so nothing is left running to log
    tracebacks; rows not scored are filed as cancelled and every cursor is moved to the end (so
    :func:`nbeval.engine.finish` adds nothing). Returns the workers' judge usage totals.

    Every wait has an end: :func:`connect`'s deadline, :data:`WORKER_WAIT_S` for a first worker
    (else :class:`~nbeval.errors.NbevalError`) and for each partition's result once it is done. A
    partition that fails (its worker lost, with the run's scattered evaluators if it was the last
    one holding them) gives its rows that error; the run goes on and ends.
    """
    import bisect

    from distributed import Event, as_completed

    evs = state.evaluators
    chunk_rows = max(1, options.chunk_rows)
    payload = _payload(evs, shipped_options(options))  # before connecting: what cannot travel fails at once
    client, owned = connect(options.scheduler)
    run_id = uuid.uuid4().hex
    cancel_event = Event(f"nbeval-cancel-{run_id}", client=client)
    try:
        n_workers = _wait_for_workers(client)
        ranges = partitions(len(state.dataset.rows), n_workers, chunk_rows)
        work: list[list[tuple[int, int, Any, int]]] = [[] for _ in ranges]
        bounds = [hi for _, hi in ranges]
        # the order a local run starts rows: chunk by chunk, evaluator by evaluator, row by row (a
        # test case of a case-level evaluator where its last row is, with that row's position)
        for k, (ev, todo) in enumerate(state.planned):
            start = 0
            while start < len(todo):
                end = case_end(todo, start) if is_case_level(ev) else start + 1
                at = state.row_index[id(todo[end - 1])]
                work[bisect.bisect_right(bounds, at)].extend(
                    (k, state.row_index[id(row)], row, at) for row in todo[start:end]
                )
                start = end
        for part in work:
            part.sort(key=lambda item: (item[3] // chunk_rows, item[0], item[3], item[1]))
        [payload_f] = client.scatter([payload], broadcast=True, hash=False, timeout=WORKER_WAIT_S)
        # Partitions are sent a few at a time (enough to keep every worker busy): sent all at once,
        # the whole dataset would wait pickled at the client and the scheduler.
        unsent = deque(i for i, part in enumerate(work) if part)
        futures: dict[Any, int] = {}
        seq = as_completed([], loop=client.loop)  # this client's loop: the default client may be another one

        def send_next() -> None:
            i = unsent.popleft()
            fut = client.submit(score_partition, payload_f, run_id, work[i], pure=False)
            futures[fut] = i
            seq.add(fut)

        for _ in range(min(IN_FLIGHT_PER_WORKER * n_workers, len(unsent))):
            send_next()
        ready: dict[int, list[RowOutcome]] = {}
        next_part = 0
        rows = state.dataset.rows

        def file_ready() -> None:  # the partitions back so far, in dataset order
            nonlocal next_part
            while next_part < len(work) and (next_part in ready or not work[next_part]):
                filed = ready.pop(next_part, [])
                work[next_part] = []  # filed: its rows are the dataset's, nothing else needs the list
                if filed:
                    state.record(filed)
                    on_batch(len(filed))
                next_part += 1

        drain_until: float | None = None
        while futures:
            if drain_until is None and state.cancelled():  # checked while waiting too
                # Quietly: the partitions see the event and stop at their next chunk (their judge
                # calls in flight finish, those waiting for a slot are not sent), so they are let
                # end rather than cancelled; a task cancelled while it runs, or a cluster closed
                # under it, has the workers and the scheduler log CancelledError tracebacks.
                cancel_event.set()
                drain_until = time.monotonic() + WORKER_WAIT_S
            if drain_until is not None and time.monotonic() > drain_until:
                for fut in futures:  # stuck past every bound: let go of them (the rows are cancelled)
                    fut.release()
                break
            batch = seq.next_batch(block=False)
            if not batch:
                time.sleep(0.05)
                continue
            for fut in batch:
                i = futures.pop(fut)
                ready[i] = _outcomes(fut, work[i], evs, rows, state.resources)
                fut.release()  # the worker may drop the partition's result (and its rows) now
                if unsent and not state.cancelled():
                    send_next()
            file_ready()
        if state.cancelled():  # what never came back, and what came back out of order
            for i in range(next_part, len(work)):
                filed = (
                    ready.pop(i)
                    if i in ready
                    else [RowOutcome(evs[k], row, skip_reason="cancelled") for k, _, row, _ in work[i]]
                )
                if filed:
                    state.record(filed)
                    on_batch(len(filed))
        state.cursors = [len(todo) for _, todo in state.planned]
        state.next_row = len(rows)
        return _usage(client, run_id)
    finally:
        if owned:
            client.close()


def _payload(evaluators: list[Evaluator], options: RunOptions) -> bytes:
    """The run's evaluators and options, pickled once here for every worker.

    Bytes, not the objects: Dask moves what it holds between workers (a worker that joins late,
    or whose copy the Active Memory Manager dropped, fetches it from another), and an object a
    worker has used may no longer pickle (a used ``rouge`` holds its tokenizer's local
    functions). Such a transfer fails inside Dask and the partition that needs it waits for ever;
    bytes always travel, and each worker unpickles its own copy
    (:func:`~nbeval.engine.dask_worker.score_partition`). What does not pickle here is named in an
    :class:`~nbeval.errors.NbevalError`.
    """
    import cloudpickle

    try:
        return bytes(cloudpickle.dumps((evaluators, options)))
    except Exception:
        pass
    for ev in evaluators:
        _check_pickles(ev, f"evaluator '{ev.id}'")
    for name in ("judge", "embedder"):
        _check_pickles(getattr(options, name), f"the run's {name}")
    return bytes(cloudpickle.dumps((evaluators, options)))  # the failure is elsewhere: raise it as it is


def _check_pickles(obj: Any, what: str) -> None:
    import cloudpickle

    try:
        cloudpickle.dumps(obj)
    except Exception as exc:
        msg = (
            f"{what} cannot be sent to the Dask workers: it does not pickle ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())[:200]}); give it by its id or name, or as a fresh object, "
            "so that each worker makes its own"
        )
        raise NbevalError(msg) from None


def _wait_for_workers(client: Any) -> int:
    """The cluster's number of workers, once it has one (waiting up to :data:`WORKER_WAIT_S`)."""
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT_S)
    except TimeoutError:
        msg = f"the Dask cluster has no workers: none joined within {WORKER_WAIT_S:g} s"
        raise NbevalError(msg) from None
    return max(1, len(client.nthreads()))


def _usage(client: Any, run_id: str) -> dict[str, Any]:
    """The workers' usage totals of the run (their resources let go).

    A worker that does not answer within :data:`WORKER_WAIT_S` (or is gone) is left out rather than waited for.
    """
    try:
        usages = client.run(end_run, run_id, on_error="ignore", callback_timeout=WORKER_WAIT_S)
    except (TimeoutError, OSError):
        return {}
    return merge_usage(*usages.values())


def _outcomes(
    fut: Any, items: list[tuple[int, int, Any, int]], evs: list[Evaluator], rows: list[Any], resources: Resources
) -> list[RowOutcome]:
    """Rebuild a partition's outcomes on the client.

    The outcomes get the client's own evaluator and row objects; the replies the partition fetched
    go into the client's cache. A partition whose task failed (a worker lost, say), or whose result
    could not be fetched within :data:`WORKER_WAIT_S`, gives each of its rows that error: the run
    goes on.
    """
    try:
        got: PartitionResult = fut.result(timeout=WORKER_WAIT_S)
    except Exception as exc:
        text = f"the worker scoring this row failed: {type(exc).__name__}: {exc}"
        return [RowOutcome(evs[k], row, score=Score({}, error=text)) for k, _, row, _ in items]
    _store_replies(resources, got.replies)
    return [
        RowOutcome(evs[k], rows[pos], score=score, skip_reason=skip, warnings=list(notes))
        for k, pos, score, skip, notes in got.outcomes
    ]


def _store_replies(resources: Resources, replies: list[tuple[str, str, ChatReply]]) -> None:
    path = reply_cache_file(resources.cache)
    if not replies or path is None:
        return
    cache = resources.cache if isinstance(resources.cache, ChatCache) else ChatCache(path)
    for key, identity, reply in replies:
        cache.put(key, identity, reply)
