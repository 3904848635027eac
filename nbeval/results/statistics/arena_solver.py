"""The arena fit's numerical core: penalised Bradley–Terry with a first-slot term, by Newton's method.

:mod:`nbeval.results.statistics.arena` states the model; this module fits it. The verdicts arrive reduced to
(judge, first, second) *cells*, per test case a cell's first-slot score ``y`` (wins plus half the
ties) and verdict count ``n``. The linear predictor of a cell is
``θ_first − θ_second + β_judge``, so the gradient and Hessian are sums over cells scattered onto
three parameters each. They are built with :func:`numpy.bincount` on those indices, never with a
cells × parameters design matrix or a per-cell outer product: memory is
``resamples × (cells + parameters²)``, so 500 models fit in a few hundred MB, where the outer
products alone (cells × parameters², about models⁴) took 14 GB at 200 models.

A parameter no verdict can move is held where it starts (a term added to its diagonal): the β of
a judge that always chose one slot (its verdicts are then set aside, see :func:`fit_batch`) and the
θ of a model that only such verdicts, or none, compare. Such a θ is reported as NaN: no verdict
informs it, so it has no value and no interval.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from nbeval.errors import BadParameter

if TYPE_CHECKING:
    from numpy.typing import NDArray

    FloatArray = NDArray[np.float64]
    IntArray = NDArray[np.int64]
    BoolArray = NDArray[np.bool_]

__all__ = ["BATCH_FLOATS", "DENSE_FLOATS", "Cells", "bootstrap", "fit_batch", "make_cells"]

# A quadratic penalty on the sum of θ: the likelihood ignores it and the ridge already puts the
# optimum at Σθ = 0, so it moves nothing, but it keeps Newton's matrix invertible with λ = 0.
_SHIFT_PENALTY = 1.0
_STEP_TOLERANCE = 1e-10
_MAX_ITERATIONS = 100
_MAX_HALVINGS = 50
#: Cap on the floats of one batch of resamples (resamples × the largest of cases, cells, parameters²).
BATCH_FLOATS = 4_000_000
#: The largest cases × cells table kept dense (32 MB); a larger one is kept as its entries only.
DENSE_FLOATS = 4_000_000


@dataclass(frozen=True, eq=False)
class Cells:
    """Verdicts reduced to (judge, first, second) cells, which hold all the likelihood needs.

    Per case, each cell's first-slot score ``y`` (wins plus half the ties) and verdict count ``n``,
    which are all the likelihood needs, kept as entries for the (case, cell) pairs that have
    verdicts.
    """

    judge: IntArray
    first: IntArray
    second: IntArray
    entry_case: IntArray  # per (case, cell) that has verdicts: the case, the cell, y and n
    entry_cell: IntArray
    entry_y: FloatArray
    entry_n: FloatArray
    n_models: int
    n_judges: int
    n_cases: int
    n_cells: int

    dense_y: FloatArray | None = None
    """``y`` as a cases × cells table when that is small (:data:`DENSE_FLOATS`): a matrix product
    is then much faster than scattering the entries."""
    dense_n: FloatArray | None = None

    @property
    def sparse(self) -> bool:
        """Whether the cells are kept only as sparse entries (a cases × cells table would pass :data:`DENSE_FLOATS`)."""
        return self.dense_y is None

    def totals(self, weights: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """Sum each cell's ``y`` and ``n`` over the whole data, or per resample of test cases.

        One row for the whole data, or one per row of case ``weights`` (resamples × cases: how often
        each case was drawn).
        """
        if weights is None:
            weights = np.ones((1, self.n_cases))
        if self.dense_y is not None and self.dense_n is not None:
            return weights @ self.dense_y, weights @ self.dense_n
        drawn = weights[:, self.entry_case]
        y = _scatter(drawn * self.entry_y, self.entry_cell, self.n_cells)
        return y, _scatter(drawn * self.entry_n, self.entry_cell, self.n_cells)

    @property
    def n_params(self) -> int:
        """How many parameters the fit has: one per model and one per judge."""
        return self.n_models + self.n_judges


def make_cells(
    n_models: int,
    n_judges: int,
    n_cases: int,
    case: IntArray,
    judge: IntArray,
    first: IntArray,
    second: IntArray,
    outcome: IntArray,
) -> Cells:
    """The cells of verdicts given as index arrays (``outcome``: 0 first, 1 second, 2 a tie)."""
    codes, cell = np.unique((judge * n_models + first) * n_models + second, return_inverse=True)
    n_cells = codes.size
    cell_judge, rest = np.divmod(codes, n_models * n_models)
    cell_first, cell_second = np.divmod(rest, n_models)
    # each case's cells as a sparse list of entries: a case holds few of the cells (500 models
    # have 249,500 ordered pairs), and a dense cases × cells table was most of the fit's memory
    entries, entry = np.unique(case * n_cells + cell, return_inverse=True)
    entry_case, entry_cell = np.divmod(entries, n_cells)
    entry_y = np.bincount(entry, np.array([1.0, 0.0, 0.5])[outcome], minlength=entries.size).astype(np.float64)
    entry_n = np.bincount(entry, minlength=entries.size).astype(np.float64)
    as_int = [np.asarray(a, dtype=np.int64) for a in (cell_judge, cell_first, cell_second, entry_case, entry_cell)]
    judges, firsts, seconds, cases, cells = as_int
    made = Cells(judges, firsts, seconds, cases, cells, entry_y, entry_n, n_models, n_judges, n_cases, n_cells)
    if n_cases * n_cells > DENSE_FLOATS:
        return made
    dense_y, dense_n = np.zeros((n_cases, n_cells)), np.zeros((n_cases, n_cells))
    dense_y[cases, cells], dense_n[cases, cells] = entry_y, entry_n  # each (case, cell) once
    return replace(made, dense_y=dense_y, dense_n=dense_n)


def _penalty(n_models: int, n_params: int, ridge: float) -> FloatArray:
    """The penalty's (constant) Hessian: the ridge on each θ, the shift penalty on their sum."""
    matrix = np.zeros((n_params, n_params))
    matrix[:n_models, :n_models] = _SHIFT_PENALTY
    matrix[np.arange(n_models), np.arange(n_models)] += ridge
    return matrix


