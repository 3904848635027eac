"""Intervals of the per-model aggregates a leaderboard shows, and the per-row values they are read from."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from nbeval.results.statistics import stats

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["CI_METHODS", "metric_intervals", "row_values"]

#: How an interval was computed: see :func:`metric_intervals`.
CI_METHODS = ("wilson", "bootstrap", "none")


def row_values(result: EvaluationResult, evaluator: str, metric: str) -> pd.DataFrame:
    """Return the per-row values of one metric that were measured.

    Columns ``key``, ``model_key``, ``value``; skipped rows and rows without a value are left out;
    keys and models come as plain text.
    """
    s = result.scores
    rows = s[(s["evaluator"] == evaluator) & (s["metric"] == metric) & ~s["skipped"].astype(bool) & s["value"].notna()]
    out = rows[["key", "model_key", "value"]].astype({"key": str, "model_key": str, "value": float})
    return out.reset_index(drop=True)


def metric_intervals(
    result: EvaluationResult, evaluator: str, metric: str, aggregates: pd.Series, level: float
) -> tuple[list[float], list[float], str]:
    """Compute the ``level`` interval of each model's aggregate, and the method used for the column.

    ``aggregates`` is indexed by model key; the ends come as lists of low and high ends in that
    order. The method is one of:

    * ``"wilson"``: the metric's range is [0, 1] and every measured row is 0 or 1, so the
      aggregate is a share of rows; the Wilson score interval
      (:func:`~nbeval.results.statistics.stats.wilson_interval`). A metric with another range (a count such
      as ``step_alignment``'s ``deletions``, range [0, inf)) is never a share, even when its rows
      all happen to be 0 or 1: a Wilson interval would cap it at 1;
    * ``"bootstrap"``: scores and counts; the percentile bootstrap of the mean over the model's test cases,
      seeded (:func:`~nbeval.results.statistics.stats.bootstrap_mean_interval`, 2,000 resamples, seed 0);
    * ``"none"``: some model's aggregate is not the mean of its rows' values (e.g. a macro F1
      the evaluator computes over all rows at once), so resampling rows would not describe it;
      the interval is NaN.

    A model without measured rows gets NaN whatever the method.
    """
    values = row_values(result, evaluator, metric)
    by_model = {str(k): g["value"].to_numpy() for k, g in values.groupby("model_key", sort=False, observed=True)}
    nan = float("nan")
    known = [(str(k), float(a)) for k, a in aggregates.items() if not _is_nan(a)]
    if not known or any(
        k not in by_model or not math.isclose(a, float(by_model[k].mean()), rel_tol=1e-9, abs_tol=1e-12)
        for k, a in known
    ):
        return [nan] * len(aggregates), [nan] * len(aggregates), "none"
    method = "wilson" if _is_share(result, evaluator, metric) and stats.is_binary(values["value"]) else "bootstrap"
    lows, highs = [], []
    for k in aggregates.index:
        v = by_model.get(str(k))
        if v is None or v.size == 0:
            lo, hi = nan, nan
        elif method == "wilson":
            lo, hi = stats.wilson_interval(int(v.sum()), int(v.size), level)
        else:
            lo, hi = stats.bootstrap_mean_interval(v, level)
        lows.append(lo)
        highs.append(hi)
    return lows, highs, method


def _is_share(result: EvaluationResult, evaluator: str, metric: str) -> bool:
    """Whether the metric's declared range is [0, 1], so that 0/1 rows make its mean a share."""
    m = result.metrics
    hit = m[(m["evaluator"] == evaluator) & (m["metric"] == metric)]
    if hit.empty:
        return True  # no declaration to go by: the rows decide
    return float(hit["lo"].iloc[0]) == 0.0 and float(hit["hi"].iloc[0]) == 1.0


def _is_nan(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
