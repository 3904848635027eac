"""The engine: ``nbeval.evaluate(data, evaluators)``.

It plans which rows each evaluator can score (skipping, with the reason, rows that lack an input
or lie beyond ``max_rows``), drives every evaluator's scoring over every row, answers the requests
they yield in batched rounds (see :mod:`nbeval.runtime`), and collects everything into an
:class:`~nbeval.results.EvaluationResult`. One bad row or one failed call never stops the run:
it becomes that row's error.
"""

from __future__ import annotations

import inspect
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nbeval.data.model import LlmDataset, Row, TestLab, TestSuite
from nbeval.errors import DataError, JudgeNotConfigured, NbevalError
from nbeval.evaluators.base import Evaluator, Score
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.progress import progress_bar
from nbeval.results.outcome import RowOutcome
from nbeval.runtime import Resources, model_key

if TYPE_CHECKING:
    import threading

    from nbeval.results import EvaluationResult

__all__ = ["RowOutcome", "evaluate", "first_requests", "plan", "to_dataset"]

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
    """Run generator-based scorers in lockstep rounds, answering each round's requests in batch."""
    # Each entry: (generator, outcome, value to send next, is it the first step)
    live = [(gen, out, None, True) for gen, out in pending]
    while live and not cancelled():
        asks, waiting = [], []
        for gen, out, send, first in live:
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
            break
        resources.warnings.clear()
        answers = resources.answer(asks)
        for k, (gen, out) in enumerate(waiting):
            out.warnings.extend(resources.warnings.get(k, ()))
        live = [(gen, out, ans, False) for (gen, out), ans in zip(waiting, answers)]
    for gen, out, *_ in live:  # cancelled mid-way
        gen.close()
        if out.score is None:
            out.skip_reason = "cancelled"


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
    on_progress: Callable[[EvaluationResult, int, int], None] | None = None,
    chunk_rows: int = CHUNK_ROWS,
) -> EvaluationResult | Any:
    """Evaluate ``data`` with ``evaluators`` and return an :class:`EvaluationResult`.

    ``data``: an :class:`LlmDataset`, a :class:`TestLab`, a pandas DataFrame, a list of records,
    or a path to any file nbeval reads. ``evaluators``: ids (``["rouge", "bleu"]`` or
    ``"rouge,bleu"``), configured objects (``nbeval.evaluator("rouge", threshold=0.5)``), or
    ``(id, params)`` pairs. ``embedder``/``judge``/``device`` choose the run's shared resources
    (each evaluator may override with its own ``embedder=``/``judge=``). ``cache``: the judge
    reply cache (``True``, ``False`` or a path). ``dry_run=True`` returns a :class:`Plan` of what
    the run would do and spend, without scoring. ``cancel``: an event that stops the run between
    batches (the partial result is returned, unfinished rows marked ``cancelled``).
    ``on_progress(partial_result, done, total)`` is called after every batch.
    """
    from nbeval.results import EvaluationResult

    dataset, lab = to_dataset(data)
    evs = resolve_evaluators(evaluators)
    resources = Resources(embedder=embedder, judge=judge, device=device, cache=cache,
                          concurrency=concurrency, timeout=timeout, max_attempts=max_attempts,
                          prices=prices)
    if dry_run:
        return plan(dataset, evs, resources)
    _preflight(evs, dataset, resources)

    planned = [(ev, *_plan_rows(ev, dataset)) for ev in evs]
    total = sum(len(todo) + len(skipped) for _, todo, skipped in planned)
    outcomes: list[RowOutcome] = [o for _, _, skipped in planned for o in skipped]
    cancelled = cancel.is_set if cancel is not None else (lambda: False)
    started = time.perf_counter()
    bar = progress_bar(total, progress)
    bar.update(len(outcomes))
    result_meta = {"lab": lab}

    chunk_rows = max(1, int(chunk_rows))
    row_index = {id(r): i for i, r in enumerate(dataset.rows)}
    cursors = [0] * len(planned)  # per evaluator: next row of its (dataset-ordered) todo list
    for hi in range(chunk_rows, len(dataset.rows) + chunk_rows, chunk_rows):
        if cancelled():
            break
        pending = []
        done_before = len(outcomes)
        for k, (ev, todo, _) in enumerate(planned):
            while cursors[k] < len(todo) and row_index[id(todo[cursors[k]])] < hi:
                gen, out = _start(ev, todo[cursors[k]])
                cursors[k] += 1
                outcomes.append(out)
                if gen is not None:
                    pending.append((gen, out))
        _drive(pending, resources, cancelled)
        bar.update(len(outcomes) - done_before)
        if on_progress is not None:
            on_progress(EvaluationResult.from_outcomes(outcomes, evs, dataset, **result_meta), len(outcomes), total)

    if cancelled():  # rows never started are reported, not lost
        for k, (ev, todo, _) in enumerate(planned):
            outcomes.extend(RowOutcome(ev, r, skip_reason="cancelled") for r in todo[cursors[k]:])
    bar.close()
    ev_order = {id(ev): k for k, ev in enumerate(evs)}
    outcomes.sort(key=lambda o: (ev_order[id(o.evaluator)], row_index[id(o.row)]))
    return EvaluationResult.from_outcomes(
        outcomes, evs, dataset, lab=lab, duration_s=time.perf_counter() - started,
        usage=resources.usage_totals(), cancelled=cancelled())


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
    """Judge calls of the first round (multi-step evaluators make more)."""
    cached_calls: int = 0
    """Of those, how many are already in the cache."""
    est_prompt_tokens: int = 0
    est_completion_tokens: int = 0

    def __str__(self) -> str:
        lines = [f"{'evaluator':<28}{'rows':>8}{'skipped':>9}"]
        lines += [f"{k:<28}{self.rows[k]:>8}{self.skipped[k]:>9}" for k in self.rows]
        lines.append(f"judge calls: {self.judge_calls} ({self.cached_calls} cached, "
                     f"{self.judge_calls - self.cached_calls} to make), ~{self.est_prompt_tokens} prompt "
                     f"+ ~{self.est_completion_tokens} completion tokens")
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


def plan(dataset: LlmDataset, evaluators: Iterable[Evaluator], resources: Resources) -> Plan:
    """Count rows, skips and first-round judge calls without calling anything."""
    from nbeval.evaluators.base import Chat

    result = Plan(rows={}, skipped={})
    chats: dict[Any, list[Chat]] = {}
    for ev in evaluators:
        todo, skipped = _plan_rows(ev, dataset)
        result.rows[ev.name], result.skipped[ev.name] = len(todo), len(skipped)
        if not ev.spec.needs_judge:
            continue
        for req in first_requests(ev, todo):
            if isinstance(req, Chat):
                chats.setdefault(model_key(req.model), []).append(req)
    for reqs in chats.values():
        try:
            client = resources.chat_client(reqs[0].model)
        except JudgeNotConfigured:
            result.judge_calls += len(reqs)
            continue
        p = client.plan([(list(r.messages), dict(r.params)) for r in reqs])
        result.judge_calls += p.calls
        result.cached_calls += p.cached
        result.est_prompt_tokens += p.est_prompt_tokens
        result.est_completion_tokens += p.est_completion_tokens
    return result
