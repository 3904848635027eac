"""How much of two runs a diff compared.

Per evaluator and model, the rows each run measured and the rows measured in both.

A diff's statistics are paired: only test cases measured in both runs count. Two runs on
different datasets, an after run whose every judge call failed, or a model that answered nothing
leave a comparison with no pair at all, and its statistics say nothing (no test, no regression).
:mod:`nbeval.results.runs.diff_gate` reads this table to fail a gate that compared nothing or far too
little.

Rows are counted on each evaluator's primary metric in each run (what the run's gate counts as
measured: not skipped, with a value), one per test case key, so a macro F1 with no row values still
counts the rows of its evaluator's accuracy. Scoring only: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COVERAGE_COLUMNS", "coverage_table", "empty_coverage"]

COVERAGE_COLUMNS = [
    *("evaluator", "model_key", "rows_before", "rows_after", "shared", "share"),
    *("N_before", "N_after", "unmeasured_before", "unmeasured_after"),
]
"""``rows_*``: test cases measured in each run; ``shared``: measured in both; ``share``: ``shared``
over the larger of ``rows_before`` and ``rows_after`` (NaN when neither run measured any);
``N_*``: test cases each run has (its aggregates' ``N``; 0: the pair is not in that run);
``unmeasured_*``: the run's own gate calls the pair ``unmeasured``
(:func:`nbeval.results.reporting.problems.problems`)."""


def empty_coverage() -> pd.DataFrame:
    """A coverage table with no row (a diff made without one)."""
    import pandas as pd

    return pd.DataFrame({c: pd.Series(dtype=_DTYPES.get(c, "object")) for c in COVERAGE_COLUMNS})


_DTYPES = {
    **dict.fromkeys(("rows_before", "rows_after", "shared", "N_before", "N_after"), "int64"),
    "share": "float64",
    **dict.fromkeys(("unmeasured_before", "unmeasured_after"), "bool"),
}


def _pair_keys(key: np.ndarray, pair: np.ndarray, keep: np.ndarray, n_keys: int) -> np.ndarray:
    """The distinct ``pair * n_keys + key`` of the rows where ``keep``, sorted: one per test case and pair.

    Sorted and compared, not ``np.unique``: numpy 2's ``unique`` of a million codes took 0.9 s of CPU here, a sort 0.05
    s.
    """
    ids = np.sort(pair[keep] * n_keys + key[keep])
    return ids[np.r_[True, ids[1:] != ids[:-1]]] if ids.size else ids


def _shared(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Return the values that both sorted, distinct arrays hold.

    A binary search: ``np.intersect1d`` sorts both again, three times the time on a million codes.
    """
    if not before.size or not after.size:
        return before[:0]
    at = np.minimum(np.searchsorted(after, before), after.size - 1)
    found: np.ndarray = before[after[at] == before]
    return found


def _totals(names: Sequence[pd.Index], totals: Mapping[tuple[str, str], int]) -> np.ndarray:
    """Per pair code ``evaluator * n_models + model``: the test cases of ``totals``."""
    out = np.zeros(len(names[1]) * len(names[2]), dtype=np.int64)
    for (model, evaluator), n in totals.items():
        m, e = int(names[1].get_indexer([model])[0]), int(names[2].get_indexer([evaluator])[0])
        if m >= 0 and e >= 0:  # else the long table has no row of it
            out[e * len(names[1]) + m] = n
    return out


def coverage_table(
    names: Sequence[pd.Index],
    runs: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    totals: Sequence[Mapping[tuple[str, str], int]],
    unmeasured: Sequence[set[tuple[str, str]]],
) -> pd.DataFrame:
    """Build the :data:`COVERAGE_COLUMNS` table, one row per (evaluator, model) either run has.

    The rows are ordered by evaluator then model name, so neither the order of rows nor which run
    listed a name first changes it.

    ``names``: the shared names of key, model_key, evaluator and metric; ``runs``: for ``before``
    and ``after``, each long-table row's ``(key, model, evaluator)`` codes into ``names`` and
    whether it is a measured row of its evaluator's primary metric (in that run); ``totals``:
    each run's test cases per ``(model_key, evaluator)`` (its aggregates' ``N``); ``unmeasured``:
    each run's ``(model_key, evaluator)`` pairs its gate calls unmeasured.
    """
    import pandas as pd

    n_keys, n_models, n_evs = len(names[0]), len(names[1]), len(names[2])
    size = n_models * n_evs
    measured = [_pair_keys(key, ev * n_models + model, primary, n_keys) for key, model, ev, primary in runs]
    shared = _shared(measured[0], measured[1])
    rows_b, rows_a, both = (np.bincount(ids // n_keys, minlength=size) for ids in (*measured, shared))
    n_b, n_a = (_totals(names, t) for t in totals)
    where = np.flatnonzero((n_b > 0) | (n_a > 0) | (rows_b > 0) | (rows_a > 0))
    larger = np.maximum(rows_b[where], rows_a[where])
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(larger > 0, both[where] / np.maximum(larger, 1), np.nan)
    model_names = names[1].take(where % n_models).astype(str)
    ev_names = names[2].take(where // n_models).astype(str)
    table = pd.DataFrame(
        {
            "evaluator": ev_names.to_numpy(),
            "model_key": model_names.to_numpy(),
            "rows_before": rows_b[where].astype(np.int64),
            "rows_after": rows_a[where].astype(np.int64),
            "shared": both[where].astype(np.int64),
            "share": share.astype(float),
            "N_before": n_b[where].astype(np.int64),
            "N_after": n_a[where].astype(np.int64),
            "unmeasured_before": [(m, e) in unmeasured[0] for m, e in zip(model_names, ev_names, strict=True)],
            "unmeasured_after": [(m, e) in unmeasured[1] for m, e in zip(model_names, ev_names, strict=True)],
        },
        columns=COVERAGE_COLUMNS,
    )
    return table.astype({c: t for c, t in _DTYPES.items()}).reset_index(drop=True)
