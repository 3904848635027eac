"""EvaluationResult: leaderboards with n/N, problems, insights, lossless save/load, escaped HTML."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import nbeval
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register

XSS = '<script>alert(1)</script><img src=x onerror="alert(2)">'


@register(
    spec=EvaluatorSpec(
        id="t_value",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(
            MetricSpec("v", "higher", threshold=0.5, primary=True),
            MetricSpec("cost", "lower", lo=0, hi=float("inf"), threshold=2.0),
        ),
    )
)
class Value(Evaluator):
    """Reads the score from the answer: "0.7" scores 0.7; "x" cannot be scored."""

    def score(self, row):
        try:
            v = float(row.actual_output.split()[0])
        except ValueError:
            return Score({}, error="not a number", rationale=row.actual_output)
        return Score({"v": v, "cost": 10 * v}, rationale=row.actual_output, details={"raw": row.actual_output})


@register(
    spec=EvaluatorSpec(
        id="t_plain",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("v", "higher", threshold=None, primary=True),),
    )
)
class Plain(Evaluator):
    """Like t_value's ``v``, with no threshold: a value that neither passes nor fails."""

    def score(self, row):
        return Score({"v": float(row.actual_output.split()[0])})


def _result() -> nbeval.EvaluationResult:
    perturbed = {"relationships": [{"type": "perturbation_source", "target": "c1"}], "categories": ["perturbed"]}
    recs = [
        # model A: 0.9, 0.8, 0.1 (c3 fails), c4 perturbed from c1 at 0.2 (flip)
        {"key": "c1", "input": "q1", "actual_output": "0.9", "model_key": "A"},
        {"key": "c2", "input": "q2", "actual_output": "0.8", "model_key": "A"},
        {"key": "c3", "input": "q3", "actual_output": "0.1 " + XSS, "model_key": "A"},
        {"key": "c4", "input": "q1!", "actual_output": "0.2", "model_key": "A", **perturbed},
        # model B: only one of four rows measurable
        {"key": "c1", "input": "q1", "actual_output": "0.3", "model_key": "B"},
        {"key": "c2", "input": "q2", "actual_output": "x", "model_key": "B"},
        {"key": "c3", "input": "q3", "actual_output": None, "model_key": "B"},
        {"key": "c4", "input": "q1!", "actual_output": "0.1", "model_key": "B", **perturbed},
    ]
    return nbeval.evaluate(recs, ["t_value"], progress=False)


def test_leaderboard_shows_how_many_rows_each_aggregate_covers() -> None:
    board = _result().leaderboard("t_value")
    assert list(board.index) == ["A", "B"]  # higher is better: A (0.5) above B (0.2)
    assert board.loc["A", "v"] == pytest.approx((0.9 + 0.8 + 0.1 + 0.2) / 4)
    assert board.loc["B", "v"] == pytest.approx((0.3 + 0.1) / 2)
    assert (board.loc["A", "v_n"], board.loc["A", "N"]) == (4, 4)
    assert (board.loc["B", "v_n"], board.loc["B", "N"]) == (2, 4)


def test_leaderboard_sorts_by_direction_of_chosen_metric() -> None:
    board = _result().leaderboard("t_value", metric="cost")
    assert list(board.index) == ["B", "A"]  # lower cost first
    everything = _result().leaderboard()
    assert {"t_value.v", "t_value.v_n", "t_value.N", "t_value.cost"} <= set(everything.columns)


def test_problems_threshold_breaches_and_perturbation_flips() -> None:
    probs = _result().problems
    threshold = probs[probs.kind == "threshold"]
    assert list(threshold.model_key) == ["B"]  # B's 0.2 < 0.5; A's 0.5 is not below
    assert "measured on 2/4 rows" in threshold.message.iloc[0]
    flips = probs[probs.kind == "perturbation_flip"]
    # A: c1 0.9 passes, c4 0.2 fails -> flip. B: c1 0.3 fails, c4 0.1 fails -> no flip.
    assert list(zip(flips.model_key, flips.key, flips.source_key, strict=True)) == [("A", "c4", "c1")]
    assert flips.severity.iloc[0] == "high"


