"""Leaderboards: per-model tables of aggregates, and their plain-text rendering."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from nbeval.errors import NotFound

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = [
    "CI_METHODS",
    "SHOWN_CI",
    "format_interval",
    "format_value",
    "leaderboard",
    "metric_intervals",
    "row_values",
    "summary_text",
]

#: How an interval was computed: see :func:`metric_intervals`.
CI_METHODS = ("wilson", "bootstrap", "none")


def leaderboard(
    result: EvaluationResult, evaluator: str | None = None, metric: str | None = None, ci: float | None = None
) -> pd.DataFrame:
    """One row per model (index ``model_key``), best first on ``metric`` (default: primary).

    Columns: each metric's aggregate, ``<metric>_n`` (rows it was measured on) and ``N`` (the
    model's rows for that evaluator). Without ``evaluator`` names are ``<evaluator>.<metric>``
    and each evaluator has its own ``<evaluator>.N``.

    With ``ci`` (a level such as 0.95) each metric column is followed by ``<metric>_lo`` and
    ``<metric>_hi`` (see :func:`metric_intervals` for the methods) and
    ``table.attrs["ci"]`` is ``{"level": ci, "method": {column: "wilson" | "bootstrap" | "none"}}``.
    """
    import pandas as pd

    if ci is not None:
        from nbeval.results.statistics.stats import check_level

        check_level(ci)
    agg = result.aggregates
    if evaluator is not None:
        result.check_evaluator(evaluator)
        agg = agg[agg["evaluator"] == evaluator]
    models = list(dict.fromkeys(result.aggregates["model_key"]))
    index = pd.Index(models, name="model_key")
    # columns gathered first and joined once (adding them one by one fragments the frame)
    columns: dict[str, pd.Series] = {}
    if result.model_labels:
        columns["model"] = pd.Series([result.label(k) for k in models], index=index)
    methods: dict[str, str] = {}
    for (ev, m), part in agg.groupby(["evaluator", "metric"], sort=False, observed=True):
        name = m if evaluator is not None else f"{ev}.{m}"
        part = part.set_index("model_key")
        columns[name] = part["value"].reindex(models).set_axis(index)
        if ci is not None:
            lo, hi, methods[name] = metric_intervals(result, str(ev), str(m), columns[name], ci)
            columns[f"{name}_lo"], columns[f"{name}_hi"] = pd.Series(lo, index=index), pd.Series(hi, index=index)
        columns[f"{name}_n"] = part["n"].reindex(models).astype("Int64").set_axis(index)
        n_col = "N" if evaluator is not None else f"{ev}.N"
        if n_col not in columns:
            columns[n_col] = part["N"].reindex(models).astype("Int64").set_axis(index)
    table = pd.DataFrame(columns, index=index)
    rated = evaluator is not None and metric is None and _with_ratings(result, evaluator, table, ci or 0.95)
    sort_ev = evaluator if evaluator is not None else (result.evaluators[0] if result.evaluators else None)
    if sort_ev is not None and not table.empty:
        sort_metric = metric or result.primary_metric(sort_ev)
        col = sort_metric if evaluator is not None else f"{sort_ev}.{sort_metric}"
        if col not in table:
            msg = f"no metric '{sort_metric}' for evaluator '{sort_ev}'"
            raise NotFound(msg)
        direction = result.metrics.loc[
            (result.metrics["evaluator"] == sort_ev) & (result.metrics["metric"] == sort_metric), "direction"
        ].iloc[0]
        table = table.sort_values(col, ascending=direction == "lower", na_position="last", kind="stable")
    if rated:  # a head-to-head evaluator ranks on its arena rating
        table = table.sort_values("rating", ascending=False, na_position="last", kind="stable")
    if ci is not None:
        table.attrs["ci"] = {"level": ci, "method": methods}
    return table


def _with_ratings(result: EvaluationResult, evaluator: str, table: pd.DataFrame, level: float) -> bool:
    """Add ``rating, rating_lo, rating_hi`` (the arena's, :meth:`EvaluationResult.arena`, with
    ``level`` intervals) to the leaderboard of a head-to-head evaluator, in place; whether it is one."""
    from nbeval.results.statistics.head_to_head import head_to_head_evaluators

    if evaluator not in head_to_head_evaluators(result) or table.empty:
        return False
    arena = result.arena(evaluator, level=level).set_index("model_key")
    for column in ("rating", "rating_lo", "rating_hi"):
        table.insert(len(table.columns), column, arena[column].reindex(table.index.astype(str)).to_numpy())
    return True


def row_values(result: EvaluationResult, evaluator: str, metric: str) -> pd.DataFrame:
    """The per-row values of one metric that were measured: columns ``key``, ``model_key``,
    ``value`` (skipped rows and rows without a value left out; keys and models as plain text)."""
    s = result.scores
    rows = s[(s["evaluator"] == evaluator) & (s["metric"] == metric) & ~s["skipped"].astype(bool) & s["value"].notna()]
    out = rows[["key", "model_key", "value"]].astype({"key": str, "model_key": str, "value": float})
    return out.reset_index(drop=True)


def metric_intervals(
    result: EvaluationResult, evaluator: str, metric: str, aggregates: pd.Series, level: float
) -> tuple[list[float], list[float], str]:
    """The ``level`` interval of each model's aggregate in ``aggregates`` (indexed by model key),
    as lists of low and high ends in that order, and the method used for the column:

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
    from nbeval.results.statistics import stats

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


def format_value(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def format_interval(lo: float | None, hi: float | None, digits: int = 3) -> str:
    """An interval as ``[lo, hi]``; empty where it is unknown."""
    if _is_nan(lo) or _is_nan(hi):
        return ""
    return f"[{format_value(lo, digits)}, {format_value(hi, digits)}]"


#: The confidence level of the intervals the summary and the HTML report show.
SHOWN_CI = 0.95


def summary_text(result: EvaluationResult) -> str:
    """The full plain-text summary (``result.summary()``); see :func:`nbeval.results.reporting.text.summary_text`."""
    from nbeval.results.reporting.text import summary_text as full

    return full(result)
