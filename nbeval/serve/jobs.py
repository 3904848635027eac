"""Evaluation jobs: planned at once, run on a small pool of worker threads, kept on disk.

A job is planned in the caller's thread (:func:`nbeval.engine.plan_run`), so a bad record, an
unknown evaluator or a missing judge is an error of the request that asked for it, before
anything runs. A job that has to wait for a worker does not wait in memory: its request is
written to ``queue/<id>.pickle`` under the data directory, and planned again when a worker takes
it. At most ``max_queued`` jobs wait; past them :meth:`JobStore.start` raises :class:`QueueFull`
(the service answers 503 with ``Retry-After``). The run then goes chunk by chunk
(:func:`nbeval.engine.run_chunk`) on a worker, which updates the job's progress after every
chunk and honours a cancel between chunks.

Jobs live under a data directory (:func:`default_data_dir` unless given): their state in
``jobs.sqlite``, each finished result as a result folder ``results/<id>``
(:meth:`~nbeval.results.EvaluationResult.save`; ``nbeval.load_result`` reads it). Memory holds a
job's small facts only: once a job has run, neither its request nor its result stays there. A
restarted service serves the finished jobs it had, and marks those it was running
``interrupted``, with the scores they had made by then: a running job saves what it has scored
to ``results/<id>.partial`` after its first chunk and then at most every
:data:`PARTIAL_SAVE_S` seconds. The oldest finished jobs are forgotten (their folders removed) past ``keep``
jobs or ``keep_bytes`` of result folders.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.options import RESOURCE_OPTIONS, RunOptions
from nbeval.runtime import Resources
from nbeval.serve.budget import check_judge_calls
from nbeval.serve.payload import read_scores, result_summary

if TYPE_CHECKING:
    from nbeval.engine import RunState
    from nbeval.results import EvaluationResult

__all__ = [
    "FINISHED",
    "JOB_OPTIONS",
    "PARTIAL_SAVE_S",
    "RETRY_AFTER_S",
    "Job",
    "JobStore",
    "QueueFull",
    "default_data_dir",
]

#: The run options (:class:`~nbeval.options.RunOptions`) a :class:`JobStore` takes: its runs' resources.
JOB_OPTIONS = RESOURCE_OPTIONS
_NOT_HERE = "the service scores each job in its own worker threads, chunk by chunk"
#: Why each other run option is refused by :class:`JobStore`.
_NOT_JOB_OPTIONS = {
    "progress": "a job's progress is its status (GET /v1/evaluations/{id})",
    "scheduler": _NOT_HERE,
    "run_dir": _NOT_HERE,
    "batch": _NOT_HERE,
    "batch_poll_s": _NOT_HERE,
    "batch_discount": _NOT_HERE,
    "chunk_rows": "give JobStore(chunk_rows=...), rows scored between two progress updates",
}
_RESOURCES_GIVEN = "the resources given make the runs' own; set it when making them, or give no resources"

#: Statuses after which a job changes no more (``interrupted``: the service stopped during its run).
FINISHED = frozenset({"succeeded", "failed", "cancelled", "interrupted"})

#: Seconds between two saves of a running job's partial result (each rewrites what it has scored).
PARTIAL_SAVE_S = 5.0

#: Seconds a client refused for a full queue is told to wait (``Retry-After``).
RETRY_AFTER_S = 10

_COLUMNS = (
    "id",
    "evaluators",
    "rows",
    "total",
    "done",
    "status",
    "error",
    "created",
    "finished",
    "leaderboards",
    "meta",
    "scores_n",
    "bytes",
)
_JSON = frozenset({"evaluators", "leaderboards", "meta"})


def default_data_dir() -> Path:
    """``$XDG_CACHE_HOME/nbeval/serve``, else ``~/.cache/nbeval/serve``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "nbeval" / "serve"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


class QueueFull(Exception):
    """Every worker is busy and ``max_queued`` jobs already wait: the request is not taken."""

    def __init__(self, waiting: int, retry_after: int = RETRY_AFTER_S) -> None:
        self.retry_after = retry_after
        super().__init__(
            f"{waiting} evaluations are already waiting for a worker, this server's limit "
            f"(--max-queued); retry in {retry_after} seconds or more, or send fewer at once"
        )


