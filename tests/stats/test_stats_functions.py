"""nbeval.results.statistics.stats against scipy, statsmodels and scikit-learn on the same data."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, roc_auc_score
from sklearn.metrics import roc_curve as sk_roc_curve
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint

from nbeval.results.statistics import stats


@pytest.mark.parametrize(("k", "n"), [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (7, 12), (55, 100), (1, 1000)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(k: int, n: int, level: float) -> None:
    lo, hi = proportion_confint(k, n, alpha=1 - level, method="wilson")
    assert stats.wilson_interval(k, n, level) == pytest.approx((lo, hi), abs=1e-12)


def test_wilson_of_no_rows_is_unknown_and_bad_counts_are_refused() -> None:
    assert all(math.isnan(v) for v in stats.wilson_interval(0, 0))
    with pytest.raises(ValueError, match="between 0 and n"):
        stats.wilson_interval(5, 3)
    with pytest.raises(ValueError, match="confidence level"):
        stats.wilson_interval(1, 3, level=95)


@pytest.mark.parametrize("n", [5, 20, 200])
def test_bootstrap_is_close_to_scipy_percentile_bootstrap(n: int) -> None:
    data = np.random.default_rng(n).gamma(2.0, 0.2, size=n)
    ref = sps.bootstrap(
        (data,), np.mean, method="percentile", n_resamples=20000, random_state=1, confidence_level=0.95
    ).confidence_interval
    lo, hi = stats.bootstrap_mean_interval(data)
    width = ref.high - ref.low
    # different resamples: the ends agree to a few percent of the width
    assert lo == pytest.approx(ref.low, abs=0.08 * width)
    assert hi == pytest.approx(ref.high, abs=0.08 * width)


def test_bootstrap_is_seeded_and_handles_degenerate_samples() -> None:
    data = [0.2, 0.9, 0.4, 0.4, 0.7]
    assert stats.bootstrap_mean_interval(data) == stats.bootstrap_mean_interval(data)
    assert all(math.isnan(v) for v in stats.bootstrap_mean_interval([]))
    assert all(math.isnan(v) for v in stats.bootstrap_mean_interval([float("nan")]))
    assert stats.bootstrap_mean_interval([0.3]) == (0.3, 0.3)
    assert stats.bootstrap_mean_interval([0.3, float("nan"), 0.3]) == pytest.approx((0.3, 0.3))


def test_bootstrap_and_wilson_cover_the_true_mean_about_as_often_as_promised() -> None:
    rng = np.random.default_rng(7)
    trials, true_mean = 300, 0.4  # beta(2, 3) has mean 0.4
    boot = sum(
        lo <= true_mean <= hi
        for lo, hi in (stats.bootstrap_mean_interval(rng.beta(2, 3, size=40), resamples=500) for _ in range(trials))
    )
    wilson = sum(
        lo <= 0.3 <= hi for lo, hi in (stats.wilson_interval(int(rng.binomial(30, 0.3)), 30) for _ in range(trials))
    )
    # 95% intervals: coverage within binomial noise of 0.95 (sd about 0.0126 for 300 trials)
    assert 0.90 <= boot / trials <= 0.99
    assert 0.90 <= wilson / trials <= 0.99


@pytest.mark.parametrize(
    ("b", "c"),
    [(0, 0), (0, 5), (5, 0), (3, 4), (1, 9), (12, 30), (25, 25), (480, 560), (4900, 5100), (5000, 5000), (3000, 3300)],
)
def test_mcnemar_exact_matches_statsmodels(b: int, c: int) -> None:
    ref = mcnemar(np.array([[10, b], [c, 7]]), exact=True).pvalue
    assert stats.mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("case", ["exact", "ties_small", "zeros_small", "ties_large", "large", "one_pair"])
def test_wilcoxon_matches_scipy(case: str) -> None:
    rng = np.random.default_rng(3)
    x = {
        "exact": rng.normal(size=12),
        "ties_small": np.array([0.1, 0.2, 0.2, 0.5, 0.9, 0.3, 0.3, 0.7]),
        "zeros_small": np.array([0.0, 0.4, 0.0, -0.2, 0.6, 0.8, 0.1, 0.9, -0.5, 0.3]),
        "ties_large": np.round(rng.normal(0.3, 1, size=40), 1),
        "large": rng.normal(0.2, 1, size=80),
        "one_pair": np.array([0.5]),
    }[case]
    y = np.zeros_like(x) if case in ("ties_small", "zeros_small", "ties_large") else rng.normal(size=x.size) * 0.5
    if case == "ties_small":
        y = np.array([0.0, 0.1, 0.0, 0.3, 0.4, 0.6, 0.0, 0.9])
    ref = sps.wilcoxon(x, y).pvalue
    assert stats.wilcoxon_signed_rank(x, y) == pytest.approx(ref, rel=1e-9)


def test_wilcoxon_when_all_pairs_tie_or_there_are_none() -> None:
    # every difference zero: no evidence of a difference, p = 1 as scipy has it
    with np.errstate(invalid="ignore", divide="ignore"):
        ref = sps.wilcoxon([0.5, 0.7, 0.1], [0.5, 0.7, 0.1]).pvalue
    assert stats.wilcoxon_signed_rank([0.5, 0.7, 0.1], [0.5, 0.7, 0.1]) == ref == 1.0
    assert math.isnan(stats.wilcoxon_signed_rank([], []))


@pytest.mark.parametrize("p", [[0.01, 0.04, 0.03, 0.2], [0.5], [0.001, 0.001, 0.9, 0.04, 0.02, 0.3]])
def test_holm_matches_statsmodels(p: list[float]) -> None:
    ref = multipletests(p, method="holm")[1]
    np.testing.assert_allclose(stats.holm(p), ref, rtol=1e-12)


def test_holm_ignores_unknown_p_values() -> None:
    out = stats.holm([0.01, float("nan"), 0.04])
    np.testing.assert_allclose(out[[0, 2]], multipletests([0.01, 0.04], method="holm")[1])
    assert math.isnan(out[1])
    assert stats.holm([]).size == 0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (["pass", "fail", "pass", "pass", "fail", "pass"], ["pass", "fail", "fail", "pass", "fail", "pass"]),
        (["a", "b", "c", "a", "b", "c", "a"], ["a", "b", "b", "a", "c", "c", "b"]),
        (["x", "x", "y", "y"], ["y", "y", "x", "x"]),
    ],
)
def test_cohen_kappa_matches_sklearn(a: list[str], b: list[str]) -> None:
    assert stats.cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-12)


def test_cohen_kappa_of_nothing_or_a_single_shared_label_is_unknown() -> None:
    assert math.isnan(stats.cohen_kappa([], []))
    assert math.isnan(stats.cohen_kappa(["pass"] * 3, ["pass"] * 3))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roc_curve_and_auc_match_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, size=30)
    score = np.round(rng.random(30) + 0.3 * truth, 1)  # rounded: tied scores
    fpr, tpr, thr = stats.roc_curve(truth, score)
    ref_fpr, ref_tpr, ref_thr = sk_roc_curve(truth, score, drop_intermediate=False)
    np.testing.assert_allclose(fpr, ref_fpr)
    np.testing.assert_allclose(tpr, ref_tpr)
    np.testing.assert_allclose(thr[1:], ref_thr[1:])
    assert stats.roc_auc(truth, score) == pytest.approx(roc_auc_score(truth, score), abs=1e-12)


def test_auc_needs_both_classes() -> None:
    assert math.isnan(stats.roc_auc([1, 1, 1], [0.2, 0.5, 0.9]))


def test_is_binary() -> None:
    assert stats.is_binary([0.0, 1.0, float("nan"), 1.0])
    assert not stats.is_binary([0.0, 0.5])
    assert not stats.is_binary([])
