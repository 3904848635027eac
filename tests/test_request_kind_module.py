"""A new request kind is one module (issue 44): its request class, its handler keeping its own
state in the run's resources, and the registration at import. Here that module is written to a
temporary folder, with an evaluator that yields the kind, and run through ``nbeval.evaluate``:
nothing else in nbeval changes."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import nbeval
from nbeval.evaluators.registry import unregister
from nbeval.runtime import handlers

KIND_MODULE = '''
"""A toy request kind: count a text's words (whitespace-separated)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nbeval import EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.base import Evaluator
from nbeval.evaluators.registry import register
from nbeval.runtime import Request, RequestHandler, register_handler


@dataclass(frozen=True)
class CountWords(Request):
    text: str


class CountWordsHandler(RequestHandler):
    kind = CountWords

    def answer(self, resources: Any, items: Any, rnd: Any) -> None:
        counted = resources.state(CountWords)  # the handler's own, for this run: counts by text
        todo = [t for t in dict.fromkeys(r.text for _, r in items) if t not in counted]
        counted.setdefault("calls", []).append(todo)
        counted.update({t: len(t.split()) for t in todo})
        for i, r in items:
            rnd.answers[i] = counted[r.text]

    def usage(self, resources: Any) -> dict[str, Any]:
        return {"texts_counted": sum(len(c) for c in resources.state(CountWords).get("calls", []))}


register_handler(CountWordsHandler())


@register
class WordCount(Evaluator):
    spec = EvaluatorSpec(
        id="t_word_count",
        family="custom",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("words", primary=True),),
    )

    def score(self, row: Any) -> Any:
        first = yield CountWords(row.actual_output)
        again = yield CountWords(row.actual_output)  # a second round: answered from the run's state
        return Score({"words": float(first)}, rationale=f"{first}={again}")
'''


@pytest.fixture
def kind_module(tmp_path: Path) -> Iterator[ModuleType]:
    (tmp_path / "word_count_kind.py").write_text(textwrap.dedent(KIND_MODULE))
    before = dict(handlers._HANDLERS)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("word_count_kind")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("word_count_kind", None)
        unregister("t_word_count")
        handlers._HANDLERS.clear()
        handlers._HANDLERS.update(before)


def test_a_kind_in_one_module_is_answered_through_evaluate(kind_module: ModuleType, tmp_path: Path) -> None:
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".py"] == ["word_count_kind.py"]  # the whole kind
    outputs = ["one two three", "a b", "one two three", "solo", ""]
    records = [{"key": f"k{i}", "input": "q", "actual_output": text} for i, text in enumerate(outputs)]
    result = nbeval.evaluate(records, ["t_word_count"], progress=False)
    scores = result.scores.set_index("key")
    assert scores["value"].tolist() == [3.0, 2.0, 3.0, 1.0, 0.0]  # counted by hand
    assert scores["rationale"].tolist() == ["3=3", "2=2", "3=3", "1=1", "0=0"]
    assert result.meta["usage"]["texts_counted"] == 4  # the four distinct texts, each counted once
    assert scores["error"].isna().all()


def test_the_kinds_state_belongs_to_one_run(kind_module: ModuleType) -> None:
    from nbeval.runtime import Resources

    first, second = Resources(), Resources()
    ask = kind_module.CountWords
    assert [a.value for a in first.answer([ask("x y"), ask("x y")])] == [2, 2]
    assert first.state(ask)["calls"] == [["x y"]]
    assert second.state(ask) == {}  # another run starts with nothing
    assert [a.value for a in second.answer([ask("z")])] == [1]
    assert first.usage_totals() == {"texts_counted": 1} and second.usage_totals() == {"texts_counted": 1}
