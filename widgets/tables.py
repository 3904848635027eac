"""Pandas preparation behind the charts: small, aggregated frames that are cheap to inline.

Vega-Lite inlines a chart's data into the spec, and Altair refuses more than
:data:`MAX_INLINE_ROWS` rows. Every chart of the kit therefore draws one of the frames built
here, whose size depends on the number of models, metrics or bins (never on the number of
result rows), except the per-case heatmap, which is capped at :data:`MAX_INLINE_ROWS` cells.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = [
    "MAX_INLINE_ROWS",
    "OUTCOMES",
    "STATUS_MARK",
    "MetricInfo",
    "box_stats",
    "case_cells",
    "cell_status",
    "histogram",
    "leaderboard_table",
    "metric_cells",
    "metric_info",
    "model_names",
    "outcome_counts",
    "passed_is",
    "truncate",
]

#: Altair's default limit on inlined rows (``MaxRowsError`` beyond it).
MAX_INLINE_ROWS = 5000
#: Short text drawn over a heatmap cell that holds no score, by cell status.
STATUS_MARK = {"scored": "", "skipped": "skip", "error": "err", "parse_failure": "parse", "no_value": "n/a"}


@dataclass(frozen=True)
class MetricInfo:
    """What a chart needs to know about one metric."""

    evaluator: str
    metric: str
    #: ``"higher"`` or ``"lower"``: which way is better.
    direction: str
    lo: float
    hi: float
    threshold: float | None
    #: The metric's kind (``"bool"``, ``"score"``, ...).
    kind: str


def passed_is(passed: pd.Series, value: bool) -> np.ndarray:
    """Where the ``passed`` column is ``value``; an unknown verdict (NA or None) is neither."""
    return passed.astype("boolean").eq(value).fillna(False).to_numpy(dtype=bool)


def model_names(result: EvaluationResult) -> dict[str, str]:
    """Model key to a display name; the key is appended where two models share a label."""
    keys = list(dict.fromkeys([*result.model_keys, *result.scores["model_key"].unique()]))
    labels = {k: str(result.label(k)) for k in keys}
    counts = pd.Series(list(labels.values())).value_counts()
    return {k: (f"{v} ({k})" if counts[v] > 1 else v) for k, v in labels.items()}


def metric_info(result: EvaluationResult, evaluator: str | None, metric: str | None) -> MetricInfo:
    """Resolve ``evaluator`` (default: the first) and ``metric`` (default: its primary) and describe it."""
    if not result.evaluators:
        msg = "this result has no evaluators to chart"
        raise ValueError(msg)
    evaluator = evaluator or result.evaluators[0]
    result.check_evaluator(evaluator)
    metric = metric or result.primary_metric(evaluator)
    rows = result.metrics[(result.metrics["evaluator"] == evaluator) & (result.metrics["metric"] == metric)]
    if rows.empty:
        known = list(result.metrics.loc[result.metrics["evaluator"] == evaluator, "metric"])
        msg = f"evaluator '{evaluator}' has no metric '{metric}'; it has {known}"
        raise KeyError(msg)
    r = rows.iloc[0]
    threshold = None if r["threshold"] is None or pd.isna(r["threshold"]) else float(r["threshold"])
    return MetricInfo(
        evaluator=evaluator,
        metric=metric,
        direction=str(r["direction"]),
        lo=float(r["lo"]),
        hi=float(r["hi"]),
        threshold=threshold,
        kind=str(r["kind"]),
    )


def truncate(values: pd.Series, limit: int) -> pd.Series:
    """Text cut to ``limit`` characters, with an ellipsis where something was cut."""
    text = values.fillna("").astype(str)
    cut = text.str.slice(0, limit)
    return cut.where(text.str.len() <= limit, cut + "…")


def _rows(result: EvaluationResult, evaluator: str, metric: str) -> pd.DataFrame:
    """The score rows of ``evaluator``'s ``metric``."""
    s = result.scores
    return s[(s["evaluator"] == evaluator) & (s["metric"] == metric)]


