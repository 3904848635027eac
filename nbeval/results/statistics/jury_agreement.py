"""How well the judges of a jury agree with one another, in numpy alone.

A jury is several judges ("jurors") rating the same rows ("units"). The input of every function
here is a matrix ``values`` of shape ``(units, jurors)``: floats, with NaN where a juror gave no
value (its reply could not be parsed, or the call failed). The level of measurement says how two
values differ:

* ``"nominal"``: verdicts (yes/no, pass/fail, or categories coded as numbers). Two values either
  agree or not.
* ``"interval"``: scores. Two values differ by the square of their distance.

Statistics:

* :func:`krippendorff_alpha`: Krippendorff's alpha, computed from its definition (the coincidence
  matrix of values within units). Missing values are allowed: a unit counts when at least two
  jurors rated it. 1 is perfect agreement, 0 agreement no better than chance.
* :func:`alpha_interval`: a percentile bootstrap interval of alpha, resampling units.
* :func:`fleiss_kappa`: Fleiss' kappa for verdicts, over the units every juror rated.
* :func:`cohen_kappa_pairs`: Cohen's kappa of each pair of jurors over the units both rated.
* :func:`disagreement`: how much the jurors disagree on each unit, to sort cases by it.
* :func:`jury_agreement_of`: all of the above in one :class:`JuryAgreement`.

Degenerate cases: a matrix with fewer than two juror columns raises ValueError (a jury needs at
least two jurors). Where a statistic has no meaning it is NaN, never an exception: no unit rated
by two jurors (for instance every value missing), or no variation at all (every value the same
category or score, so chance agreement is already perfect). :class:`JuryAgreement` says why in
``alpha_note``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np

from nbeval.errors import BadParameter
from nbeval.results.statistics.stats import check_level

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pandas as pd

__all__ = [
    "LEVELS",
    "FleissKappa",
    "JuryAgreement",
    "Level",
    "PairAgreement",
    "alpha_interval",
    "cohen_kappa_pairs",
    "disagreement",
    "fleiss_kappa",
    "jury_agreement_of",
    "krippendorff_alpha",
]

#: A level of measurement: categories (nominal) or numbers whose differences count (interval).
Level = Literal["nominal", "interval"]
#: The levels of measurement the functions know.
LEVELS: tuple[str, ...] = ("nominal", "interval")
_NAN = float("nan")
# The bootstrap builds a (resamples x units) weight matrix a block of resamples at a time, and
# counts categories per unit in a dense (units x categories) table up to this many cells.
_BLOCK_CELLS = 4_000_000
_DENSE_CELLS = 5_000_000


class FleissKappa(NamedTuple):
    """Fleiss' kappa and the number of units it was computed over."""

    kappa: float
    units: int


class PairAgreement(NamedTuple):
    """The agreement of two jurors over the units both rated.

    ``kappa`` is Cohen's kappa for verdicts; in a :class:`JuryAgreement` of scores (interval
    level) it holds the pair's Krippendorff alpha instead (see ``pairwise_statistic``).
    """

    juror_a: str
    juror_b: str
    kappa: float
    n: int


def _matrix(values: Any) -> np.ndarray:
    """``values`` as a float (units, jurors) matrix; ValueError unless it has two juror columns."""
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 2:
        msg = f"jury values are a matrix of shape (units, jurors), got an array of shape {arr.shape}"
        raise BadParameter(msg)
    if arr.shape[1] < 2:
        msg = f"a jury needs at least two jurors (columns), got {arr.shape[1]}"
        raise BadParameter(msg)
    if np.isinf(arr).any():
        msg = "jury values must be finite numbers or NaN (missing); got an infinite value"
        raise BadParameter(msg)
    return arr


def _level(level: str) -> Level:
    if level == "nominal":
        return "nominal"
    if level == "interval":
        return "interval"
    msg = f"the level of measurement is 'nominal' (verdicts) or 'interval' (scores), got {level!r}"
    raise BadParameter(msg)


def _names(names: Sequence[str], jurors: int) -> list[str]:
    out = [str(n) for n in names]
    if len(out) != jurors:
        msg = f"{len(out)} juror names for {jurors} juror columns"
        raise BadParameter(msg)
    return out


