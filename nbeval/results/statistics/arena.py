"""Head to head: arena ratings from pairwise judge verdicts, with the judge's first-slot bias removed.

A judge is shown two models' answers to the same test case, one in the first slot (A) and one in
the second (B), and says which is better or that they tie (a :class:`Verdict`). Each pair is
meant to be asked in both orders, but the design may be unbalanced; the model removes the
judge's preference for a slot either way.

The model: each model ``m`` has a strength ``θ_m`` and each judge ``j`` a first-slot term ``β_j``,

    P(first wins) = σ(θ_first − θ_second + β_j),

fitted by maximum likelihood to every single-order verdict, a tie counting half a win each way
(``0.5·log p + 0.5·log(1 − p)``). The likelihood ignores a common shift of the θ; they are
reported with mean zero. A weak ridge ``0.5·λ·Σθ²`` (:data:`RIDGE`; β is not penalised) keeps
every θ finite when a model won (or lost) every comparison it was in, as small samples and
bootstrap resamples often have; it also puts the optimum at ``Σθ = 0``. The fit maximises that
penalised likelihood by Newton's method with step halving.

Ratings are on the Elo scale, ``1000 + 400·log10(odds against the mean model)``
(:func:`elo_rating`); a pair's ``p_a_beats_b`` is ``σ(θ_a − θ_b)``, the chance of a win with no
slot preference. Intervals are percentile bootstraps over test cases: case ids are drawn with
replacement (seeded, so the same data and seed give the same intervals) and the model refitted,
warm-started from the full fit. Each case's verdicts are reduced once to counts per (judge,
first, second) cell, so a resample is a matrix product and all resamples are fitted together in
batches; :func:`fit_arena` does that once for the three tables. The fit's memory grows with the
cells and the parameters², not their product (:mod:`nbeval.results.statistics.arena_solver`).

Edge cases:

* no verdicts: the tables are empty, with their columns;
* a judge whose verdicts all chose the first slot (or all the second): its β is ``+inf``
  (``-inf``), the likelihood's limit, and those verdicts say nothing about the models; a
  resample without a verdict of a judge is left out of that judge's β interval;
* a model that no remaining verdict compares (all its verdicts came from such judges): nothing
  informs its rating, so its θ, rating, interval and every ``p_a_beats_b`` it is in are NaN, never
  the mean model's 1000 with an interval of no width; a resample in which it is not informed is
  left out of its interval (the arithmetic is :mod:`nbeval.results.statistics.arena_solver`);
* a judge whose verdicts are all ties: its β is where σ(·) averages one half (0 when balanced);
* a comparison graph in pieces (models never linked by comparisons, even through others): the
  ratings of one piece against another are not identified by the data; the ridge keeps them
  finite and puts each piece's mean rating at 1000, so compare ratings only within a piece;
* one model cannot be compared with anything: a :class:`Verdict` of a model against itself is
  refused.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from nbeval.errors import BadArgumentType, BadParameter
from nbeval.results.statistics.arena_solver import bootstrap, fit_batch, make_cells
from nbeval.results.statistics.stats import check_level

if TYPE_CHECKING:
    import pandas as pd
    from numpy.typing import ArrayLike, NDArray

    FloatArray = NDArray[np.float64]
    IntArray = NDArray[np.int64]

__all__ = [
    "ARENA_COLUMNS",
    "ARENA_RESAMPLES",
    "ARENA_SEED",
    "DEFAULT_JUDGE",
    "ELO_BASE",
    "ELO_SCALE",
    "HEAD_TO_HEAD_COLUMNS",
    "OUTCOMES",
    "POSITION_BIAS_COLUMNS",
    "RIDGE",
    "ArenaFit",
    "Outcome",
    "Verdict",
    "arena_table",
    "elo_rating",
    "fit_arena",
    "head_to_head_table",
    "position_bias_table",
]

#: One verdict of a pairwise judge: the first slot won, the second won, or a tie.
Outcome = Literal["first", "second", "tie"]
#: The verdicts a judge can give: the first slot wins, the second wins, or a tie.
OUTCOMES: tuple[Outcome, ...] = ("first", "second", "tie")
#: The judge of a verdict that names none.
DEFAULT_JUDGE = "judge"
#: λ of the ridge ``0.5·λ·Σθ²``: a normal prior on θ with standard deviation 10 (about 1,700 Elo
#: points), so weak that it moves a model with n comparisons by a relative ~4λ/n, yet it keeps a
#: model that won every comparison at a finite rating (about ``log(n/λ)`` on the θ scale).
RIDGE = 1e-2
#: How many bootstrap resamples the tables draw by default, and the seed of their generator.
ARENA_RESAMPLES = 1000
ARENA_SEED = 0
#: The Elo scale ratings are shown on: the rating of an average model, and the points by which a tenfold odds of winning
#: differ.
ELO_BASE = 1000.0
ELO_SCALE = 400.0

#: The columns of the arena's ratings table, its head-to-head table and its position-bias table, in order.
ARENA_COLUMNS = ("model_key", "rating", "rating_lo", "rating_hi", "wins", "losses", "ties", "n", "win_rate")
HEAD_TO_HEAD_COLUMNS = tuple("model_a model_b p_a_beats_b lo hi wins_a wins_b ties inconsistent n".split())
POSITION_BIAS_COLUMNS = ("judge", "first_slot_rate", "beta", "beta_lo", "beta_hi", "consistency", "n")

# Infinite β (a judge that always chose one slot) stands in as this value while quantiles are taken.
_HUGE = 1e300


@dataclass(frozen=True, slots=True)
class Verdict:
    """One judge's verdict on one ordering of two models' answers to a test case."""

    case_id: str
    """The test case both answers are for; the bootstrap resamples these."""
    first: str
    """The model whose answer was shown in the first slot (A)."""
    second: str
    """The model whose answer was shown in the second slot (B)."""
    outcome: Outcome
    """``"first"``, ``"second"`` or ``"tie"``: which slot the judge preferred."""
    judge: str = DEFAULT_JUDGE
    """Who judged; each judge has its own first-slot term β."""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            msg = f"a verdict's outcome is one of {', '.join(OUTCOMES)}, got {self.outcome!r}"
            raise BadParameter(msg)
        if self.first == self.second:
            msg = f"a verdict compares two different models, got {self.first!r} against itself"
            raise BadParameter(msg)


def elo_rating(theta: ArrayLike) -> FloatArray:
    """Put strengths θ (last axis: the models) on the Elo scale.

    The scale is ``1000 + 400·(θ − mean θ)/ln 10``: 1000 plus 400 times the log10 odds of beating
    the mean model. A NaN θ stays NaN and is left out of the mean.
    """
    values = np.asarray(theta, dtype=np.float64)
    if values.shape[-1] == 0:
        return values.copy()
    # a NaN θ (a model no verdict informs) has no rating and takes no part in the mean; the fit
    # holds it at 0, so the mean of the others is the mean of all, as without it
    measured = ~np.isnan(values)
    count = measured.sum(axis=-1, keepdims=True)
    total = np.where(measured, values, 0.0).sum(axis=-1, keepdims=True)
    mean = np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)
    return np.asarray(ELO_BASE + ELO_SCALE * (values - mean) / math.log(10), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class _Encoded:
    """Verdicts as index arrays: models, judges and cases sorted by name."""

    models: tuple[str, ...]
    judges: tuple[str, ...]
    n_cases: int
    case: IntArray
    judge: IntArray
    first: IntArray
    second: IntArray
    outcome: IntArray  # the index in OUTCOMES


def _encode(verdicts: Iterable[Verdict]) -> _Encoded:
    rows = list(verdicts)
    for v in rows:
        if not isinstance(v, Verdict):
            msg = f"verdicts are nbeval.results.statistics.arena.Verdict objects, got {type(v).__name__}"
            raise BadArgumentType(msg)
    models = tuple(sorted({v.first for v in rows} | {v.second for v in rows}))
    judges = tuple(sorted({v.judge for v in rows}))
    model, judge = {m: i for i, m in enumerate(models)}, {j: i for i, j in enumerate(judges)}
    outcome = {o: i for i, o in enumerate(OUTCOMES)}
    # cases sorted by id, not in order of appearance: the bootstrap draws cases by index, so the
    # intervals would otherwise depend on the order the verdicts came in (issue 43, a property test)
    cases = {c: i for i, c in enumerate(sorted({v.case_id for v in rows}))}
    table = [(cases[v.case_id], judge[v.judge], model[v.first], model[v.second]) for v in rows]
    columns = np.array(table, dtype=np.int64).reshape(len(rows), 4).T
    outcomes = np.array([outcome[v.outcome] for v in rows], dtype=np.int64)
    return _Encoded(models, judges, len(cases), columns[0], columns[1], columns[2], columns[3], outcomes)


def _percentiles(samples: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    """Per column, the percentile interval of the resamples' values (NaNs left out, ±inf kept)."""
    n_columns = samples.shape[1]
    if samples.shape[0] == 0 or n_columns == 0:
        return np.full(n_columns, np.nan), np.full(n_columns, np.nan)
    clipped, probabilities = np.clip(samples, -_HUGE, _HUGE), [(1 - level) / 2, (1 + level) / 2]
    if not np.isnan(clipped).any():  # np.quantile is much faster than nanquantile, which goes column by column
        lo, hi = np.quantile(clipped, probabilities, axis=0)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a column without any value: its interval is NaN
            lo, hi = np.nanquantile(clipped, probabilities, axis=0)
    back = [np.where(q >= _HUGE / 10, np.inf, np.where(q <= -_HUGE / 10, -np.inf, q)) for q in (lo, hi)]
    return back[0], back[1]


