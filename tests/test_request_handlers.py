"""A new request kind is one request class and one registered handler (issue 28): the engine
answers it in batch, the dry run stands in with the handler's placeholder, usage comes from the
handler, and a kind with no handler is that row's error, not the run's."""

from __future__ import annotations

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import nbeval
from nbeval import EvaluatorSpec, MetricSpec, Score
from nbeval.engine import Plan
from nbeval.evaluators.base import Evaluator
from nbeval.evaluators.registry import register, unregister
from nbeval.runtime import RequestHandler, Resources, Round, handlers


@dataclass(frozen=True)
class Shout:
    """A toy request: the text in capitals."""

    text: str


class ShoutHandler(RequestHandler):
    kind = Shout

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        self.batches.append([r.text for _, r in items])
        for i, r in items:
            rnd.answers[i] = r.text.upper()

    def placeholder(self, request: Any) -> Any:
        return "PLACEHOLDER"

    def usage(self, resources: Resources) -> dict[str, Any]:
        return {"shouts": sum(len(b) for b in self.batches)}


@register
class Loud(Evaluator):
    spec = EvaluatorSpec(
        id="t_loud",
        family="custom",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("loud", primary=True),),
    )

    def score(self, row: Any) -> Generator[Any, Any, Score]:
        shouted = yield Shout(row.actual_output)
        return Score({"loud": float(shouted == row.actual_output.upper())}, rationale=shouted)


@pytest.fixture
def shout() -> Iterator[ShoutHandler]:
    handler = ShoutHandler()
    before = dict(handlers._HANDLERS)
    handlers.register_handler(handler)
    yield handler
    handlers._HANDLERS.clear()
    handlers._HANDLERS.update(before)


@pytest.fixture(scope="module", autouse=True)
def _loud_unregistered_after() -> Iterator[None]:
    yield
    unregister("t_loud")


RECORDS = [{"key": f"k{i}", "input": "q", "actual_output": f"answer {i}"} for i in range(5)]


def test_a_registered_kind_is_answered_in_one_batch_per_round(shout: ShoutHandler) -> None:
    result = nbeval.evaluate(RECORDS, ["t_loud"], progress=False)
    scores = result.scores.set_index("key")
    assert scores["value"].tolist() == [1.0] * 5
    assert scores.loc["k3", "rationale"] == "ANSWER 3"
    assert shout.batches == [[f"answer {i}" for i in range(5)]]  # one call for the whole round
    assert result.meta["usage"]["shouts"] == 5  # usage comes from the kind's handler


def test_the_dry_run_answers_with_the_handlers_placeholder(shout: ShoutHandler) -> None:
    from nbeval.engine.dry_run import placeholder_answer

    assert placeholder_answer(Shout("x")) == "PLACEHOLDER"
    plan = nbeval.evaluate(RECORDS, ["t_loud"], dry_run=True, progress=False)
    assert isinstance(plan, Plan)
    assert plan.rows == {"t_loud": 5} and shout.batches == []  # nothing was answered for real


def test_a_kind_without_a_handler_errors_its_rows_not_the_run() -> None:
    result = nbeval.evaluate(RECORDS, ["t_loud"], progress=False)
    errors = result.scores["error"].tolist()
    assert len(errors) == 5 and all("no resource answers a Shout request" in e for e in errors)
