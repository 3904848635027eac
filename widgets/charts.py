"""Altair renderers: pure functions from an :class:`~nbeval.results.EvaluationResult` to a chart.

Each function aggregates in pandas first (:mod:`nbeval.widgets.tables`), so the data a chart
inlines grows with models, metrics or bins, not with result rows: a 100,000-row result charts
without ``MaxRowsError``. The per-case heatmap (:mod:`nbeval.widgets.heatmaps`) is the one detail
view; it inlines at most ``max_cells`` cells (5,000 by default, Altair's limit) and, past that,
shows the hardest cases and says so in its subtitle. Text placed in charts and tooltips is data:
Vega escapes it.

This module draws the leaderboard, pass/fail and distribution charts, and hands out the others
from where they are drawn: the heatmaps from :mod:`nbeval.widgets.heatmaps`, and the statistics
charts from :mod:`nbeval.widgets.stats_charts` (paired differences and their significance from
``result.compare``, a judge's agreement with human labels from ``result.agreement``). Error bars
come from ``result.leaderboard(ci=)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import altair as alt
import pandas as pd

from nbeval.widgets.chart_frame import MAX_PLOT_WIDTH, better, layer, threshold_rule, value_axis_scale
from nbeval.widgets.heatmaps import CASE_FOCUS, CASE_SELECTION, METRIC_SELECTION, MODEL_FOCUS, heatmap
from nbeval.widgets.stats_charts import UNADJUSTED_ONLY, agreement_chart, compare_chart, compare_table
from nbeval.widgets.tables import (
    OUTCOMES,
    MetricInfo,
    box_stats,
    histogram,
    leaderboard_table,
    metric_info,
    outcome_counts,
)

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = [
    "CASE_FOCUS",
    "CASE_SELECTION",
    "MAX_PLOT_WIDTH",
    "METRIC_SELECTION",
    "MODEL_FOCUS",
    "UNADJUSTED_ONLY",
    "agreement_chart",
    "compare_chart",
    "compare_table",
    "distribution_chart",
    "heatmap",
    "leaderboard_chart",
    "pass_fail_chart",
]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("distribution_chart", "leaderboard_chart", "pass_fail_chart")

_STATUS_COLOURS = {"pass": "#3a9c5b", "fail": "#d1495b", "no threshold": "#8fb3d9", "no value": "#c9c9c9"}


def leaderboard_chart(
    result: EvaluationResult, evaluator: str | None = None, metric: str | None = None, *, ci: float | None = 0.95
) -> alt.HConcatChart:
    """Draw the models ranked best first on ``metric`` (default: the evaluator's primary metric).

    Bars are coloured by pass/fail against the threshold, the threshold is a dashed rule, and a
    column beside the bars labels each model with its value and ``n/N`` (rows measured / rows the
    model has). With ``ci``, each bar carries an error bar from ``result.leaderboard(..., ci=ci)``'s
    ``<metric>_lo``/``<metric>_hi`` columns (a model with no interval gets none), the tooltips give
    its bounds, and the subtitle names its method (Wilson for shares of 0/1 rows, bootstrap over
    test cases for scores).

    Args:
        result: The evaluation result to chart.
        evaluator: Id of the evaluator to chart; ``None`` takes the result's first evaluator.
        metric: The metric to rank on; ``None`` takes the evaluator's primary metric.
        ci: Level of the error bars, such as 0.95; ``None`` draws none.

    Returns:
        The bar chart beside the column of value labels.

    Raises:
        ValueError: When ``ci`` is not between 0 and 1, or the result has no evaluators.
        KeyError: When the evaluator or the metric is not in the result.
    """
    info = metric_info(result, evaluator, metric)
    df = leaderboard_table(result, info)
    method = _add_interval(df, result, info, ci)
    y = alt.Y("model:N", sort=list(df["model"]), title=None, axis=alt.Axis(labelLimit=240))
    interval_tips = (
        [
            alt.Tooltip("lo:Q", format=".3f", title=f"{ci:.0%} CI low"),
            alt.Tooltip("hi:Q", format=".3f", title=f"{ci:.0%} CI high"),
        ]
        if ci is not None
        else []
    )
    tooltip = [
        alt.Tooltip("rank:O"),
        alt.Tooltip("model:N"),
        alt.Tooltip("value:Q", format=".3f"),
        *interval_tips,
        alt.Tooltip("n:Q", title="rows measured"),
        alt.Tooltip("N:Q", title="rows"),
        alt.Tooltip("status:N"),
    ]
    bars = (
        alt.Chart(df)
        .mark_bar()
        .encode(
            y=y,
            x=alt.X("value:Q", scale=value_axis_scale(info), title=better(info)),
            color=alt.Color(
                "status:N",
                title="vs threshold",
                legend=alt.Legend(orient="bottom"),
                scale=alt.Scale(domain=list(_STATUS_COLOURS), range=list(_STATUS_COLOURS.values())),
            ),
            tooltip=tooltip,
        )
    )
    layers = [bars]
    if ci is not None:
        # Vega-Lite would draw a rule from a null end to the axis: rows with no interval are left out.
        whiskers = (
            alt.Chart(df)
            .mark_rule(color="#222", strokeWidth=1.5)
            .encode(y=y, x="lo:Q", x2="hi:Q", tooltip=tooltip)
            .transform_filter("isValid(datum.lo) && isValid(datum.hi)")
        )
        layers.append(whiskers)
    rule = threshold_rule(info)
    if rule is not None:
        layers.append(rule)
    labels = (
        alt.Chart(df)
        .mark_text(align="left", fontSize=11)
        .encode(
            y=alt.Y("model:N", sort=list(df["model"]), axis=None),
            x=alt.value(4),
            text="text:N",
        )
        .properties(width=110, height=alt.Step(24), view=alt.ViewBackground(strokeWidth=0))
    )
    subtitle = f"threshold {info.threshold:g}" if info.threshold is not None else "no threshold"
    lines = [f"ranked best first, {subtitle}; beside each bar: value (n/N rows measured)"]
    if ci is not None:
        lines.append(f"error bars: {ci:.0%} interval, {_METHOD_NAMES.get(method, method)}")
    chart = alt.hconcat(layer(*layers).properties(width=360, height=alt.Step(24)), labels, spacing=6)
    return chart.properties(title=alt.Title(f"{info.evaluator}: {info.metric}", subtitle=lines))


#: How each interval method of ``result.leaderboard(ci=...)`` is described in a subtitle.
_METHOD_NAMES = {
    "wilson": "Wilson score (a share of 0/1 rows)",
    "bootstrap": "bootstrap over test cases (seed 0, 2,000 resamples)",
    "normal": "normal, from the exact mean and variance of every row",
    "none": "none (this aggregate is not a mean of row values)",
}


def _add_interval(df: pd.DataFrame, result: EvaluationResult, info: MetricInfo, ci: float | None) -> str:
    """Add ``lo``/``hi`` columns to a :func:`leaderboard_table` frame, in place.

    The bounds come from ``result.leaderboard(ci=ci)``; returns the interval method the result used.
    """
    if ci is None:
        return ""
    if not 0 < ci < 1:
        msg = f"ci must be a level between 0 and 1 such as 0.95, not {ci!r}"
        raise ValueError(msg)
    board = result.leaderboard(info.evaluator, info.metric, ci=ci)
    lo_col, hi_col = f"{info.metric}_lo", f"{info.metric}_hi"
    if lo_col not in board:  # a partial result before the first score: no aggregate, no interval yet
        df["lo"], df["hi"] = float("nan"), float("nan")
        return "none"
    df["lo"] = df["model_key"].map(board[lo_col].astype(float)).astype(float)
    df["hi"] = df["model_key"].map(board[hi_col].astype(float)).astype(float)
    methods = (board.attrs.get("ci") or {}).get("method") or {}
    return str(methods.get(info.metric, "none"))


def pass_fail_chart(result: EvaluationResult, evaluator: str | None = None) -> alt.Chart:
    """Draw stacked bars per model: rows that passed, failed, could not be parsed, errored or were skipped.

    Meant for bool evaluators (their ``pass`` metric and ``parse_failure`` label); for any other
    evaluator, pass/fail is its primary metric against the threshold.

    Args:
        result: The evaluation result to chart.
        evaluator: Id of the evaluator to chart; ``None`` takes the result's first evaluator.

    Returns:
        The stacked bar chart, one bar per model.

    Raises:
        ValueError: When the result has no evaluators.
        KeyError: When the evaluator is not in the result.
    """
    info = metric_info(result, evaluator, None)
    df = outcome_counts(result, info)
    present = [o for o in OUTCOMES if o in set(df["outcome"])] or ["pass", "fail"]
    return (
        alt.Chart(df)
        .mark_bar()
        .encode(
            y=alt.Y("model:N", sort=list(dict.fromkeys(df["model"])), title=None),
            x=alt.X("count:Q", stack="zero", title="rows"),
            color=alt.Color(
                "outcome:N", title="outcome", scale=alt.Scale(domain=present, range=[OUTCOMES[o] for o in present])
            ),
            order=alt.Order("stack:Q"),
            tooltip=[
                alt.Tooltip("model:N"),
                alt.Tooltip("outcome:N"),
                alt.Tooltip("count:Q"),
                alt.Tooltip("share:Q", format=".0%"),
            ],
        )
        .properties(title=f"{info.evaluator}: pass / fail", width=420, height=alt.Step(24))
    )


def distribution_chart(
    result: EvaluationResult,
    evaluator: str | None = None,
    metric: str | None = None,
    kind: Literal["box", "hist"] = "box",
    bins: int = 20,
) -> alt.LayerChart | alt.Chart:
    """Draw the per-model distribution of a metric's row values.

    The default is a box plot (min–max whiskers, quartile box, median tick, mean diamond, threshold
    rule); with ``kind="hist"`` it is one histogram per model.

    Args:
        result: The evaluation result to chart.
        evaluator: Id of the evaluator to chart; ``None`` takes the result's first evaluator.
        metric: The metric whose values are drawn; ``None`` takes the evaluator's primary metric.
        kind: ``"box"`` for a box plot per model, ``"hist"`` for a histogram per model.
        bins: How many bins each histogram has (used with ``kind="hist"`` only).

    Returns:
        The layered box plot, or the histograms faceted by model.

    Raises:
        ValueError: When ``kind`` is neither ``"box"`` nor ``"hist"``, or the result has no evaluators.
        KeyError: When the evaluator or the metric is not in the result.
    """
    info = metric_info(result, evaluator, metric)
    if kind == "hist":
        df = histogram(result, info, bins=bins)
        return (
            alt.Chart(df)
            .mark_bar()
            .encode(
                x=alt.X("bin_start:Q", bin="binned", title=better(info), scale=value_axis_scale(info, zero=False)),
                x2="bin_end:Q",
                y=alt.Y("count:Q", title="rows"),
                row=alt.Row("model:N", title=None, sort=list(dict.fromkeys(df["model"]))),
                tooltip=[
                    alt.Tooltip("model:N"),
                    alt.Tooltip("bin_start:Q", format=".3f", title="from"),
                    alt.Tooltip("bin_end:Q", format=".3f", title="to"),
                    alt.Tooltip("count:Q"),
                    alt.Tooltip("share:Q", format=".0%"),
                ],
            )
            .properties(title=f"{info.evaluator}: {info.metric} distribution", width=380, height=60)
        )
    if kind != "box":
        msg = f"kind must be 'box' or 'hist', not {kind!r}"
        raise ValueError(msg)
    df = box_stats(result, info)
    y = alt.Y("model:N", sort=list(df["model"]), title=None)
    scale = value_axis_scale(info, zero=False)
    stats = [alt.Tooltip(f"{c}:Q", format=".3f") for c in ("min", "q1", "median", "q3", "max", "mean")]
    tooltip = [alt.Tooltip("model:N"), *stats, alt.Tooltip("count:Q", title="rows")]
    base = alt.Chart(df)
    layers: list[alt.Chart] = [
        base.mark_rule().encode(y=y, x=alt.X("min:Q", scale=scale, title=better(info)), x2="max:Q", tooltip=tooltip),
        base.mark_bar(size=14, color="#8fb3d9").encode(y=y, x="q1:Q", x2="q3:Q", tooltip=tooltip),
        base.mark_tick(color="#1f3b5c", thickness=2, size=14).encode(y=y, x="median:Q", tooltip=tooltip),
        base.mark_point(shape="diamond", color="#d1495b", filled=True).encode(y=y, x="mean:Q", tooltip=tooltip),
    ]
    rule = threshold_rule(info)
    if rule is not None:
        layers.append(rule)
    return layer(*layers).properties(title=f"{info.evaluator}: {info.metric} per model", width=420, height=alt.Step(28))
