"""The generator driver, which answers the requests of many rows' scorings in batches.

Each row's scoring is a generator that yields requests; the driver starts them, answers every
round's requests in batch through :class:`~nbeval.runtime.Resources` and sends each answer back into
its row as it arrives. The local run (:mod:`nbeval.engine.run`), the dry run and the Dask workers
(:mod:`nbeval.engine.dask_run`) all drive rows with it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Union

from nbeval.engine.cases import CaseOutcome
from nbeval.errors import NbevalError
from nbeval.evaluators.base import Evaluator, Score
from nbeval.evaluators.case import CaseEvaluator
from nbeval.evaluators.jury import Jury, jury_score
from nbeval.request_kinds import Gather
from nbeval.results.outcome import RowOutcome
from nbeval.runtime import Answer, RequestCancelled, Resources

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = [
    "FINISHED",
    "Scoring",
    "bad_return",
    "cancel_row",
    "drive",
    "error_score",
    "row_outcomes",
    "start_case",
    "start_row",
    "step",
    "unfinished",
]

#: What the driver drives: one row's outcome, or one test case's (a case-level evaluator's).
Scoring = Union[RowOutcome, CaseOutcome]


def start_row(ev: Evaluator, row: Row) -> tuple[Any, RowOutcome]:
    """Start scoring ``row``.

    Returns its scorer (a generator) and outcome, or ``None`` and the outcome already scored (a
    scorer that asked nothing, or failed at once).
    """
    out = RowOutcome(ev, row)
    try:
        judge = ev.settings.judge
        result = jury_score(ev, row, judge) if isinstance(judge, Jury) else ev.score(row)
    except Exception as exc:
        out.score = error_score(exc)
        return None, out
    if inspect.isgenerator(result):
        return result, out
    out.score = result if isinstance(result, Score) else bad_return(ev, result)
    return None, out


def start_case(ev: CaseEvaluator, rows: Sequence[Row]) -> tuple[Any, CaseOutcome]:
    """Start scoring one test case's ``rows`` with a case-level evaluator.

    Returns its scorer (a generator) and outcome, or ``None`` and the outcome already scored.
    """
    out = CaseOutcome(ev, rows)
    try:
        result = ev.score_case(list(rows))
    except Exception as exc:
        out.score = error_score(exc)
        return None, out
    if inspect.isgenerator(result):
        return result, out
    out.settle(result)
    return None, out


def row_outcomes(out: Scoring) -> list[RowOutcome]:
    """The row outcomes ``out`` stands for: itself, or each row's of a test case."""
    return out.outcomes if isinstance(out, CaseOutcome) else [out]


def error_score(exc: BaseException) -> Score:
    """Return the error :class:`Score` a row gets when its scorer raised ``exc``.

    The score has no values; its error is the exception's message (prefixed with its type name
    unless it is one of nbeval's own errors).
    """
    text = str(exc) or type(exc).__name__
    if not isinstance(exc, NbevalError):
        text = f"{type(exc).__name__}: {text}"
    return Score({}, error=text)


def bad_return(ev: Evaluator, value: Any) -> Score:
    """Return the error :class:`Score` a row gets when ``ev`` returned something other than a Score.

    ``value`` is what evaluator ``ev`` returned instead of a :class:`Score`; the error names the
    evaluator and the type it returned.
    """
    return Score({}, error=f"evaluator '{ev.id}' returned {type(value).__name__}, not a Score")


#: What a scorer's step returns when its row is finished (a scorer may yield ``None`` as a request).
FINISHED = object()


def step(gen: Any, out: Scoring, send: Any, first: bool) -> Any:
    """Advance one row's scoring with ``send``: its next request, or :data:`FINISHED` with ``out.score`` set."""
    try:
        if first:
            return next(gen)
        return gen.throw(send) if isinstance(send, BaseException) else gen.send(send)
    except StopIteration as stop:
        if isinstance(out, CaseOutcome):
            out.settle(stop.value)
        else:
            out.score = stop.value if isinstance(stop.value, Score) else bad_return(out.evaluator, stop.value)
    except Exception as exc:
        out.score = error_score(exc)
    return FINISHED


def unfinished(out: Scoring) -> bool:
    """Whether ``out`` is still waiting: neither scored (or errored) nor skipped."""
    return out.score is None and out.skip_reason is None


def cancel_row(gen: Any, out: Scoring) -> None:
    """A row that needs an answer it will not get: it is reported as cancelled."""
    if gen is not None:
        try:
            gen.close()
        except Exception:  # a scorer that misbehaves on close: the row is cancelled all the same
            pass
    out.skip_reason = "cancelled"


