"""EvaluationResult.robustness(): flip rates of perturbed cases against their originals, checked
against values computed by hand on a small handmade dataset, and on the shipped demo lab."""

from __future__ import annotations

import pandas as pd
import pytest

import nbeval
from nbeval.data.fields import DataWarning
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register
from nbeval.results.statistics.robustness import ROBUSTNESS_COLUMNS, UNKNOWN, parse_perturbed_by


@register(
    spec=EvaluatorSpec(
        id="t_robust",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(
            MetricSpec("v", "higher", threshold=0.5, primary=True),
            MetricSpec("cost", "lower", lo=0, hi=float("inf"), threshold=2.0),
            MetricSpec("raw", "higher", threshold=None),
        ),
    )
)
class Robust(Evaluator):
    """Reads ``v`` from the answer ("0.7" scores 0.7; "x" cannot be scored); ``cost`` is ``10 * v``
    (lower is better, passes at <= 2, i.e. v <= 0.2); ``raw`` is ``v`` with no threshold."""

    def score(self, row):
        try:
            v = float(row.actual_output)
        except ValueError:
            return Score({}, error="not a number")
        return Score({"v": v, "cost": 10 * v, "raw": v})


def _perturbed(source: str, *categories: str) -> dict:
    return {"relationships": [{"type": "perturbation_source", "target": source}], "categories": list(categories)}


#: key -> (how it was made, answer of model A, answer of model B); v passes at >= 0.5.
CASES: dict[str, tuple[dict, str, str]] = {
    "o1": ({}, "0.9", "0.4"),
    "o2": ({}, "0.3", "0.1"),
    "o3": ({}, "0.6", "x"),
    # A: 0.9 pass -> 0.2 fail (flip down, -0.7)    B: 0.4 fail -> 0.45 fail (+0.05)
    "p1a": (_perturbed("o1", "geo", "perturbed_by:Typos:medium"), "0.2", "0.45"),
    # A: 0.3 fail -> 0.1 fail (-0.2)                B: 0.1 fail -> 0.7 pass (flip up, +0.6)
    "p1c": (_perturbed("o2", "perturbed_by:Typos:medium"), "0.1", "0.7"),
    # A: 0.9 pass -> 0.7 pass (-0.2)                B: 0.4 fail -> 0.6 pass (flip up, +0.2)
    "p1b": (_perturbed("o1", "perturbed_by:Typos:high"), "0.7", "0.6"),
    # older data, no intensity. A: 0.3 fail -> 0.8 pass (flip up, +0.5)   B: 0.1 -> 0.0 (-0.1)
    "p2": (_perturbed("o2", "perturbed_by:Case"), "0.8", "0.0"),
    # no perturbed_by category. A: 0.9 pass -> 0.5 pass (-0.4)   B: 0.4 -> 0.4 (0.0)
    "p5": (_perturbed("o1", "perturbed"), "0.5", "0.4"),
    # no pair: A's perturbed case has no value; B's original (o3) has none
    "p3": (_perturbed("o3", "perturbed_by:Typos:low"), "x", "0.9"),
    # no pair: the original is not in the dataset
    "p4": (_perturbed("gone", "perturbed_by:Typos:low"), "0.1", "0.9"),
}


def _result() -> nbeval.EvaluationResult:
    recs = [
        {"key": key, "input": f"question {key}", "actual_output": answer, "model_key": model, **how}
        for model, i in (("A", 1), ("B", 2))
        for key, (how, *answers) in CASES.items()
        for answer in [answers[i - 1]]
    ]
    with pytest.warns(DataWarning, match="points at the key 'gone'"):  # p4's dangling link
        return nbeval.evaluate(recs, ["t_robust"], progress=False)


def _by_group(df: pd.DataFrame) -> dict[tuple[str, str, str], dict]:
    return {(r["model_key"], r["perturbator"], r["intensity"]): r for r in df.to_dict("records")}


# (model, perturbator, intensity) -> n, flips, flips_down, flip_rate, mean_delta; worked out above.
GOLDEN_V = {
    ("A", "Typos", "medium"): (2, 1, 1, 0.5, (-0.7 - 0.2) / 2),
    ("A", "Typos", "high"): (1, 0, 0, 0.0, -0.2),
    ("A", "Case", UNKNOWN): (1, 1, 0, 1.0, 0.5),
    ("A", UNKNOWN, UNKNOWN): (1, 0, 0, 0.0, -0.4),
    ("B", "Typos", "medium"): (2, 1, 0, 0.5, (0.05 + 0.6) / 2),
    ("B", "Typos", "high"): (1, 1, 0, 1.0, 0.2),
    ("B", "Case", UNKNOWN): (1, 0, 0, 0.0, -0.1),
    ("B", UNKNOWN, UNKNOWN): (1, 0, 0, 0.0, 0.0),
}


def _assert_golden(df: pd.DataFrame, golden: dict) -> None:
    got = _by_group(df)
    assert set(got) == set(golden)
    for group, (n, flips, down, rate, delta) in golden.items():
        row = got[group]
        assert (row["n"], row["flips"], row["flips_down"]) == (n, flips, down), group
        assert row["flip_rate"] == pytest.approx(rate), group
        assert row["mean_delta"] == pytest.approx(delta), group


