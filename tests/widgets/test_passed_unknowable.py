"""A pass that is unknowable (no value, or a metric without a threshold) is neither a pass nor a
fail in every view of the kit, whether ``passed`` holds ``None`` (an object column, today) or
``<NA>`` (pandas' nullable boolean, which ``if x`` / ``x == True`` on arrays cannot take)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import nbeval
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register, unregister
from nbeval.widgets import case_view, charts, display, markup

RECORDS = [
    {"key": "a", "input": "q1", "actual_output": "four", "model_key": "m1"},
    {"key": "b", "input": "q2", "actual_output": "boom", "model_key": "m1"},
    {"key": "a", "input": "q1", "actual_output": "4", "model_key": "m2"},
    {"key": "b", "input": "q2", "actual_output": "boom", "model_key": "m2"},
]


class Unthresholded(Evaluator):
    """The answer's length, with no threshold; an answer 'boom' raises (no value)."""

    def score(self, row):
        if row.actual_output == "boom":
            raise ValueError("exploded")
        return Score({"length": float(len(row.actual_output))})


@pytest.fixture(scope="module")
def result() -> Iterator[nbeval.EvaluationResult]:
    spec = EvaluatorSpec(
        id="w_unthresholded",
        family="custom",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("length", "higher", lo=0.0, hi=100.0, threshold=None, primary=True),),
    )
    register(spec=spec)(Unthresholded)
    try:
        yield nbeval.evaluate([dict(r) for r in RECORDS], ["w_unthresholded", "exact_match"], progress=False)
    finally:
        unregister("w_unthresholded")


@pytest.fixture(params=["object", "boolean"])
def views_result(request: pytest.FixtureRequest, result: nbeval.EvaluationResult) -> nbeval.EvaluationResult:
    if request.param == "object":
        return result
    scores, aggregates = result.scores.copy(), result.aggregates.copy()
    scores["passed"] = scores["passed"].astype("boolean")
    aggregates["passed"] = aggregates["passed"].astype("boolean")
    return nbeval.EvaluationResult(scores, aggregates, result.metrics, result.dataset, meta=result.meta)


def _rows(spec: dict) -> list[dict]:
    return spec["datasets"][spec["data"]["name"]]


def test_unknowable_passes_are_neither_pass_nor_fail_in_every_view(views_result) -> None:
    res = views_result
    assert res.scores.loc[res.scores["evaluator"] == "w_unthresholded", "passed"].isna().all()
    outcomes = {
        (r["model"], r["outcome"]): r["count"] for r in _rows(charts.pass_fail_chart(res, "w_unthresholded").to_dict())
    }
    assert outcomes == {("m1", "no threshold"): 1, ("m1", "error"): 1, ("m2", "no threshold"): 1, ("m2", "error"): 1}
    spec = charts.leaderboard_chart(res, "w_unthresholded").to_dict()
    rows = [r for data in spec["datasets"].values() for r in data if "status" in r]
    status = {r["model"]: r["status"] for r in rows}
    assert status == {"m1": "no threshold", "m2": "no threshold"}
    cells = _rows(charts.heatmap(res, "w_unthresholded", max_cells=2).to_dict())  # only the hardest case
    assert {c["key"] for c in cells} == {"b"}  # the case every model errored on
    summary = markup.summary_html(res)
    assert "w_unthresholded" in summary and markup.PASS_BG not in summary.split("exact_match")[0]
    row = case_view.case_html(res, "a").split("w_unthresholded.length</th>")[1].split("</tr>")[0]
    assert "<span>4.000</span>" in row and "<span>1.000</span>" in row  # m1's 'four', m2's '4'
    assert "background" not in row  # untinted: neither pass nor fail
    assert "text/html" in display.result_mimebundle(res, widget=False)
