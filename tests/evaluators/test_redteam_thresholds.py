"""A threshold that is not a finite number is refused where it is given (issue 35, point 18).

``threshold=float("nan")`` used to be taken: every comparison with NaN is false, so a perfect
score failed (and an infinite threshold passed or failed everything). Now it is an
:class:`~nbeval.errors.EvaluatorError` naming the evaluator, the parameter and the metric, for
``nbeval.evaluator(...)``, a threshold per metric, an entry of the evaluator index and a plugin's own spec.
"""

from __future__ import annotations

import math

import pytest

import nbeval
from nbeval.errors import EvaluatorError
from nbeval.evaluators import index
from nbeval.evaluators.base import EvaluatorSpec, MetricSpec

NOT_FINITE = [pytest.param(math.nan, id="nan"), pytest.param(math.inf, id="inf"), pytest.param(-math.inf, id="-inf")]


@pytest.mark.parametrize("value", NOT_FINITE)
def test_a_threshold_that_is_not_finite_is_refused(value: float) -> None:
    with pytest.raises(EvaluatorError) as info:
        nbeval.evaluator("rouge", threshold=value)
    text = str(info.value)
    assert "evaluator 'rouge'" in text and "threshold" in text and "rouge_l" in text
    assert "finite number" in text and repr(value) in text


@pytest.mark.parametrize("value", NOT_FINITE)
def test_a_threshold_per_metric_that_is_not_finite_is_refused(value: float) -> None:
    with pytest.raises(EvaluatorError, match=r"evaluator 'rouge'.*threshold of metric 'rouge_2'.*finite number"):
        nbeval.evaluator("rouge", threshold={"rouge_1": 0.4, "rouge_2": value})


def test_a_numpy_nan_is_refused_and_a_numpy_number_taken() -> None:
    np = pytest.importorskip("numpy")
    with pytest.raises(EvaluatorError, match="finite number"):
        nbeval.evaluator("exact_match", threshold=np.float64("nan"))
    assert nbeval.evaluator("exact_match", threshold=np.float32(0.25)).thresholds["score"] == 0.25
    assert nbeval.evaluator("text_matching", threshold={"pass": np.int64(1)}).thresholds["pass"] == 1.0


@pytest.mark.parametrize("value", ["0.5", None, True])
def test_a_threshold_per_metric_must_be_a_number(value: object) -> None:
    with pytest.raises(EvaluatorError, match=r"evaluator 'rouge'.*threshold of metric 'rouge_l' must be a number"):
        nbeval.evaluator("rouge", threshold={"rouge_l": value})


def test_a_perfect_score_passes_a_finite_threshold() -> None:
    rows = [{"key": "k", "input": "q", "expected_output": "same words", "actual_output": "same words"}]
    result = nbeval.evaluate(rows, [nbeval.evaluator("rouge", threshold=1.0)], progress=False)
    assert result.scores.loc[result.scores["metric"] == "rouge_l", "passed"].tolist() == [True]


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_an_index_entry_with_a_threshold_that_is_not_finite_is_refused(value: float) -> None:
    spec = EvaluatorSpec(id="t_nan", family="test", kind="score", inputs=(), metrics=(MetricSpec("s", primary=True),))
    entry = index.spec_to_dict(spec)
    entry["metrics"][0]["threshold"] = value
    with pytest.raises(EvaluatorError, match=r"index entry 't_nan': metric 's': threshold must be a finite number"):
        index.spec_from_dict("t_nan", entry)


def test_a_plugin_metric_with_a_threshold_that_is_not_finite_is_refused() -> None:
    with pytest.raises(EvaluatorError, match=r"metric 's': threshold must be a finite number or None, got nan"):
        MetricSpec("s", threshold=math.nan)
    assert MetricSpec("s", threshold=None).threshold is None
