"""Planning a run: check the configuration and plan which rows each evaluator scores.

Every error is raised before anything is spent (:func:`plan_run`); :class:`RunState` carries the run
from there to :func:`~nbeval.engine.run.finish`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nbeval.data.inputs import to_dataset
from nbeval.data.model import LlmDataset, Row, TestLab
from nbeval.engine.cases import order_cases
from nbeval.engine.interrupts import whole
from nbeval.errors import EvaluatorError, JudgeNotConfigured
from nbeval.evaluators.base import Evaluator
from nbeval.evaluators.case import is_case_level
from nbeval.evaluators.jury import Jury, as_jury, is_jury, settle_jury
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.progress import ProgressThrottle
from nbeval.request_kinds.chat import chat_client
from nbeval.results.live import LiveResult
from nbeval.results.outcome import RowOutcome
from nbeval.results.run_facts import run_start
from nbeval.runtime import Resources

__all__ = ["RunState", "plan_rows", "plan_run", "planned_state", "preflight", "seat_jury"]


def plan_rows(ev: Evaluator, dataset: LlmDataset) -> tuple[list[Row], list[RowOutcome]]:
    """Rows ``ev`` will score, and the skipped ones with their reason.

    The rows are in dataset order; a case-level evaluator's are grouped by test case
    (:func:`~nbeval.engine.cases.order_cases`), each case after the row that completes it.
    """
    todo: list[Row] = []
    skipped: list[RowOutcome] = []
    max_rows = ev.settings.max_rows
    taken: dict[str, int] = {}
    needs_answer = "actual_output" in ev.spec.inputs
    for row in dataset.rows:
        reason = None
        if needs_answer and row.error and row.actual_output is None:
            reason = f"no answer was collected: {row.error}"
        else:
            reason = ev.missing_input(row)
        if reason is None and max_rows is not None:
            if taken.get(row.model_key, 0) >= max_rows:
                reason = f"beyond max_rows={max_rows} for this model"
            else:
                taken[row.model_key] = taken.get(row.model_key, 0) + 1
        if reason is None:
            todo.append(row)
        else:
            skipped.append(RowOutcome(ev, row, skip_reason=reason))
    return (order_cases(todo) if is_case_level(ev) else todo), skipped


def seat_jury(evaluators: Sequence[Evaluator], resources: Resources) -> list[Evaluator]:
    """Seat a run's jury on every judge evaluator that brings no judge of its own.

    Returns the run's evaluators, with a run's judge given as several judges (``judge=[...]`` or
    ``nbeval.jury(...)``) seated as the jury of every judge evaluator that brings no judge of its
    own; the run then has no single judge (each juror gets its own client).

    An evaluator that gets the jury is a copy (:meth:`~nbeval.evaluators.base.Evaluator.with_judge`):
    the caller's object is never changed, so it can be run again with another judge.
    """
    if not is_jury(resources.judge_spec):
        return list(evaluators)
    panel = settle_jury(as_jury(resources.judge_spec))
    resources.judge_spec = None
    return [ev.with_judge(panel) if ev.spec.needs_judge and ev.settings.judge is None else ev for ev in evaluators]


def preflight(evaluators: Sequence[Evaluator], dataset: LlmDataset, resources: Resources) -> None:
    """Every configuration error, raised before anything is scored or spent."""
    for ev in evaluators:
        ev.check_dataset(dataset)
    for ev in evaluators:
        if ev.spec.needs_judge:
            judge = ev.settings.judge
            if isinstance(judge, Jury) and is_case_level(ev):
                msg = (
                    f"evaluator '{ev.id}' compares models and takes one judge, not a jury; give it "
                    f"its own: nbeval.evaluator('{ev.spec.id}', judge=...)"
                )
                raise EvaluatorError(msg)
            try:
                for one in judge.jurors if isinstance(judge, Jury) else (judge,):
                    chat_client(resources, one)
            except JudgeNotConfigured as exc:
                msg = f"evaluator '{ev.id}' needs a judge: {exc}"
                raise JudgeNotConfigured(msg) from None


@dataclass
class RunState:
    """One run between :func:`plan_run` and :func:`finish`: what is planned, started and finished."""

    dataset: LlmDataset
    lab: TestLab | None
    evaluators: list[Evaluator]
    resources: Resources
    planned: list[tuple[Evaluator, list[Row]]]
    """Per evaluator: the rows it scores, in dataset order (a case-level evaluator's grouped by
    test case: see :func:`plan_rows`)."""
    outcomes: list[RowOutcome]
    """Every outcome so far (skipped rows first, then in the order they finished); empty unless
    the run was planned with ``keep_outcomes=True`` (the live view holds the scores)."""
    live: LiveResult
    """The result so far, updated as rows finish (what ``on_progress`` receives)."""
    cancelled: Callable[[], bool]
    """Whether the run was asked to stop (checked before each row, round and judge call)."""
    total: int
    """Scores the run makes: one per row and evaluator, skipped ones included."""
    cursors: list[int] = field(default_factory=list)
    """Per evaluator: how many of its planned rows were started (a case-level evaluator starts a
    whole case's rows at once)."""
    next_row: int = 0
    """Dataset rows before this one were started."""
    started: float = field(default_factory=time.perf_counter)
    """When the run was planned (``perf_counter``), for the result's duration."""
    start_facts: dict[str, Any] = field(default_factory=run_start)
    """When the run was planned (UTC) and the git state of the working directory then: the first
    of the result's ``meta["run"]`` facts (:mod:`nbeval.results.run_facts`)."""
    row_index: dict[int, int] = field(default_factory=dict)
    """Position in the dataset of each row, by ``id``."""
    keep_outcomes: bool = True
    """Whether ``outcomes`` keeps every outcome (a large run does not: see :func:`plan_run`)."""
    cluster_usage: dict[str, Any] = field(default_factory=dict)
    """Judge usage of the Dask workers (a run with ``scheduler=``), added to the client's own."""
    on_progress: Callable[[], None] | None = None
    """Called as finished outcomes are filed in the live view (see :meth:`file`): after every
    score in a small run, about :data:`~nbeval.progress.PROGRESS_STEPS` times over a large one, at
    least every :data:`~nbeval.progress.PROGRESS_INTERVAL` seconds while rows finish, and when
    every score is in (or the run was cancelled)."""
    throttle: ProgressThrottle | None = None
    """When :meth:`file` passes its outcomes on (made from ``total`` when first needed)."""
    cancelled_count: int = 0
    """Outcomes filed as ``cancelled``: the result is marked cancelled only when there are some."""
    interrupted: bool = False
    """Ctrl-C stopped the run (what :func:`evaluate` sets before building the partial result)."""
    _unfiled: list[RowOutcome] = field(default_factory=list, repr=False)
    """Finished outcomes not yet filed in the live view (see :meth:`file`)."""

    @property
    def done(self) -> int:
        """Scores finished so far."""
        return self.live.done

    def record(self, outcomes: list[RowOutcome]) -> None:
        """File finished outcomes in the live view, which spools their scores.

        They are also added to ``outcomes`` when outcomes are kept.
        """
        if self.keep_outcomes:
            self.outcomes.extend(outcomes)
        self.cancelled_count += sum(o.skip_reason == "cancelled" for o in outcomes)
        self.live.add(outcomes)

    def file(self, out: RowOutcome, *, note: set[int] | None = None) -> None:
        """File one finished outcome.

        It is kept aside and filed with the others (:meth:`flush`) when the progress throttle says
        it is time. ``note``: a set its ``id`` is added to, in the same step (Ctrl-C cannot come in
        between).
        """
        with whole:
            self._unfiled.append(out)
            if note is not None:
                note.add(id(out))
        if self._throttle().due(self.done + len(self._unfiled)):
            self.flush(report=True)

    def flush(self, *, report: bool | None = None, more: Iterable[RowOutcome] = ()) -> None:
        """File the outcomes kept aside (and ``more``), and report progress when due.

        ``on_progress`` is called if anything was filed since it was last called: when ``report`` is
        true; when it is ``None``, if the throttle says it is time, or every score is in, or the run
        was cancelled.
        """
        with whole:
            outcomes, self._unfiled = [*self._unfiled, *more], []
            if outcomes:
                self.record(outcomes)
        throttle = self._throttle()
        if report is None:
            report = throttle.due(self.done) or self.done >= self.total or self.cancelled()
        if report and throttle.reported(self.done) and self.on_progress is not None:
            self.on_progress()

    def _throttle(self) -> ProgressThrottle:
        if self.throttle is None:
            self.throttle = ProgressThrottle(self.total)
        return self.throttle

    @property
    def finished(self) -> bool:
        """Whether every row was started, or the run was cancelled or interrupted."""
        return self.next_row >= len(self.dataset.rows) or self.interrupted or self.cancelled()


def plan_run(
    data: Any,
    evaluators: Any,
    *,
    resources: Resources | None = None,
    cancel: threading.Event | None = None,
    keep_outcomes: bool = True,
) -> RunState:
    """Check the configuration and plan the rows each evaluator scores.

    Every error is raised before anything is spent; rows an evaluator cannot score are finished at
    once as skipped, with the reason.

    ``keep_outcomes=False`` lets each outcome go once the live view has filed it (its scores are
    spooled to disk as they finish): what :func:`evaluate` does, so that a run of millions of
    rows holds no per-row Python objects beyond the dataset.
    """
    dataset, lab = to_dataset(data)
    evs = resolve_evaluators(evaluators)
    resources = resources if resources is not None else Resources()
    evs = seat_jury(evs, resources)
    preflight(evs, dataset, resources)
    cancelled = cancel.is_set if cancel is not None else _never
    return planned_state(dataset, lab, evs, resources, cancelled, keep_outcomes=keep_outcomes)


def planned_state(
    dataset: LlmDataset,
    lab: Any,
    evs: list[Evaluator],
    resources: Resources,
    cancelled: Callable[[], bool],
    *,
    keep_outcomes: bool,
    row_pos: list[int] | None = None,
) -> RunState:
    """The state of a run of ``evs`` on ``dataset``, checked already: each evaluator's rows planned.

    Rows an evaluator cannot score are recorded at once as skipped. ``row_pos`` gives each row's
    position in the whole input where ``dataset`` is a part of it (a partitioned run's bucket),
    so that the live view orders its scores as a local run's.
    """
    planned: list[tuple[Evaluator, list[Row]]] = []
    outcomes: list[RowOutcome] = []
    for ev in evs:
        todo, skipped = plan_rows(ev, dataset)
        planned.append((ev, todo))
        outcomes.extend(skipped)
    total = len(outcomes) + sum(len(todo) for _, todo in planned)
    row_index = {id(r): i for i, r in enumerate(dataset.rows)}
    positions = row_index if row_pos is None else {id(r): p for r, p in zip(dataset.rows, row_pos, strict=True)}
    live = LiveResult(evs, dataset, total=total, lab=lab, row_pos=positions)
    state = RunState(
        dataset=dataset,
        lab=lab,
        evaluators=evs,
        resources=resources,
        planned=planned,
        outcomes=[],
        live=live,
        cancelled=cancelled,
        total=total,
        cursors=[0] * len(evs),
        row_index=row_index,
        keep_outcomes=keep_outcomes,
    )
    state.record(outcomes)
    return state


def _never() -> bool:
    return False
