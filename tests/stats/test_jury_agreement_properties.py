"""Properties of the jury agreement statistics (issue 43: "make the class of bug hard to write again").

Krippendorff's alpha is compared with the ``krippendorff`` package on random juries (verdicts and
scores, with missing values); every statistic is checked to be invariant to the order of the rows,
to the order and the names of the jurors and (alpha) to a renaming of the categories or a change
of the scale's unit; to stay in its range; and to be NaN, never a number, where nothing was
measured (no row rated by two jurors). The jury's aggregate of a row does not depend on the order
of its jurors either, and stays among (or between) their values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nbeval.evaluators.base import Score
from nbeval.evaluators.jury import AGGREGATES, Jury, aggregate_scores
from nbeval.evaluators.registry import evaluator
from nbeval.results.statistics.jury_agreement import (
    alpha_interval,
    cohen_kappa_pairs,
    disagreement,
    fleiss_kappa,
    jury_agreement_of,
    krippendorff_alpha,
)

NAN = math.nan
#: The levels of measurement drawn: verdicts and scores.
Level = Literal["nominal", "interval"]


@st.composite
def juries(draw: st.DrawFn, level: Level, *, max_units: int = 25, max_jurors: int = 5) -> np.ndarray:
    """A (units, jurors) matrix: verdicts (0/1, sometimes a third category) or scores, NaN missing."""
    units = draw(st.integers(0, max_units))
    jurors = draw(st.integers(2, max_jurors))
    if level == "nominal":
        cats = draw(st.sampled_from([(0.0, 1.0), (0.0, 1.0, 2.0)]))
        value = st.sampled_from(cats)
    else:
        value = st.integers(1, 5).map(float) | st.floats(-10, 10, allow_nan=False).map(lambda v: round(v, 3))
    missing = draw(st.floats(0.0, 0.6))
    cells = draw(st.lists(st.tuples(value, st.floats(0, 1)), min_size=units * jurors, max_size=units * jurors))
    flat = [NAN if r < missing else v for v, r in cells]
    return np.array(flat, dtype=float).reshape(units, jurors)


def _package_alpha(values: np.ndarray, level: Level) -> float:
    """Alpha from the ``krippendorff`` package (coders as rows); NaN where it finds none."""
    try:
        out = float(krippendorff.alpha(reliability_data=values.T, level_of_measurement=level))
    except (ValueError, ZeroDivisionError):  # it refuses a single value or category
        return NAN
    return out


def _pairable(values: np.ndarray) -> int:
    return int(((~np.isnan(values)).sum(axis=1) >= 2).sum())


def _variation(values: np.ndarray) -> bool:
    """Whether the pairable units' values are not all the same."""
    rows = values[(~np.isnan(values)).sum(axis=1) >= 2]
    return np.unique(rows[~np.isnan(rows)]).size > 1


LEVELS: st.SearchStrategy[Level] = st.sampled_from(["nominal", "interval"])


@settings(max_examples=300, deadline=None)
@given(data=st.data(), level=LEVELS)
def test_alpha_equals_the_krippendorff_package(data: st.DataObject, level: Level) -> None:
    values = data.draw(juries(level), label="values")
    ours = krippendorff_alpha(values, level)
    if _pairable(values) == 0 or not _variation(values):
        assert math.isnan(ours), "nothing to compare, or no variation: alpha is undefined"
        return
    theirs = _package_alpha(values, level)
    assert not math.isnan(theirs)
    assert ours == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), level=LEVELS)
def test_statistics_do_not_depend_on_row_order_or_on_juror_order_and_names(data: st.DataObject, level: Level) -> None:
    values = data.draw(juries(level), label="values")
    units, jurors = values.shape
    rows = data.draw(st.permutations(range(units)), label="row order")
    cols = data.draw(st.permutations(range(jurors)), label="juror order")
    names = [f"j{k}" for k in range(jurors)]
    renamed = [f"other-{k}" for k in range(jurors)]
    shuffled = values[list(rows)][:, list(cols)]
    a = jury_agreement_of(values, names, level, n_boot=0)
    b = jury_agreement_of(shuffled, [renamed[c] for c in cols], level, n_boot=0)
    assert _same(a.alpha, b.alpha)
    assert (a.fleiss_kappa is None) == (b.fleiss_kappa is None)
    if a.fleiss_kappa is not None and b.fleiss_kappa is not None:
        assert _same(a.fleiss_kappa, b.fleiss_kappa)
    assert (a.units, a.missing, a.pairable_units, a.fleiss_units) == (
        b.units,
        b.missing,
        b.pairable_units,
        b.fleiss_units,
    )
    # each pair of jurors, whatever it is called and in whichever order its columns come
    mine = {frozenset((p.juror_a, p.juror_b)): (p.kappa, p.n) for p in a.pairwise}
    theirs = {frozenset((p.juror_a, p.juror_b)): (p.kappa, p.n) for p in b.pairwise}
    for pair, (kappa, n) in mine.items():
        i, j = (int(name[1:]) for name in pair)
        kappa_b, n_b = theirs[frozenset((renamed[i], renamed[j]))]
        assert n == n_b and _same(kappa, kappa_b)
    per_row = disagreement(values, level)
    np.testing.assert_allclose(disagreement(shuffled, level), per_row[list(rows)], equal_nan=True, atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), level=LEVELS)
