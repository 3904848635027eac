"""The engine: ``nbeval.evaluate(data, evaluators)``.

A run has three steps, which :func:`evaluate` chains and which a caller (a worker, a resumable
job) may drive itself:

* :func:`plan_run` checks the configuration, raising every error before anything is spent, and
  plans which rows each evaluator can score (skipping, with the reason, rows that lack an input or
  lie beyond ``max_rows``). It returns a :class:`RunState`.
* :func:`run_chunk` drives every evaluator's scoring over the next chunk of dataset rows and
  answers the requests they yield in batched rounds (see :mod:`nbeval.runtime`); the outcomes go
  to the run's :class:`~nbeval.results.live.LiveResult`, which keeps the live view up to date in
  time proportional to the chunk.
* :func:`finish` collects everything into an :class:`~nbeval.results.EvaluationResult`.

One bad row or one failed call never stops the run: it becomes that row's error.
"""

from __future__ import annotations

import functools
import inspect
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbeval.data.model import LlmDataset, Row, TestLab, TestSuite
from nbeval.errors import DataError, JudgeNotConfigured, NbevalError, ResourceError
from nbeval.evaluators.base import Evaluator, Score
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.progress import progress_bar
from nbeval.requests import DRY_RUN_MODEL, Chat, Embed, ScorePairs
from nbeval.results.live import LiveResult
from nbeval.results.outcome import RowOutcome
from nbeval.runtime import Resources, model_key

if TYPE_CHECKING:
    import threading

    from nbeval.results import EvaluationResult

__all__ = ["CHUNK_ROWS", "LiveResult", "Plan", "RowOutcome", "RunState", "evaluate", "finish", "first_requests", "plan",
           "plan_run", "planned_requests", "run_chunk", "to_dataset"]

#: Rows scored together in one batch of rounds. Large enough that embedder and judge batches are
#: full; small enough that a live view refreshes and Cancel is honoured promptly.
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


