"""nbeval.results.statistics.jury_agreement against krippendorff, scikit-learn, statsmodels and published examples."""

from __future__ import annotations

import math
from itertools import combinations
from typing import Literal

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from nbeval.results.statistics import jury_agreement as ja
from nbeval.results.statistics.jury_agreement import (
    JuryAgreement,
    alpha_interval,
    cohen_kappa_pairs,
    disagreement,
    fleiss_kappa,
    jury_agreement_of,
    krippendorff_alpha,
)

NAN = math.nan
Level = Literal["nominal", "interval"]

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers (columns here)
# x 12 units, with missing data. Published: nominal alpha = 0.743 (exactly 113/152), interval 0.849.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T

# Wikipedia's computational example (Krippendorff's alpha): 3 coders x 15 units, nominal alpha 0.691.
WIKIPEDIA_ALPHA = np.array(
    [
        [NAN, NAN, NAN, NAN, NAN, 3, 4, 1, 2, 1, 1, 3, 3, NAN, 3],
        [1, NAN, 2, 1, 3, 3, 4, 3, NAN, NAN, NAN, NAN, NAN, NAN, NAN],
        [NAN, NAN, 2, 1, 3, 4, 4, NAN, 2, 1, 1, 3, 3, NAN, 4],
    ]
).T

# Wikipedia's worked example of Fleiss' kappa: 10 subjects, 14 raters, 5 categories; each row
# counts the raters per category. Published: P-bar 0.378, P-bar_e 0.213, kappa 0.210 (0.2099).
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _random_jury(seed: int, units: int = 60, jurors: int = 4, categories: int = 3, missing: float = 0.2) -> np.ndarray:
    """Random verdicts (0..categories-1) where juror 1 copies juror 0 half the time, with NaNs."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, categories, size=(units, jurors)).astype(float)
    copy = rng.random(units) < 0.5
    values[copy, 1] = values[copy, 0]
    values[rng.random(values.shape) < missing] = NAN
    return values


def _random_scores(seed: int, units: int = 60, jurors: int = 4, missing: float = 0.2) -> np.ndarray:
    """Random scores sharing a per-unit signal, with NaNs."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(units, 1)) + 0.8 * rng.normal(size=(units, jurors))
    values[rng.random(values.shape) < missing] = NAN
    return values


# --- Krippendorff's alpha ---------------------------------------------------------------------


def test_alpha_reproduces_krippendorffs_published_example() -> None:
    assert krippendorff_alpha(KRIPPENDORFF_2011, "nominal") == pytest.approx(113 / 152, abs=1e-12)
    assert round(krippendorff_alpha(KRIPPENDORFF_2011, "nominal"), 3) == 0.743
    assert round(krippendorff_alpha(KRIPPENDORFF_2011, "interval"), 3) == 0.849


