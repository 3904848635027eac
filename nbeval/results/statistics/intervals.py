"""Intervals of the per-model aggregates a leaderboard shows, and the per-row values they are read from."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from nbeval.results.statistics import stats

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult
    from nbeval.results.statistics.part_summaries import PartSummaries

__all__ = ["CI_METHODS", "metric_intervals", "row_values"]

#: How an interval was computed: see :func:`metric_intervals`.
CI_METHODS = ("wilson", "bootstrap", "normal", "none")


def row_values(result: EvaluationResult, evaluator: str, metric: str) -> pd.DataFrame:
    """Return the per-row values of one metric that were measured.

    Columns ``key``, ``model_key``, ``value``; skipped rows and rows without a value are left out;
    keys and models come as plain text. A partitioned run's are its sample's
    (:meth:`~nbeval.results.statistics.part_summaries.PartSummaries.values`; ``attrs["sample"]``
    says when the sample does not hold every test case).
    """
    if result.part_summaries is not None:
        return result.part_summaries.values(evaluator, metric)
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

    A partitioned run's intervals come from its parts' summaries: the same Wilson intervals, and
    the same bootstrap when its sample holds every test case; otherwise ``"normal"``, the normal
    interval of the mean from the exact mean and variance of every row, within the least and
    greatest value as a bootstrap's (see :mod:`~nbeval.results.statistics.part_summaries`).
    """
    if result.part_summaries is not None:
        return _part_intervals(result, result.part_summaries, evaluator, metric, aggregates, level)
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


def _part_intervals(
    result: EvaluationResult, parts: PartSummaries, evaluator: str, metric: str, aggregates: pd.Series, level: float
) -> tuple[list[float], list[float], str]:
    """:func:`metric_intervals` of a partitioned run, from its parts' summaries."""
    nan = float("nan")
    known = [(str(k), float(a)) for k, a in aggregates.items() if not _is_nan(a)]
    if not known or not all(parts.is_mean(evaluator, k, metric, a) for k, a in known):
        return [nan] * len(aggregates), [nan] * len(aggregates), "none"
    if _is_share(result, evaluator, metric) and parts.is_binary(evaluator, metric):
        method = "wilson"
    else:
        method = "bootstrap" if parts.complete else "normal"
    by_model: dict[str, Any] = {}
    if method == "bootstrap":
        values = parts.values(evaluator, metric)
        by_model = {str(k): g["value"].to_numpy() for k, g in values.groupby("model_key", sort=False, observed=True)}
    lows, highs = [], []
    for k in aggregates.index:
        n, mean, variance = parts.moments(evaluator, str(k), metric)
        if n == 0:
            lo, hi = nan, nan
        elif method == "wilson":
            lo, hi = stats.wilson_interval(*parts.successes(evaluator, str(k), metric), level)
        elif method == "bootstrap":
            lo, hi = stats.bootstrap_mean_interval(by_model.get(str(k), []), level)
        else:
            half = stats.z_value(level) * math.sqrt(variance / n)
            least, greatest = parts.span(evaluator, str(k), metric)
            if math.isnan(half):
                lo, hi = nan, nan
            else:
                lo, hi = max(least, mean - half), min(greatest, mean + half)
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