def cell_status(rows: pd.DataFrame) -> np.ndarray:
    """Per score row: ``scored``, ``skipped``, ``error``, ``parse_failure`` or ``no_value``.

    ``parse_failure`` covers every row that could not be rated (a label of
    :data:`~nbeval.evaluators.base.UNRATED_LABELS`: an unreadable judge reply, a timed-out regexp).
    """
    from nbeval.evaluators.base import UNRATED_LABELS

    skipped = rows["skipped"].astype(bool).to_numpy()
    parse = rows["label"].isin(list(UNRATED_LABELS)).to_numpy() & ~skipped
    no_value = rows["value"].isna().to_numpy()
    error = rows["error"].notna().to_numpy() & no_value
    return np.select([skipped, parse, error, no_value], ["skipped", "parse_failure", "error", "no_value"], "scored")


def _finite(x: float) -> bool:
    """Whether ``x`` is a finite number (not ``None``, NaN or infinite)."""
    return x is not None and math.isfinite(x)


def leaderboard_table(result: EvaluationResult, info: MetricInfo) -> pd.DataFrame:
    """One row per model: value, rows measured ``n`` of ``N``, pass status, rank (1 = best), bar text."""
    a = result.aggregates
    a = a[(a["evaluator"] == info.evaluator) & (a["metric"] == info.metric)]
    names = model_names(result)
    df = pd.DataFrame(
        {
            "model_key": a["model_key"].astype(str).to_numpy(),
            "model": [names.get(k, k) for k in a["model_key"]],
            "value": a["value"].astype(float).to_numpy(),
            "n": a["n"].fillna(0).astype(int).to_numpy(),
            "N": a["N"].fillna(0).astype(int).to_numpy(),
        }
    )
    df["status"] = np.select(
        [df["value"].isna(), passed_is(a["passed"], True)],
        ["no value", "pass"],
        "fail" if info.threshold is not None else "no threshold",
    )
    df = df.sort_values("value", ascending=info.direction == "lower", na_position="last", kind="stable")
    df["rank"] = np.arange(1, len(df) + 1)
    shown = [("–" if pd.isna(v) else f"{v:.3f}") for v in df["value"]]
    df["text"] = [f"{s}  ({n}/{t})" for s, n, t in zip(shown, df["n"], df["N"], strict=True)]
    return df.reset_index(drop=True)