def test_alpha_reproduces_the_wikipedia_example() -> None:
    assert round(krippendorff_alpha(WIKIPEDIA_ALPHA, "nominal"), 3) == 0.691
    expected = krippendorff.alpha(reliability_data=WIKIPEDIA_ALPHA.T, level_of_measurement="interval")
    assert krippendorff_alpha(WIKIPEDIA_ALPHA, "interval") == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_alpha_matches_the_krippendorff_package(seed: int, level: Level) -> None:
    values = _random_jury(seed, jurors=3 + seed % 3) if level == "nominal" else _random_scores(seed)
    expected = krippendorff.alpha(reliability_data=values.T, level_of_measurement=level)
    assert krippendorff_alpha(values, level) == pytest.approx(expected, abs=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_integer_scores_at_interval_level_match_the_package(seed: int) -> None:
    values = _random_jury(seed, categories=5, missing=0.3)
    expected = krippendorff.alpha(reliability_data=values.T, level_of_measurement="interval")
    assert krippendorff_alpha(values, "interval") == pytest.approx(expected, abs=1e-10)


def test_alpha_leaves_out_units_with_one_value() -> None:
    lone = np.array([[1.0, NAN, NAN, NAN], [NAN, 7.0, NAN, NAN]])
    with_lone = np.vstack([KRIPPENDORFF_2011, lone])
    for level in ("nominal", "interval"):
        assert krippendorff_alpha(with_lone, level) == pytest.approx(krippendorff_alpha(KRIPPENDORFF_2011, level))


def test_many_categories_take_the_sparse_path_with_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    values = _random_jury(3, units=40, categories=12)
    dense = krippendorff_alpha(values, "nominal")
    dense_interval = alpha_interval(values, "nominal", n_boot=50, seed=1)
    monkeypatch.setattr(ja, "_DENSE_CELLS", 0)
    assert krippendorff_alpha(values, "nominal") == pytest.approx(dense, abs=1e-12)
    assert alpha_interval(values, "nominal", n_boot=50, seed=1) == pytest.approx(dense_interval, abs=1e-12)


# --- degenerate cases -------------------------------------------------------------------------


def test_one_juror_is_not_a_jury() -> None:
    with pytest.raises(ValueError, match="at least two jurors"):
        krippendorff_alpha(np.ones((5, 1)), "nominal")
    with pytest.raises(ValueError, match="at least two jurors"):
        jury_agreement_of(np.ones((5, 1)), ["solo"], "nominal")


def test_bad_shapes_levels_names_and_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="matrix of shape"):
        krippendorff_alpha(np.ones(5), "nominal")
    with pytest.raises(ValueError, match="level of measurement"):
        krippendorff_alpha(np.ones((5, 2)), "ordinal")
    with pytest.raises(ValueError, match="juror names"):
        cohen_kappa_pairs(np.ones((5, 2)), ["a"])
    with pytest.raises(ValueError, match="finite"):
        krippendorff_alpha(np.array([[1.0, math.inf]]), "interval")
    with pytest.raises(ValueError, match="n_boot"):
        alpha_interval(KRIPPENDORFF_2011, "nominal", n_boot=-1)
    with pytest.raises(ValueError, match="confidence level"):
        alpha_interval(KRIPPENDORFF_2011, "nominal", confidence=95)


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_perfect_agreement_on_one_value_is_undefined_not_a_crash(level: Level) -> None:
    values = np.ones((6, 3))
    values[0, 2] = NAN
    assert math.isnan(krippendorff_alpha(values, level))
    assert all(math.isnan(v) for v in alpha_interval(values, level, n_boot=20))
    result = jury_agreement_of(values, ["a", "b", "c"], level, n_boot=20)
    assert math.isnan(result.alpha)
    assert result.alpha_note is not None
    assert "same" in result.alpha_note
    assert "undefined" in str(result)
    if level == "nominal":
        assert result.fleiss_kappa is not None
        assert math.isnan(result.fleiss_kappa)
        assert result.fleiss_units == 5
        assert all(math.isnan(p.kappa) for p in result.pairwise)


def test_perfect_agreement_with_variation_is_one() -> None:
    values = np.repeat(np.array([[0.0], [1.0], [2.0], [1.0]]), 3, axis=1)
    for level in ("nominal", "interval"):
        assert krippendorff_alpha(values, level) == pytest.approx(1.0)
    assert fleiss_kappa(values).kappa == pytest.approx(1.0)


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_all_missing_gives_nan_with_a_reason(level: Level) -> None:
    values = np.full((4, 3), NAN)
    result = jury_agreement_of(values, ["a", "b", "c"], level, n_boot=10)
    assert math.isnan(result.alpha)
    assert math.isnan(result.alpha_low)
    assert math.isnan(result.alpha_high)
    assert result.alpha_note is not None
    assert "two jurors" in result.alpha_note
    assert result.fleiss_kappa is None
    assert result.fleiss_units == 0
    assert result.missing == 12
    assert result.pairable_units == 0
    assert all(p.n == 0 and math.isnan(p.kappa) for p in result.pairwise)
    assert np.isnan(disagreement(values, level)).all()
    assert math.isnan(fleiss_kappa(values).kappa)
    assert fleiss_kappa(values).units == 0
    # and a jury with no rows at all
    assert math.isnan(krippendorff_alpha(np.empty((0, 3)), level))