@dataclass(frozen=True, eq=False)
class _Tallies:
    """Counts read straight from the verdicts, no model involved."""

    models: IntArray  # per model: wins, losses, ties
    pairs: IntArray  # per compared pair: lo, hi (model indices, lo < hi), wins_lo, wins_hi, ties, inconsistent
    judges: IntArray  # per judge: first, second, ties, (case, pair) asked in both orders, of those agreeing


def _tallies(enc: _Encoded) -> _Tallies:
    nm, nj = len(enc.models), len(enc.judges)
    won, lost, tied = (enc.outcome == k for k in range(3))

    def count(index: IntArray, mask: Any, size: int) -> IntArray:
        return np.bincount(index[mask], minlength=size).astype(np.int64)

    lo, hi = np.minimum(enc.first, enc.second), np.maximum(enc.first, enc.second)
    lo_first = enc.first == lo
    winner = np.where(tied, 2, np.where(won == lo_first, 0, 1))  # without slots: 0 lo, 1 hi, 2 a tie
    pair_codes, pair = np.unique(lo * nm + hi, return_inverse=True)
    n_pairs = max(pair_codes.size, 1)
    group_codes, group = np.unique((enc.case * nj + enc.judge) * n_pairs + pair, return_inverse=True)
    n_groups = group_codes.size
    both = (count(group, lo_first, n_groups) > 0) & (count(group, ~lo_first, n_groups) > 0)
    agree = (np.bincount(group * 3 + winner, minlength=3 * n_groups).reshape(n_groups, 3) > 0).sum(axis=1) == 1
    group_pair, group_judge = group_codes % n_pairs, group_codes // n_pairs % max(nj, 1)
    model = [count(enc.first, w, nm) + count(enc.second, s, nm) for w, s in ((won, lost), (lost, won), (tied, tied))]
    pairs = [pair_codes // max(nm, 1), pair_codes % max(nm, 1), count(pair, winner == 0, pair_codes.size)]
    pairs += [count(pair, winner == 1, pair_codes.size), count(pair, tied, pair_codes.size)]
    pairs += [count(group_pair, both & ~agree, pair_codes.size)]
    judges = [count(enc.judge, won, nj), count(enc.judge, lost, nj), count(enc.judge, tied, nj)]
    judges += [count(group_judge, both, nj), count(group_judge, both & agree, nj)]
    return _Tallies(*(np.stack(parts, axis=1).astype(np.int64) for parts in (model, pairs, judges)))


def _ratio(top: ArrayLike, bottom: ArrayLike) -> FloatArray:
    """``top / bottom``, NaN where ``bottom`` is 0."""
    num, den = np.asarray(top, dtype=np.float64), np.asarray(bottom, dtype=np.float64)
    return np.asarray(np.divide(num, den, out=np.full(num.shape, np.nan), where=den > 0), dtype=np.float64)


def _sigmoid(x: FloatArray) -> FloatArray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)), dtype=np.float64)