def case_cells(
    result: EvaluationResult,
    info: MetricInfo,
    *,
    max_cells: int = MAX_INLINE_ROWS,
    prompt_chars: int = 120,
    detail_chars: int = 160,
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Build the data of the per-case heatmap: its cells, its cases and how many cases there are.

    When the cells would exceed ``max_cells``, only the hardest cases are kept (most models failing
    or unscored first, then the worst mean value), in dataset order.

    Args:
        result: The evaluation result to chart.
        info: The metric whose values fill the cells.
        max_cells: How many cells to keep at most.
        prompt_chars: How many characters of each prompt the tooltip shows.
        detail_chars: How many characters of each cell's rationale or reason the tooltip shows.

    Returns:
        One row per (test case, model); one row per test case (its ``case`` label and truncated
        ``prompt``, joined in the chart so each prompt is inlined once); and the number of cases
        in all.
    """
    s = _rows(result, info.evaluator, info.metric)
    status = cell_status(s)
    order = {k: i for i, k in enumerate(dict.fromkeys([r.key for r in result.dataset.rows]))}
    prompts: dict[str, str | None] = {}
    for r in result.dataset.rows:
        prompts.setdefault(r.key, r.input)
    detail = s["rationale"].where(status == "scored", None)
    detail = detail.mask(status == "skipped", s["skip_reason"])
    detail = detail.mask(np.isin(status, ["error", "parse_failure"]), s["error"].fillna(s["rationale"]))
    names = model_names(result)
    df = pd.DataFrame(
        {
            "key": s["key"].astype(str).to_numpy(),
            "model_key": s["model_key"].astype(str).to_numpy(),
            "value": s["value"].to_numpy(dtype=float),
            "status": status,
            "detail": truncate(detail, detail_chars).to_numpy(),
        }
    )
    df["model"] = df["model_key"].map(names)
    df["order"] = df["key"].map(order).fillna(len(order)).astype(int)
    df["mark"] = df["status"].map(STATUS_MARK)
    total_cases = df["key"].nunique()
    n_models = max(df["model_key"].nunique(), 1)
    if len(df) > max_cells:
        df = _hardest(df, info, keep=max(1, max_cells // n_models), passed=s["passed"])
    df = df.sort_values(["order", "model_key"], kind="stable").reset_index(drop=True)
    cases = df.drop_duplicates("key")[["key", "order"]].reset_index(drop=True)
    text = cases["key"].map(prompts)
    cases["case"] = (cases["order"] + 1).astype(str) + ". " + truncate(text, 40)
    cases["prompt"] = truncate(text, prompt_chars)
    return df, cases.drop(columns="order"), total_cases


def _hardest(df: pd.DataFrame, info: MetricInfo, *, keep: int, passed: pd.Series) -> pd.DataFrame:
    """The rows of the ``keep`` hardest cases: the most failed or unscored rows first, then the worst mean value."""
    sign = 1.0 if info.direction == "higher" else -1.0
    bad = passed_is(passed, False) | (df["status"].to_numpy() != "scored")
    rank = pd.DataFrame({"key": df["key"], "bad": bad, "good": df["value"] * sign})
    per_case = rank.groupby("key", observed=True).agg(bad=("bad", "sum"), good=("good", "mean"))
    per_case = per_case.sort_values(["bad", "good"], ascending=[False, True], na_position="first", kind="stable")
    return df[df["key"].isin(set(per_case.index[:keep]))]


def metric_cells(result: EvaluationResult, evaluator: str | None = None) -> pd.DataFrame:
    """Build the data of the models × metrics heatmap from the aggregates.

    Each cell gets a signed, range-scaled margin over the threshold (positive = on the good side),
    so metrics of different ranges share one colour scale.

    Args:
        result: The evaluation result to chart.
        evaluator: Id of the evaluator whose metrics are kept; ``None`` keeps every evaluator's.

    Returns:
        One row per (model, metric).
    """
    a = result.aggregates.merge(result.metrics[["evaluator", "metric", "lo", "hi"]], on=["evaluator", "metric"])
    if evaluator is not None:
        metric_info(result, evaluator, None)  # raises on an unknown evaluator
        a = a[a["evaluator"] == evaluator]
    names = model_names(result)
    many = a["evaluator"].nunique() > 1
    label = (a["evaluator"] + "." + a["metric"]) if many else a["metric"]
    value = a["value"].astype(float)
    threshold = pd.to_numeric(a["threshold"], errors="coerce").astype(float)
    finite_span = (a["hi"].astype(float) - a["lo"].astype(float)).where(np.isfinite(a["hi"].astype(float)))
    fallback = (value - threshold).abs().groupby(label, observed=True).transform("max").replace(0, 1.0)
    span = finite_span.fillna(fallback).fillna(1.0).replace(0, 1.0)
    sign = np.where(a["direction"] == "higher", 1.0, -1.0)
    df = pd.DataFrame(
        {
            "model_key": a["model_key"].astype(str),
            "model": a["model_key"].map(names),
            "evaluator": a["evaluator"],
            "metric": label,
            "value": value,
            "threshold": threshold,
            "direction": a["direction"],
            "n": a["n"].fillna(0).astype(int),
            "N": a["N"].fillna(0).astype(int),
            "margin": ((value - threshold) / span * sign).clip(-1, 1),
        }
    )
    df["status"] = np.where(value.isna(), "no_value", "scored")
    df["mark"] = [("n/a" if pd.isna(v) else f"{v:.2f}") for v in value]
    return df.reset_index(drop=True)


#: Outcome categories of the pass/fail chart, in stacking order, with their colours.
OUTCOMES = {
    "pass": "#3a9c5b",
    "fail": "#d1495b",
    "parse failure": "#edae49",
    "error": "#6b6b6b",
    "skipped": "#c9c9c9",
    "no threshold": "#8fb3d9",
}


def outcome_counts(result: EvaluationResult, info: MetricInfo) -> pd.DataFrame:
    """Per model and outcome: rows and share of the model's rows.

    Bool evaluators read their ``pass`` metric; others the threshold pass of ``info.metric``.
    """
    metric = "pass" if info.kind == "bool" else info.metric
    s = _rows(result, info.evaluator, metric)
    status = cell_status(s)
    if info.kind == "bool":
        verdict = np.where(s["value"].to_numpy() >= 0.5, "pass", "fail")
    else:
        passed = s["passed"]
        verdict = np.where(passed_is(passed, True), "pass", np.where(passed_is(passed, False), "fail", "no threshold"))
    outcome = np.select(
        [status == "skipped", status == "parse_failure", np.isin(status, ["error", "no_value"])],
        ["skipped", "parse failure", "error"],
        verdict,
    )
    names = model_names(result)
    df = pd.DataFrame({"model_key": s["model_key"].astype(str).to_numpy(), "outcome": outcome})
    counts = df.groupby(["model_key", "outcome"], sort=False, observed=True).size().rename("count").reset_index()
    counts["share"] = counts["count"] / counts.groupby("model_key", observed=True)["count"].transform("sum")
    counts["model"] = counts["model_key"].map(names)
    counts["stack"] = counts["outcome"].map({k: i for i, k in enumerate(OUTCOMES)})
    return counts.sort_values(["model_key", "stack"], kind="stable").reset_index(drop=True)


def _scored(result: EvaluationResult, info: MetricInfo) -> tuple[pd.DataFrame, list[str]]:
    """Scored row values, and every model key the evaluator saw (scored or not)."""
    s = _rows(result, info.evaluator, info.metric)
    models = list(dict.fromkeys(s["model_key"].astype(str)))
    s = s[(cell_status(s) == "scored")]
    df = pd.DataFrame({"model_key": s["model_key"].astype(str).to_numpy(), "value": s["value"].to_numpy(float)})
    return df, models


def box_stats(result: EvaluationResult, info: MetricInfo) -> pd.DataFrame:
    """Per model: min, quartiles, max, mean and count of the scored values."""
    s, models = _scored(result, info)
    g = s.groupby("model_key", sort=False, observed=True)["value"]
    df = pd.DataFrame(
        {
            "min": g.min(),
            "q1": g.quantile(0.25),
            "median": g.median(),
            "q3": g.quantile(0.75),
            "max": g.max(),
            "mean": g.mean(),
            "count": g.size(),
        }
    ).reindex(models)
    df = df.rename_axis("model_key").reset_index()
    df["count"] = df["count"].fillna(0).astype(int)
    df["model"] = df["model_key"].map(model_names(result))
    return df


def histogram(result: EvaluationResult, info: MetricInfo, bins: int = 20) -> pd.DataFrame:
    """Per model and bin (shared edges): count and share of the model's scored values."""
    s, _ = _scored(result, info)
    lo = info.lo if _finite(info.lo) else (s["value"].min() if len(s) else 0.0)
    hi = info.hi if _finite(info.hi) else (s["value"].max() if len(s) else 1.0)
    if not hi > lo:
        lo, hi = lo - 0.5, hi + 0.5
    edges = np.linspace(lo, hi, bins + 1)
    names = model_names(result)
    parts: list[dict[str, Any]] = []
    for model_key, part in s.groupby("model_key", sort=False, observed=True):
        counts, _ = np.histogram(part["value"].clip(lo, hi), bins=edges)
        total = max(int(counts.sum()), 1)
        parts.extend(
            {
                "model_key": model_key,
                "model": names.get(model_key, model_key),
                "bin_start": edges[i],
                "bin_end": edges[i + 1],
                "count": int(c),
                "share": c / total,
            }
            for i, c in enumerate(counts)
        )
    return pd.DataFrame(parts, columns=["model_key", "model", "bin_start", "bin_end", "count", "share"])