# --- bootstrap interval -----------------------------------------------------------------------


@pytest.mark.parametrize("level", ["nominal", "interval"])
def test_bootstrap_interval_contains_the_estimate_and_is_reproducible(level: Level) -> None:
    values = _random_jury(11, units=200) if level == "nominal" else _random_scores(11, units=200)
    alpha = krippendorff_alpha(values, level)
    low, high = alpha_interval(values, level, n_boot=500, seed=7)
    assert low < alpha < high
    assert alpha_interval(values, level, n_boot=500, seed=7) == (low, high)
    assert alpha_interval(values, level, n_boot=500, seed=8) != (low, high)
    wider = alpha_interval(values, level, n_boot=500, seed=7, confidence=0.99)
    assert wider[0] <= low and high <= wider[1]


def test_bootstrap_matches_a_plain_loop_over_resamples() -> None:
    values = _random_jury(5, units=30)
    pairable = values[(~np.isnan(values)).sum(axis=1) >= 2]
    rng = np.random.default_rng(3)
    draws = rng.integers(0, pairable.shape[0], size=(200, pairable.shape[0]))
    loop = [krippendorff.alpha(reliability_data=pairable[d].T, level_of_measurement="nominal") for d in draws]
    expected = np.quantile(loop, [0.025, 0.975])
    assert alpha_interval(values, "nominal", n_boot=200, seed=3) == pytest.approx(tuple(expected), abs=1e-10)


def test_no_resamples_means_no_interval() -> None:
    assert all(math.isnan(v) for v in alpha_interval(KRIPPENDORFF_2011, "nominal", n_boot=0))


# --- Fleiss' kappa ----------------------------------------------------------------------------


def _raters_from_counts(counts: list[list[int]]) -> np.ndarray:
    return np.array([[float(c) for c, k in enumerate(row) for _ in range(k)] for row in counts])


def test_fleiss_kappa_reproduces_the_wikipedia_example() -> None:
    values = _raters_from_counts(FLEISS_COUNTS)
    assert values.shape == (10, 14)
    result = fleiss_kappa(values)
    assert result.units == 10
    assert round(result.kappa, 3) == 0.210
    assert result.kappa == pytest.approx(sm_fleiss_kappa(np.array(FLEISS_COUNTS), method="fleiss"))


@pytest.mark.parametrize("seed", range(6))
def test_fleiss_kappa_matches_statsmodels_on_fully_rated_units(seed: int) -> None:
    values = _random_jury(seed, units=80, jurors=5, categories=3 + seed % 2)
    full = values[~np.isnan(values).any(axis=1)]
    table, _ = aggregate_raters(full.astype(int))
    result = fleiss_kappa(values)
    assert result.units == full.shape[0]
    assert result.kappa == pytest.approx(sm_fleiss_kappa(table, method="fleiss"), abs=1e-12)


# --- Cohen's kappa per pair -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_pairwise_cohen_kappa_matches_scikit_learn(seed: int) -> None:
    values = _random_jury(seed, units=70, jurors=4)
    names = ["w", "x", "y", "z"]
    pairs = cohen_kappa_pairs(values, names)
    assert [(p.juror_a, p.juror_b) for p in pairs] == [(names[i], names[j]) for i, j in combinations(range(4), 2)]
    for pair, (i, j) in zip(pairs, combinations(range(4), 2), strict=True):
        both = ~np.isnan(values[:, i]) & ~np.isnan(values[:, j])
        assert pair.n == int(both.sum())
        assert pair.kappa == pytest.approx(cohen_kappa_score(values[both, i], values[both, j]), abs=1e-12)


