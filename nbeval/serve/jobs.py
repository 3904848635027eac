"""Evaluation jobs: planned at once, run on a small pool of worker threads, kept in memory.

A job is planned in the caller's thread (:func:`nbeval.engine.plan_run`), so a bad record, an
unknown evaluator or a missing judge is an error of the request that asked for it, before
anything runs. The run then goes chunk by chunk (:func:`nbeval.engine.run_chunk`) on a worker,
which updates the job's progress after every chunk and honours a cancel between chunks.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from nbeval.serve.payload import result_payload

if TYPE_CHECKING:
    from nbeval.engine import RunState
    from nbeval.results import EvaluationResult
    from nbeval.runtime import Resources

__all__ = ["FINISHED", "Job", "JobStore"]

#: Statuses after which a job changes no more.
FINISHED = frozenset({"succeeded", "failed", "cancelled"})


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class Job:
    """One evaluation the service was asked for."""

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
    """``queued``, ``running``, ``succeeded``, ``failed`` or ``cancelled``."""
    error: str | None = None
    """Why the job failed, when it did."""
    created: str = field(default_factory=_now)
    finished: str | None = None
    result: EvaluationResult | None = None
    payload: dict[str, Any] | None = None
    """The result as JSON (:func:`~nbeval.serve.payload.result_payload`), built once when it ends."""
    cancel: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    started_at: float = field(default_factory=time.monotonic)

    def view(self, with_result: bool = True) -> dict[str, Any]:
        """The job as the API shows it; ``scores`` and ``leaderboards`` are ``None`` until it ends."""
        payload = self.payload if with_result else None
        return {
            "id": self.id,
            "status": self.status,
            "rows": self.rows,
            "progress": {"done": self.done, "total": self.total},
            "evaluators": list(self.evaluators),
            "created": self.created,
            "finished": self.finished,
            "error": self.error,
            "scores": payload["scores"] if payload else None,
            "leaderboards": payload["leaderboards"] if payload else None,
            "meta": payload["meta"] if payload else None,
            "report": f"/v1/evaluations/{self.id}/report" if self.result is not None else None,
        }


class JobStore:
    """Jobs by id, run by ``workers`` threads; at most ``keep`` finished jobs are remembered
    (the oldest are forgotten first). ``resources`` makes each run's shared resources (judge,
    embedder, cache), so runs never share a client's state by accident."""

    def __init__(self, resources: Callable[[], Resources], *, workers: int = 2, keep: int = 200,
                 chunk_rows: int = 64) -> None:
        self._resources = resources
        self.workers = max(1, workers)
        """Runs that go at once; the others wait, ``queued``."""
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="nbeval-serve")
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()
        self.keep = keep
        self.chunk_rows = max(1, chunk_rows)

    def start(self, data: Any, evaluators: Any) -> Job:
        """Plan a run of ``evaluators`` on ``data`` and queue it; raises what planning raises
        (:class:`~nbeval.errors.NbevalError` for bad data or evaluators)."""
        from nbeval.engine import plan_run

        cancel = threading.Event()
        state = plan_run(data, evaluators, resources=self._resources(), cancel=cancel)
        job = Job(id=uuid.uuid4().hex, evaluators=[ev.name for ev in state.evaluators], rows=len(state.dataset.rows),
                  total=state.total,
                  done=state.done, cancel=cancel)
        with self._lock:
            self._forget_old()
            self._jobs[job.id] = job
        self._pool.submit(self._run, job, state)
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def jobs(self) -> list[Job]:
        """Every remembered job, oldest first."""
        with self._lock:
            return list(self._jobs.values())

    def cancel(self, job_id: str) -> Job | None:
        """Ask a job to stop between chunks; rows not started are reported as cancelled."""
        job = self.get(job_id)
        if job is not None and job.status not in FINISHED:
            job.cancel.set()
        return job

    def shutdown(self) -> None:
        """Cancel every unfinished job and wait for the workers."""
        for job in self.jobs():
            job.cancel.set()
        self._pool.shutdown(wait=True, cancel_futures=False)

    def _forget_old(self) -> None:
        ended = [j for j in self._jobs.values() if j.status in FINISHED]
        for job in ended[: max(0, len(ended) - self.keep + 1)]:
            del self._jobs[job.id]

    def _run(self, job: Job, state: RunState) -> None:
        from nbeval.engine import finish, run_chunk

        job.status = "running"
        status = "failed"
        try:
            while not state.finished:
                run_chunk(state, self.chunk_rows)
                job.done = state.done
            result = finish(state)
            job.payload = result_payload(result)
            job.result = result
            job.done = state.total
            status = "cancelled" if result.meta.get("cancelled") else "succeeded"
        except Exception as exc:  # a bug or a resource failing outside any row: the job says why
            job.error = f"{type(exc).__name__}: {exc}"
        finally:
            job.finished = _now()  # before the status, so a finished job always has its time
            job.status = status
            job.ended.set()