@dataclass
class Job:
    """One evaluation the service was asked for (its facts; the result is on disk)."""

    id: str
    evaluators: list[str]
    """The evaluators' names, in the order given."""
    rows: int
    """Dataset rows evaluated."""
    total: int
    """Scores the run makes (rows × evaluators, skipped ones included)."""
    done: int = 0
    """Scores finished so far."""
    status: str = "queued"
    """``queued``, ``running``, ``succeeded``, ``failed``, ``cancelled`` or ``interrupted``."""
    error: str | None = None
    """Why the job failed or was interrupted."""
    created: str = field(default_factory=_now)
    finished: str | None = None
    leaderboards: dict[str, Any] | None = None
    """One leaderboard per evaluator, once it has a result."""
    meta: dict[str, Any] | None = None
    scores_n: int | None = None
    """Records in the result's long table, once it has a result."""
    bytes: int = 0
    """Size of its result folder."""
    cancel: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    started_at: float = field(default_factory=time.monotonic)

    @property
    def has_result(self) -> bool:
        """Whether the job has finished with a result (its scores were counted)."""
        return self.scores_n is not None

    def view(
        self,
        scores: list[dict[str, Any]] | None = None,
        *,
        offset: int = 0,
        limit: int | None = None,
        with_result: bool = True,
    ) -> dict[str, Any]:
        """The job as the API shows it.

        ``scores`` (the page given, from ``offset``) and ``leaderboards`` are ``None`` until it has
        a result. ``scores_page`` says where the page lies and the ``next`` one (``None`` after the
        last).
        """
        shown = with_result and self.has_result
        page = None
        if shown and scores is not None:
            end = offset + len(scores)
            more = self.scores_n is not None and end < self.scores_n
            page = {
                "offset": offset,
                "limit": limit,
                "total": self.scores_n,
                "next": f"/v1/evaluations/{self.id}?offset={end}&limit={limit}" if more else None,
            }
        return {
            "id": self.id,
            "status": self.status,
            "rows": self.rows,
            "progress": {"done": self.done, "total": self.total},
            "evaluators": list(self.evaluators),
            "created": self.created,
            "finished": self.finished,
            "error": self.error,
            "scores": scores if shown else None,
            "scores_page": page,
            "leaderboards": self.leaderboards if shown else None,
            "meta": self.meta if shown else None,
            "report": f"/v1/evaluations/{self.id}/report" if self.has_result else None,
        }


