"""The engine: ``nbeval.evaluate(data, evaluators)``.

A run has three steps, which :func:`evaluate` chains and which a caller (a worker, a resumable
job) may drive itself:

* :func:`plan_run` checks the configuration, raising every error before anything is spent, and
  plans which rows each evaluator can score (skipping, with the reason, rows that lack an input or
  lie beyond ``max_rows``). It returns a :class:`RunState`.
* :func:`run_chunk` drives every evaluator's scoring over the next chunk of dataset rows and
  answers the requests they yield in batched rounds (see :mod:`nbeval.runtime`); each row's
  outcome goes to the run's :class:`~nbeval.results.live.LiveResult` as it finishes (a judge-based
  row as its last reply arrives), in small batches (:class:`~nbeval.progress.ProgressThrottle`),
  and the run's ``on_progress`` hears of each batch: progress moves with the answers, not with
  the chunks.
* :func:`finish` collects everything into an :class:`~nbeval.results.EvaluationResult`.

One bad row or one failed call never stops the run: it becomes that row's error.

Cancel (the ``cancel`` event) stops the run at once: no judge call starts after it (the calls in
flight finish and their rows are scored), and every row not scored is reported as ``cancelled``.
A run whose every row finished is not marked cancelled, whenever the event was set. Ctrl-C in
:func:`evaluate` does the same without waiting for the calls in flight, and raises
:class:`Interrupted`, which holds the partial result.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbeval.data.model import LlmDataset, Row, TestLab, TestSuite
from nbeval.errors import DataError, Interrupted, JudgeNotConfigured, NbevalError, ResourceError
from nbeval.evaluators.base import Evaluator, Score
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.progress import ProgressThrottle, progress_bar
from nbeval.requests import DRY_RUN_MODEL, Chat, Embed, ScorePairs
from nbeval.results.live import LiveResult
from nbeval.results.outcome import RowOutcome
from nbeval.runtime import Answer, RequestCancelled, Resources, model_key

if TYPE_CHECKING:
    from types import FrameType

    from nbeval.results import EvaluationResult

__all__ = ["CHUNK_ROWS", "Interrupted", "LiveResult", "Plan", "RowOutcome", "RunState", "evaluate", "finish",
           "first_requests", "plan", "plan_run", "planned_requests", "run_chunk", "to_dataset"]

#: Rows scored together in one batch of rounds. Large enough that embedder and judge batches are
#: full; small enough that the rows' cached values are let go of regularly. (Progress and Cancel do
#: not wait for a chunk's end.)
CHUNK_ROWS = 256


def to_dataset(data: Any) -> tuple[LlmDataset, TestLab | None]:
    """A dataset from anything ``evaluate`` accepts (and the lab, when one was given)."""
    from nbeval.data.readers import _is_dataframe, load, read_pandas

    if isinstance(data, LlmDataset):
        return data, None
    if isinstance(data, TestLab):
        return data.dataset, data
    if isinstance(data, TestSuite):
        msg = ("a test suite has no answers to evaluate; complete it into a lab first "
               "(nbeval.collect(suite, models=[...]).complete()) or attach answers")
        raise DataError(msg)
    if _is_dataframe(data):
        return read_pandas(data), None
    if isinstance(data, list):
        return LlmDataset.from_records(data), None
    if isinstance(data, (str, os.PathLike)):
        loaded = load(data)
        if isinstance(loaded, TestSuite):
            return to_dataset(loaded)
        if isinstance(loaded, TestLab):
            return loaded.dataset, loaded
        return loaded, None
    msg = f"cannot evaluate a {type(data).__name__}; give a dataset, a lab, a DataFrame, records or a path"
    raise DataError(msg)


def _plan_rows(ev: Evaluator, dataset: LlmDataset) -> tuple[list[Row], list[RowOutcome]]:
    """Rows ``ev`` will score, and the skipped ones with their reason."""
    todo: list[Row] = []
    skipped: list[RowOutcome] = []
    max_rows = ev.params.get("max_rows")
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
    return todo, skipped


def _preflight(evaluators: Sequence[Evaluator], dataset: LlmDataset, resources: Resources) -> None:
    """Every configuration error, raised before anything is scored or spent."""
    for ev in evaluators:
        ev.check_dataset(dataset)
    for ev in evaluators:
        if ev.spec.needs_judge:
            try:
                resources.chat_client(ev.params.get("judge"))
            except JudgeNotConfigured as exc:
                msg = f"evaluator '{ev.id}' needs a judge: {exc}"
                raise JudgeNotConfigured(msg) from None


def _start(ev: Evaluator, row: Row) -> tuple[Any, RowOutcome]:
    out = RowOutcome(ev, row)
    try:
        result = ev.score(row)
    except Exception as exc:
        out.score = _error_score(exc)
        return None, out
    if inspect.isgenerator(result):
        return result, out
    out.score = result if isinstance(result, Score) else _bad_return(ev, result)
    return None, out


def _error_score(exc: BaseException) -> Score:
    text = str(exc) or type(exc).__name__
    if not isinstance(exc, NbevalError):
        text = f"{type(exc).__name__}: {text}"
    return Score({}, error=text)


def _bad_return(ev: Evaluator, value: Any) -> Score:
    return Score({}, error=f"evaluator '{ev.id}' returned {type(value).__name__}, not a Score")


#: What a scorer's step returns when its row is finished (a scorer may yield ``None`` as a request).
_FINISHED = object()


def _step(gen: Any, out: RowOutcome, send: Any, first: bool) -> Any:
    """Advance one row's scoring with ``send``: its next request, or :data:`_FINISHED` with
    ``out.score`` set."""
    try:
        if first:
            return next(gen)
        return gen.throw(send) if isinstance(send, BaseException) else gen.send(send)
    except StopIteration as stop:
        out.score = stop.value if isinstance(stop.value, Score) else _bad_return(out.evaluator, stop.value)
    except Exception as exc:
        out.score = _error_score(exc)
    return _FINISHED


def _unfinished(out: RowOutcome) -> bool:
    return out.score is None and out.skip_reason is None


def _cancel_row(gen: Any, out: RowOutcome) -> None:
    """A row that needs an answer it will not get: it is reported as cancelled."""
    if gen is not None:
        try:
            gen.close()
        except Exception:  # a scorer that misbehaves on close: the row is cancelled all the same
            pass
    out.skip_reason = "cancelled"


def _drive(pending: list[tuple[Any, RowOutcome]], resources: Resources, cancelled: Callable[[], bool],
           on_finished: Callable[[RowOutcome], None] | None = None) -> None:
    """Run generator-based scorers in lockstep rounds, answering each round's requests in batch.

    Each answer is sent into its row's scorer as it arrives (a judge reply does not wait for the
    rest of its round), so a row finishes, and ``on_finished(outcome)`` is called, as soon as its
    last answer is in. Cancelling stops the judge calls not yet started (calls in flight finish
    and are used) and the next round's requests; rows that still need an answer are closed and
    marked ``cancelled``. Answers received are always delivered, so a row whose last answer is in
    hand is scored, never thrown away. On an exception (Ctrl-C), rows not finished are marked
    ``cancelled`` too (``on_finished`` is not called for them) and the exception goes on."""
    done = on_finished if on_finished is not None else _ignore

    waiting: list[tuple[Any, RowOutcome, Any]] = []  # (scorer, outcome, its request)
    try:
        for gen, out in pending:
            req = _step(gen, out, None, True)
            if req is _FINISHED:
                done(out)
            else:
                waiting.append((gen, out, req))
        while waiting:
            if cancelled():  # these rows need more answers: ask nothing more
                break
            asks = waiting
            following: list[Any] = [None] * len(asks)
            answered = [False] * len(asks)

            def on_answer(i: int, answer: Answer, asks: list[tuple[Any, RowOutcome, Any]] = asks,
                          following: list[Any] = following, answered: list[bool] = answered) -> None:
                if answered[i]:
                    return
                answered[i] = True
                gen, out, _ = asks[i]
                if isinstance(answer.value, RequestCancelled):  # never asked: the row stops here
                    _cancel_row(gen, out)
                    following[i] = _FINISHED
                    done(out)
                    return
                out.warnings.extend(answer.warnings)
                following[i] = _step(gen, out, answer.value, False)
                if following[i] is _FINISHED:
                    done(out)

            answers = resources.answer([req for _, _, req in asks], on_answer=on_answer, cancel=cancelled)
            for i, answer in enumerate(answers):  # any answer not handed on as it came
                on_answer(i, answer)
            waiting = [(gen, out, req) for (gen, out, _), req in zip(asks, following, strict=True)
                       if req is not _FINISHED]
    except BaseException:  # marked, not reported: the caller files them as it unwinds
        for gen, out, _ in waiting:
            if _unfinished(out):
                _cancel_row(gen, out)
        raise
    for gen, out, _ in waiting:  # cancelled: these rows needed more answers
        if _unfinished(out):
            _cancel_row(gen, out)
            done(out)


def _ignore(out: RowOutcome) -> None:
    pass


# ---------------------------------------------------------------------------------------------
# A run: plan -> run chunks -> finish


@dataclass
class RunState:
    """One run between :func:`plan_run` and :func:`finish`: what is planned, started and finished."""

    dataset: LlmDataset
    lab: TestLab | None
    evaluators: list[Evaluator]
    resources: Resources
    planned: list[tuple[Evaluator, list[Row]]]
    """Per evaluator: the rows it scores, in dataset order."""
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
    """Per evaluator: how many of its planned rows were started."""
    next_row: int = 0
    """Dataset rows before this one were started."""
    started: float = field(default_factory=time.perf_counter)
    """When the run was planned (``perf_counter``), for the result's duration."""
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
        """File finished outcomes: in the live view (which spools their scores), and in
        ``outcomes`` when they are kept."""
        if self.keep_outcomes:
            self.outcomes.extend(outcomes)
        self.cancelled_count += sum(o.skip_reason == "cancelled" for o in outcomes)
        self.live.add(outcomes)

    def file(self, out: RowOutcome, *, note: set[int] | None = None) -> None:
        """File one finished outcome: it is kept aside and filed with the others (:meth:`flush`)
        when the progress throttle says it is time. ``note``: a set its ``id`` is added to, in the
        same step (Ctrl-C cannot come in between)."""
        with _whole:
            self._unfiled.append(out)
            if note is not None:
                note.add(id(out))
        if self._throttle().due(self.done + len(self._unfiled)):
            self.flush(report=True)

    def flush(self, *, report: bool | None = None, more: Iterable[RowOutcome] = ()) -> None:
        """File the outcomes kept aside (and ``more``), and call ``on_progress`` if anything was
        filed since it was last called: when ``report`` is true; when it is ``None``, if the
        throttle says it is time, or every score is in, or the run was cancelled."""
        with _whole:
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