def test_pairwise_kappa_without_shared_units_is_nan() -> None:
    values = np.array([[1.0, NAN, 1.0], [NAN, 0.0, 0.0], [1.0, NAN, 0.0]])
    pairs = cohen_kappa_pairs(values, ["a", "b", "c"])
    assert pairs[0].n == 0
    assert math.isnan(pairs[0].kappa)


# --- disagreement -----------------------------------------------------------------------------


def test_disagreement_by_hand() -> None:
    values = np.array(
        [
            [1.0, 1.0, 1.0],  # all agree
            [1.0, 0.0, 1.0],  # pairs ab, ac, bc: two of three differ
            [0.0, 1.0, NAN],  # one pair, differs
            [2.0, NAN, NAN],  # a single value
            [0.0, 1.0, 2.0],  # all differ
        ]
    )
    nominal = disagreement(values, "nominal")
    np.testing.assert_allclose(nominal[[0, 1, 2, 4]], [0.0, 2 / 3, 1.0, 1.0])
    assert math.isnan(nominal[3])
    interval = disagreement(values, "interval")
    # population standard deviations: {1,1,1} -> 0; {1,0,1} -> sqrt(2/9); {0,1} -> 0.5; {0,1,2} -> sqrt(2/3)
    np.testing.assert_allclose(interval[[0, 1, 2, 4]], [0.0, math.sqrt(2 / 9), 0.5, math.sqrt(2 / 3)])
    assert math.isnan(interval[3])


# --- the whole jury ---------------------------------------------------------------------------


def test_jury_agreement_of_verdicts() -> None:
    values = _random_jury(2, units=120, jurors=3)
    result = jury_agreement_of(values, ["gpt", "claude", "llama"], "nominal", n_boot=200, seed=1)
    assert isinstance(result, JuryAgreement)
    assert result.alpha == pytest.approx(krippendorff_alpha(values, "nominal"))
    assert (result.alpha_low, result.alpha_high) == alpha_interval(values, "nominal", n_boot=200, seed=1)
    assert result.level == "nominal"
    assert result.units == 120
    assert result.jurors == ("gpt", "claude", "llama")
    assert result.missing == int(np.isnan(values).sum())
    assert result.pairable_units == int(((~np.isnan(values)).sum(axis=1) >= 2).sum())
    assert result.fleiss_kappa == pytest.approx(fleiss_kappa(values).kappa)
    assert result.fleiss_units == fleiss_kappa(values).units
    assert list(result.pairwise) == cohen_kappa_pairs(values, ["gpt", "claude", "llama"])
    assert result.alpha_note is None
    frame = result.to_frame()
    assert list(frame.columns) == ["juror_a", "juror_b", "kappa", "n"]
    assert len(frame) == 3
    text = str(result)
    assert "Krippendorff's alpha (verdicts)" in text
    assert "Fleiss' kappa" in text
    assert "Cohen's kappa" in text
    assert "gpt" in text
    with pytest.raises(AttributeError):
        result.alpha = 0.0  # type: ignore[misc]


def test_jury_agreement_of_scores() -> None:
    values = _random_scores(4, units=90, jurors=3)
    result = jury_agreement_of(values, ["a", "b", "c"], "interval", n_boot=100)
    assert result.fleiss_kappa is None
    assert result.pairwise_statistic == "alpha"
    assert list(result.to_frame().columns) == ["juror_a", "juror_b", "alpha", "n"]
    for pair, (i, j) in zip(result.pairwise, combinations(range(3), 2), strict=True):
        two = values[:, [i, j]]
        assert pair.kappa == pytest.approx(krippendorff.alpha(reliability_data=two.T, level_of_measurement="interval"))
        assert pair.n == int((~np.isnan(two)).all(axis=1).sum())
    assert "Fleiss" not in str(result)
    assert "alpha (scores)" in str(result)