def _drive(pending: list[tuple[Any, RowOutcome]], resources: Resources,
           cancelled: Callable[[], bool]) -> None:
    """Run generator-based scorers in lockstep rounds, answering each round's requests in batch.

    Cancelling stops before the next round's requests are made; answers already received are
    always delivered, so a row whose last answer is in hand is scored, never thrown away."""
    # Each entry: (generator, outcome, value to send next, is it the first step)
    running = [(gen, out, None, True) for gen, out in pending]
    while running:
        asks, waiting = [], []
        for gen, out, send, first in running:
            try:
                req = next(gen) if first else (gen.throw(send) if isinstance(send, BaseException) else gen.send(send))
            except StopIteration as stop:
                out.score = stop.value if isinstance(stop.value, Score) else _bad_return(out.evaluator, stop.value)
                continue
            except Exception as exc:
                out.score = _error_score(exc)
                continue
            asks.append(req)
            waiting.append((gen, out))
        if not asks:
            return
        if cancelled():  # these rows need more answers: ask nothing more
            for gen, out in waiting:
                gen.close()
                out.skip_reason = "cancelled"
            return
        running = []
        for (gen, out), answer in zip(waiting, resources.answer(asks), strict=True):
            out.warnings.extend(answer.warnings)
            running.append((gen, out, answer.value, False))


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
    """Every outcome so far (skipped rows first, then in the order rows were started); empty
    unless the run was planned with ``keep_outcomes=True`` (the live view holds the scores)."""
    live: LiveResult
    """The result so far, updated after every chunk (what ``on_progress`` receives)."""
    cancelled: Callable[[], bool]
    """Whether the run was asked to stop (checked between chunks and between rounds)."""
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

    @property
    def done(self) -> int:
        """Scores finished so far."""
        return self.live.done

    def record(self, outcomes: list[RowOutcome]) -> None:
        """File finished outcomes: in the live view (which spools their scores), and in
        ``outcomes`` when they are kept."""
        if self.keep_outcomes:
            self.outcomes.extend(outcomes)
        self.live.add(outcomes)

    @property
    def finished(self) -> bool:
        """Whether every row was started or the run was cancelled."""
        return self.next_row >= len(self.dataset.rows) or self.cancelled()


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
    batched rounds; file the outcomes in ``state.live`` and return them."""
    hi = state.next_row + max(1, int(chunk_rows))
    pending: list[tuple[Any, RowOutcome]] = []
    chunk: list[RowOutcome] = []
    for k, (ev, todo) in enumerate(state.planned):
        while state.cursors[k] < len(todo) and state.row_index[id(todo[state.cursors[k]])] < hi:
            gen, out = _start(ev, todo[state.cursors[k]])
            state.cursors[k] += 1
            chunk.append(out)
            if gen is not None:
                pending.append((gen, out))
    state.next_row = hi
    _drive(pending, state.resources, state.cancelled)
    state.record(chunk)
    _release_row_caches(o.row for o in chunk)
    return chunk


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
    """The run's result: rows never started (a cancelled run) are reported as cancelled, not lost."""
    cancelled = state.cancelled()
    if cancelled:
        rest = [RowOutcome(ev, r, skip_reason="cancelled")
                for k, (ev, todo) in enumerate(state.planned) for r in todo[state.cursors[k]:]]
        state.record(rest)
        state.cursors = [len(todo) for _, todo in state.planned]
    return _result(state, cancelled)


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
    each whole call in seconds; ``max_attempts`` counts retries included; ``prices`` maps a model to
    USD per 1k prompt and completion tokens. ``dry_run=True`` returns a :class:`Plan` of what
    the run would do and spend, without scoring. ``cancel``: an event that stops the run between
    batches (the partial result is returned, unfinished rows marked ``cancelled``).

    ``on_progress(live, done, total)`` is called after every batch of ``chunk_rows`` dataset
    rows, with ``done`` of ``total`` scores finished. ``live`` is one
    :class:`~nbeval.results.live.LiveResult` for the whole run, updated in time proportional to
    each batch: its ``aggregates``, ``leaderboard()`` and ``value(evaluator, model_key)`` are the
    running per-model aggregates (cheap to read after every batch), and ``live.result()`` builds
    the :class:`EvaluationResult` of everything finished so far when it is wanted.

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
    bar.update(state.done)

    def batch_done(n: int) -> None:
        bar.update(n)
        if on_progress is not None:
            on_progress(state.live, state.done, state.total)

    try:
        if scheduler is not None:
            from nbeval.engine.dask_run import run_on_cluster

            state.cluster_usage = run_on_cluster(state, scheduler, chunk_rows=max(1, int(chunk_rows)),
                                                 on_batch=batch_done)
        while not state.finished:
            batch_done(len(run_chunk(state, chunk_rows)))
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
    est_completion_tokens: int = 0
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
                     f"{self.judge_calls - self.cached_calls} to make{later}), ~{self.est_prompt_tokens} prompt "
                     f"+ ~{self.est_completion_tokens} completion tokens")
        if self.unconfigured_calls:
            lines.append(f"no judge is configured for {self.unconfigured_calls} of these calls: the run would "
                         "stop before scoring; pass judge=... or set NBEVAL_JUDGE_MODEL")
        return "\n".join(lines)


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
    for reqs in chats.values():
        try:
            client = resources.chat_client(reqs[0].model)
        except JudgeNotConfigured:  # nothing to ask yet, but the calls and their size are known
            from nbeval.chat.client import estimate_usage

            result.judge_calls += len(reqs)
            result.unconfigured_calls += len(reqs)
            prompt, completion = estimate_usage(reqs)
            result.est_prompt_tokens += prompt
            result.est_completion_tokens += completion
            continue
        p = client.plan(reqs)
        result.judge_calls += p.calls
        result.cached_calls += p.cached
        result.est_prompt_tokens += p.est_prompt_tokens
        result.est_completion_tokens += p.est_completion_tokens
    return result