def plan_run(data: Any, evaluators: Any, *, resources: Resources | None = None,
             cancel: threading.Event | None = None, keep_outcomes: bool = True) -> RunState:
    """Check the configuration (raising every error before anything is spent) and plan the rows
    each evaluator scores; rows it cannot score are finished at once as skipped, with the reason.

    ``keep_outcomes=False`` lets each outcome go once the live view has filed it (its scores are
    spooled to disk as they finish): what :func:`evaluate` does, so that a run of millions of
    rows holds no per-row Python objects beyond the dataset."""
    dataset, lab = to_dataset(data)
    evs = resolve_evaluators(evaluators)
    resources = resources if resources is not None else Resources()
    _preflight(evs, dataset, resources)
    planned: list[tuple[Evaluator, list[Row]]] = []
    outcomes: list[RowOutcome] = []
    for ev in evs:
        todo, skipped = _plan_rows(ev, dataset)
        planned.append((ev, todo))
        outcomes.extend(skipped)
    total = len(outcomes) + sum(len(todo) for _, todo in planned)
    row_index = {id(r): i for i, r in enumerate(dataset.rows)}
    live = LiveResult(evs, dataset, total=total, lab=lab, row_pos=row_index)
    state = RunState(dataset=dataset, lab=lab, evaluators=evs, resources=resources, planned=planned,
                     outcomes=[], live=live, cancelled=cancel.is_set if cancel is not None else _never,
                     total=total, cursors=[0] * len(evs), row_index=row_index, keep_outcomes=keep_outcomes)
    state.record(outcomes)
    return state