def _disagreeing_pairs(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per unit: how many pairs of jurors both rated it, and how many of them differ."""
    valid = ~np.isnan(arr)
    pairs = np.zeros(arr.shape[0])
    differ = np.zeros(arr.shape[0])
    for i, j in combinations(range(arr.shape[1]), 2):
        both = valid[:, i] & valid[:, j]
        pairs += both
        differ += both & (arr[:, i] != arr[:, j])
    return pairs, differ


class _UnitSums(NamedTuple):
    """Per pairable unit, the sums alpha is made of.

    With them a resample of units is a weighted sum of rows: ``table`` has the columns ``m`` (values
    in the unit), ``observed`` (its share of the observed disagreement) and then the parts of the
    expected disagreement (per-category counts, or the sum and sum of squares of the scores). With
    too many categories for a dense table, ``codes`` holds ``(unit of each value, category of each
    value, categories)``.
    """

    table: np.ndarray
    codes: tuple[np.ndarray, np.ndarray, int] | None


def _unit_sums(arr: np.ndarray, level: Level) -> _UnitSums:
    """The sums of the units with at least two values (the others do not count for alpha).

    Alpha is ``1 - (n - 1) * O / E`` with ``n`` the pairable values, ``O`` the sum of the units'
    observed disagreement and ``E`` the expected one:

    * nominal: unit ``u`` adds ``2 * d_u / (m_u - 1)`` to ``O``, with ``d_u`` its pairs of
      different values; ``E = n**2 - sum_c n_c**2`` over the categories ``c``.
    * interval: unit ``u`` adds ``2 * m_u * ss_u / (m_u - 1)`` with ``ss_u`` the sum of squares of
      its values around their mean; ``E = 2 * (n * S2 - S1**2)`` with ``S1, S2`` the sum and sum
      of squares of all pairable values.

    Both are the coincidence-matrix definition (Krippendorff 2011) rearranged into sums.
    """
    valid = ~np.isnan(arr)
    m_all = valid.sum(axis=1)
    rows = arr[m_all >= 2]
    m = m_all[m_all >= 2].astype(float)
    if rows.shape[0] == 0:
        return _UnitSums(np.zeros((0, 2)), None)
    if level == "nominal":
        _, differ = _disagreeing_pairs(rows)
        observed = 2 * differ / (m - 1)
        unit_of_value, juror = np.nonzero(~np.isnan(rows))
        cats, codes = np.unique(rows[unit_of_value, juror], return_inverse=True)
        if rows.shape[0] * cats.size <= _DENSE_CELLS:
            counts = np.bincount(unit_of_value * cats.size + codes, minlength=rows.shape[0] * cats.size)
            return _UnitSums(np.column_stack([m, observed, counts.reshape(-1, cats.size)]), None)
        return _UnitSums(np.column_stack([m, observed]), (unit_of_value, codes, int(cats.size)))
    centred = rows - np.nanmean(rows)  # the expected term is a difference of sums: centre first
    unit_mean = np.nanmean(centred, axis=1, keepdims=True)
    ss = np.nansum((centred - unit_mean) ** 2, axis=1)
    parts = np.column_stack([np.nansum(centred, axis=1), np.nansum(centred**2, axis=1)])
    return _UnitSums(np.column_stack([m, 2 * m * ss / (m - 1), parts]), None)


def _alphas(sums: _UnitSums, weights: np.ndarray, level: Level) -> np.ndarray:
    """Compute alpha for each row of ``weights`` (how many times each pairable unit is drawn).

    NaN where it is undefined (no pairable value, or no variation: ``E`` is 0).
    """
    totals = weights @ sums.table
    n, observed = totals[:, 0], totals[:, 1]
    if level == "interval":
        s1, s2 = totals[:, 2], totals[:, 3]
        expected = 2 * (n * s2 - s1**2)
        flat = expected <= 1e-12 * np.maximum(2 * n * s2, 1e-300)  # rounding where all values are equal
    else:
        if sums.codes is None:
            per_category = totals[:, 2:]
        else:
            unit_of_value, codes, n_cats = sums.codes
            per_category = np.stack([np.bincount(codes, weights=w[unit_of_value], minlength=n_cats) for w in weights])
        expected = n**2 - (per_category**2).sum(axis=1)
        flat = expected <= 0.5  # counts are whole numbers: 0 means a single category
    out = np.full(weights.shape[0], _NAN)
    ok = ~flat & (n >= 2)
    out[ok] = 1 - (n[ok] - 1) * observed[ok] / expected[ok]
    return out


def _alpha_and_note(arr: np.ndarray, level: Level) -> tuple[float, str | None]:
    sums = _unit_sums(arr, level)
    if sums.table.shape[0] == 0:
        return _NAN, "no unit has values from two jurors, so there is nothing to compare"
    alpha = float(_alphas(sums, np.ones((1, sums.table.shape[0])), level)[0])
    if math.isnan(alpha):
        what = "verdict" if level == "nominal" else "score"
        return _NAN, f"every juror gave the same {what} on every unit, so agreement beyond chance is undefined"
    return alpha, None


def krippendorff_alpha(values: Any, level: str) -> float:
    """Krippendorff's alpha of a jury: ``1 - observed / expected disagreement``.

    ``values`` is a ``(units, jurors)`` matrix with NaN for a missing value; ``level`` is
    ``"nominal"`` (verdicts: only equal or not) or ``"interval"`` (scores: squared difference).
    As the definition says, units with fewer than two values are left out. 1 means perfect
    agreement, 0 agreement at chance level, below 0 systematic disagreement.

    NaN when alpha is undefined: no unit has two values (for instance all are missing), or there
    is no variation (every value is the same verdict or score). ValueError for fewer than two
    juror columns or another level.
    """
    return _alpha_and_note(_matrix(values), _level(level))[0]


def alpha_interval(
    values: Any, level: str, *, n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, float]:
    """A percentile bootstrap interval of Krippendorff's alpha.

    Draws ``n_boot`` resamples of the units with replacement (from a generator seeded with
    ``seed``, so the same data gives the same interval), computes alpha on each and returns its
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles. Only the units that count for
    alpha (two values or more) are resampled. A resample where alpha is undefined (all its values
    the same) is left out. ``(nan, nan)`` when alpha itself is undefined or ``n_boot`` is 0.

    Each resample is a row of weights (how often each unit was drawn) and alpha a weighted sum,
    so the work is a few matrix products: 1,000 resamples of 10,000 units take well under a
    second.
    """
    arr, lev = _matrix(values), _level(level)
    check_level(confidence)
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 0:
        msg = f"n_boot is a whole number of resamples (0 for no interval), got {n_boot!r}"
        raise BadParameter(msg)
    sums = _unit_sums(arr, lev)
    units = sums.table.shape[0]
    if n_boot == 0 or math.isnan(_alpha_and_note(arr, lev)[0]):
        return _NAN, _NAN
    rng = np.random.default_rng(seed)
    alphas = np.empty(n_boot)
    block = max(1, _BLOCK_CELLS // units)
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        draws = rng.integers(0, units, size=(stop - start, units))
        cells = (np.arange(stop - start)[:, None] * units + draws).ravel()
        weights = np.bincount(cells, minlength=(stop - start) * units).reshape(stop - start, units)
        alphas[start:stop] = _alphas(sums, weights.astype(float), lev)
    alphas = alphas[~np.isnan(alphas)]
    if alphas.size == 0:
        return _NAN, _NAN
    lo, hi = np.quantile(alphas, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(lo), float(hi)


def _kappa_of_counts(table: np.ndarray) -> float:
    """Cohen's kappa of a square confusion table of whole counts.

    NaN without rows or when chance agreement is certain.
    """
    n = int(table.sum())
    chance = int((table.sum(axis=1) * table.sum(axis=0)).sum())
    if n == 0 or chance == n * n:
        return _NAN
    p_o = np.trace(table) / n
    p_e = chance / (n * n)
    return float((p_o - p_e) / (1 - p_e))


def cohen_kappa_pairs(values: Any, names: Sequence[str]) -> list[PairAgreement]:
    """Cohen's kappa of every pair of jurors (in column order), over the units both rated.

    Values are verdicts (nominal): two values agree only when equal. Each entry is
    ``(juror_a, juror_b, kappa, n)`` with ``n`` the units both rated. Kappa is NaN when ``n`` is 0
    or when both jurors always gave the same one verdict (chance agreement is then certain).
    """
    arr = _matrix(values)
    labels = _names(names, arr.shape[1])
    out = []
    for i, j in combinations(range(arr.shape[1]), 2):
        both = ~np.isnan(arr[:, i]) & ~np.isnan(arr[:, j])
        a, b = arr[both, i], arr[both, j]
        cats, codes = np.unique(np.concatenate([a, b]), return_inverse=True)
        k = cats.size
        table = np.bincount(codes[: a.size] * k + codes[a.size :], minlength=k * k).reshape(k, k)
        out.append(PairAgreement(labels[i], labels[j], _kappa_of_counts(table), int(a.size)))
    return out


def fleiss_kappa(values: Any) -> FleissKappa:
    """Fleiss' kappa of a jury's verdicts (nominal), with the number of units it used.

    Fleiss' kappa needs the same number of ratings on every unit, so only the units rated by
    every juror count; units with a missing value are left out (``units`` says how many were
    used). Kappa is NaN when no unit was rated by all, or when every verdict is the same one
    (chance agreement is then certain).
    """
    arr = _matrix(values)
    full = arr[~np.isnan(arr).any(axis=1)]
    units, raters = full.shape
    if units == 0:
        return FleissKappa(_NAN, 0)
    cats, codes = np.unique(full, return_inverse=True)
    codes = codes.reshape(full.shape)
    counts = np.zeros((units, cats.size), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(units), raters), codes.ravel()), 1)
    totals = counts.sum(axis=0)
    if int((totals**2).sum()) == (units * raters) ** 2:
        return FleissKappa(_NAN, units)
    p_i = ((counts**2).sum(axis=1) - raters) / (raters * (raters - 1))
    p_bar = float(p_i.mean())
    p_e = float(((totals / (units * raters)) ** 2).sum())
    return FleissKappa((p_bar - p_e) / (1 - p_e), units)


def disagreement(values: Any, level: str) -> np.ndarray:
    """How much the jurors disagree on each unit, to sort cases by it (highest first).

    Nominal: the share of the pairs of jurors who rated the unit that gave different verdicts
    (0 all agree, 1 no two agree). Interval: the standard deviation of the jurors' scores (the
    population one, dividing by the number of values: scores 1 and 3 give 1.0). NaN for a unit
    with fewer than two values.
    """
    arr, lev = _matrix(values), _level(level)
    valid = ~np.isnan(arr)
    m = valid.sum(axis=1)
    out = np.full(arr.shape[0], _NAN)
    rated = m >= 2
    if lev == "nominal":
        pairs, differ = _disagreeing_pairs(arr[rated])
        out[rated] = differ / pairs
    else:
        out[rated] = np.nanstd(arr[rated], axis=1)
    return out


@dataclass(frozen=True)
class JuryAgreement:
    """How well a jury's jurors agree.

    Krippendorff's alpha with its bootstrap interval, Fleiss' kappa and the agreement of each pair.
    ``str()`` gives a summary in words; :meth:`to_frame` the pairwise table.
    """

    alpha: float
    """Krippendorff's alpha (1 perfect agreement, 0 chance level); NaN when undefined."""
    alpha_low: float
    """Lower end of the bootstrap interval of alpha; NaN when alpha is undefined."""
    alpha_high: float
    """Upper end of the bootstrap interval of alpha."""
    level: str
    """``"nominal"`` (verdicts) or ``"interval"`` (scores)."""
    fleiss_kappa: float | None
    """Fleiss' kappa over the units every juror rated; None for scores or when no unit was rated
    by every juror; NaN when every such verdict is the same."""
    fleiss_units: int
    """The units Fleiss' kappa was computed over (rated by every juror)."""
    pairwise: tuple[PairAgreement, ...]
    """``(juror_a, juror_b, kappa, n)`` for each pair of jurors; for scores the third value is
    the pair's Krippendorff alpha (see ``pairwise_statistic``)."""
    units: int
    """Rows in the matrix."""
    jurors: tuple[str, ...]
    """The jurors' names, one per column."""
    missing: int
    """Missing values (NaN cells): unparsed replies or failed calls."""
    pairable_units: int = 0
    """Units with values from at least two jurors: the ones alpha counts."""
    alpha_note: str | None = None
    """Why alpha is NaN, in words; None when it is defined."""
    confidence: float = 0.95
    """The confidence level of the interval."""
    repeated: tuple[tuple[str, ...], ...] = ()
    """Groups of jurors that are one judge named several times (``judge=[j, j, j]``): each was
    asked on its own, so their agreement is that judge's self-consistency (perfect by construction
    for a deterministic judge, e.g. a function or temperature 0), not agreement between judges."""

    @property
    def pairwise_statistic(self) -> str:
        """What the third value of each pair is: ``"kappa"`` (Cohen's) or ``"alpha"``."""
        return "kappa" if self.level == "nominal" else "alpha"

    def to_frame(self) -> pd.DataFrame:
        """Return the pairwise table: one row per pair of jurors.

        Columns ``juror_a, juror_b`` and ``kappa`` (verdicts) or ``alpha`` (scores), and ``n``
        (units both rated).
        """
        import pandas as pd

        columns = ["juror_a", "juror_b", self.pairwise_statistic, "n"]
        return pd.DataFrame([tuple(p) for p in self.pairwise], columns=columns)

    def __str__(self) -> str:
        names = ", ".join(self.jurors)
        lines = [
            f"Jury of {len(self.jurors)} jurors ({names}) on {self.units} units, "
            f"{self.missing} missing values; {self.pairable_units} units were rated by two jurors or more."
        ]
        what = "verdicts" if self.level == "nominal" else "scores"
        if math.isnan(self.alpha):
            lines.append(f"Krippendorff's alpha ({what}) is undefined: {self.alpha_note}.")
        else:
            interval = ""
            if not math.isnan(self.alpha_low):
                interval = f", {self.confidence:.0%} interval {self.alpha_low:.3f} to {self.alpha_high:.3f}"
            lines.append(f"Krippendorff's alpha ({what}) is {self.alpha:.3f}{interval}.")
        if self.fleiss_kappa is not None:
            lines.append(
                f"Fleiss' kappa is {self.fleiss_kappa:.3f} over the {self.fleiss_units} units every juror rated."
            )
        for group in self.repeated:
            lines.append(
                f"{', '.join(group)} are one judge asked {len(group)} times: their agreement is its "
                "self-consistency (perfect for a deterministic judge, e.g. at temperature 0), not "
                "agreement between judges."
            )
        known = [p for p in self.pairwise if not math.isnan(p.kappa)]
        if known:
            low = min(known, key=lambda p: p.kappa)
            high = max(known, key=lambda p: p.kappa)
            stat = "Cohen's kappa" if self.level == "nominal" else "alpha"
            lines.append(
                f"Pairwise {stat} ranges from {low.kappa:.3f} ({low.juror_a} and {low.juror_b}) "
                f"to {high.kappa:.3f} ({high.juror_a} and {high.juror_b})."
            )
        return "\n".join(lines)