def test_primary_metric_flip_rates_by_model_perturbator_and_intensity() -> None:
    rob = _result().robustness()
    assert list(rob.columns) == ROBUSTNESS_COLUMNS
    assert set(rob["evaluator"]) == {"t_robust"} and set(rob["metric"]) == {"v"}  # primary by default
    _assert_golden(rob, GOLDEN_V)
    assert list(rob["flip_rate"]) == sorted(rob["flip_rate"], reverse=True)  # worst first
    assert {(r.model_key, r.perturbator) for r in rob.head(2).itertuples()} == {("A", "Case"), ("B", "Typos")}
    assert rob["n"].dtype == "int64" and rob["flips"].dtype == "int64" and rob["flip_rate"].dtype == float


def test_mean_delta_is_oriented_so_that_negative_is_worse_on_a_lower_is_better_metric() -> None:
    # cost = 10 * v, lower is better, passes at <= 2 (v <= 0.2): delta = original - perturbed.
    rob = _result().robustness("t_robust", metric="cost")
    assert set(rob["metric"]) == {"cost"}
    _assert_golden(
        rob,
        {
            ("A", "Typos", "medium"): (2, 2, 0, 1.0, (7 + 2) / 2),  # 9 -> 2 and 3 -> 1: both fail -> pass
            ("A", "Typos", "high"): (1, 0, 0, 0.0, 2.0),  # 9 -> 7
            ("A", "Case", UNKNOWN): (1, 0, 0, 0.0, -5.0),  # 3 -> 8
            ("A", UNKNOWN, UNKNOWN): (1, 0, 0, 0.0, 4.0),  # 9 -> 5
            ("B", "Typos", "medium"): (2, 1, 1, 0.5, (-0.5 - 6) / 2),  # 4 -> 4.5; 1 (pass) -> 7 (fail)
            ("B", "Typos", "high"): (1, 0, 0, 0.0, -2.0),  # 4 -> 6
            ("B", "Case", UNKNOWN): (1, 0, 0, 0.0, 1.0),  # 1 -> 0, both pass
            ("B", UNKNOWN, UNKNOWN): (1, 0, 0, 0.0, 0.0),
        },
    )


def test_a_metric_without_threshold_counts_pairs_but_never_flips() -> None:
    rob = _result().robustness(metric="raw")
    golden = {g: (n, 0, 0, 0.0, delta) for g, (n, _, _, _, delta) in GOLDEN_V.items()}
    _assert_golden(rob, golden)


def test_flips_agree_with_the_perturbation_flip_problems() -> None:
    res = _result()
    flips = res.problems[res.problems.kind == "perturbation_flip"]
    assert sorted(zip(flips.model_key, flips.key, flips.severity, strict=True)) == [
        ("A", "p1a", "high"),
        ("A", "p2", "low"),
        ("B", "p1b", "low"),
        ("B", "p1c", "low"),
    ]
    assert res.robustness()["flips"].sum() == len(flips)
    assert res.robustness()["flips_down"].sum() == (flips.severity == "high").sum()


def test_unknown_evaluator_or_metric_is_a_clear_error() -> None:
    res = _result()
    with pytest.raises(KeyError, match="no evaluator 'nope'"):
        res.robustness("nope")
    with pytest.raises(KeyError, match="no metric 'nope'"):
        res.robustness("t_robust", metric="nope")


def test_no_perturbed_cases_gives_an_empty_table_with_the_columns() -> None:
    res = nbeval.evaluate([{"key": "a", "input": "q", "actual_output": "0.9"}], ["t_robust"], progress=False)
    rob = res.robustness()
    assert rob.empty and list(rob.columns) == ROBUSTNESS_COLUMNS
    assert rob["n"].dtype == "int64" and rob["flip_rate"].dtype == float


@pytest.mark.parametrize(
    ("categories", "expected"),
    [
        (["perturbed_by:TyposPerturbator:medium"], ("TyposPerturbator", "medium")),
        (["geo", "perturbed_by:TyposPerturbator"], ("TyposPerturbator", UNKNOWN)),
        (["perturbed_by:", "x"], (UNKNOWN, UNKNOWN)),
        (["perturbed_by:Case:"], ("Case", UNKNOWN)),
        (["perturbed"], (UNKNOWN, UNKNOWN)),
        ([], (UNKNOWN, UNKNOWN)),
        (["perturbed_by:A:low", "perturbed_by:B:high"], ("A", "low")),  # the first one counts
    ],
)
def test_parse_perturbed_by(categories: list[str], expected: tuple[str, str]) -> None:
    assert parse_perturbed_by(categories) == expected


def test_demo_lab() -> None:
    res = nbeval.evaluate(nbeval.demo_lab(), ["rouge", "text_matching"], progress=False)
    rob = res.robustness()
    # one perturbed case ("revenue-perturbed", lowercase and typos, high) per model and evaluator
    assert set(rob["evaluator"]) == {"rouge", "text_matching"} and set(rob["n"]) == {1}
    assert set(zip(rob["perturbator"], rob["intensity"], strict=True)) == {("lowercase_and_typos", "high")}
    worst = rob.iloc[0]
    assert (worst["evaluator"], worst["model_key"], worst["flips_down"], worst["flip_rate"]) == (
        "text_matching",
        "llama-3-8b",
        1,
        1.0,
    )
    assert worst["mean_delta"] == pytest.approx(-1.0)  # pass (1) -> fail (0)
    assert rob["flips"].sum() == (res.problems.kind == "perturbation_flip").sum()
    only = res.robustness("rouge")
    assert set(only["evaluator"]) == {"rouge"} and set(only["metric"]) == {"rouge_l"} and len(only) == 3
