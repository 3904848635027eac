""" "best" only when the lead is significant; intervals in the summary and the HTML report."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from tests.stats.helpers import result_of

HIGH = ["0.9", "0.8", "0.95", "0.7", "0.85", "0.75"]
LOW = ["0.5", "0.45", "0.6", "0.2", "0.3", "0.55"]  # below HIGH on every case


def _p_wilcoxon() -> float:
    return float(sps.wilcoxon([float(v) for v in HIGH], [float(v) for v in LOW]).pvalue)


def test_a_significant_lead_is_called_best() -> None:
    ins = result_of({"A": HIGH, "B": LOW}).insights
    best = ins[ins.kind == "best_model"].iloc[0]
    assert _p_wilcoxon() == pytest.approx(2 / 64)  # six pairs all one way: 2 of 2**6 sign patterns
    assert best.model_key == "A" and bool(best.significant)
    assert best.message.startswith("best on st_score.s: A with ")
    assert f"Holm p = {_p_wilcoxon():.3f}" in best.message and "ahead of B" in best.message


def test_the_same_lead_among_more_comparisons_is_tied_within_noise() -> None:
    ins = result_of({"A": HIGH, "B": LOW}, ["st_score", "st_low"]).insights
    best = ins[ins.kind.isin(["best_model", "tied_models"])].set_index("evaluator")
    # two comparisons (A leads on s, B on err): Holm doubles the smallest p-value
    p_holm = multipletests([_p_wilcoxon(), _p_wilcoxon()], method="holm")[1]
    assert p_holm[0] > 0.05
    assert best.loc["st_score", "model_key"] == "A" and best.loc["st_low", "model_key"] == "B"
    for ev in ("st_score", "st_low"):
        assert not best.loc[ev, "significant"] and best.loc[ev, "kind"] == "tied_models"
        assert best.loc[ev, "message"].startswith(f"tied within noise on {ev}.")
        assert f"Holm p = {p_holm[0]:.3f}" in best.loc[ev, "message"]


def test_one_model_and_equal_aggregates() -> None:
    alone = result_of({"A": HIGH}).insights.iloc[0]
    assert alone.kind == "best_model" and alone.significant is None and "the only model" in alone.message
    equal = result_of({"A": ["0.5", "0.7"], "B": ["0.7", "0.5"]}).insights.iloc[0]
    assert (
        equal.kind == "tied_models"
        and not equal.significant
        and equal.message == "tied within noise on st_score.s: A, B all at 0.600"
    )


def test_summary_shows_intervals_and_whether_the_lead_is_real() -> None:
    res = result_of({"A": HIGH, "B": LOW})
    text = res.summary()
    assert "[lo, hi]: 95% intervals (bootstrap, wilson)" in text
    lo, hi = proportion_confint(3, 6, method="wilson")  # B's hit: 0.5, 0.6 and 0.55 reach 0.5
    assert f"0.500 (6/6) [{lo:.3f}, {hi:.3f}]" in text
    assert "== is the lead real? ==" in text and "best on st_score.s: A" in text


def test_html_report_shows_intervals_and_escapes_names() -> None:
    res = result_of({"<b>A</b>": HIGH, "B": LOW})
    html = res.to_html()
    assert "<b>A</b>" not in html and "&lt;b&gt;A&lt;/b&gt;" in html
    board = res.leaderboard("st_score", ci=0.95)
    lo, hi = board.loc["B", "s_lo"], board.loc["B", "s_hi"]
    assert f'<span class="ci">[{lo:.3f}, {hi:.3f}]</span>' in html
    assert "Wilson score interval of a share" in html and "bootstrap over test cases" in html
    assert np.isfinite([lo, hi]).all()


def test_html_report_shows_agreement_with_human_labels_when_there_are_some() -> None:
    res = result_of({"A": HIGH, "B": LOW})
    assert "Judge agreement" not in res.to_html()
    res.set_labels(
        [
            {"key": "c1", "model_key": "A", "evaluator": "st_score", "label": "pass"},
            {"key": "c2", "model_key": "B", "evaluator": "st_score", "label": "pass"},  # judge: fail (0.45)
            {"key": "c4", "model_key": "B", "evaluator": "st_score", "label": "fail"},
        ]
    )
    html = res.to_html()
    kappa = cohen_kappa_score(["pass", "pass", "fail"], ["pass", "fail", "fail"])
    assert "Judge agreement with human labels" in html
    assert f"<td class='num'>3</td><td class='num'>{kappa:.3f}</td><td class='num'>0.667</td>" in html