def _never() -> bool:
    return False


def run_chunk(state: RunState, chunk_rows: int = CHUNK_ROWS) -> list[RowOutcome]:
    """Score the next ``chunk_rows`` dataset rows with every evaluator, answering their requests in
    batched rounds; file each outcome in ``state.live`` as it finishes (``state.on_progress`` hears
    of it, throttled) and return the chunk's outcomes, every one filed.

    A cancel stops it before the next row, round or judge call: the rows started and not
    finished are filed as ``cancelled`` (the rows not started are left to :func:`finish`). On an
    exception (Ctrl-C), the rows started and not finished are filed as ``cancelled`` too."""
    hi = state.next_row + max(1, int(chunk_rows))
    pending: list[tuple[Any, RowOutcome]] = []
    chunk: list[RowOutcome] = []
    filed: set[int] = set()

    def file(out: RowOutcome) -> None:
        state.file(out, note=filed)

    try:
        for k, (ev, todo) in enumerate(state.planned):
            while (state.cursors[k] < len(todo) and state.row_index[id(todo[state.cursors[k]])] < hi
                   and not state.cancelled()):
                gen, out = _start(ev, todo[state.cursors[k]])
                with _whole:
                    state.cursors[k] += 1
                    chunk.append(out)
                if gen is None:
                    file(out)
                else:
                    pending.append((gen, out))
        if not state.cancelled():
            state.next_row = hi
        _drive(pending, state.resources, state.cancelled, file)
    except BaseException:  # Ctrl-C: what is unfinished is cancelled and filed, and nobody is called
        scorers = {id(out): gen for gen, out in pending}
        for out in chunk:
            if _unfinished(out):
                _cancel_row(scorers.get(id(out)), out)
        state.flush(report=False, more=[o for o in chunk if id(o) not in filed])
        raise
    state.flush()
    _release_row_caches(o.row for o in chunk)
    return chunk