def _frame(columns: Sequence[str], values: Sequence[Any], order: Any = slice(None)) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({name: np.asarray(v)[order] for name, v in zip(columns, values, strict=True)})


@dataclass(frozen=True, eq=False)
class ArenaFit:
    """The fitted arena and its bootstrap, from which the three tables are read.

    Reading them is cheap: the bootstrap is run once, by :func:`fit_arena`.
    """

    models: tuple[str, ...]
    """The model keys, sorted: the order of :attr:`theta` and of the columns of :attr:`boot_theta`."""
    judges: tuple[str, ...]
    """The judges, sorted: the order of :attr:`beta`."""
    theta: FloatArray
    """Each model's strength θ (mean zero); NaN for a model no verdict informs."""
    beta: FloatArray
    """Each judge's first-slot term β (log-odds; above 0 favours the first slot)."""
    boot_theta: FloatArray
    """θ refitted on each bootstrap resample (resamples × models)."""
    boot_beta: FloatArray
    """β refitted on each bootstrap resample (resamples × judges)."""
    level: float
    """The confidence level of the intervals."""
    ridge: float
    """λ of the ridge the fit used."""
    tallies: _Tallies
    """Counts of the verdicts per model, pair and judge."""

    def __repr__(self) -> str:
        size = f"{len(self.models)} models, {len(self.judges)} judges, {self.boot_theta.shape[0]} resamples"
        return f"ArenaFit({size}, level={self.level})"

    @property
    def ratings(self) -> FloatArray:
        """Each model's rating on the Elo scale (in the order of :attr:`models`)."""
        return elo_rating(self.theta)

    def _ranking(self) -> IntArray:
        """Model indices best first (highest rating; equal ratings by model key, no rating last).

        Ratings are compared to 1e-6 Elo: ratings equal by symmetry come out of the fit a few units in the last place
        apart, which would otherwise order them by rounding noise.
        """
        rounded = np.round(self.ratings, 6)
        return np.asarray(np.lexsort((np.array(self.models, dtype=object), -rounded)), dtype=np.int64)

    def arena_table(self) -> pd.DataFrame:
        """One row per model, best first: ``model_key, rating, rating_lo, rating_hi, wins, losses, ties, n, win_rate``.

        The counts are of the single-order verdicts the model was in; ``win_rate`` is ``(wins + ties/2) / n``, with the
        first-slot bias left in.
        """
        lo, hi = _percentiles(elo_rating(self.boot_theta), self.level)
        wins, losses, ties = self.tallies.models.T
        n = wins + losses + ties
        values = [np.array(self.models, dtype=object), self.ratings, lo, hi, wins, losses, ties, n]
        return _frame(ARENA_COLUMNS, [*values, _ratio(wins + 0.5 * ties, n)], self._ranking())

    def head_to_head_table(self) -> pd.DataFrame:
        """One row per pair of models that was compared, the better-rated first.

        Columns ``model_a, model_b, p_a_beats_b, lo, hi, wins_a, wins_b, ties, inconsistent, n``;
        ``model_a`` is the better-rated of the two and rows follow the ranking. ``p_a_beats_b`` is
        ``σ(θ_a − θ_b)`` (no slot preference); the counts are single-order verdicts of the pair by
        any judge; ``inconsistent`` counts the (case, judge) that asked the pair in both orders and
        whose verdicts did not all name the same winner (or all tie).
        """
        pair_lo, pair_hi, wins_lo, wins_hi, ties, inconsistent = self.tallies.pairs.T
        rank = np.empty(len(self.models), dtype=np.int64)
        rank[self._ranking()] = np.arange(len(self.models))
        swap = rank[pair_lo] > rank[pair_hi]
        a, b = np.where(swap, pair_hi, pair_lo), np.where(swap, pair_lo, pair_hi)
        wins_a, wins_b = np.where(swap, wins_hi, wins_lo), np.where(swap, wins_lo, wins_hi)
        lo, hi = _percentiles(_sigmoid(self.boot_theta[:, a] - self.boot_theta[:, b]), self.level)
        names, p = np.array(self.models, dtype=object), _sigmoid(self.theta[a] - self.theta[b])
        values = [names[a], names[b], p, lo, hi, wins_a, wins_b, ties, inconsistent, wins_a + wins_b + ties]
        return _frame(HEAD_TO_HEAD_COLUMNS, values, np.lexsort((rank[b], rank[a])))

    def position_bias_table(self) -> pd.DataFrame:
        """One row per judge: ``judge, first_slot_rate, beta, beta_lo, beta_hi, consistency, n``.

        ``first_slot_rate`` is the share of its decisive verdicts that chose the first slot (NaN without any); ``beta``
        the fitted first-slot log-odds; ``consistency`` the share of the (case, pair) it asked in both orders where its
        verdicts agreed (NaN without any).
        """
        first, second, ties, both_orders, agreeing = self.tallies.judges.T
        lo, hi = _percentiles(self.boot_beta, self.level)
        values = [np.array(self.judges, dtype=object), _ratio(first, first + second), self.beta, lo, hi]
        return _frame(POSITION_BIAS_COLUMNS, [*values, _ratio(agreeing, both_orders), first + second + ties])