def _eta(params: FloatArray, cells: Cells) -> FloatArray:
    """Each cell's linear predictor ``θ_first − θ_second + β_judge`` (rows × cells)."""
    beta = params[:, cells.n_models :]
    return np.asarray(params[:, cells.first] - params[:, cells.second] + beta[:, cells.judge], dtype=np.float64)


def _scatter(values: FloatArray, index: IntArray, size: int) -> FloatArray:
    """Per row of ``values`` (rows × cells), the sums of its cells grouped by ``index`` (size bins)."""
    rows = values.shape[0]
    flat = (np.arange(rows, dtype=np.int64)[:, None] * size + index[None, :]).ravel()
    sums = np.bincount(flat, values.ravel(), minlength=rows * size).reshape(rows, size)
    return np.asarray(sums, dtype=np.float64)


def _gradient(residual: FloatArray, cells: Cells) -> FloatArray:
    """The log-likelihood's gradient from each cell's ``y − n·p`` (rows × parameters)."""
    nm, nj = cells.n_models, cells.n_judges
    theta = _scatter(residual, cells.first, nm) - _scatter(residual, cells.second, nm)
    return np.concatenate([theta, _scatter(residual, cells.judge, nj)], axis=1)


def _hessian(weight: FloatArray, cells: Cells) -> FloatArray:
    """Build the negative log-likelihood's Hessian ``Dᵀ·diag(w)·D`` without the design ``D``.

    It is built from each cell's ``w = n·p·(1 − p)``: a cell adds ``w`` at (first, first), (second,
    second), (β, β), (first, β) and ``−w`` at (first, second), (second, β), and the symmetric
    places.
    """
    nm, nj, rows = cells.n_models, cells.n_judges, weight.shape[0]
    pair = _scatter(weight, cells.first * nm + cells.second, nm * nm).reshape(rows, nm, nm)
    both = pair + pair.transpose(0, 2, 1)
    hessian = np.zeros((rows, nm + nj, nm + nj))
    hessian[:, :nm, :nm] = -both
    hessian[:, np.arange(nm), np.arange(nm)] = both.sum(axis=2)
    cross = _scatter(weight, cells.first * nj + cells.judge, nm * nj) - _scatter(
        weight, cells.second * nj + cells.judge, nm * nj
    )
    cross = cross.reshape(rows, nm, nj)
    hessian[:, :nm, nm:] = cross
    hessian[:, nm:, :nm] = cross.transpose(0, 2, 1)
    hessian[:, nm + np.arange(nj), nm + np.arange(nj)] = _scatter(weight, cells.judge, nj)
    return hessian


def _objective(params: FloatArray, y: FloatArray, n: FloatArray, cells: Cells, penalty: FloatArray) -> FloatArray:
    """The penalised log-likelihood of each row of ``params`` (one row per resample)."""
    eta = _eta(params, cells)
    loglik = (y * eta - n * np.logaddexp(0.0, eta)).sum(axis=1)
    return np.asarray(loglik - 0.5 * np.einsum("bp,pq,bq->b", params, penalty, params), dtype=np.float64)


