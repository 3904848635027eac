"""Property-based tests (Hypothesis) of the arena statistics (issue 43): invariant to the order
of the verdicts and to renaming the models, symmetric under swapping the A/B slots, ratings
finite where a verdict informs them and without a value or an interval where none does, counts
that add up.

Which models are informed is worked out here from the verdicts alone (a judge whose verdicts all
chose one slot informs nothing, as the arena's module says); everything else compares two fits."""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nbeval.results.statistics.arena import OUTCOMES, Verdict, fit_arena

MODELS = ("m0", "m1", "m2", "m3", "m4")
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
N_BOOT = 25


@st.composite
def verdicts(draw: st.DrawFn) -> list[Verdict]:
    n = draw(st.integers(1, 40))
    out = []
    for _ in range(n):
        first, second = draw(st.lists(st.sampled_from(MODELS), min_size=2, max_size=2, unique=True))
        out.append(
            Verdict(
                case_id=f"c{draw(st.integers(0, 6))}",
                first=first,
                second=second,
                outcome=draw(st.sampled_from(OUTCOMES)),
                judge=draw(st.sampled_from(("j0", "j1"))),
            )
        )
    return out


def _informed(vs: list[Verdict]) -> set[str]:
    """Models in a verdict of a judge that did not always choose one slot (ties count half)."""
    score: dict[str, float] = {}
    count: dict[str, int] = {}
    for v in vs:
        score[v.judge] = score.get(v.judge, 0.0) + {"first": 1.0, "second": 0.0, "tie": 0.5}[v.outcome]
        count[v.judge] = count.get(v.judge, 0) + 1
    useful = {j for j in count if 0 < score[j] < count[j]}
    return {m for v in vs if v.judge in useful for m in (v.first, v.second)}


def _by_model(fit_table: pd.DataFrame) -> pd.DataFrame:
    return fit_table.set_index("model_key").sort_index()


#: Found by this test: the bootstrap drew cases by their order of appearance, so the same
#: verdicts in another order gave other intervals (cases are now numbered in sorted order).
@example(
    [
        Verdict("c1", "m0", "m1", "first", "j0"),
        Verdict("c0", "m1", "m0", "first", "j0"),
        Verdict("c0", "m0", "m1", "second", "j0"),
        Verdict("c2", "m0", "m1", "tie", "j0"),
    ],
    random.Random(3),
)
@SETTINGS
@given(verdicts(), st.randoms(use_true_random=False))
def test_the_order_of_the_verdicts_changes_nothing(vs: list[Verdict], rnd: object) -> None:
    shuffled = list(vs)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    one, other = fit_arena(vs, n_boot=N_BOOT), fit_arena(shuffled, n_boot=N_BOOT)
    pd.testing.assert_frame_equal(one.arena_table(), other.arena_table(), atol=1e-6)
    pd.testing.assert_frame_equal(one.head_to_head_table(), other.head_to_head_table(), atol=1e-6)
    pd.testing.assert_frame_equal(one.position_bias_table(), other.position_bias_table(), atol=1e-6)


@SETTINGS
@given(verdicts(), st.permutations(("q", "r", "s", "t", "u")))
def test_renaming_the_models_renames_the_ratings(vs: list[Verdict], names: list[str]) -> None:
    """The new names sort in another order, so the models are fitted in another order too."""
    rename = dict(zip(MODELS, names, strict=True))
    renamed = [Verdict(v.case_id, rename[v.first], rename[v.second], v.outcome, v.judge) for v in vs]
    one = _by_model(fit_arena(vs, n_boot=N_BOOT).arena_table())
    other = _by_model(fit_arena(renamed, n_boot=N_BOOT).arena_table()).rename(index={n: m for m, n in rename.items()})
    pd.testing.assert_frame_equal(one, other.sort_index(), atol=1e-6)


#: Found by this test: m0 and m2 are rated alike by symmetry, a few units in the last place apart,
#: and the table's order followed that noise (the ranking now compares ratings to 1e-6 Elo).
@example([Verdict("c0", "m0", "m1", "first", "j1"), Verdict("c0", "m1", "m2", "tie", "j1")])
@SETTINGS
@given(verdicts())
def test_swapping_the_slots_negates_the_slot_term_and_keeps_the_ratings(vs: list[Verdict]) -> None:
    swap = {"first": "second", "second": "first", "tie": "tie"}
    swapped = [Verdict(v.case_id, v.second, v.first, swap[v.outcome], v.judge) for v in vs]  # type: ignore[arg-type]
    one, other = fit_arena(vs, n_boot=N_BOOT), fit_arena(swapped, n_boot=N_BOOT)
    pd.testing.assert_frame_equal(one.arena_table(), other.arena_table(), atol=1e-6)
    np.testing.assert_allclose(one.beta, -other.beta, atol=1e-6)
    b1, b2 = one.position_bias_table(), other.position_bias_table()
    np.testing.assert_allclose(b1.first_slot_rate, 1 - b2.first_slot_rate, atol=1e-12)


@SETTINGS
@given(verdicts())
def test_ratings_are_finite_where_informed_and_absent_where_not(vs: list[Verdict]) -> None:
    fit = fit_arena(vs, n_boot=N_BOOT)
    table = _by_model(fit.arena_table())
    informed = _informed(vs)
    for model, row in table.iterrows():
        if model in informed:
            assert math.isfinite(row.rating), (model, row.rating)
        else:
            assert math.isnan(row.rating) and math.isnan(row.rating_lo) and math.isnan(row.rating_hi)
        if not math.isnan(row.rating_lo):
            assert math.isfinite(row.rating_lo) and math.isfinite(row.rating_hi) and row.rating_lo <= row.rating_hi
    if informed:  # the informed ratings are centred: 1000 is their mean model
        assert table.loc[sorted(informed), "rating"].mean() == pytest_approx(1000.0)
    pairs = fit.head_to_head_table()
    for column in ("p_a_beats_b", "lo", "hi"):
        values = pairs[column].dropna()
        assert ((values >= 0) & (values <= 1)).all()
    uninformed = ~pairs.model_a.isin(informed) | ~pairs.model_b.isin(informed)
    assert pairs.loc[uninformed, ["p_a_beats_b", "lo", "hi"]].isna().all().all()


@SETTINGS
@given(verdicts())
def test_the_counts_add_up(vs: list[Verdict]) -> None:
    fit = fit_arena(vs, n_boot=0)
    table = fit.arena_table()
    assert (table.wins + table.losses + table.ties == table.n).all()
    decisive = sum(v.outcome != "tie" for v in vs)
    assert table.wins.sum() == table.losses.sum() == decisive
    assert table.ties.sum() == 2 * (len(vs) - decisive) and table.n.sum() == 2 * len(vs)
    assert ((table.win_rate >= 0) & (table.win_rate <= 1)).all()
    assert fit.head_to_head_table().n.sum() == len(vs) and fit.position_bias_table().n.sum() == len(vs)


def pytest_approx(value: float) -> object:
    import pytest

    return pytest.approx(value, abs=1e-6)