def jury_agreement_of(
    values: Any,
    names: Sequence[str],
    level: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    repeated: Sequence[Sequence[str]] = (),
) -> JuryAgreement:
    """All the agreement statistics of a jury in one :class:`JuryAgreement`.

    ``values`` is the ``(units, jurors)`` matrix (NaN where a juror gave no value), ``names`` the
    jurors' names in column order, ``level`` ``"nominal"`` or ``"interval"``; ``n_boot``, ``seed``
    and ``confidence`` go to :func:`alpha_interval`. For verdicts the pairs carry Cohen's kappa;
    for scores, the pair's Krippendorff alpha (interval), and Fleiss' kappa is None. ``repeated``:
    groups of ``names`` that are one judge named several times (see ``JuryAgreement.repeated``).
    """
    arr, lev = _matrix(values), _level(level)
    labels = _names(names, arr.shape[1])
    alpha, note = _alpha_and_note(arr, lev)
    low, high = alpha_interval(arr, lev, n_boot=n_boot, seed=seed, confidence=confidence)
    fleiss: float | None = None
    fleiss_units = int((~np.isnan(arr).any(axis=1)).sum())
    if lev == "nominal":
        fk = fleiss_kappa(arr)
        fleiss = fk.kappa if fk.units else None
        pairs = cohen_kappa_pairs(arr, labels)
    else:
        pairs = []
        for i, j in combinations(range(arr.shape[1]), 2):
            both = int((~np.isnan(arr[:, i]) & ~np.isnan(arr[:, j])).sum())
            pair_alpha = _alpha_and_note(arr[:, [i, j]], lev)[0]
            pairs.append(PairAgreement(labels[i], labels[j], pair_alpha, both))
    return JuryAgreement(
        alpha=alpha,
        alpha_low=low,
        alpha_high=high,
        level=lev,
        fleiss_kappa=fleiss,
        fleiss_units=fleiss_units,
        pairwise=tuple(pairs),
        units=int(arr.shape[0]),
        jurors=tuple(labels),
        missing=int(np.isnan(arr).sum()),
        pairable_units=int(((~np.isnan(arr)).sum(axis=1) >= 2).sum()),
        alpha_note=note,
        confidence=confidence,
        repeated=_repeated(repeated, labels),
    )


def _repeated(groups: Sequence[Sequence[str]], labels: list[str]) -> tuple[tuple[str, ...], ...]:
    out = tuple(tuple(str(n) for n in g) for g in groups)
    unknown = sorted({n for g in out for n in g} - set(labels))
    if unknown:
        msg = f"repeated jurors {unknown} are not among the jurors {labels}"
        raise BadParameter(msg)
    return out
