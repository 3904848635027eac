"""Leaderboards: per-model tables of aggregates, and their plain-text rendering."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["format_value", "leaderboard", "summary_text"]


def leaderboard(result: EvaluationResult, evaluator: str | None = None, metric: str | None = None) -> pd.DataFrame:
    """One row per model (index ``model_key``), best first on ``metric`` (default: primary).

    Columns: each metric's aggregate, ``<metric>_n`` (rows it was measured on) and ``N`` (the
    model's rows for that evaluator). Without ``evaluator`` names are ``<evaluator>.<metric>``
    and each evaluator has its own ``<evaluator>.N``.
    """
    import pandas as pd

    agg = result.aggregates
    if evaluator is not None:
        if evaluator not in result.evaluators:
            msg = f"no evaluator '{evaluator}' in this result; it has {result.evaluators}"
            raise KeyError(msg)
        agg = agg[agg["evaluator"] == evaluator]
    models = list(dict.fromkeys(result.aggregates["model_key"]))
    table = pd.DataFrame(index=pd.Index(models, name="model_key"))
    for (ev, m), part in agg.groupby(["evaluator", "metric"], sort=False):
        name = m if evaluator is not None else f"{ev}.{m}"
        part = part.set_index("model_key")
        table[name] = part["value"].reindex(models)
        table[f"{name}_n"] = part["n"].reindex(models).astype("Int64")
        n_col = "N" if evaluator is not None else f"{ev}.N"
        if n_col not in table:
            table[n_col] = part["N"].reindex(models).astype("Int64")
    if result.model_labels:
        table.insert(0, "model", [result.label(k) for k in models])
    sort_ev = evaluator if evaluator is not None else (result.evaluators[0] if result.evaluators else None)
    if sort_ev is not None and not table.empty:
        sort_metric = metric or result.primary_metric(sort_ev)
        col = sort_metric if evaluator is not None else f"{sort_ev}.{sort_metric}"
        if col not in table:
            msg = f"no metric '{sort_metric}' for evaluator '{sort_ev}'"
            raise KeyError(msg)
        direction = result.metrics.loc[(result.metrics["evaluator"] == sort_ev)
                                       & (result.metrics["metric"] == sort_metric), "direction"].iloc[0]
        table = table.sort_values(col, ascending=direction == "lower", na_position="last", kind="stable")
    return table


def format_value(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.{digits}f}"


def summary_text(result: EvaluationResult) -> str:
    """Leaderboards of every evaluator's metrics as text, then problems, for terminals and CI logs."""
    lines: list[str] = []
    for ev in result.evaluators:
        board = leaderboard(result, evaluator=ev)
        metrics = list(result.metrics.loc[result.metrics["evaluator"] == ev, "metric"])
        primary = result.primary_metric(ev)
        lines.append(f"== {ev} (ranked on {primary}) ==")
        header = f"{'model':<32}" + "".join(f"{m:>22}" for m in metrics)
        lines.append(header)
        for model_key, r in board.iterrows():
            cells = []
            for m in metrics:
                n, total = r[f"{m}_n"], r["N"]
                cells.append(f"{format_value(r[m]) + f' ({n}/{total})':>22}")
            lines.append(f"{str(result.label(str(model_key)))[:31]:<32}" + "".join(cells))
        lines.append("")
    probs = result.problems
    lines.append(f"== problems ({len(probs)}) ==")
    for _, p in probs.iterrows():
        lines.append(f"- {p['message']}")
    if probs.empty:
        lines.append("none")
    return "\n".join(lines)
