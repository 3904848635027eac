"""Property-based tests (Hypothesis) of the per-model statistics: aggregates, leaderboards and the
functions of ``nbeval.results.statistics.stats`` (issue 43, "make the class of bug hard to write again").

Each statistic is invariant to the order of the rows and to renaming the models, stays within its
bounds (a mean between the values' least and greatest, a share or p-value in [0, 1], an interval
that holds its estimate) and is NaN (or no value) where nothing was measured. The expected values
are computed here independently (``statistics.fmean``, counts by hand), never by the code under test.
"""

from __future__ import annotations

import math
import random
import statistics
from typing import Any

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import nbeval
from nbeval.results.statistics import stats

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

VALUE = st.one_of(st.none(), st.floats(min_value=-1e6, max_value=1e6, allow_nan=False))
MODEL = st.text(alphabet="abcdefghij_-é", min_size=1, max_size=6)


@nbeval.scorer
def given_value(row: nbeval.Row) -> float | None:
    """The row's own value (``None``: nothing measured)."""
    value = row.extra.get("v")
    return None if value is None else float(value)


def _rows(values: dict[str, list[float | None]]) -> list[dict[str, Any]]:
    return [
        {"key": f"k{i}", "model_key": model, "input": f"q{i}", "actual_output": "a", "v": v}
        for model, vs in values.items()
        for i, v in enumerate(vs)
    ]


def _board(rows: list[dict[str, Any]]) -> Any:
    return nbeval.evaluate(rows, [given_value], progress=False, cache=False).leaderboard("given_value")


@st.composite
def model_values(draw: Any) -> dict[str, list[float | None]]:
    models = draw(st.lists(MODEL, min_size=1, max_size=3, unique=True))
    n = draw(st.integers(min_value=1, max_value=6))
    return {m: draw(st.lists(VALUE, min_size=n, max_size=n)) for m in models}


@settings(max_examples=25, deadline=None)
@given(values=model_values(), seed=st.randoms(use_true_random=False))
def test_leaderboard_is_the_mean_of_what_was_measured_whatever_the_order_and_names(
    values: dict[str, list[float | None]], seed: Any
) -> None:
    rows = _rows(values)
    board = _board(rows)
    shuffled = list(rows)
    seed.shuffle(shuffled)
    renamed = {m: f"renamed-{i}" for i, m in enumerate(values)}
    again = _board(shuffled)
    other = _board([{**r, "model_key": renamed[r["model_key"]]} for r in rows])
    for model, vs in values.items():
        measured = [v for v in vs if v is not None]
        for table, name in ((board, model), (again, model), (other, renamed[model])):
            got = table.loc[name, "given_value"]
            assert table.loc[name, "given_value_n"] == len(measured)
            assert table.loc[name, "N"] == len(vs)
            if not measured:  # nothing measured: no value, never 0
                assert got is None or math.isnan(got)
                continue
            assert got == pytest.approx(statistics.fmean(measured), rel=1e-9, abs=1e-9)
            assert min(measured) - 1e-9 <= got <= max(measured) + 1e-9


@settings(max_examples=200, deadline=None)
@given(n=st.integers(min_value=0, max_value=10_000), data=st.data(), level=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_interval_is_bounded_and_holds_the_share(n: int, data: Any, level: float) -> None:
    k = data.draw(st.integers(min_value=0, max_value=n))
    lo, hi = stats.wilson_interval(k, n, level)
    if n == 0:  # nothing measured
        assert math.isnan(lo) and math.isnan(hi)
        return
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    # the share of failures has the mirrored interval
    lo2, hi2 = stats.wilson_interval(n - k, n, level)
    assert lo2 == pytest.approx(1 - hi, abs=1e-12) and hi2 == pytest.approx(1 - lo, abs=1e-12)


FINITE = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(FINITE, min_size=1, max_size=30), seed=st.randoms(use_true_random=False))
@example(values=[0.0, 0.0, 1.0, 2.0], seed=random.Random(0))  # found by this test: (0, 1.75) reversed, (0, 1.5) not
def test_bootstrap_interval_is_within_the_values_and_ignores_their_order(values: list[float], seed: Any) -> None:
    lo, hi = stats.bootstrap_mean_interval(values, 0.95, resamples=200)
    assert min(values) - 1e-9 <= lo <= hi <= max(values) + 1e-9
    shuffled = list(values)
    seed.shuffle(shuffled)
    for other in (shuffled, values[::-1]):
        assert stats.bootstrap_mean_interval(other, 0.95, resamples=200) == pytest.approx((lo, hi))


