"""A score under a name that is not a metric errors its row (never NaN, never the run); one
default-threshold rule, applied where a metric is declared (in code) and kept by the generated index."""

from __future__ import annotations

import math

import pytest

import nbeval
from nbeval.data.model import Row
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score, default_threshold
from nbeval.evaluators.index import spec_from_dict, spec_to_dict
from nbeval.evaluators.registry import register, unregister
from nbeval.results.outcome import RowOutcome

ROWS = [
    {"key": "a", "input": "q", "actual_output": "typo"},
    {"key": "b", "input": "q", "actual_output": "fine"},
    {"key": "c", "input": "q", "actual_output": "fine too"},
]


@pytest.fixture
def typo_evaluator():
    spec = EvaluatorSpec(
        id="t_typo_key",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("ok", primary=True),),
    )

    @register(spec=spec)
    class Typo(Evaluator):
        def score(self, row):
            return Score({"okk" if row.actual_output == "typo" else "ok": 1.0}, rationale="looked")

    yield spec.id
    unregister(spec.id)


def test_an_unknown_key_errors_that_row_only(typo_evaluator: str) -> None:
    result = nbeval.evaluate(ROWS, [typo_evaluator])
    s = result.scores.set_index("key")
    error = s.loc["a", "error"]
    assert "'okk'" in error and "'ok'" in error and typo_evaluator in error
    assert s.loc["a", "value"] is None or math.isnan(s.loc["a", "value"])
    assert s.loc["b", "value"] == 1.0 and s.loc["c", "value"] == 1.0
    assert s.loc[["b", "c"], "error"].isna().all()


def test_an_unknown_key_in_a_generator_score_errors_that_row(typo_evaluator: str) -> None:
    spec = EvaluatorSpec(
        id="t_typo_gen",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("ok", primary=True), MetricSpec("other")),
    )

    @register(spec=spec)
    class TypoGen(Evaluator):
        def score(self, row):
            yield from ()
            return Score({"ok": 1.0, "othr": 0.0})

    try:
        result = nbeval.evaluate(ROWS[:1], ["t_typo_gen"])
    finally:
        unregister("t_typo_gen")
    errors = set(result.scores["error"])
    assert len(errors) == 1
    (error,) = errors
    assert "'othr'" in error and "'ok', 'other'" in error


def test_a_score_filed_later_is_checked_too(typo_evaluator: str) -> None:
    """The Dask client files a worker's answers by constructing the outcome with its score."""
    ev = nbeval.evaluator(typo_evaluator)
    out = RowOutcome(ev, Row(input="q", actual_output="x"), score=Score({"okk": 0.5}, error="earlier"))
    assert out.score is not None and out.score.values == {}
    assert "'okk'" in (out.score.error or "") and "earlier" in (out.score.error or "")
    good = RowOutcome(ev, Row(input="q", actual_output="x"), score=Score({"ok": 0.5}))
    assert good.score is not None and good.score.values == {"ok": 0.5} and good.score.error is None


def test_a_narrowed_bool_evaluator_still_scores_its_rows() -> None:
    """pii_leakage declares four bool metrics but scores with bool_score, which gives all five."""
    ev = nbeval.evaluator("pii_leakage")
    assert "parse_failures" not in [m.name for m in ev.spec.metrics]
    result = nbeval.evaluate(
        [
            {"input": "q1", "actual_output": "write to jane.doe@acmecorp.de or call"},
            {"input": "q2", "actual_output": "nothing here"},
        ],
        [ev],
    )
    assert result.scores["error"].isna().all()
    passed = result.scores[result.scores["metric"] == "pass"].set_index("key")["value"]
    assert sorted(passed) == [0.0, 1.0]


# ---------------------------------------------------------------------------------------------
# One default threshold


def _through_the_index(metric: MetricSpec) -> MetricSpec:
    spec = EvaluatorSpec(id="t", family="test", kind="score", inputs=(), metrics=(metric,))
    return spec_from_dict("t", spec_to_dict(spec)).metrics[0]


@pytest.mark.parametrize(
    ("lo", "hi", "expected"),
    [
        (0.0, 1.0, 0.5),
        (0.0, math.inf, None),
        (-math.inf, math.inf, None),
        (0.0, 5.0, None),
        (-1.0, 1.0, None),
    ],
)
def test_code_and_index_give_the_same_default(lo: float, hi: float, expected: float | None) -> None:
    in_code = MetricSpec("m", "lower", lo=lo, hi=hi)
    in_index = _through_the_index(in_code)
    assert in_code.threshold == in_index.threshold == default_threshold(lo, hi) == expected
    assert in_code == in_index


def test_a_given_threshold_wins_on_both_paths() -> None:
    in_code = MetricSpec("m", lo=0.0, hi=math.inf, threshold=3.0)
    in_index = _through_the_index(in_code)
    assert in_code.threshold == in_index.threshold == 3.0
    assert MetricSpec("m", threshold=None).threshold is None
    assert _through_the_index(MetricSpec("m", threshold=None)).threshold is None


def test_an_unbounded_metric_in_code_has_no_default_threshold() -> None:
    """It had 0.5, so any value above 0.5 of a lower-is-better count was a problem."""
    assert MetricSpec("perplexity", "lower", lo=0.0, hi=math.inf).threshold is None
    assert MetricSpec("share").threshold == 0.5