def fit_arena(
    verdicts: Iterable[Verdict],
    *,
    n_boot: int = ARENA_RESAMPLES,
    seed: int = ARENA_SEED,
    level: float = 0.95,
    ridge: float = RIDGE,
) -> ArenaFit:
    """Fit the arena model to ``verdicts`` and bootstrap it over test cases.

    See the module's description for the model. The bootstrap draws test cases ``n_boot`` times (0:
    no intervals, NaN). ``ridge`` is λ of the penalty on θ; 0 gives the plain maximum-likelihood
    fit, which exists only when every model both won and lost (a tie is both) against models linked
    to the rest: otherwise :class:`BadParameter`.
    """
    check_level(level)
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 0:
        msg = f"n_boot is a number of resamples (0 or more), got {n_boot!r}"
        raise BadParameter(msg)
    if isinstance(ridge, bool) or not isinstance(ridge, (int, float)) or not 0 <= ridge < math.inf:
        msg = f"ridge is a penalty weight, 0 or more, got {ridge!r}"
        raise BadParameter(msg)
    enc = _encode(verdicts)
    nm, nj = len(enc.models), len(enc.judges)
    params, boot = np.zeros((1, 0)), np.zeros((int(n_boot), 0))
    if enc.case.size:
        cells = make_cells(nm, nj, enc.n_cases, enc.case, enc.judge, enc.first, enc.second, enc.outcome)
        y, n = cells.totals()
        params = fit_batch(np.zeros((1, nm + nj)), y, n, cells, float(ridge))
        boot = bootstrap(params[0], cells, int(n_boot), seed, float(ridge))
    theta, beta, tallies = params[0, :nm], params[0, nm:], _tallies(enc)
    return ArenaFit(enc.models, enc.judges, theta, beta, boot[:, :nm], boot[:, nm:], level, float(ridge), tallies)