def test_bootstrap_interval_of_nothing_is_nan() -> None:
    lo, hi = stats.bootstrap_mean_interval([], 0.95)
    assert math.isnan(lo) and math.isnan(hi)


PVALUE = st.floats(min_value=0.0, max_value=1.0)


@settings(max_examples=200, deadline=None)
@given(p=st.lists(PVALUE, min_size=0, max_size=12), seed=st.randoms(use_true_random=False))
def test_holm_is_bounded_never_below_the_raw_p_and_follows_the_order(p: list[float], seed: Any) -> None:
    adjusted = np.asarray(stats.holm(p), dtype=float)
    assert adjusted.shape == (len(p),)
    assert np.all((adjusted >= 0) & (adjusted <= 1))
    assert np.all(adjusted >= np.asarray(p) - 1e-12)
    order = list(range(len(p)))
    seed.shuffle(order)
    again = np.asarray(stats.holm([p[i] for i in order]), dtype=float)
    assert np.allclose(again, adjusted[order])


@settings(max_examples=200, deadline=None)
@given(a=st.integers(min_value=0, max_value=300), b=st.integers(min_value=0, max_value=300))
def test_mcnemar_is_a_symmetric_p_value(a: int, b: int) -> None:
    p = stats.mcnemar_exact(a, b)
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(stats.mcnemar_exact(b, a))
    if a == b:
        assert p == pytest.approx(1.0)


LABEL = st.sampled_from(["pass", "fail", "maybe"])


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(st.tuples(LABEL, LABEL), min_size=1, max_size=40),
    seed=st.randoms(use_true_random=False),
)
def test_cohen_kappa_is_at_most_one_symmetric_and_ignores_the_order(pairs: list[tuple[str, str]], seed: Any) -> None:
    a, b = [x for x, _ in pairs], [y for _, y in pairs]
    kappa = stats.cohen_kappa(a, b)
    if math.isnan(kappa):  # chance agreement is 1 (one label only): kappa is not defined
        assert len(set(a) | set(b)) == 1
        return
    assert -1.0 - 1e-12 <= kappa <= 1.0 + 1e-12
    assert kappa == pytest.approx(stats.cohen_kappa(b, a))
    shuffled = list(pairs)
    seed.shuffle(shuffled)
    assert stats.cohen_kappa([x for x, _ in shuffled], [y for _, y in shuffled]) == pytest.approx(kappa)
    # renaming the labels (the same renaming on both sides) changes nothing
    rename = {"pass": "P", "fail": "F", "maybe": "M"}
    assert stats.cohen_kappa([rename[x] for x in a], [rename[y] for y in b]) == pytest.approx(kappa)


@settings(max_examples=200, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.booleans(), st.floats(0, 1, allow_nan=False)), min_size=1, max_size=40),
    seed=st.randoms(use_true_random=False),
)
def test_roc_auc_is_bounded_ignores_the_order_and_counts_pairs(pairs: list[tuple[bool, float]], seed: Any) -> None:
    truth, score = [t for t, _ in pairs], [s for _, s in pairs]
    auc = stats.roc_auc(truth, score)
    pos, neg = [s for t, s in pairs if t], [s for t, s in pairs if not t]
    if not pos or not neg:  # one class only: nothing to rank
        assert math.isnan(auc)
        return
    # the share of (positive, negative) pairs ranked right, ties counted half: computed here by hand
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    assert auc == pytest.approx(wins / (len(pos) * len(neg)))
    assert 0.0 <= auc <= 1.0
    shuffled = list(pairs)
    seed.shuffle(shuffled)
    assert stats.roc_auc([t for t, _ in shuffled], [s for _, s in shuffled]) == pytest.approx(auc)


@settings(max_examples=100, deadline=None)
@given(
    pairs=st.lists(st.tuples(FINITE, FINITE), min_size=0, max_size=25),
    seed=st.randoms(use_true_random=False),
)
def test_wilcoxon_is_a_p_value_symmetric_in_its_sides_and_the_order_of_pairs(
    pairs: list[tuple[float, float]], seed: Any
) -> None:
    x, y = [a for a, _ in pairs], [b for _, b in pairs]
    p = stats.wilcoxon_signed_rank(x, y)
    if all(a == b for a, b in pairs):  # no pair differs: nothing measured
        assert math.isnan(p) or p == pytest.approx(1.0)
        return
    assert 0.0 <= p <= 1.0
    assert p == pytest.approx(stats.wilcoxon_signed_rank(y, x))
    shuffled = list(pairs)
    seed.shuffle(shuffled)
    assert stats.wilcoxon_signed_rank([a for a, _ in shuffled], [b for _, b in shuffled]) == pytest.approx(p)