def drive(
    pending: Sequence[tuple[Any, Scoring]],
    resources: Resources,
    cancelled: Callable[[], bool],
    on_finished: Callable[[Scoring], None] | None = None,
) -> None:
    """Run generator-based scorers in lockstep rounds, answering each round's requests in batch.

    Each answer is sent into its row's scorer as it arrives (a judge reply does not wait for the
    rest of its round), so a row finishes, and ``on_finished(outcome)`` is called, as soon as its
    last answer is in. Cancelling stops the judge calls not yet started (calls in flight finish
    and are used) and the next round's requests; rows that still need an answer are closed and
    marked ``cancelled``. Answers received are always delivered, so a row whose last answer is in
    hand is scored, never thrown away. On an exception (Ctrl-C), rows not finished are marked
    ``cancelled`` too (``on_finished`` is not called for them) and the exception goes on.
    """
    done = on_finished if on_finished is not None else _ignore

    waiting: list[tuple[Any, Scoring, Any]] = []  # (scorer, outcome, its request)
    try:
        for gen, out in pending:
            req = step(gen, out, None, True)
            if req is FINISHED:
                done(out)
            else:
                waiting.append((gen, out, req))
        while waiting:
            if cancelled():  # these rows need more answers: ask nothing more
                break
            asks = waiting
            following: list[Any] = [None] * len(asks)
            answered = [False] * len(asks)

            def on_answer(
                i: int,
                answer: Answer,
                asks: list[tuple[Any, Scoring, Any]] = asks,
                following: list[Any] = following,
                answered: list[bool] = answered,
            ) -> None:
                if answered[i]:
                    return
                answered[i] = True
                gen, out, _ = asks[i]
                if isinstance(answer.value, RequestCancelled):  # never asked: the row stops here
                    cancel_row(gen, out)
                    following[i] = FINISHED
                    done(out)
                    return
                out.warnings.extend(answer.warnings)
                following[i] = step(gen, out, answer.value, False)
                if following[i] is FINISHED:
                    done(out)

            gathered = _Gathered([req for _, _, req in asks], on_answer)
            answers = resources.answer(gathered.requests, on_answer=gathered.on_answer, cancel=cancelled)
            for j, answer in enumerate(answers):  # any answer not handed on as it came
                gathered.on_answer(j, answer)
            waiting = [
                (gen, out, req) for (gen, out, _), req in zip(asks, following, strict=True) if req is not FINISHED
            ]
    except BaseException:  # marked, not reported: the caller files them as it unwinds
        for gen, out, _ in waiting:
            if unfinished(out):
                cancel_row(gen, out)
        raise
    for gen, out, _ in waiting:  # cancelled: these rows needed more answers
        if unfinished(out):
            cancel_row(gen, out)
            done(out)


def _ignore(out: Scoring) -> None:
    pass


class _Gathered:
    """A round's requests with every :class:`~nbeval.request_kinds.Gather` spread into its parts.

    So the parts are batched with the rest; a gather's answer (a tuple of its parts' answers, a
    failed part as its error) is handed on once its last part is in. A part cancelled before it was
    asked cancels its row, as a cancelled single request does.
    """

    def __init__(self, asked: Sequence[Any], hand_on: Callable[[int, Answer], None]) -> None:
        self.hand_on = hand_on
        self.requests: list[Any] = []
        self.owner: list[tuple[int, int | None]] = []  # per part: (its ask, its place in a gather)
        self.parts: dict[int, list[Any]] = {}
        self.missing: dict[int, int] = {}
        self.warnings: dict[int, list[str]] = {}
        self.seen: set[int] = set()
        for i, req in enumerate(asked):
            if not isinstance(req, Gather):
                self.requests.append(req)
                self.owner.append((i, None))
                continue
            self.parts[i], self.missing[i], self.warnings[i] = [None] * len(req.requests), len(req.requests), []
            for pos, part in enumerate(req.requests):
                self.requests.append(part)
                self.owner.append((i, pos))
        for i, left in list(self.missing.items()):
            if not left:  # an empty gather: answered at once
                hand_on(i, Answer(()))

    def on_answer(self, j: int, answer: Answer) -> None:
        if j in self.seen:
            return
        self.seen.add(j)
        i, pos = self.owner[j]
        if pos is None or isinstance(answer.value, RequestCancelled):
            self.hand_on(i, answer)
            return
        self.parts[i][pos] = answer.value
        self.warnings[i].extend(answer.warnings)
        self.missing[i] -= 1
        if not self.missing[i]:
            self.hand_on(i, Answer(tuple(self.parts[i]), tuple(self.warnings[i])))