def arena_table(
    verdicts: Iterable[Verdict], *, n_boot: int = ARENA_RESAMPLES, seed: int = ARENA_SEED, level: float = 0.95
) -> pd.DataFrame:
    """One row per model, best first, with its Elo-scale rating and bootstrap interval (:meth:`ArenaFit.arena_table`).

    To read several tables, call :func:`fit_arena` once.
    """
    return fit_arena(verdicts, n_boot=n_boot, seed=seed, level=level).arena_table()


def head_to_head_table(
    verdicts: Iterable[Verdict], *, n_boot: int = ARENA_RESAMPLES, seed: int = ARENA_SEED, level: float = 0.95
) -> pd.DataFrame:
    """One row per compared pair: the chance of a win with no slot preference, with its interval.

    See :meth:`ArenaFit.head_to_head_table`.
    """
    return fit_arena(verdicts, n_boot=n_boot, seed=seed, level=level).head_to_head_table()


def position_bias_table(
    verdicts: Iterable[Verdict], *, n_boot: int = ARENA_RESAMPLES, seed: int = ARENA_SEED, level: float = 0.95
) -> pd.DataFrame:
    """One row per judge: its first-slot rate, fitted β with interval, and order consistency.

    See :meth:`ArenaFit.position_bias_table`.
    """
    return fit_arena(verdicts, n_boot=n_boot, seed=seed, level=level).position_bias_table()
