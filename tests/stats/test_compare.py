"""result.compare: paired on test cases, McNemar / Wilcoxon, bootstrap interval, Holm."""

from __future__ import annotations

import copy
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from tests.stats.helpers import demo_result, result_of

A = ["0.9", "0.8", "0.7", "0.95", "0.6", "0.85", "0.4", "0.75", "x", "0.9", "0.3", "0.88"]
B = ["0.5", "0.55", "0.72", "0.3", "0.2", "0.6", "0.45", "0.1", "0.5", None, "0.2", "0.35"]


def _pairs() -> tuple[np.ndarray, np.ndarray]:
    """The pairs where both A and B have a value, by hand: c9 (A unscorable) and c10 (B skipped) drop out."""
    keep = [(a, b) for a, b in zip(A, B, strict=True) if a != "x" and b is not None]
    return np.array([float(a) for a, _ in keep]), np.array([float(b) for _, b in keep])


def test_scores_are_compared_with_wilcoxon_and_shares_with_exact_mcnemar() -> None:
    table = result_of({"A": A, "B": B}).compare("A", "B")
    assert list(table.columns) == [
        "evaluator",
        "metric",
        "mean_a",
        "mean_b",
        "diff",
        "diff_lo",
        "diff_hi",
        "n",
        "test",
        "p_value",
        "p_holm",
        "significant",
    ]
    x, y = _pairs()
    s = table.set_index("metric").loc["s"]
    assert (s["evaluator"], s["n"], s["test"]) == ("st_score", 10, "wilcoxon")
    assert s["mean_a"] == pytest.approx(x.mean()) and s["mean_b"] == pytest.approx(y.mean())
    assert s["diff"] == pytest.approx(x.mean() - y.mean())
    assert s["p_value"] == pytest.approx(sps.wilcoxon(x, y).pvalue, rel=1e-9)
    ref = sps.bootstrap((x - y,), np.mean, method="percentile", n_resamples=20000, random_state=0).confidence_interval
    width = ref.high - ref.low
    assert s["diff_lo"] == pytest.approx(ref.low, abs=0.1 * width)
    assert s["diff_hi"] == pytest.approx(ref.high, abs=0.1 * width)
    hit = table.set_index("metric").loc["hit"]
    xa, yb = (x >= 0.5).astype(int), (y >= 0.5).astype(int)
    contingency = np.array(
        [
            [np.sum((xa == 1) & (yb == 1)), np.sum((xa == 1) & (yb == 0))],
            [np.sum((xa == 0) & (yb == 1)), np.sum((xa == 0) & (yb == 0))],
        ]
    )
    assert hit["test"] == "mcnemar-exact"
    assert hit["p_value"] == pytest.approx(mcnemar(contingency, exact=True).pvalue, rel=1e-12)
    np.testing.assert_allclose(table["p_holm"], multipletests(table["p_value"], method="holm")[1])
    assert table.attrs["alpha"] == 0.05
    assert table["significant"].tolist() == (table["p_holm"] < 0.05).tolist()


def test_holm_runs_over_every_row_of_the_table() -> None:
    table = demo_result().compare("gpt-4o-mini", "tiny-rag")
    tested = table[table["p_value"].notna()]
    np.testing.assert_allclose(tested["p_holm"], multipletests(tested["p_value"], method="holm")[1])
    # rouge's rouge_1, rouge_2, rouge_l and rouge_lsum are scores; the others 0/1
    assert tested["test"].tolist() == ["mcnemar-exact", "wilcoxon", "wilcoxon", "wilcoxon", "wilcoxon", "mcnemar-exact"]
    f1 = table.set_index("metric").loc["f1"]  # a macro F1 is not compared row by row
    assert f1["test"] == "none" and math.isnan(f1["p_value"]) and not f1["significant"]
    aggs = demo_result().aggregates.set_index(["model_key", "metric"])["value"]
    assert f1["diff"] == pytest.approx(aggs[("gpt-4o-mini", "f1")] - aggs[("tiny-rag", "f1")])


def test_alpha_decides_significance() -> None:
    res = result_of({"A": A, "B": B})
    strict = res.compare("A", "B", "st_score", alpha=1e-6)
    assert not strict["significant"].any() and strict.attrs["alpha"] == 1e-6
    loose = res.compare("A", "B", "st_score", alpha=0.5)
    assert loose["significant"].tolist() == (loose["p_holm"] < 0.5).tolist()
    with pytest.raises(ValueError, match="alpha"):
        res.compare("A", "B", alpha=5)


def test_identical_models_all_ties_and_no_pairs() -> None:
    res = result_of({"A": ["0.5", "0.7", "x"], "B": ["0.5", "0.7", "0.1"], "C": ["x", "x", "x"]})
    same = res.compare("A", "B").set_index("metric")
    # every paired difference is zero: no evidence, p = 1 (scipy and statsmodels agree)
    with np.errstate(invalid="ignore", divide="ignore"):
        assert same.loc["s", "p_value"] == sps.wilcoxon([0.5, 0.7], [0.5, 0.7]).pvalue == 1.0
    assert same.loc["hit", "p_value"] == mcnemar(np.array([[1, 0], [0, 1]]), exact=True).pvalue == 1.0
    assert (same.loc["s", "diff"], same.loc["s", "n"]) == (0.0, 2)
    none = res.compare("A", "C").set_index("metric")
    assert (none["n"] == 0).all() and none["p_value"].isna().all() and (none["test"] == "none").all()
    assert not none["significant"].any()


def test_unknown_models_and_evaluators_are_named() -> None:
    res = result_of({"A": ["0.5", "0.7"]})
    with pytest.raises(KeyError, match="no model 'B'"):
        res.compare("A", "B")
    with pytest.raises(KeyError, match="no evaluator 'rouge'"):
        res.compare("A", "A", "rouge")


def test_categorical_key_columns_give_the_same_statistics() -> None:
    """The long table may hold its keys as pandas categoricals: nothing may change."""
    res = demo_result()
    cat = copy.copy(res)
    cat.scores = res.scores.astype({c: "category" for c in ["key", "model_key", "evaluator", "metric", "label"]})
    cat.aggregates = res.aggregates.astype({c: "category" for c in ["model_key", "evaluator", "metric"]})
    pd.testing.assert_frame_equal(cat.compare("gpt-4o-mini", "tiny-rag"), res.compare("gpt-4o-mini", "tiny-rag"))
    pd.testing.assert_frame_equal(cat.leaderboard(ci=0.95), res.leaderboard(ci=0.95), check_index_type=False)
    assert cat.insights["message"].tolist() == res.insights["message"].tolist()
    assert cat.summary() == res.summary()