def test_statistics_stay_in_their_ranges(data: st.DataObject, level: Level) -> None:
    values = data.draw(juries(level), label="values")
    names = [f"j{k}" for k in range(values.shape[1])]
    agreement = jury_agreement_of(values, names, level, n_boot=40, seed=1)
    assert math.isnan(agreement.alpha) or agreement.alpha <= 1 + 1e-9
    if not math.isnan(agreement.alpha_low):
        assert agreement.alpha_low <= agreement.alpha_high <= 1 + 1e-9
    if level == "nominal":
        for pair in cohen_kappa_pairs(values, names):
            assert math.isnan(pair.kappa) or -1 - 1e-9 <= pair.kappa <= 1 + 1e-9
            assert 0 <= pair.n <= values.shape[0]
        fk = fleiss_kappa(values)
        assert math.isnan(fk.kappa) or fk.kappa <= 1 + 1e-9
        # Fleiss' kappa cannot fall below -1 / (raters - 1)
        assert math.isnan(fk.kappa) or fk.kappa >= -1 / (values.shape[1] - 1) - 1e-9
    spread = disagreement(values, level)
    rated = (~np.isnan(values)).sum(axis=1) >= 2
    assert np.isnan(spread[~rated]).all(), "a row rated by fewer than two jurors has no disagreement"
    if level == "nominal":
        assert ((spread[rated] >= 0) & (spread[rated] <= 1)).all()
    else:
        assert (spread[rated] >= 0).all()


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_alpha_ignores_category_names_and_the_scales_unit(data: st.DataObject) -> None:
    verdicts = data.draw(juries("nominal"), label="verdicts")
    codes = data.draw(st.permutations([3.0, -7.0, 11.5]), label="new codes")
    renamed = np.vectorize(lambda v: v if math.isnan(v) else codes[int(v)])(verdicts) if verdicts.size else verdicts
    assert _same(krippendorff_alpha(verdicts, "nominal"), krippendorff_alpha(renamed, "nominal"))
    scores = data.draw(juries("interval"), label="scores")
    scale = data.draw(st.sampled_from([-2.0, 0.5, 10.0]), label="scale")
    shift = data.draw(st.sampled_from([-3.0, 0.0, 100.0, 1e6]), label="shift")  # 1e6: no cancellation
    a, b = krippendorff_alpha(scores, "interval"), krippendorff_alpha(scores * scale + shift, "interval")
    assert math.isnan(a) == math.isnan(b)
    if not math.isnan(a):
        assert a == pytest.approx(b, abs=1e-6)


@settings(max_examples=100, deadline=None)
@given(
    units=st.integers(0, 20),
    jurors=st.integers(2, 5),
    level=LEVELS,
    lone=st.lists(st.floats(0, 5, allow_nan=False), max_size=20),
)
def test_nothing_measured_gives_nan_never_a_number(units: int, jurors: int, level: Level, lone: list[float]) -> None:
    """No row rated by two jurors (all missing, or one value a row): every statistic is NaN."""
    values = np.full((units, jurors), NAN)
    for row, v in zip(range(units), lone, strict=False):  # at most one juror rated each row
        values[row, row % jurors] = float(round(v)) if level == "nominal" else v
    agreement = jury_agreement_of(values, [f"j{k}" for k in range(jurors)], level, n_boot=20)
    assert math.isnan(agreement.alpha) and agreement.alpha_note
    assert math.isnan(agreement.alpha_low) and math.isnan(agreement.alpha_high)
    assert agreement.pairable_units == 0
    assert all(math.isnan(p.kappa) for p in agreement.pairwise)
    assert agreement.fleiss_kappa is None or math.isnan(agreement.fleiss_kappa)
    assert math.isnan(alpha_interval(values, level, n_boot=20)[0])


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_copies_of_one_answer_are_perfect_agreement_only_when_the_answers_vary(data: st.DataObject) -> None:
    """What a jury of copies of one reply showed: every juror equal on each row is alpha 1 when rows
    differ, and NaN (not 1) when every row has the same verdict: nothing tells agreement from chance."""
    column = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=30)))
    copies = np.repeat(column[:, None], data.draw(st.integers(2, 4)), axis=1)
    alpha = krippendorff_alpha(copies, "nominal")
    if np.unique(column).size > 1:
        assert alpha == 1.0
    else:
        assert math.isnan(alpha)


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-9)


# -- the jury's aggregate of one row ---------------------------------------------------------------

_CORRECTNESS = evaluator("correctness")
_JUDGES = ("a", "b", "c", "d", "e")


def _scores(values: Sequence[float | None]) -> list[Score]:
    return [Score({"correctness": v}, label=None if v is None else ("yes" if v else "no")) for v in values]


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 1.0, None]) | st.floats(0, 1, allow_nan=False), min_size=2, max_size=5),
    how=st.sampled_from(AGGREGATES),
    data=st.data(),
)
def test_a_rows_aggregate_does_not_depend_on_juror_order_and_stays_among_the_values(
    values: list[float | None], how: str, data: st.DataObject
) -> None:
    order = data.draw(st.permutations(range(len(values))), label="juror order")
    panel = Jury(_JUDGES[: len(values)], how)
    shuffled = Jury(tuple(_JUDGES[i] for i in order), how)
    a = aggregate_scores(_CORRECTNESS, _scores(values), panel).values["correctness"]
    b = aggregate_scores(_CORRECTNESS, _scores([values[i] for i in order]), shuffled).values["correctness"]
    given_values = [v for v in values if v is not None]
    if not given_values:
        assert a is None and b is None, "no juror gave a value: the row is unrated"
        return
    assert a is not None and b is not None
    assert a == pytest.approx(b, abs=1e-12)
    assert min(given_values) - 1e-12 <= a <= max(given_values) + 1e-12
    if how in ("unanimous", "any"):
        assert a in given_values


def test_alpha_of_an_empty_jury_table_is_nan() -> None:
    assert math.isnan(krippendorff_alpha(np.zeros((0, 3)), "nominal"))