def _newton(
    params: FloatArray, y: FloatArray, n: FloatArray, cells: Cells, penalty: FloatArray, frozen: FloatArray
) -> FloatArray:
    """Maximise the penalised likelihood of each row from ``params``.

    ``frozen`` (rows × parameters, 1 where a parameter has no data to move it) marks the parameters
    held where they start.
    """
    params = params.copy()
    diagonal = np.arange(params.shape[1])
    active = np.arange(params.shape[0])
    for _ in range(_MAX_ITERATIONS):
        if active.size == 0:
            return params
        at, ya, na = params[active], y[active], n[active]
        p = 1.0 / (1.0 + np.exp(-_eta(at, cells)))
        # a held parameter's row and column are the identity's and its gradient 0, so its step is
        # exactly 0 (the ridge alone would pull a held θ, and slowly through the added diagonal)
        free = 1.0 - frozen[active]
        gradient = (_gradient(ya - na * p, cells) - at @ penalty) * free
        hessian = (_hessian(na * p * (1.0 - p), cells) + penalty) * free[:, :, None] * free[:, None, :]
        hessian[:, diagonal, diagonal] += frozen[active]
        try:
            step = np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            msg = "the arena fit is not identified: with ridge=0 every model needs comparisons linking it to the others"
            raise BadParameter(msg) from None
        before, scale = _objective(at, ya, na, cells, penalty), np.ones(active.size)
        for _ in range(_MAX_HALVINGS):
            after = _objective(at + scale[:, None] * step, ya, na, cells, penalty)
            worse = after < before - 1e-12 * (1.0 + np.abs(before))
            if not worse.any():
                break
            scale[worse] /= 2
        moved = scale[:, None] * step
        params[active] = at + moved
        active = active[np.abs(moved).max(axis=1) >= _STEP_TOLERANCE]
    if active.size:
        msg = "the arena fit did not converge; with ridge=0 a model that won or lost every comparison has no finite θ"
        raise BadParameter(msg)
    return params


def fit_batch(start: FloatArray, y: FloatArray, n: FloatArray, cells: Cells, ridge: float) -> FloatArray:
    """Fit each row of ``y``/``n`` (per-cell totals of one data set).

    β of a judge that always chose the first slot is +inf, always the second −inf, without verdicts
    NaN; θ of a model that no remaining verdict compares is NaN (nothing informs it).
    """
    nm, nj = cells.n_models, cells.n_judges
    judge_y, judge_n = _scatter(y, cells.judge, nj), _scatter(n, cells.judge, nj)
    one_slot = (judge_n == 0) | (judge_y <= 0) | (judge_y >= judge_n)
    # such a judge's β runs off to ±inf, where its verdicts fit exactly and say nothing about θ
    dropped = one_slot[:, cells.judge]
    y, n = np.where(dropped, 0.0, y), np.where(dropped, 0.0, n)
    informed = (_scatter(n, cells.first, nm) + _scatter(n, cells.second, nm)) > 0
    frozen = np.concatenate([~informed, one_slot], axis=1).astype(np.float64)
    # a held θ sits at 0, so the penalty on Σθ sees only the informed θ (as if the model were absent)
    start = np.where(np.isfinite(start) & (frozen == 0), start, 0.0)
    params = _newton(start, y, n, cells, _penalty(nm, nm + nj, ridge), frozen)
    theta, beta = params[:, :nm], params[:, nm:]
    theta[~informed] = np.nan
    beta[one_slot] = np.where(judge_n == 0, np.nan, np.where(judge_y <= 0, -np.inf, np.inf))[one_slot]
    return params


def bootstrap(full: FloatArray, cells: Cells, n_boot: int, seed: int, ridge: float) -> FloatArray:
    """Refit ``n_boot`` times on test cases drawn with replacement, warm-started from ``full``.

    The result is resamples × parameters; all resamples of a batch are fitted together.
    """
    n_cases = cells.n_cases
    out = np.empty((n_boot, full.size))
    rng = np.random.default_rng(seed)
    entries = cells.entry_case.size if cells.sparse else 0
    batch = max(1, BATCH_FLOATS // max(n_cases, cells.n_cells, entries, full.size * full.size))
    for begin in range(0, n_boot, batch):
        size = min(batch, n_boot - begin)
        drawn = rng.integers(0, n_cases, size=(size, n_cases)) + n_cases * np.arange(size)[:, None]
        weights = np.bincount(drawn.ravel(), minlength=size * n_cases).reshape(size, n_cases).astype(np.float64)
        start = np.repeat(full[None, :], size, axis=0)
        y, n = cells.totals(weights)
        out[begin : begin + size] = fit_batch(start, y, n, cells, ridge)
    return out