# Ctrl-C lands between any two bytecodes of the main thread. While a run's outcomes are being
# filed it is held back until they are (so that none is filed twice or lost), then raised.


class _HeldInterrupt:
    """``with _whole:`` a block Ctrl-C does not cut in two, where :func:`_holding_interrupts` is in
    force (in that thread; elsewhere the block is an ordinary one)."""

    thread: int | None = None
    """The thread holding Ctrl-C back (the main thread, during a run), if any."""
    depth = 0
    pending = False

    def __enter__(self) -> None:
        if threading.get_ident() == _HeldInterrupt.thread:
            _HeldInterrupt.depth += 1

    def __exit__(self, *exc: object) -> None:
        if threading.get_ident() != _HeldInterrupt.thread:
            return
        _HeldInterrupt.depth -= 1
        if not _HeldInterrupt.depth and _HeldInterrupt.pending:
            _HeldInterrupt.pending = False
            raise KeyboardInterrupt


_whole = _HeldInterrupt()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    if _HeldInterrupt.depth:
        _HeldInterrupt.pending = True
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def _holding_interrupts() -> Iterator[None]:
    """Let ``with _whole:`` blocks hold Ctrl-C back while the run goes (in the main thread, where
    Python's own handler is in force; another handler is left alone)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    _HeldInterrupt.thread, _HeldInterrupt.depth, _HeldInterrupt.pending = threading.get_ident(), 0, False
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _HeldInterrupt.thread, _HeldInterrupt.depth, _HeldInterrupt.pending = None, 0, False


#: The derived values a Row caches (``functools.cached_property``, e.g. its parsed condition).
_ROW_CACHES = tuple(name for name, v in vars(Row).items() if isinstance(v, functools.cached_property))


def _release_row_caches(rows: Iterable[Row]) -> None:
    """Let go of what scored rows cached (a row recomputes it if asked again): kept, a run of a
    million rows would hold a parse tree per row for nothing."""
    for row in rows:
        cached = getattr(row, "__dict__", None)
        if cached:
            for name in _ROW_CACHES:
                cached.pop(name, None)


def finish(state: RunState) -> EvaluationResult:
    """The run's result: rows never started (a cancelled run) are reported as cancelled, not lost.
    It is marked cancelled only when some row was: a cancel that came after every row finished
    changes nothing."""
    state.flush()
    if state.cancelled() or state.interrupted:
        rest = [RowOutcome(ev, r, skip_reason="cancelled")
                for k, (ev, todo) in enumerate(state.planned) for r in todo[state.cursors[k]:]]
        state.record(rest)
        state.cursors = [len(todo) for _, todo in state.planned]
    return _result(state, state.cancelled_count > 0)


def _result(state: RunState, cancelled: bool) -> EvaluationResult:
    """The finished result from the live view: its spooled long table (in dataset order) and
    its aggregates, which equal ``EvaluationResult.from_outcomes`` of every outcome."""
    from nbeval.results import EvaluationResult

    scores, aggregates, explanations = state.live.final_tables()
    usage = state.resources.usage_totals()
    if state.cluster_usage:
        from nbeval.engine.dask_run import merge_usage

        usage = merge_usage(usage, state.cluster_usage)
    base = EvaluationResult.from_outcomes(  # no outcomes: the metrics table, meta and model labels
        [], state.evaluators, state.dataset, lab=state.lab, duration_s=time.perf_counter() - state.started,
        usage=usage, cancelled=cancelled)
    return EvaluationResult(scores, aggregates, base.metrics, state.dataset, meta=base.meta,
                            explanations=explanations, model_labels=base.model_labels)


def evaluate(
    data: Any,
    evaluators: Any,
    *,
    progress: bool = True,
    embedder: Any = None,
    judge: Any = None,
    device: str | None = None,
    cache: Any = True,
    concurrency: int = 8,
    timeout: float | None = None,
    max_attempts: int | None = None,
    prices: dict[str, Any] | None = None,
    dry_run: bool = False,
    cancel: threading.Event | None = None,
    on_progress: Callable[[LiveResult, int, int], None] | None = None,
    chunk_rows: int = CHUNK_ROWS,
    scheduler: Any = None,
) -> EvaluationResult | Any:
    """Evaluate ``data`` with ``evaluators`` and return an :class:`EvaluationResult`.

    ``data``: an :class:`LlmDataset`, a :class:`TestLab`, a pandas DataFrame, a list of records,
    or a path to any file nbeval reads. ``evaluators``: ids (``["rouge", "bleu"]`` or
    ``"rouge,bleu"``), configured objects (``nbeval.evaluator("rouge", threshold=0.5)``), or
    ``(id, params)`` pairs. ``embedder``/``judge``/``device`` choose the run's shared resources
    (each evaluator may override with its own ``embedder=``/``judge=``). A judge is a model name
    (OpenAI-compatible; ``NBEVAL_JUDGE_BASE_URL`` or ``{"model": ..., "base_url": ...}``), a
    Python function, or a local Hugging Face model: ``"hf:<name or path>"`` on ``device``, or
    ``{"provider": "hf", "model": ..., "device": "cuda", "dtype": "bfloat16", "max_new_tokens": 256}``.
    ``cache``: the judge reply cache (``True``, ``False``, a folder or a file). ``timeout`` bounds
    each whole call in seconds (a judge's own ``{"timeout": ...}`` wins for its calls);
    ``max_attempts`` counts retries included; ``prices`` maps a model to USD per 1k prompt and
    completion tokens. ``dry_run=True`` returns a :class:`Plan` of what
    the run would do and spend, without scoring. ``cancel``: an event that stops the run at once:
    no judge call starts after it is set (calls in flight finish and their rows are scored), and
    the partial result is returned, every row not scored marked ``cancelled`` (a run whose rows
    had all finished is returned as it is, not marked cancelled). Ctrl-C stops without waiting
    for the calls in flight and raises :class:`Interrupted`, whose ``.result`` is the partial
    result.

    ``on_progress(live, done, total)`` is called once before anything is scored (``done`` counts
    the rows skipped at once; ``total`` is the run's) and then as rows finish, with ``done`` of
    ``total`` scores finished: after every score in a small run, about 100 times over a large
    one, at least every quarter second while rows finish, and once every score is in
    (:class:`~nbeval.progress.ProgressThrottle`). ``live`` is one
    :class:`~nbeval.results.live.LiveResult` for the whole run, updated in time proportional to
    what finished: its ``aggregates``, ``leaderboard()`` and ``value(evaluator, model_key)`` are
    the running per-model aggregates (cheap to read at every call), and ``live.result()`` builds
    the :class:`EvaluationResult` of everything finished so far when it is wanted. The progress
    bar (``progress=True``) moves with it.

    ``scheduler``: a ``dask.distributed.Client`` or a scheduler address (``"tcp://host:8786"``)
    partitions the rows across the cluster's workers (``pip install 'nbeval[dask]'``); the result
    equals a local run's, row for row. Each worker loads heavy models once; judge calls share one
    ``concurrency`` limit across the cluster; workers only read the reply cache and the client
    stores the replies they fetched. See :mod:`nbeval.engine.dask_run`.

    The scores are spooled to Parquet as they finish and no per-row object is kept, so a run's
    memory is the dataset's plus the finished long table (categorical keys and names).
    """
    resources = Resources(embedder=embedder, judge=judge, device=device, cache=cache,
                          concurrency=concurrency, timeout=timeout, max_attempts=max_attempts,
                          prices=prices)
    if dry_run:
        dataset, _ = to_dataset(data)
        return plan(dataset, resolve_evaluators(evaluators), resources)
    state = plan_run(data, evaluators, resources=resources, cancel=cancel, keep_outcomes=False)
    bar = progress_bar(state.total, progress)
    shown = 0

    def report() -> None:
        nonlocal shown
        bar.update(state.done - shown)
        shown = state.done
        if on_progress is not None:
            on_progress(state.live, state.done, state.total)

    try:
        if scheduler is not None:
            from nbeval.engine.dask_run import run_on_cluster

            state.cluster_usage = run_on_cluster(state, scheduler, chunk_rows=max(1, int(chunk_rows)),
                                                 on_batch=lambda _n: report())
        else:
            state.on_progress = report
            state.flush(report=True)  # the first report: the total, and the rows skipped at once
        with _holding_interrupts():
            while not state.finished:
                run_chunk(state, chunk_rows)
    except KeyboardInterrupt:
        if scheduler is not None:  # the cluster's partitions are not tracked row by row
            raise
        state.interrupted = True
        state.on_progress = None
        raise Interrupted(finish(state)) from None
    finally:
        bar.close()
    return finish(state)


# ---------------------------------------------------------------------------------------------
# Dry run


@dataclass
class Plan:
    """What a run would do, before anything is scored or spent."""

    rows: dict[str, int]
    """Per evaluator: rows that would be scored."""
    skipped: dict[str, int]
    """Per evaluator: rows that would be skipped."""
    judge_calls: int = 0
    """Judge calls the run would make, every round counted (see ``later_round_calls``)."""
    cached_calls: int = 0
    """Of those, how many are already in the cache."""
    unconfigured_calls: int = 0
    """Of ``judge_calls``, those for which no judge is configured: the real run would stop
    before scoring (``JudgeNotConfigured``) until one is given."""
    later_round_calls: int = 0
    """Of ``judge_calls``, those after a row's first call (a second check, one per chunk, ...):
    counted by walking each row's scoring with placeholder replies, so an estimate where an
    evaluator's later questions depend on the judge's answers."""
    est_prompt_tokens: int = 0
    """Rough prompt tokens of the calls to make (four characters per token)."""
    est_completion_tokens: int = 0
    """Completion tokens of the calls to make: each call's ``max_tokens`` where it sets one (an
    upper bound: replies are often far shorter), else the client's guess (200 a call)."""
    completion_tokens_capped: int = 0
    """Of ``est_completion_tokens``, the part that is calls' ``max_tokens`` (an upper bound, not an
    estimate); equal to it when every call sets ``max_tokens``, 0 when none does."""
    calls_per_row: dict[str, float] = field(default_factory=dict)
    """Per judge evaluator: judge calls per scored row, on average (an estimate where later calls
    depend on the judge's answers; ``later_round_calls`` counts those)."""

    def __str__(self) -> str:
        per_row = bool(self.calls_per_row)
        head = f"{'evaluator':<28}{'rows':>8}{'skipped':>9}" + (f"{'calls/row':>11}" if per_row else "")
        lines = [head]
        for k in self.rows:
            line = f"{k:<28}{self.rows[k]:>8}{self.skipped[k]:>9}"
            if per_row:
                line += f"{self.calls_per_row[k]:>11.1f}" if k in self.calls_per_row else f"{'':>11}"
            lines.append(line)
        later = f"; {self.later_round_calls} of them after a row's first call, estimated" \
            if self.later_round_calls else ""
        lines.append(f"judge calls: {self.judge_calls} ({self.cached_calls} cached, "
                     f"{self.judge_calls - self.cached_calls} to make{later}){self._tokens_text()}")
        if self.unconfigured_calls:
            lines.append(f"no judge is configured for {self.unconfigured_calls} of these calls: the run would "
                         "stop before scoring; pass judge=... or set NBEVAL_JUDGE_MODEL")
        return "\n".join(lines)

    def _tokens_text(self) -> str:
        """The tokens, each number labelled as what it is: a rough count, a bound or a guess."""
        total, capped = self.est_completion_tokens, self.completion_tokens_capped
        if not (self.est_prompt_tokens or total):
            return ""
        if total and capped >= total:
            completion = f"at most {total} completion tokens (the calls' max_tokens, an upper bound)"
        elif capped:
            completion = (f"~{total} completion tokens ({capped} of them the calls' max_tokens, an upper "
                          "bound; the rest guessed for calls without max_tokens)")
        else:
            to_make = self.judge_calls - self.cached_calls
            each = f", {total // to_make} a call" if to_make else ""
            completion = f"~{total} completion tokens (guessed{each}: the calls set no max_tokens)"
        return f", ~{self.est_prompt_tokens} prompt + {completion}"


def first_requests(ev: Evaluator, rows: Iterable[Row]) -> Iterable[Any]:
    """The first request each row's scoring would make, without answering it (rows whose scoring
    needs no request, or fails before making one, are left out)."""
    for row in rows:
        gen, _ = _start(ev, row)
        if gen is None:
            continue
        try:
            req = next(gen)
        except Exception:  # StopIteration included: nothing was asked
            continue
        finally:
            gen.close()
        yield req


#: Requests walked per row in a dry run, at most (a guard against a scorer that never stops asking).
_PLAN_MAX_REQUESTS = 1000


def planned_requests(ev: Evaluator, rows: Iterable[Row]) -> Iterable[tuple[Any, bool]]:
    """Every chat request each row's scoring would make, as ``(request, is_first_of_its_row)``,
    found without calling anything: each chat request is answered with an empty placeholder reply
    (model :data:`~nbeval.requests.DRY_RUN_MODEL`), each embedding or pair-scoring request with
    placeholder numbers, so later requests that depend on real answers are an estimate."""
    from nbeval.chat.base import ChatReply, Usage

    for row in rows:
        gen, _ = _start(ev, row)
        if gen is None:
            continue
        try:
            req, chats = next(gen), 0
            for _ in range(_PLAN_MAX_REQUESTS):
                if isinstance(req, Chat):  # only chat calls are counted and priced
                    yield req, chats == 0
                    chats += 1
                    req = gen.send(ChatReply("", Usage(), DRY_RUN_MODEL))
                else:
                    req = gen.send(_placeholder_answer(req))
        except Exception:  # StopIteration included: the row asks nothing more
            pass
        finally:
            gen.close()


def _placeholder_answer(req: Any) -> Any:
    """A stand-in answer to a non-chat request in a dry run: equal unit vectors, zero pair scores."""
    import numpy as np

    if isinstance(req, Embed):
        return np.full((len(req.texts), 4), 0.5, dtype=np.float32)
    if isinstance(req, ScorePairs):
        return np.zeros(len(req.pairs), dtype=np.float64)
    msg = f"a dry run cannot stand in for a {type(req).__name__} request"
    raise ResourceError(msg)


def plan(dataset: LlmDataset, evaluators: Iterable[Evaluator], resources: Resources) -> Plan:
    """Count rows, skips and the judge calls of every round without calling anything."""
    result = Plan(rows={}, skipped={})
    chats: dict[Any, list[Chat]] = {}
    for ev in evaluators:
        todo, skipped = _plan_rows(ev, dataset)
        result.rows[ev.name], result.skipped[ev.name] = len(todo), len(skipped)
        if not ev.spec.needs_judge:
            continue
        calls = 0
        for req, first in planned_requests(ev, todo):
            chats.setdefault(model_key(req.model), []).append(req)
            result.later_round_calls += not first
            calls += 1
        if todo:
            result.calls_per_row[ev.name] = calls / len(todo)
    from nbeval.chat.client import estimate_usage

    for reqs in chats.values():
        # the calls' own max_tokens (a guess of 0 leaves only those): the part that is a bound
        capped = estimate_usage(reqs, completion_guess=0)[1]
        try:
            client = resources.chat_client(reqs[0].model)
        except JudgeNotConfigured:  # nothing to ask yet, but the calls and their size are known
            result.judge_calls += len(reqs)
            result.unconfigured_calls += len(reqs)
            prompt, completion = estimate_usage(reqs)
            result.est_prompt_tokens += prompt
            result.est_completion_tokens += completion
            result.completion_tokens_capped += capped
            continue
        p = client.plan(reqs)
        result.judge_calls += p.calls
        result.cached_calls += p.cached
        result.est_prompt_tokens += p.est_prompt_tokens
        result.est_completion_tokens += p.est_completion_tokens
        # cached calls cost nothing: their caps count only as far as the calls to make reach
        result.completion_tokens_capped += min(capped, p.est_completion_tokens)
    return result
