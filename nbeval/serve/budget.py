"""The judge calls a request would make, counted and bounded before it runs (issue 43, point 24).

The score limit (``max_scores``) does not bound the judge: ``pairwise`` on one test case answered
by 25 models is 25 scores and 600 judge calls (every pair, in both orders); one
``chunk_relevance`` row with 300 retrieved chunks is one score and 300 calls. So a request is also
refused when its planned judge calls pass ``max_judge_calls`` (:data:`DEFAULT_MAX_JUDGE_CALLS`
unless the server sets another: ``nbeval serve --max-judge-calls``).

The calls are counted as the dry run counts them (:func:`nbeval.engine.planned_requests`): each
row's scoring is walked with placeholder replies, nothing is called, cached calls count too (the
bound is on what a request may ask, whatever the cache holds). Calls that depend on the judge's
answers (one per claim a reply lists) are counted as the placeholder replies lead, so an estimate
for those evaluators. The walk stops soon after the limit is passed: a request far over it costs
no more to refuse than one just over. So each job also runs with :class:`BoundedResources`, which
answer at most ``max_judge_calls`` chat requests and the rest with an error (those rows say why),
whatever the estimate was.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from nbeval.errors import DataError, ResourceError
from nbeval.runtime import Answer, Resources

if TYPE_CHECKING:
    from nbeval.data.model import Row
    from nbeval.evaluators.base import Evaluator

__all__ = ["DEFAULT_MAX_JUDGE_CALLS", "BoundedResources", "check_judge_calls", "planned_judge_calls"]

#: The judge calls a request may plan unless the server sets another limit.
DEFAULT_MAX_JUDGE_CALLS = 10_000


def planned_judge_calls(
    planned: Iterable[tuple[Evaluator, list[Row]]], *, stop_after: int | None = None
) -> dict[str, int]:
    """Per evaluator name (judge evaluators only), the chat calls its rows would make.

    With ``stop_after``, counting stops once the total passes it: the counts are then a lower bound.
    """
    from nbeval.engine import planned_requests

    counts: dict[str, int] = {}
    total = 0
    for ev, rows in planned:
        if not ev.spec.needs_judge:
            continue
        counts[ev.name] = 0
        for _ in planned_requests(ev, rows):
            counts[ev.name] += 1
            total += 1
            if stop_after is not None and total > stop_after:
                return counts
    return counts


def check_judge_calls(planned: Iterable[tuple[Evaluator, list[Row]]], max_calls: int) -> None:
    """Refuse a request whose planned rows would make too many judge calls.

    Raises :class:`~nbeval.errors.DataError` when the rows ``planned`` per evaluator would make more
    than ``max_calls`` judge calls; the message gives the count per evaluator.
    """
    # counting on to twice the limit tells a request just over it from one far over, at bounded cost
    counts = planned_judge_calls(planned, stop_after=2 * max_calls)
    total = sum(counts.values())
    if total <= max_calls:
        return
    each = ", ".join(f"{name}: {n:,}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n)
    if total > 2 * max_calls:
        found = f"more than {2 * max_calls:,} judge calls (counting stopped there; so far {each})"
    else:
        found = f"{total:,} judge calls ({each})"
    msg = (
        f"the request would make {found}, over this server's limit of {max_calls:,} per request "
        "(--max-judge-calls); send fewer rows, fewer models per test case or fewer chunks per row"
    )
    raise DataError(msg)


class BoundedResources(Resources):
    """A run's resources that answer at most ``max_calls`` chat requests.

    These :class:`~nbeval.runtime.Resources` count chat requests (judge calls, cached ones included,
    as the plan counts them); each one past ``max_calls`` is answered with a
    :class:`~nbeval.errors.ResourceError` saying the request's budget is spent.
    """

    def __init__(self, max_calls: int, **options: Any) -> None:
        super().__init__(**options)
        self.max_calls = max_calls
        self.calls = 0
        """Chat requests let through so far."""
        self._lock = threading.Lock()  # rounds of one run may be answered from several threads

    def answer(
        self,
        requests: Sequence[Any],
        *,
        on_answer: Callable[[int, Answer], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> list[Answer]:
        """Answer ``requests`` as a run's resources do, within the budget of chat requests.

        Chat requests are let through while fewer than ``max_calls`` have been; each one past
        it is answered, without being asked, with a :class:`~nbeval.errors.ResourceError` saying the
        request's budget is spent (given to ``on_answer`` too). The answers come in the order of
        ``requests``.
        """
        from nbeval.request_kinds import Chat

        allowed: list[int] = []
        with self._lock:
            for i, r in enumerate(requests):
                if isinstance(r, Chat):
                    if self.calls >= self.max_calls:
                        continue
                    self.calls += 1
                allowed.append(i)
        if len(allowed) == len(requests):
            return super().answer(requests, on_answer=on_answer, cancel=cancel)

        def relay(j: int, answer: Answer) -> None:
            if on_answer is not None:
                on_answer(allowed[j], answer)

        got = super().answer([requests[i] for i in allowed], on_answer=relay, cancel=cancel)
        out: list[Answer | None] = [None] * len(requests)
        for j, i in enumerate(allowed):
            out[i] = got[j]
        msg = (
            f"not asked: this request's budget of {self.max_calls:,} judge calls is spent "
            "(the server's --max-judge-calls)"
        )
        for i, a in enumerate(out):
            if a is None:
                out[i] = refused = Answer(ResourceError(msg), ())
                if on_answer is not None:
                    on_answer(i, refused)
        return [a for a in out if a is not None]