def test_insights_best_model_and_hardest_case() -> None:
    ins = _result().insights
    best = ins[ins.kind.isin(["best_model", "tied_models"])].iloc[0]
    assert best.model_key == "A" and best.value == pytest.approx(0.5)
    assert best.kind == ("best_model" if best.significant else "tied_models")
    hardest = ins[ins.kind == "hardest_case"].iloc[0]
    # c4 is failed by both A (0.2) and B (0.1); c1/c3 by one model each
    assert hardest.key == "c4" and hardest.value == 2.0


def test_save_and_load_lose_nothing(tmp_path: Path) -> None:
    res = _result()
    res.save(tmp_path / "run")
    back = nbeval.load_result(tmp_path / "run")
    for name in ("scores", "aggregates", "metrics"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(res, name))  # dtypes too
    assert back.dataset.to_records() == res.dataset.to_records()
    pd.testing.assert_frame_equal(back.leaderboard("t_value"), res.leaderboard("t_value"))
    pd.testing.assert_frame_equal(back.problems, res.problems)


def test_load_result_of_a_folder_without_one(tmp_path: Path) -> None:
    with pytest.raises(nbeval.DataError, match=r"result\.json is missing"):
        nbeval.load_result(tmp_path)


def test_html_report_escapes_model_text(tmp_path: Path) -> None:
    html = _result().to_html(tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text() == html
    assert "<script>" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", html)  # nothing fetched: self-contained
    for section in ("Insights", "Problems", "Leaderboards", "Scores", "Cases"):
        assert f"<h2>{section}</h2>" in html


def test_summary_and_mimebundle_are_escaped() -> None:
    res = _result()
    text = res.summary()
    assert "t_value (ranked on v)" in text and "(2/4)" in text
    bundle = res._repr_mimebundle_()
    assert "text/plain" in bundle
    assert "<script>" not in bundle.get("text/html", "")


# -- passed: pandas' nullable boolean, <NA> where a pass is unknowable ---------------------------


def test_passed_columns_are_nullable_boolean_with_na_where_unknowable(tmp_path: Path) -> None:
    res = _result()
    assert res.scores["passed"].dtype == "boolean" and res.aggregates["passed"].dtype == "boolean"
    passed = res.scores.set_index(["model_key", "key", "metric"])["passed"]
    assert passed[("A", "c1", "v")] == True  # noqa: E712 (a numpy bool, not the True singleton)
    assert passed[("A", "c3", "v")] == False  # noqa: E712
    assert passed[("B", "c2", "v")] is pd.NA  # "x" could not be scored: no value, no verdict
    assert passed[("B", "c3", "v")] is pd.NA  # skipped: no answer
    back = nbeval.load_result(res.save(tmp_path / "run"))
    assert back.scores["passed"].dtype == "boolean" and back.aggregates["passed"].dtype == "boolean"
    pd.testing.assert_series_equal(back.scores["passed"], res.scores["passed"])


def test_a_value_without_threshold_neither_passes_nor_fails_anywhere(tmp_path: Path) -> None:
    res = nbeval.evaluate(
        [
            {"key": "c1", "input": "q", "actual_output": "0.1", "model_key": "A"},
            {"key": "c2", "input": "q2", "actual_output": "0.9", "model_key": "A"},
        ],
        ["t_plain"],
        progress=False,
    )
    assert res.scores["passed"].isna().all() and res.aggregates["passed"].isna().all()
    assert res.scores["value"].notna().all()
    assert res.problems.empty and list(res.insights.kind) == ["best_model"]  # nothing fails
    html = res.to_html()
    assert "&lt;NA&gt;" not in html and 'class="pass"' not in html and 'class="fail"' not in html
    assert "t_plain (ranked on v)" in res.summary()
    back = nbeval.load_result(res.save(tmp_path / "run"))
    pd.testing.assert_frame_equal(back.aggregates, res.aggregates)


def test_report_marks_passes_and_fails_read_from_the_nullable_column() -> None:
    html = _result().to_html()
    board = html[html.index("<h2>Leaderboards</h2>") : html.index("<h2>Cases</h2>")]
    # v (threshold 0.5, higher): A's 0.5 passes, B's 0.2 fails; cost (threshold 2.0, lower):
    # A's 5.0 fails, B's 2.0 passes
    assert board.count('<span class="pass">pass</span>') == 2
    assert board.count('<span class="fail">fail</span>') == 2
    scores = html[html.index("<h2>Scores</h2>") :]
    assert "&lt;NA&gt;" not in scores and "<td>True</td>" in scores and "<td>False</td>" in scores


# -- unrated rows (trust, point 4) -------------------------------------------------------------

from nbeval.evaluators.base import bool_metric_specs, bool_score  # noqa: E402 (this section's own)


@register(
    spec=EvaluatorSpec(
        id="t_unrated", family="test", kind="bool", inputs=("actual_output",), metrics=bool_metric_specs()
    )
)
class Unrated(Evaluator):
    """Passes "ok", fails "bad"; "?" is an unreadable reply, "slow" a timed-out check."""

    def score(self, row):
        if row.actual_output in ("?", "slow"):
            label = "parse_failure" if row.actual_output == "?" else "timed_out"
            return bool_score(None, rationale=f"raw: {row.actual_output}", error="unreadable", unrated=label)
        return bool_score(row.actual_output == "ok")


def test_unrated_rows_are_their_own_problem_kind(tmp_path: Path) -> None:
    recs = [
        {"key": f"c{i}", "input": f"q{i}", "actual_output": a, "model_key": m}
        for m, answers in (
            ("A", ["ok", "?", "slow", "ok"]),
            ("B", ["?", "?", "?", "?"]),
            ("C", ["bad", "bad", "?", "ok"]),
        )
        for i, a in enumerate(answers)
    ]
    res = nbeval.evaluate(recs, ["t_unrated"], progress=False)
    board = res.leaderboard("t_unrated")
    # A: 2 of 2 rated rows pass; B: nothing rated; C: 1 of 3 rated rows passes (below 0.5)
    assert (board.loc["A", "pass"], board.loc["A", "pass_n"], board.loc["A", "N"]) == (1.0, 2, 4)
    assert pd.isna(board.loc["B", "pass"]) and board.loc["B", "pass_n"] == 0
    assert board.loc["C", "pass"] == pytest.approx(1 / 3) and board.loc["C", "pass_n"] == 3
    assert board.loc["B", "parse_failures"] == 1.0 and board.loc["A", "parse_failures"] == 0.5
    probs = res.problems
    assert sorted(zip(probs.kind, probs.model_key, strict=True)) == [
        ("threshold", "C"),
        ("unmeasured", "B"),
        ("unrated", "A"),
        ("unrated", "B"),
        ("unrated", "C"),
    ]
    assert (
        probs[probs.kind == "unmeasured"]["message"].iloc[0]
        == "B: t_unrated: nothing measured (0 of 4 rows: 4 could not be rated)"
    )  # B was rated on no row
    unrated = probs[probs.kind == "unrated"].set_index("model_key")
    assert unrated.loc["A", "message"] == (
        "A: t_unrated: 2 of 4 rows could not be rated (1: the judge's reply could not be parsed; each raw reply "
        "is kept as the row's rationale; 1: a regular-expression search timed out; simplify the pattern "
        "(catastrophic backtracking?))"
    )
    assert list(unrated["severity"]) == ["low", "high", "low"] and list(unrated["value"]) == [2, 4, 1]
    assert "measured on 3/4 rows" in probs[probs.kind == "threshold"]["message"].iloc[0]
    back = nbeval.load_result(res.save(tmp_path / "run"))
    pd.testing.assert_frame_equal(back.problems, res.problems)


def test_a_lead_between_models_with_no_test_case_in_common_says_so() -> None:
    rows = [
        {"key": "k1", "model_key": "a", "input": "q1", "expected_output": "x", "actual_output": "x"},
        {"key": "k2", "model_key": "b", "input": "q2", "expected_output": "x", "actual_output": "y"},
    ]
    res = nbeval.evaluate(rows, ["exact_match"], progress=False)
    lead = res.insights[res.insights["kind"].isin(["best_model", "tied_models"])]["message"].iloc[0]
    # a mean of rows all the same: what is missing is a case both answered, not a kind of aggregate
    assert "no test case in common" in lead and "not a mean" not in lead
