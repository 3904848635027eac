"""result.leaderboard(ci=...): Wilson for shares, seeded bootstrap for scores, none otherwise."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from tests.stats.helpers import demo_result, result_of


def _rows(result, evaluator: str, metric: str, model: str) -> np.ndarray:
    s = result.scores
    part = s[(s.evaluator == evaluator) & (s.metric == metric) & (s.model_key == model) & s.value.notna()]
    return part["value"].to_numpy(dtype=float)


def test_shares_get_wilson_intervals_as_statsmodels_computes_them() -> None:
    res = demo_result()
    board = res.leaderboard("exact_match", ci=0.95)
    assert list(board.columns[board.columns.get_loc("score") :][:4]) == ["score", "score_lo", "score_hi", "score_n"]
    assert board.attrs["ci"] == {"level": 0.95, "method": {"score": "wilson"}}
    for model in res.model_keys:
        values = _rows(res, "exact_match", "score", model)
        lo, hi = proportion_confint(int(values.sum()), values.size, alpha=0.05, method="wilson")
        assert board.loc[model, "score_lo"] == pytest.approx(lo, abs=1e-12)
        assert board.loc[model, "score_hi"] == pytest.approx(hi, abs=1e-12)
        assert board.loc[model, "score_lo"] <= board.loc[model, "score"] <= board.loc[model, "score_hi"]


def test_scores_get_a_seeded_bootstrap_close_to_scipys() -> None:
    res = demo_result()
    board = res.leaderboard("rouge", ci=0.9)
    assert board.attrs["ci"]["method"]["rouge_l"] == "bootstrap"
    assert board.attrs["ci"]["level"] == 0.9
    for model in res.model_keys:
        values = _rows(res, "rouge", "rouge_l", model)
        ref = sps.bootstrap(
            (values,), np.mean, method="percentile", confidence_level=0.9, n_resamples=20000, random_state=0
        ).confidence_interval
        width = ref.high - ref.low
        assert board.loc[model, "rouge_l_lo"] == pytest.approx(ref.low, abs=0.1 * width)
        assert board.loc[model, "rouge_l_hi"] == pytest.approx(ref.high, abs=0.1 * width)
    again = res.leaderboard("rouge", ci=0.9)
    assert again["rouge_l_lo"].tolist() == board["rouge_l_lo"].tolist()  # seeded: the same every time


def test_an_aggregate_that_is_not_a_mean_of_rows_gets_no_interval() -> None:
    board = demo_result().leaderboard("classification", ci=0.95)
    methods = board.attrs["ci"]["method"]
    assert methods["accuracy"] == "wilson"  # accuracy is the share of correct rows
    assert methods["f1"] == "none"  # macro F1 is computed over all rows at once
    assert board["f1_lo"].isna().all() and board["f1_hi"].isna().all()
    assert board["f1"].notna().all()


def test_all_evaluators_at_once_and_without_ci() -> None:
    res = demo_result()
    board = res.leaderboard(ci=0.95)
    assert {"rouge.rouge_l_lo", "exact_match.score_hi", "classification.f1_lo"} <= set(board.columns)
    assert board.attrs["ci"]["method"]["exact_match.score"] == "wilson"
    plain = res.leaderboard("rouge")
    assert not any(c.endswith(("_lo", "_hi")) for c in plain.columns) and "ci" not in plain.attrs


def test_unmeasured_models_and_bad_levels() -> None:
    # B: one row cannot be scored, one skipped; C: nothing measurable
    res = result_of({"A": ["0.9", "0.2", "0.7"], "B": ["0.4", "x", None], "C": ["x", "x", "x"]})
    board = res.leaderboard("st_score", ci=0.95)
    assert board.attrs["ci"]["method"] == {"s": "bootstrap", "hit": "wilson"}
    assert (board.loc["B", "s_lo"], board.loc["B", "s_hi"]) == (0.4, 0.4)  # one value: nothing to vary
    lo, hi = proportion_confint(0, 1, method="wilson")
    assert board.loc["B", "hit_lo"] == pytest.approx(lo) and board.loc["B", "hit_hi"] == pytest.approx(hi)
    assert math.isnan(board.loc["C", "s_lo"]) and math.isnan(board.loc["C", "hit_hi"])
    assert board.loc["C", "s_n"] == 0
    for bad in (95, 0, 1.0, -0.5):
        with pytest.raises(ValueError, match="confidence level"):
            res.leaderboard("st_score", ci=bad)
