"""Leaderboards: one row per model of a result's aggregates, with intervals and arena ratings.

The intervals come from :mod:`nbeval.results.statistics.intervals`; the summaries and the report
write the table (:mod:`nbeval.results.reporting`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbeval.errors import NotFound
from nbeval.results.statistics.intervals import metric_intervals

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["leaderboard"]


def leaderboard(
    result: EvaluationResult, evaluator: str | None = None, metric: str | None = None, ci: float | None = None
) -> pd.DataFrame:
    """One row per model (index ``model_key``), best first on ``metric`` (default: primary).

    Columns: each metric's aggregate, ``<metric>_n`` (rows it was measured on) and ``N`` (the
    model's rows for that evaluator). Without ``evaluator`` names are ``<evaluator>.<metric>``
    and each evaluator has its own ``<evaluator>.N``.

    With ``ci`` (a level such as 0.95) each metric column is followed by ``<metric>_lo`` and
    ``<metric>_hi`` (see :func:`~nbeval.results.statistics.intervals.metric_intervals` for the methods) and
    ``table.attrs["ci"]`` is ``{"level": ci, "method": {column: "wilson" | "bootstrap" | "normal" | "none"}}``.
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
    """Add the arena's ratings to the leaderboard of a head-to-head evaluator, in place.

    The columns ``rating, rating_lo, rating_hi`` are the arena's (:meth:`EvaluationResult.arena`,
    with ``level`` intervals). Returns whether ``evaluator`` is a head-to-head one.
    """
    from nbeval.results.statistics.head_to_head import head_to_head_evaluators

    if evaluator not in head_to_head_evaluators(result) or table.empty:
        return False
    arena = result.arena(evaluator, level=level).set_index("model_key")
    for column in ("rating", "rating_lo", "rating_hi"):
        table.insert(len(table.columns), column, arena[column].reindex(table.index.astype(str)).to_numpy())
    return True
