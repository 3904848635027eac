"""Arena ratings from pairwise verdicts (nbeval.results.statistics.arena): the Bradley–Terry fit with a
first-slot term against scipy and against hand-derived optima, bias removal on simulated
judges, the Elo scale, the bootstrap, the verdict counts, and the edge cases.

Expected values come from scipy on an objective written here, from hand derivations (given in
each test), or from counting the verdicts by hand; never from the module under test."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from nbeval.errors import BadArgumentType, BadParameter
from nbeval.results.statistics.arena import (
    ARENA_COLUMNS,
    HEAD_TO_HEAD_COLUMNS,
    POSITION_BIAS_COLUMNS,
    RIDGE,
    Outcome,
    Verdict,
    arena_table,
    elo_rating,
    fit_arena,
    head_to_head_table,
    position_bias_table,
)


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _random_verdicts(seed: int) -> list[Verdict]:
    """4 models, 2 judges, ties, pairs in random orders (some in one order only)."""
    rng = np.random.default_rng(seed)
    models, judges = ["m0", "m1", "m2", "m3"], ["j0", "j1"]
    outcomes: tuple[Outcome, ...] = ("first", "second", "tie")
    out = []
    for case in range(40):
        for _ in range(5):
            first, second = rng.choice(models, size=2, replace=False)
            outcome = outcomes[int(rng.choice(len(outcomes), p=[0.5, 0.3, 0.2]))]
            out.append(Verdict(f"c{case}", str(first), str(second), outcome, str(rng.choice(judges))))
    return out


def _scipy_fit(verdicts: list[Verdict], ridge: float) -> tuple[np.ndarray, np.ndarray]:
    """θ (mean zero) and β minimising the penalised negative log-likelihood, one verdict at a time."""
    models = sorted({v.first for v in verdicts} | {v.second for v in verdicts})
    judges = sorted({v.judge for v in verdicts})
    nm = len(models)
    design = np.zeros((len(verdicts), nm + len(judges)))
    score = np.empty(len(verdicts))
    for i, v in enumerate(verdicts):
        design[i, models.index(v.first)] += 1.0
        design[i, models.index(v.second)] -= 1.0
        design[i, nm + judges.index(v.judge)] = 1.0
        score[i] = {"first": 1.0, "second": 0.0, "tie": 0.5}[v.outcome]

    def nll(params: np.ndarray) -> float:
        eta = design @ params
        # a tie: -(0.5 log p + 0.5 log(1-p)); a win: -log p; a loss: -log(1-p)
        return float(np.sum(np.logaddexp(0.0, eta) - score * eta) + 0.5 * ridge * np.sum(params[:nm] ** 2))

    def gradient(params: np.ndarray) -> np.ndarray:
        p = 1.0 / (1.0 + np.exp(-(design @ params)))
        penalty = np.concatenate([ridge * params[:nm], np.zeros(len(judges))])
        return design.T @ (p - score) + penalty

    found = minimize(nll, np.zeros(design.shape[1]), jac=gradient, method="BFGS", options={"gtol": 1e-11})
    theta, beta = found.x[:nm], found.x[nm:]
    return theta - theta.mean(), beta


@pytest.mark.parametrize("ridge", [RIDGE, 0.0])
def test_fit_equals_scipy_minimize_on_the_same_penalised_likelihood(ridge: float) -> None:
    verdicts = _random_verdicts(seed=11)
    assert {v.outcome for v in verdicts} == {"first", "second", "tie"}
    theta, beta = _scipy_fit(verdicts, ridge)
    fit = fit_arena(verdicts, n_boot=0, ridge=ridge)
    assert fit.models == ("m0", "m1", "m2", "m3") and fit.judges == ("j0", "j1")
    np.testing.assert_allclose(fit.theta, theta, atol=1e-6)
    np.testing.assert_allclose(fit.beta, beta, atol=1e-6)
    assert abs(fit.theta.sum()) < 1e-9  # the ridge's optimum, and the identification, is Σθ = 0


def _symmetric_design(first_wins: int, second_wins: int, ties: int) -> list[Verdict]:
    """Every ordered pair of three models asked the same number of times with the same outcomes."""
    out = []
    for first, second in [("a", "b"), ("b", "a"), ("a", "c"), ("c", "a"), ("b", "c"), ("c", "b")]:
        outcomes = ["first"] * first_wins + ["second"] * second_wins + ["tie"] * ties
        out += [Verdict(f"{first}{second}{i}", first, second, o) for i, o in enumerate(outcomes)]  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize(("first_wins", "second_wins", "ties"), [(3, 1, 0), (2, 1, 1)])
def test_symmetric_three_model_design_by_hand(first_wins: int, second_wins: int, ties: int) -> None:
    """By symmetry every model has the same record, so θ = 0 (the ridge's gradient is 0 there);
    the β equation Σ(y − n·σ(β)) = 0 then gives σ(β) = (first wins + ties/2) / n: with 3 wins of 4,
    β = log 3; with 2 wins, 1 tie and 1 loss, σ(β) = 2.5/4 and β = log(2.5/1.5) = log(5/3)."""
    fit = fit_arena(_symmetric_design(first_wins, second_wins, ties), n_boot=0)
    n = first_wins + second_wins + ties
    share = (first_wins + 0.5 * ties) / n
    np.testing.assert_allclose(fit.theta, 0.0, atol=1e-9)
    assert fit.beta[0] == pytest.approx(math.log(share / (1 - share)), abs=1e-9)
    assert fit.beta[0] == pytest.approx(math.log(3) if ties == 0 else math.log(5 / 3), abs=1e-9)
    table = fit.arena_table()
    np.testing.assert_allclose(table["rating"], 1000.0, atol=1e-6)
    assert fit.head_to_head_table()["p_a_beats_b"].tolist() == pytest.approx([0.5, 0.5, 0.5])
    bias = fit.position_bias_table().iloc[0]
    assert bias["first_slot_rate"] == pytest.approx(first_wins / (first_wins + second_wins))


def test_two_models_closed_form_without_ridge() -> None:
    """a first: a wins 9 of 10, so d + β = logit(0.9) = log 9; b first: b wins 5 of 10, so
    −d + β = logit(0.5) = 0. Hence β = log 3, d = θ_a − θ_b = log 3, P(a beats b) = 3/4, and
    θ_a = log(3)/2 puts a at 1000 + 400·log10(3)/2 on the Elo scale."""
    verdicts = [Verdict(f"x{i}", "a", "b", "first" if i < 9 else "second") for i in range(10)]
    verdicts += [Verdict(f"y{i}", "b", "a", "first" if i < 5 else "second") for i in range(10)]
    fit = fit_arena(verdicts, n_boot=0, ridge=0.0)
    assert fit.beta[0] == pytest.approx(math.log(3), abs=1e-9)
    assert fit.theta[0] - fit.theta[1] == pytest.approx(math.log(3), abs=1e-9)
    row = fit.head_to_head_table().iloc[0]
    assert (row["model_a"], row["model_b"]) == ("a", "b")
    assert row["p_a_beats_b"] == pytest.approx(0.75, abs=1e-9)
    ratings = fit.arena_table().set_index("model_key")["rating"]
    assert ratings["a"] == pytest.approx(1000 + 200 * math.log10(3), abs=1e-6)
    assert ratings["b"] == pytest.approx(1000 - 200 * math.log10(3), abs=1e-6)


TRUE_THETA = {"m0": 1.0, "m1": 0.3, "m2": -0.3, "m3": -1.0}
TRUE_BETA = 1.0


def _biased_judge(seed: int) -> list[Verdict]:
    """Verdicts drawn from the model with β = 1; m0 (the strongest) is always asked in the first
    slot, and in the second only one time in five, so raw win rates flatter it."""
    rng = np.random.default_rng(seed)
    names = list(TRUE_THETA)
    out = []
    for case in range(400):
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                orders = [(a, b)] + ([(b, a)] if a != "m0" or rng.random() < 0.2 else [])
                for first, second in orders:
                    p = _sigmoid(TRUE_THETA[first] - TRUE_THETA[second] + TRUE_BETA)
                    out.append(Verdict(f"c{case}", first, second, "first" if rng.random() < p else "second"))
    return out


def test_first_slot_bias_is_removed_where_the_naive_win_rate_is_not() -> None:
    fit = fit_arena(_biased_judge(seed=0), n_boot=300, seed=1)
    row = fit.head_to_head_table().set_index(["model_a", "model_b"]).loc[("m0", "m1")]
    truth = _sigmoid(TRUE_THETA["m0"] - TRUE_THETA["m1"])  # 0.668
    naive = (row["wins_a"] + 0.5 * row["ties"]) / row["n"]
    assert row["lo"] <= truth <= row["hi"]
    assert abs(row["p_a_beats_b"] - truth) < 0.04
    assert not row["lo"] <= naive <= row["hi"] and naive - truth > 0.08
    bias = fit.position_bias_table().iloc[0]
    assert bias["beta_lo"] <= TRUE_BETA <= bias["beta_hi"]
    assert fit.arena_table()["model_key"].tolist() == ["m0", "m1", "m2", "m3"]


def test_elo_scale() -> None:
    step = math.log(10) / 400 * 100  # 100 Elo points: odds of 10^(1/4) against the mean model
    np.testing.assert_allclose(elo_rating([step, -step]), [1100.0, 900.0])
    np.testing.assert_allclose(elo_rating([step + 7.0, -step + 7.0]), [1100.0, 900.0])  # only differences count
    np.testing.assert_allclose(elo_rating([[2 * step, 0.0, -2 * step]]), [[1200.0, 1000.0, 800.0]])


def test_bootstrap_is_seeded_and_intervals_hold_the_estimates() -> None:
    verdicts = _random_verdicts(seed=3)
    first = fit_arena(verdicts, n_boot=200, seed=5)
    again = fit_arena(verdicts, n_boot=200, seed=5)
    other = fit_arena(verdicts, n_boot=200, seed=6)
    for table in ("arena_table", "head_to_head_table", "position_bias_table"):
        pd.testing.assert_frame_equal(getattr(first, table)(), getattr(again, table)())
    assert not np.array_equal(first.arena_table()["rating_lo"], other.arena_table()["rating_lo"])
    arena, pairs, bias = first.arena_table(), first.head_to_head_table(), first.position_bias_table()
    assert ((arena["rating_lo"] <= arena["rating"]) & (arena["rating"] <= arena["rating_hi"])).all()
    assert (arena["rating_lo"] < arena["rating_hi"]).all()
    assert ((pairs["lo"] <= pairs["p_a_beats_b"]) & (pairs["p_a_beats_b"] <= pairs["hi"])).all()
    assert ((bias["beta_lo"] <= bias["beta"]) & (bias["beta"] <= bias["beta_hi"])).all()
    assert first.boot_theta.shape == (200, 4) and first.boot_beta.shape == (200, 2)


def test_the_bootstrap_resamples_cases_not_verdicts() -> None:
    """Each verdict given ten times within its case adds no information about other cases: a
    bootstrap over cases keeps the intervals' width (the same draws, every count times ten),
    where one over single verdicts would shrink it by about √10."""
    verdicts = _random_verdicts(seed=8)
    tenfold = [v for v in verdicts for _ in range(10)]
    once, repeated = fit_arena(verdicts, n_boot=200, seed=4), fit_arena(tenfold, n_boot=200, seed=4)
    width = np.ptp(np.quantile(once.boot_theta, [0.025, 0.975], axis=0), axis=0)
    width_repeated = np.ptp(np.quantile(repeated.boot_theta, [0.025, 0.975], axis=0), axis=0)
    np.testing.assert_allclose(width_repeated, width, rtol=0.05)
    np.testing.assert_allclose(repeated.theta, once.theta, rtol=0.01)  # only the ridge's weight differs


def _hand_built() -> list[Verdict]:
    """Case c1 asks a-b, a-c and b-c in both orders; a-b and a-c agree, b-c does not (each slot's
    model wins in turn); c2 asks a-b once; judge k asks a-c in one order only on c1, and judge
    m asks it in the other, which makes no pair asked in both orders by one judge."""
    return [
        Verdict("c1", "a", "b", "first"),  # a
        Verdict("c1", "b", "a", "second"),  # a: agrees
        Verdict("c1", "a", "c", "tie"),
        Verdict("c1", "c", "a", "tie"),  # agrees
        Verdict("c1", "b", "c", "first"),  # b
        Verdict("c1", "c", "b", "first"),  # c: disagrees
        Verdict("c2", "a", "b", "first"),  # one order only
        Verdict("c1", "a", "c", "first", judge="k"),
        Verdict("c1", "c", "a", "first", judge="m"),
    ]


def test_counts_by_hand() -> None:
    fit = fit_arena(_hand_built(), n_boot=20)
    bias = fit.position_bias_table().set_index("judge")
    # default judge: decisive verdicts first, second, first, first, first -> 4 of 5 chose the first slot
    assert bias.loc["judge", "first_slot_rate"] == pytest.approx(4 / 5)
    assert bias.loc["judge", "consistency"] == pytest.approx(2 / 3)
    assert bias.loc["judge", "n"] == 7
    assert bias.loc["k", "n"] == 1 and bias.loc["k", "first_slot_rate"] == 1.0
    assert math.isnan(bias.loc["k", "consistency"]) and math.isnan(bias.loc["m", "consistency"])
    arena = fit.arena_table().set_index("model_key")
    # a: wins c1 a-b, b-a, c2 a-b, k's a-c; ties a-c, c-a; loses m's c-a
    assert arena.loc["a", ["wins", "losses", "ties", "n"]].tolist() == [4, 1, 2, 7]
    assert arena.loc["a", "win_rate"] == pytest.approx((4 + 1) / 7)
    assert arena.loc["b", ["wins", "losses", "ties", "n"]].tolist() == [1, 4, 0, 5]
    assert arena.loc["c", ["wins", "losses", "ties", "n"]].tolist() == [2, 2, 2, 6]
    assert arena.loc["c", "win_rate"] == pytest.approx(0.5)
    pairs = {frozenset((r.model_a, r.model_b)): r for r in fit.head_to_head_table().itertuples()}
    ab, ac, bc = pairs[frozenset("ab")], pairs[frozenset("ac")], pairs[frozenset("bc")]
    assert (ab.inconsistent, ac.inconsistent, bc.inconsistent) == (0, 0, 1)
    assert (ab.n, ac.n, bc.n) == (3, 4, 2) and ac.ties == 2 and bc.ties == 0
    wins = {ab.model_a: ab.wins_a, ab.model_b: ab.wins_b}
    assert wins == {"a": 3, "b": 0}


def test_empty_input_gives_empty_tables_with_their_columns() -> None:
    fit = fit_arena([])
    assert fit.models == () and fit.theta.shape == (0,)
    for frame, columns in [
        (fit.arena_table(), ARENA_COLUMNS),
        (fit.head_to_head_table(), HEAD_TO_HEAD_COLUMNS),
        (fit.position_bias_table(), POSITION_BIAS_COLUMNS),
    ]:
        assert frame.empty and tuple(frame.columns) == columns
    assert arena_table([]).empty and head_to_head_table([]).empty and position_bias_table([]).empty


def test_the_table_functions_read_the_same_fit() -> None:
    verdicts = _random_verdicts(seed=4)
    fit = fit_arena(verdicts, n_boot=40, seed=2, level=0.9)
    pd.testing.assert_frame_equal(arena_table(verdicts, n_boot=40, seed=2, level=0.9), fit.arena_table())
    pd.testing.assert_frame_equal(head_to_head_table(verdicts, n_boot=40, seed=2, level=0.9), fit.head_to_head_table())
    pd.testing.assert_frame_equal(
        position_bias_table(verdicts, n_boot=40, seed=2, level=0.9), fit.position_bias_table()
    )
    assert list(fit.arena_table().columns) == list(ARENA_COLUMNS)
    assert fit.arena_table()["rating"].is_monotonic_decreasing
    # six pairs among four models, each once, a the better rated
    pairs = fit.head_to_head_table()
    assert len(pairs) == 6 and (pairs["p_a_beats_b"] >= 0.5).all()


def test_a_judge_that_always_chose_the_first_slot() -> None:
    """Its β is +inf, the likelihood's limit, and its verdicts then carry nothing about the models:
    the θ are those of the other judge's verdicts alone."""
    others = [v for v in _random_verdicts(seed=5) if v.judge == "j0"]
    always = [Verdict(f"z{i}", f"m{i % 4}", f"m{(i + 1) % 4}", "first", judge="j9") for i in range(12)]
    fit = fit_arena(others + always, n_boot=30)
    alone = fit_arena(others, n_boot=0)
    assert fit.judges == ("j0", "j9") and fit.beta[1] == math.inf
    np.testing.assert_allclose(fit.theta, alone.theta, atol=1e-9)
    assert fit.beta[0] == pytest.approx(alone.beta[0], abs=1e-9)
    bias = fit.position_bias_table().set_index("judge")
    assert bias.loc["j9", "beta_hi"] == math.inf and bias.loc["j9", "first_slot_rate"] == 1.0
    assert np.isfinite(fit.arena_table()[["rating", "rating_lo", "rating_hi"]].to_numpy()).all()


def test_ties_only() -> None:
    """p = 1/2 for every verdict: θ = 0 and β = 0 make every score term y − n·p vanish."""
    verdicts = [Verdict(f"c{i}", f"m{i % 3}", f"m{(i + 1) % 3}", "tie") for i in range(9)]
    fit = fit_arena(verdicts, n_boot=20)
    np.testing.assert_allclose(fit.arena_table()["rating"], 1000.0, atol=1e-9)
    assert fit.beta[0] == pytest.approx(0.0, abs=1e-9)
    assert math.isnan(fit.position_bias_table()["first_slot_rate"].iloc[0])


def test_a_judge_of_ties_only_on_a_balanced_design_has_no_bias() -> None:
    decisive = _symmetric_design(3, 1, 0)
    ties = [Verdict(f"t{v.case_id}", v.first, v.second, "tie", judge="calm") for v in decisive]
    fit = fit_arena(decisive + ties, n_boot=0)
    assert fit.judges == ("calm", "judge")
    assert fit.beta[0] == pytest.approx(0.0, abs=1e-9) and fit.beta[1] == pytest.approx(math.log(3), abs=1e-9)


def test_a_model_that_won_everything_stays_finite_with_the_ridge() -> None:
    verdicts = [Verdict(f"c{i}", "top", o, "first") for i, o in enumerate(["x", "y"] * 5)]
    verdicts += [Verdict(f"d{i}", o, "top", "second") for i, o in enumerate(["x", "y"] * 5)]
    verdicts += [Verdict(f"e{i}", "x", "y", "first" if i % 2 else "second") for i in range(6)]
    table = fit_arena(verdicts, n_boot=50).arena_table()
    assert table["model_key"].iloc[0] == "top"
    assert np.isfinite(table[["rating", "rating_lo", "rating_hi"]].to_numpy()).all()
    with pytest.raises(BadParameter, match="ridge=0"):
        fit_arena(verdicts, n_boot=0, ridge=0.0)


def _ordered(pair: str, i: int) -> tuple[str, str]:
    """The two models of ``pair`` (two one-letter names), swapped for even ``i``."""
    return (pair[0], pair[1]) if i % 2 else (pair[1], pair[0])


def test_a_disconnected_graph_is_finite_and_each_piece_centred() -> None:
    """a-b and c-d are never linked: the likelihood cannot place one piece against the other, and
    the ridge (minimised over a shift of either piece) puts each piece's mean θ at 0."""
    verdicts = [Verdict(f"p{i}", *_ordered("ab", i), "first" if i % 3 else "second") for i in range(9)]
    verdicts += [Verdict(f"q{i}", *_ordered("cd", i), "first" if i % 4 else "second") for i in range(8)]
    table = fit_arena(verdicts, n_boot=30).arena_table().set_index("model_key")
    assert np.isfinite(table[["rating", "rating_lo", "rating_hi"]].to_numpy()).all()
    assert table.loc[["a", "b"], "rating"].mean() == pytest.approx(1000.0, abs=1e-6)
    assert table.loc[["c", "d"], "rating"].mean() == pytest.approx(1000.0, abs=1e-6)


def test_bad_input_is_refused() -> None:
    with pytest.raises(BadParameter, match="outcome"):
        Verdict("c", "a", "b", "A")  # type: ignore[arg-type]
    with pytest.raises(BadParameter, match="itself"):
        Verdict("c", "a", "a", "tie")
    with pytest.raises(BadArgumentType):
        fit_arena([("c", "a", "b", "first")])  # type: ignore[list-item]
    with pytest.raises(BadParameter):
        fit_arena([], n_boot=-1)
    with pytest.raises(BadParameter):
        fit_arena([], level=1.5)
    with pytest.raises(BadParameter):
        fit_arena([], ridge=-1.0)