class JobStore:
    """The service's jobs: queued, run by worker threads and kept on disk.

    Jobs by id, run by ``workers`` threads, kept under ``data_dir``; at most ``keep`` finished
    jobs and ``keep_bytes`` of result folders are kept (the oldest are forgotten first), and at
    most ``max_queued`` jobs wait for a worker (their requests on disk, not in memory).
    ``resources`` makes each run's shared resources (judge, embedder, cache), so runs never
    share a client's state by accident; without it they are made from ``options`` (a
    :class:`~nbeval.options.RunOptions` or a mapping; :data:`JOB_OPTIONS` apply, the others are a
    :class:`~nbeval.errors.BadParameter`: ``chunk_rows`` is this store's own keyword). Given
    ``resources``, no run option may be set: they are the resources'.
    """

    def __init__(
        self,
        resources: Callable[[], Resources] | None = None,
        *,
        options: RunOptions | Mapping[str, Any] | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        workers: int = 2,
        keep: int = 200,
        keep_bytes: int = 2**30,
        chunk_rows: int = 64,
        max_queued: int = 64,
    ) -> None:
        self.options = RunOptions.of(options).only(JOB_OPTIONS, "JobStore", _NOT_JOB_OPTIONS)
        """The options every job's run is configured by."""
        if resources is not None:
            self.options.only((), "JobStore(resources)", dict.fromkeys(JOB_OPTIONS, _RESOURCES_GIVEN))
        self._resources: Callable[[], Resources] = (
            resources if resources is not None else functools.partial(Resources.from_options, self.options)
        )
        self.workers = max(1, workers)
        """Runs that go at once; the others wait, ``queued``."""
        self.keep = keep
        self.keep_bytes = keep_bytes
        self.chunk_rows = max(1, chunk_rows)
        self.max_queued = max(0, max_queued)
        """Jobs that may wait for a worker; :meth:`start` raises :class:`QueueFull` past them."""
        self.folder = Path(data_dir).expanduser() if data_dir is not None else default_data_dir()
        (self.folder / "results").mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self.folder / "queue", ignore_errors=True)  # a previous service's: those jobs are interrupted
        (self.folder / "queue").mkdir()
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.folder / "jobs.sqlite", check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS jobs (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE, "
            "evaluators TEXT, rows INTEGER, total INTEGER, done INTEGER, status TEXT, error TEXT, "
            "created TEXT, finished TEXT, leaderboards TEXT, meta TEXT, scores_n INTEGER, "
            "bytes INTEGER)"
        )
        self._jobs: dict[str, Job] = {}
        self._closing = False
        self._load()
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="nbeval-serve")

    def _load(self) -> None:
        """Read the jobs a previous service left; those it had not finished are ``interrupted``."""
        rows = self._db.execute(f"SELECT {', '.join(_COLUMNS)} FROM jobs ORDER BY seq").fetchall()
        for row in rows:
            facts = {
                k: json.loads(v) if k in _JSON and v is not None else v for k, v in zip(_COLUMNS, row, strict=True)
            }
            job = Job(**facts)
            if job.status not in FINISHED and not self._saved_whole(job):
                job.status = "interrupted"
                job.error = "the service stopped before this evaluation finished"
                if self._keep_partial(job):
                    job.error += "; the scores it had made by then are kept"
                job.finished = _now()
                self._save(job)
            job.ended.set()
            self._jobs[job.id] = job

    def _save(self, job: Job) -> None:
        values = [
            json.dumps(getattr(job, k)) if k in _JSON and getattr(job, k) is not None else getattr(job, k)
            for k in _COLUMNS
        ]
        updates = ", ".join(f"{k} = excluded.{k}" for k in _COLUMNS[1:])
        with self._lock:
            self._db.execute(
                f"INSERT INTO jobs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))}) "
                f"ON CONFLICT(id) DO UPDATE SET {updates}",
                values,
            )

    def _saved_whole(self, job: Job) -> bool:
        """Whether the job's whole result was saved before the service stopped.

        The service died between saving the result and recording the status: the job is then
        finished, as it was.
        """
        folder = self.result_folder(job.id)
        if not (folder / "result.json").is_file():
            return False
        try:
            from nbeval.results.storage.loading import load_result

            result = load_result(folder)
        except Exception:  # not a whole result: the job is interrupted, as any other
            return False
        summary = result_summary(result)
        job.leaderboards, job.meta = summary["leaderboards"], summary["meta"]
        job.scores_n, job.bytes, job.done = len(result.scores), _folder_bytes(folder), job.total
        job.status = "cancelled" if result.record.cancelled else "succeeded"
        job.finished = job.finished or _now()
        self._save(job)
        return True

    def _keep_partial(self, job: Job) -> bool:
        """Make the partial result an interrupted job left its result; whether there was one."""
        folder = self.result_folder(job.id)
        partial = self._partial_folder(job.id)
        # A save is written whole under ``.tmp`` (result.json last) and then swapped in, the one
        # before moved to ``.old`` first: a crash in the swap leaves one of the three whole.
        found = [f for f in (partial, *self._partial_spares(job.id)) if (f / "result.json").is_file()]
        if not found:
            return False
        partial = found[0]
        try:
            from nbeval.results.storage.loading import load_result

            shutil.rmtree(folder, ignore_errors=True)
            partial.rename(folder)
            summary = result_summary(load_result(folder))
        except Exception:  # a partial save cut short by the crash: nothing to keep
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(partial, ignore_errors=True)
            return False
        finally:
            for spare in self._partial_spares(job.id):
                shutil.rmtree(spare, ignore_errors=True)
        job.leaderboards, job.meta = summary["leaderboards"], summary["meta"]
        job.scores_n = len(read_scores(folder))
        job.bytes = _folder_bytes(folder)
        return True

    def _partial_folder(self, job_id: str) -> Path:
        return self.folder / "results" / f"{job_id}.partial"

    def _partial_spares(self, job_id: str) -> tuple[Path, Path]:
        """The new partial result being swapped in (``.tmp``) and the one it replaces (``.old``)."""
        partial = self._partial_folder(job_id)
        return partial.with_name(partial.name + ".tmp"), partial.with_name(partial.name + ".old")

    def _save_partial(self, job: Job, state: RunState) -> None:
        """Save what ``state`` has scored so far as the job's partial result.

        It is kept if the service dies before the job ends. The previous one is moved aside, not
        deleted, until the new one is in place: whenever the service dies, one whole partial result
        is left.
        """
        partial = self._partial_folder(job.id)
        tmp, old = self._partial_spares(job.id)
        shutil.rmtree(tmp, ignore_errors=True)
        state.live.result().save(tmp)
        shutil.rmtree(old, ignore_errors=True)
        if partial.exists():
            partial.rename(old)
        tmp.rename(partial)
        shutil.rmtree(old, ignore_errors=True)

    def result_folder(self, job_id: str) -> Path:
        """Where a job's result is saved (once it has one)."""
        return self.folder / "results" / job_id

    def _check_room(self) -> None:
        """Raise :class:`QueueFull` when a new job would wait behind ``max_queued`` others."""
        with self._lock:
            waiting = sum(j.status not in FINISHED for j in self._jobs.values()) - self.workers
        if waiting >= self.max_queued:
            raise QueueFull(max(waiting, 0))

    def _queue_file(self, job_id: str) -> Path:
        return self.folder / "queue" / f"{job_id}.pickle"

    def _spill(self, job_id: str, request: tuple[Any, Any]) -> bool:
        """Write a waiting job's request to disk; whether it could be (else it waits in memory)."""
        path = self._queue_file(job_id)
        tmp = path.with_name(path.name + ".tmp")
        try:
            with open(tmp, "wb") as f:
                pickle.dump(request, f, protocol=pickle.HIGHEST_PROTOCOL)
            tmp.rename(path)
        except Exception:  # something in the request that cannot be pickled, or a full disk
            tmp.unlink(missing_ok=True)
            return False
        return True

    def start(
        self, data: Any, evaluators: Any, *, max_scores: int | None = None, max_judge_calls: int | None = None
    ) -> Job:
        """Plan a run of ``evaluators`` on ``data`` and queue it.

        Raises what planning raises (:class:`~nbeval.errors.NbevalError` for bad data or
        evaluators), :class:`~nbeval.errors.DataError` for a run of more than ``max_scores`` scores
        or ``max_judge_calls`` planned judge calls (:mod:`~nbeval.serve.budget`), and
        :class:`QueueFull` when ``max_queued`` jobs already wait.
        """
        from nbeval.engine import plan_run
        from nbeval.errors import DataError

        self._check_room()  # before the work of planning
        cancel = threading.Event()
        state = plan_run(data, evaluators, resources=self._resources(), cancel=cancel, keep_outcomes=False)
        if max_scores is not None and state.total > max_scores:
            msg = (
                f"{len(state.dataset.rows)} rows × {len(state.evaluators)} evaluators make {state.total} scores, "
                f"over this server's limit of {max_scores} per request; split the data"
            )
            raise DataError(msg)
        if max_judge_calls is not None:
            check_judge_calls(state.planned, max_judge_calls)
        job = Job(
            id=uuid.uuid4().hex,
            evaluators=[ev.name for ev in state.evaluators],
            rows=len(state.dataset.rows),
            total=state.total,
            done=state.done,
            cancel=cancel,
        )
        with self._lock:
            self._check_room()  # again: other requests were planned meanwhile
            waits = sum(j.status not in FINISHED for j in self._jobs.values()) >= self.workers
            self._forget_old(room=1)
            self._jobs[job.id] = job
            self._save(job)
        holder: list[RunState] = [state]  # in a list, so the run can let it go
        del state
        if waits and self._spill(job.id, (data, evaluators)):
            holder.clear()  # it waits on disk; the worker plans it again
        self._pool.submit(self._run, job, holder)
        return job

    def get(self, job_id: str) -> Job | None:
        """The job ``job_id``, or ``None`` when the store has none by that id."""
        with self._lock:
            return self._jobs.get(job_id)

    def jobs(self) -> list[Job]:
        """Every remembered job, oldest first."""
        with self._lock:
            return list(self._jobs.values())

    def scores(self, job: Job, offset: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """Records ``offset`` to ``offset + limit`` of a finished job's long table (all with ``limit=None``)."""
        if not job.has_result:
            return []
        return read_scores(self.result_folder(job.id), offset, limit)

    def result(self, job: Job) -> EvaluationResult | None:
        """A finished job's result, read from its folder."""
        if not job.has_result:
            return None
        from nbeval.results.storage.loading import load_result

        return load_result(self.result_folder(job.id))

    def cancel(self, job_id: str) -> Job | None:
        """Ask a job to stop between chunks; rows not started are reported as cancelled."""
        job = self.get(job_id)
        if job is not None and job.status not in FINISHED:
            job.cancel.set()
        return job

    def shutdown(self) -> None:
        """Cancel every unfinished job and wait for the workers.

        Jobs that have not started are left as they are (``interrupted`` when a service starts on
        this folder again).
        """
        self._closing = True
        for job in self.jobs():
            job.cancel.set()
        self._pool.shutdown(wait=True, cancel_futures=False)
        with self._lock:
            self._db.close()

    def _forget_old(self, room: int = 0, spare: str | None = None) -> None:
        """Forget the oldest finished jobs past ``keep`` (less ``room``) or ``keep_bytes``; never ``spare``."""
        ended = [j for j in self._jobs.values() if j.status in FINISHED and j.id != spare]
        size = sum(j.bytes for j in ended)
        count = len(ended)
        for job in ended:
            if count <= max(0, self.keep - room) and size <= self.keep_bytes:
                break
            count -= 1
            size -= job.bytes
            del self._jobs[job.id]
            self._db.execute("DELETE FROM jobs WHERE id = ?", (job.id,))
            shutil.rmtree(self.result_folder(job.id), ignore_errors=True)

    def _run(self, job: Job, holder: list[RunState]) -> None:
        from nbeval.engine import finish, plan_run, run_chunk

        if self._closing:  # not started: nothing to run or keep
            job.ended.set()
            return
        job.status = "running"
        self._save(job)
        status = "failed"
        saved_at: float | None = None
        try:
            if holder:
                state = holder.pop()
            else:  # it waited on disk
                with open(self._queue_file(job.id), "rb") as f:
                    data, evaluators = pickle.load(f)  # the service's own file, in its data directory
                self._queue_file(job.id).unlink()
                state = plan_run(data, evaluators, resources=self._resources(), cancel=job.cancel, keep_outcomes=False)
                del data, evaluators
            while not state.finished:
                run_chunk(state, self.chunk_rows)
                job.done = state.done
                self._save(job)
                if not state.finished and (saved_at is None or time.monotonic() - saved_at >= PARTIAL_SAVE_S):
                    self._save_partial(job, state)
                    saved_at = time.monotonic()
            result = finish(state)
            del state  # the request's rows go now, not when the job is forgotten
            folder = self.result_folder(job.id)
            tmp = folder.with_name(folder.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            result.save(tmp)
            tmp.rename(folder)
            summary = result_summary(result)
            job.leaderboards, job.meta = summary["leaderboards"], summary["meta"]
            job.scores_n = len(result.scores)
            job.bytes = _folder_bytes(folder)
            job.done = job.total
            status = "cancelled" if result.record.cancelled else "succeeded"
            del result
        except Exception as exc:  # a bug or a resource failing outside any row: the job says why
            from nbeval.serve.policy import error_text

            job.error = f"{type(exc).__name__}: {error_text(exc)}"
        finally:
            for leftover in (self._partial_folder(job.id), *self._partial_spares(job.id)):
                shutil.rmtree(leftover, ignore_errors=True)
            self._queue_file(job.id).unlink(missing_ok=True)
            job.finished = _now()  # before the status, so a finished job always has its time
            job.status = status
            with self._lock:
                self._save(job)
                self._forget_old(spare=job.id)
            job.ended.set()
