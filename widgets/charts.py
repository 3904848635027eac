"""Altair renderers: pure functions from an :class:`~nbeval.results.EvaluationResult` to a chart.

Each function aggregates in pandas first (:mod:`nbeval.widgets.tables`), so the data a chart
inlines grows with models, metrics or bins, not with result rows: a 100,000-row result charts
without ``MaxRowsError``. The per-case heatmap is the one detail view; it inlines at most
``max_cells`` cells (5,000 by default, Altair's limit) and, past that, shows the hardest cases and
says so in its subtitle. Text placed in charts and tooltips is data: Vega escapes it.

The statistics charts draw what the result computes: error bars from ``result.leaderboard(ci=)``,
paired differences and their significance from ``result.compare``, and a judge's agreement with
human labels from ``result.agreement`` (ROC curve or confusion matrix).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import altair as alt
import numpy as np
import pandas as pd

from nbeval.widgets.tables import (
    MAX_INLINE_ROWS,
    OUTCOMES,
    MetricInfo,
    box_stats,
    case_cells,
    histogram,
    leaderboard_table,
    metric_cells,
    metric_info,
    model_names,
    outcome_counts,
)

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult
    from nbeval.results.agreement import JudgeAgreement

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

#: Name of the heatmap's click selection (fields ``key`` and ``model_key``).
CASE_SELECTION = "case_select"
#: Names of the per-case heatmap's focus params, set from Python (``JupyterChart.params``): while
#: ``case_focus`` is not empty, the cells of that case (only ``model_focus``'s, when that is set) are
#: highlighted instead of the clicked one. The case explorer points them at the case it shows.
CASE_FOCUS, MODEL_FOCUS = "case_focus", "model_focus"
#: Name of the models × metrics heatmap's click selection (fields ``model_key`` and ``metric``).
METRIC_SELECTION = "metric_select"
_STATUS_COLOURS = {"pass": "#3a9c5b", "fail": "#d1495b", "no threshold": "#8fb3d9", "no value": "#c9c9c9"}
_UNSCORED = "#b0b0b0"  # mid grey: outside the red–white–blue value scale


#: The widest plot area of a chart, in pixels. With its labels, legend and padding every chart then
#: fits the 968 px output area of JupyterLab in a 1,400 px window with the file browser open.
MAX_PLOT_WIDTH = 520


def _layer(*charts: Any, **kwargs: Any) -> alt.LayerChart:
    """:func:`altair.layer` of charts that carry no facet encoding, which is always a layer chart."""
    chart = alt.layer(*charts, **kwargs)
    if not isinstance(chart, alt.LayerChart):  # only layers with shared row/column/facet channels facet
        msg = f"expected a layer chart, got {type(chart).__name__}"
        raise TypeError(msg)
    return chart


def _band_step(n: int, widest: float, most: float = MAX_PLOT_WIDTH) -> float:
    """The width of one of ``n`` bands: ``widest`` until the plot would pass ``most`` pixels."""
    return round(max(1.0, min(widest, most / max(n, 1))), 2)


def _band_axis(step: float, label_limit: int) -> alt.Axis:
    """An axis of band labels: slanted on wide bands, upright on narrow ones, none below 11 px."""
    return alt.Axis(labelAngle=-30 if step >= 50 else -90, labelLimit=label_limit, labels=step >= 11)


def _value_axis_scale(info: MetricInfo, *, zero: bool = True) -> alt.Scale:
    if math.isfinite(info.lo) and math.isfinite(info.hi):
        return alt.Scale(domain=[info.lo, info.hi])
    return alt.Scale(zero=zero)


def _threshold_rule(info: MetricInfo, orient: Literal["x", "y"] = "x") -> alt.Chart | None:
    if info.threshold is None:
        return None
    rule = alt.Chart(pd.DataFrame({"threshold": [info.threshold]})).mark_rule(color="#222", strokeDash=[5, 3])
    channel = alt.X if orient == "x" else alt.Y
    return rule.encode(channel("threshold:Q"), tooltip=[alt.Tooltip("threshold:Q", title="threshold")])


def _better(info: MetricInfo) -> str:
    return f"{info.metric} ({info.direction} is better)"


def leaderboard_chart(result: EvaluationResult, evaluator: str | None = None,
                      metric: str | None = None, *, ci: float | None = 0.95) -> alt.HConcatChart:
    """Models ranked best first on ``metric`` (default: the evaluator's primary metric).

    Bars are coloured by pass/fail against the threshold, the threshold is a dashed rule, and a
    column beside the bars labels each model with its value and ``n/N`` (rows measured / rows the
    model has). With ``ci`` (a level such as 0.95; ``None`` for none), each bar carries an error
    bar from ``result.leaderboard(..., ci=ci)``'s ``<metric>_lo``/``<metric>_hi`` columns (a model
    with no interval gets none), the tooltips give its bounds, and the subtitle names its method
    (Wilson for shares of 0/1 rows, bootstrap over test cases for scores).
    """
    info = metric_info(result, evaluator, metric)
    df = leaderboard_table(result, info)
    method = _add_interval(df, result, info, ci)
    y = alt.Y("model:N", sort=list(df["model"]), title=None, axis=alt.Axis(labelLimit=240))
    interval_tips = ([alt.Tooltip("lo:Q", format=".3f", title=f"{ci:.0%} CI low"),
                      alt.Tooltip("hi:Q", format=".3f", title=f"{ci:.0%} CI high")] if ci is not None else [])
    tooltip = [alt.Tooltip("rank:O"), alt.Tooltip("model:N"), alt.Tooltip("value:Q", format=".3f"), *interval_tips,
               alt.Tooltip("n:Q", title="rows measured"), alt.Tooltip("N:Q", title="rows"), alt.Tooltip("status:N")]
    bars = alt.Chart(df).mark_bar().encode(
        y=y, x=alt.X("value:Q", scale=_value_axis_scale(info), title=_better(info)),
        color=alt.Color("status:N", title="vs threshold", legend=alt.Legend(orient="bottom"),
                        scale=alt.Scale(domain=list(_STATUS_COLOURS), range=list(_STATUS_COLOURS.values()))),
        tooltip=tooltip)
    layers = [bars]
    if ci is not None:
        # Vega-Lite would draw a rule from a null end to the axis: rows with no interval are left out.
        whiskers = alt.Chart(df).mark_rule(color="#222", strokeWidth=1.5).encode(
            y=y, x="lo:Q", x2="hi:Q", tooltip=tooltip).transform_filter("isValid(datum.lo) && isValid(datum.hi)")
        layers.append(whiskers)
    rule = _threshold_rule(info)
    if rule is not None:
        layers.append(rule)
    labels = alt.Chart(df).mark_text(align="left", fontSize=11).encode(
        y=alt.Y("model:N", sort=list(df["model"]), axis=None), x=alt.value(4), text="text:N",
    ).properties(width=110, height=alt.Step(24), view=alt.ViewBackground(strokeWidth=0))
    subtitle = f"threshold {info.threshold:g}" if info.threshold is not None else "no threshold"
    lines = [f"ranked best first, {subtitle}; beside each bar: value (n/N rows measured)"]
    if ci is not None:
        lines.append(f"error bars: {ci:.0%} interval, {_METHOD_NAMES.get(method, method)}")
    chart = alt.hconcat(_layer(*layers).properties(width=360, height=alt.Step(24)), labels, spacing=6)
    return chart.properties(title=alt.Title(f"{info.evaluator}: {info.metric}", subtitle=lines))


#: How each interval method of ``result.leaderboard(ci=...)`` is described in a subtitle.
_METHOD_NAMES = {"wilson": "Wilson score (a share of 0/1 rows)",
                 "bootstrap": "bootstrap over test cases (seed 0, 2,000 resamples)",
                 "none": "none (this aggregate is not a mean of row values)"}


def _add_interval(df: pd.DataFrame, result: EvaluationResult, info: MetricInfo, ci: float | None) -> str:
    """Add ``lo``/``hi`` to a :func:`leaderboard_table` frame, in place, from
    ``result.leaderboard(ci=ci)``; returns the interval method the result used."""
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


def _diverging(domain: list[float], mid: float | None, reverse: bool) -> alt.Scale:
    if mid is None or not domain[0] < mid < domain[1]:
        return alt.Scale(scheme="redblue", domain=domain, reverse=reverse)
    return alt.Scale(scheme="redblue", domain=domain, domainMid=mid, reverse=reverse)


def _cell_layers(x: alt.X, y: alt.Y, tooltip: list[alt.Tooltip], scored_colour: alt.Color,
                 selection: alt.Parameter, focus: tuple[Any, Any] | None = None) -> list[alt.Chart]:
    """Two rect layers over the same cells: scored cells coloured by ``scored_colour`` with a white
    border, and unscored cells grey with a dashed dark border (a constant ``strokeDash``: Vega
    ignores a conditional one). ``selection`` goes on the first. The cells it picks are opaque and
    the others faded, unless a ``focus`` (``(active, match)`` predicates over params set from
    Python) is active: then the cells it matches are opaque."""
    scored = alt.datum.status == "scored"
    if focus is None:
        lit = alt.when(selection).then(alt.value(1.0)).otherwise(alt.value(0.35))
    else:
        active, match = focus
        lit = (alt.when(active & match).then(alt.value(1.0)).when(active).then(alt.value(0.35))
               .when(selection).then(alt.value(1.0)).otherwise(alt.value(0.35)))
    shown = alt.Chart().mark_rect(strokeWidth=1, stroke="#ffffff").encode(
        x=x, y=y, tooltip=tooltip, color=scored_colour, opacity=lit).transform_filter(scored)
    grey = alt.Chart().mark_rect(strokeWidth=1, stroke="#444444", strokeDash=[3, 2], fill=_UNSCORED).encode(
        x=x, y=y, tooltip=tooltip, opacity=lit).transform_filter(~scored)
    return [shown.add_params(selection), grey]


def heatmap(result: EvaluationResult, evaluator: str | None = None, metric: str | None = None,
            by: Literal["case", "metric"] = "case", *, max_cells: int = MAX_INLINE_ROWS,
            focus: tuple[str, str | None] | None = None) -> alt.LayerChart:
    """Models × test cases (``by="case"``) or models × metrics (``by="metric"``), coloured by value.

    The threshold is the midpoint of a diverging scale (reversed for lower-is-better metrics).
    Cells with no score (skipped, errored, unparsable judge reply, no value) are grey with a dashed
    border and labelled ``skip``/``err``/``parse``/``n/a``. Clicking a cell sets the point
    selection :data:`CASE_SELECTION` (fields ``key``, ``model_key``). ``focus=(key, model_key)``
    highlights one case's row (one cell when ``model_key`` is given) from the start; the params
    :data:`CASE_FOCUS` and :data:`MODEL_FOCUS` move it later (``JupyterChart.params``). By metric,
    each cell's colour is its range-scaled distance from that metric's threshold, and
    ``evaluator=None`` shows all.
    """
    if by == "metric":
        return _metric_heatmap(result, evaluator)
    if by != "case":
        msg = f"by must be 'case' or 'metric', not {by!r}"
        raise ValueError(msg)
    info = metric_info(result, evaluator, metric)
    df, cases, total_cases = case_cells(result, info, max_cells=max_cells)
    shown = df["key"].nunique()
    lo, hi = info.lo, info.hi
    scored_values = df.loc[df["status"] == "scored", "value"]
    if not (math.isfinite(lo) and math.isfinite(hi)):
        lo = float(scored_values.min()) if len(scored_values) else 0.0
        hi = float(scored_values.max()) if len(scored_values) else 1.0
        if info.threshold is not None:
            lo, hi = min(lo, info.threshold), max(hi, info.threshold)
        hi = hi if hi > lo else lo + 1.0
    scale = _diverging([lo, hi], info.threshold, reverse=info.direction == "lower")
    selection = alt.selection_point(name=CASE_SELECTION, fields=["key", "model_key"])
    focus_key, focus_model = focus if focus is not None else ("", "")
    case_focus = alt.param(name=CASE_FOCUS, value=focus_key or "")
    model_focus = alt.param(name=MODEL_FOCUS, value=focus_model or "")
    focused = (case_focus != "", (alt.datum.key == case_focus) & ((model_focus == "") |
                                                                (alt.datum.model_key == model_focus)))
    labelled = shown <= 60
    models = [m for m in model_names(result).values() if m in set(df["model"])]
    step = _band_step(len(models), 70)
    x = alt.X("model:N", sort=models, title="model", axis=_band_axis(step, 160))
    # The axis title sits above the case labels, like a table header: beside them it would run past
    # a short plot (three cases are 48 px high) into the labels.
    y = alt.Y("case:N", sort=alt.EncodingSortField(field="order", op="min"), title="test case",
              axis=alt.Axis(labels=labelled, ticks=labelled, labelLimit=240, titleAngle=0, titleAlign="right",
                            titleBaseline="bottom", titleX=-6, titleY=-6))
    tooltip = [alt.Tooltip("case:N", title="case"), alt.Tooltip("prompt:N", title="prompt"),
               alt.Tooltip("model:N", title="model"), alt.Tooltip("value:Q", format=".3f"),
               alt.Tooltip("status:N"), alt.Tooltip("detail:N", title="rationale / reason")]
    df["shade"] = df["value"].fillna(lo)  # only scored cells use it; never null, so no cell is dropped
    colour = alt.Color("shade:Q", scale=scale, title=info.metric, legend=alt.Legend(titleLimit=140))
    cells = _cell_layers(x, y, tooltip, colour, selection, focused)
    text = (alt.Chart().mark_text(fontSize=9, color="#111").encode(x=x, y=y, text="mark:N", tooltip=tooltip)
            .transform_filter(alt.datum.status != "scored"))
    subtitle = [f"colour midpoint: threshold {info.threshold:g}" if info.threshold is not None else "no threshold",
                "grey dashed cells hold no score (skip, err, parse, n/a); click a cell to select it"]
    if shown < total_cases:
        subtitle.insert(0, f"showing the {shown:,} hardest of {total_cases:,} cases")
    height = alt.Step(16) if labelled else 600
    prompts = alt.LookupData(data=cases, key="key", fields=["case", "prompt"])  # each prompt inlined once
    layers = (_layer(*cells, text, data=df).add_params(case_focus, model_focus)
              .transform_lookup(lookup="key", from_=prompts))
    return layers.properties(
        title=alt.Title(f"{info.evaluator}: {_better(info)}", subtitle=subtitle),
        width=alt.Step(step), height=height)


def _metric_heatmap(result: EvaluationResult, evaluator: str | None) -> alt.LayerChart:
    df = metric_cells(result, evaluator)
    selection = alt.selection_point(name=METRIC_SELECTION, fields=["model_key", "metric"])
    metrics = list(dict.fromkeys(df["metric"]))
    step = _band_step(len(metrics), 80)
    x = alt.X("metric:N", sort=metrics, title="metric", axis=_band_axis(step, 200))
    y = alt.Y("model:N", sort=list(dict.fromkeys(df["model"])), title="model", axis=alt.Axis(labelLimit=200))
    tooltip = [alt.Tooltip("model:N"), alt.Tooltip("metric:N"), alt.Tooltip("value:Q", format=".3f"),
               alt.Tooltip("threshold:Q", format=".3f"), alt.Tooltip("direction:N", title="better"),
               alt.Tooltip("n:Q", title="rows measured"), alt.Tooltip("N:Q", title="rows")]
    df["shade"] = df["margin"].fillna(0.0)  # only scored cells use it (see heatmap)
    colour = alt.Color("shade:Q", title="vs threshold",
                       scale=alt.Scale(scheme="redblue", domain=[-1, 1], domainMid=0))
    cells = _cell_layers(x, y, tooltip, colour, selection)
    dark = (alt.datum.status == "scored") & ((alt.datum.shade > 0.6) | (alt.datum.shade < -0.6))
    text = alt.Chart().mark_text(fontSize=10).encode(
        x=x, y=y, text="mark:N", tooltip=tooltip,
        color=alt.when(dark).then(alt.value("#ffffff")).otherwise(alt.value("#222222")))
    title = f"{evaluator or 'all evaluators'}: models × metrics"
    subtitle = "colour: distance from each metric's threshold (blue = good side), scaled by its range"
    return _layer(*cells, text, data=df).properties(
        title=alt.Title(title, subtitle=subtitle), width=alt.Step(step), height=alt.Step(26))


def pass_fail_chart(result: EvaluationResult, evaluator: str | None = None) -> alt.Chart:
    """Stacked bars per model: rows that passed, failed, could not be parsed, errored or were skipped.

    Meant for bool evaluators (their ``pass`` metric and ``parse_failure`` label); for any other
    evaluator, pass/fail is its primary metric against the threshold.
    """
    info = metric_info(result, evaluator, None)
    df = outcome_counts(result, info)
    present = [o for o in OUTCOMES if o in set(df["outcome"])] or ["pass", "fail"]
    return alt.Chart(df).mark_bar().encode(
        y=alt.Y("model:N", sort=list(dict.fromkeys(df["model"])), title=None),
        x=alt.X("count:Q", stack="zero", title="rows"),
        color=alt.Color("outcome:N", title="outcome",
                        scale=alt.Scale(domain=present, range=[OUTCOMES[o] for o in present])),
        order=alt.Order("stack:Q"),
        tooltip=[alt.Tooltip("model:N"), alt.Tooltip("outcome:N"), alt.Tooltip("count:Q"),
                 alt.Tooltip("share:Q", format=".0%")],
    ).properties(title=f"{info.evaluator}: pass / fail", width=420, height=alt.Step(24))


def distribution_chart(result: EvaluationResult, evaluator: str | None = None, metric: str | None = None,
                       kind: Literal["box", "hist"] = "box", bins: int = 20) -> alt.LayerChart | alt.Chart:
    """Per-model distribution of a metric's row values: a box plot (min–max whiskers, quartile box,
    median tick, mean diamond, threshold rule) or, with ``kind="hist"``, one histogram per model."""
    info = metric_info(result, evaluator, metric)
    if kind == "hist":
        df = histogram(result, info, bins=bins)
        return alt.Chart(df).mark_bar().encode(
            x=alt.X("bin_start:Q", bin="binned", title=_better(info), scale=_value_axis_scale(info, zero=False)),
            x2="bin_end:Q", y=alt.Y("count:Q", title="rows"),
            row=alt.Row("model:N", title=None, sort=list(dict.fromkeys(df["model"]))),
            tooltip=[alt.Tooltip("model:N"), alt.Tooltip("bin_start:Q", format=".3f", title="from"),
                     alt.Tooltip("bin_end:Q", format=".3f", title="to"), alt.Tooltip("count:Q"),
                     alt.Tooltip("share:Q", format=".0%")],
        ).properties(title=f"{info.evaluator}: {info.metric} distribution", width=380, height=60)
    if kind != "box":
        msg = f"kind must be 'box' or 'hist', not {kind!r}"
        raise ValueError(msg)
    df = box_stats(result, info)
    y = alt.Y("model:N", sort=list(df["model"]), title=None)
    scale = _value_axis_scale(info, zero=False)
    stats = [alt.Tooltip(f"{c}:Q", format=".3f") for c in ("min", "q1", "median", "q3", "max", "mean")]
    tooltip = [alt.Tooltip("model:N"), *stats, alt.Tooltip("count:Q", title="rows")]
    base = alt.Chart(df)
    layers: list[alt.Chart] = [
        base.mark_rule().encode(y=y, x=alt.X("min:Q", scale=scale, title=_better(info)), x2="max:Q", tooltip=tooltip),
        base.mark_bar(size=14, color="#8fb3d9").encode(y=y, x="q1:Q", x2="q3:Q", tooltip=tooltip),
        base.mark_tick(color="#1f3b5c", thickness=2, size=14).encode(y=y, x="median:Q", tooltip=tooltip),
        base.mark_point(shape="diamond", color="#d1495b", filled=True).encode(y=y, x="mean:Q", tooltip=tooltip),
    ]
    rule = _threshold_rule(info)
    if rule is not None:
        layers.append(rule)
    return _layer(*layers).properties(title=f"{info.evaluator}: {info.metric} per model",
                                         width=420, height=alt.Step(28))


# -- statistics ---------------------------------------------------------------------------------

#: What :func:`compare_chart` calls a difference whose unadjusted interval excludes 0 but whose
#: test is not significant after Holm's adjustment.
UNADJUSTED_ONLY = "interval excludes 0, not significant after Holm"
#: Colours of :func:`compare_chart`'s verdicts.
_COMPARE_COLOURS = {"A better": "#3a9c5b", "B better": "#d1495b", UNADJUSTED_ONLY: "#e0a33b",
                    "tied within noise": "#9a9a9a"}


def compare_table(result: EvaluationResult, model_a: str, model_b: str, evaluator: str | None = None,
                  *, alpha: float = 0.05) -> pd.DataFrame:
    """``result.compare(...)`` with what the chart draws: a ``label`` per row (``evaluator.metric``
    when several evaluators are compared), the metric's ``direction``, a ``verdict`` and a ``note``.

    The verdict follows the Holm-adjusted test, as ``significant`` does: which model is better
    when it is significant (read with the metric's direction); :data:`UNADJUSTED_ONLY` when it is
    not but the (unadjusted) 95% interval of the paired difference excludes 0; else ``"tied within
    noise"``. ``note`` says in words where the interval and the adjusted test disagree.
    ``attrs["family"]`` names the family of ``p_holm``."""
    table = result.compare(model_a, model_b, evaluator, alpha=alpha)
    df = table.reset_index(drop=True).copy()
    df.attrs.update(table.attrs)
    directions = result.metrics.set_index(["evaluator", "metric"])["direction"]
    df["direction"] = [str(directions.get((e, m), "higher")) for e, m in zip(df["evaluator"], df["metric"],
                                                                            strict=True)]
    many = df["evaluator"].nunique() > 1
    df["label"] = (df["evaluator"] + "." + df["metric"]) if many else df["metric"]
    a_ahead = (df["diff"].astype(float) > 0) == (df["direction"] == "higher")
    significant = df["significant"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    lo, hi = df["diff_lo"].astype(float).to_numpy(), df["diff_hi"].astype(float).to_numpy()
    excludes_zero = (lo > 0) | (hi < 0)  # NaN compares False: no interval excludes nothing
    df["verdict"] = np.where(significant, np.where(a_ahead, "A better", "B better"),
                             np.where(excludes_zero, UNADJUSTED_ONLY, "tied within noise"))
    family = str(df.attrs.get("family", "Holm-adjusted over this table"))
    df["note"] = np.select(
        [~significant & excludes_zero, significant & ~excludes_zero & np.isfinite(lo)],
        [f"the unadjusted 95% interval excludes 0, but the test is not significant ({family})",
         f"significant ({family}), though the bootstrap interval touches 0"], default="")
    df["mark"] = np.where(significant, "★", "")
    return df


def compare_chart(result: EvaluationResult, model_a: str, model_b: str, evaluator: str | None = None,
                  *, alpha: float = 0.05) -> alt.LayerChart:
    """Paired differences ``mean_a - mean_b`` per metric (from ``result.compare``), each with its
    95% bootstrap interval as a rule and a dashed line at zero.

    Points and intervals are coloured by verdict (:func:`compare_table`): green when ``model_a``
    is significantly better (Holm-adjusted p below ``alpha``, over the comparisons of this table,
    read with the metric's direction), red when ``model_b`` is, amber when the unadjusted interval
    excludes 0 but the adjusted test is not significant, grey when the two are tied within noise;
    significant rows also carry a star (A is ``model_a``, B ``model_b``, as in the title). Tooltips
    give both means, the paired rows ``n``, the test, both p-values and a note where the interval
    and the test disagree.
    """
    df = compare_table(result, model_a, model_b, evaluator, alpha=alpha)
    names = model_names(result)
    name_a, name_b = names.get(model_a, model_a), names.get(model_b, model_b)
    family = str(df.attrs.get("family", "Holm-adjusted over this table"))
    y = alt.Y("label:N", sort=list(df["label"]), title=None, axis=alt.Axis(labelLimit=260))
    tooltip = [alt.Tooltip("evaluator:N"), alt.Tooltip("metric:N"), alt.Tooltip("direction:N", title="better"),
               alt.Tooltip("mean_a:Q", format=".3f", title=f"mean {name_a}"),
               alt.Tooltip("mean_b:Q", format=".3f", title=f"mean {name_b}"),
               alt.Tooltip("diff:Q", format=".3f"), alt.Tooltip("diff_lo:Q", format=".3f", title="95% CI low"),
               alt.Tooltip("diff_hi:Q", format=".3f", title="95% CI high"), alt.Tooltip("n:Q", title="paired rows"),
               alt.Tooltip("test:N"), alt.Tooltip("p_value:Q", format=".4f", title="p"),
               alt.Tooltip("p_holm:Q", format=".4f", title="p (Holm, this table)"), alt.Tooltip("verdict:N"),
               alt.Tooltip("note:N")]
    base = alt.Chart(df)
    colour = alt.Color("verdict:N", title=None, legend=alt.Legend(orient="bottom", labelLimit=400),
                       scale=alt.Scale(domain=list(_COMPARE_COLOURS), range=list(_COMPARE_COLOURS.values())))
    zero = alt.Chart(pd.DataFrame({"zero": [0.0]})).mark_rule(color="#222", strokeDash=[5, 3]).encode(x="zero:Q")
    intervals = base.mark_rule(strokeWidth=2).encode(
        y=y, x=alt.X("diff_lo:Q", title=f"{name_a} − {name_b} (mean paired difference)"), x2="diff_hi:Q",
        color=colour, tooltip=tooltip).transform_filter("isValid(datum.diff_lo) && isValid(datum.diff_hi)")
    points = base.mark_point(filled=True, size=80).encode(y=y, x="diff:Q", color=colour, tooltip=tooltip)
    stars = base.mark_text(dy=-10, fontSize=14, color="#222").encode(y=y, x="diff:Q", text="mark:N")
    subtitle = ["bars: unadjusted 95% interval of the paired difference",
                f"★ significant at alpha {alpha:g}, p-values {family}",
                "tests: exact McNemar for 0/1 metrics, Wilcoxon signed-rank for scores"]
    return _layer(zero, intervals, points, stars).properties(
        title=alt.Title(f"{name_a} vs {name_b}", subtitle=subtitle), width=420, height=alt.Step(28))


def agreement_chart(agreement: JudgeAgreement) -> alt.LayerChart:
    """How a judge agrees with human labels (``result.agreement(evaluator)``).

    With a numeric score: the ROC curve of the score against human pass/fail, the chance diagonal,
    and the best threshold (maximum Youden J) as a red point; the title gives AUC and Cohen's κ.
    Without one: the confusion matrix, human labels down, judge verdicts across, with counts.
    """
    header = f"κ = {_fmt(agreement.kappa)}, raw agreement {_fmt(agreement.agreement, '.0%')}, n = {agreement.n}"
    roc = getattr(agreement, "roc", None)
    if roc is not None and len(roc):
        df = pd.DataFrame({"threshold": roc["threshold"].astype(float), "tpr": roc["tpr"].astype(float),
                           "fpr": roc["fpr"].astype(float)})
        df = df[np.isfinite(df["threshold"]) | (df["fpr"] == 0)].reset_index(drop=True)
        df["threshold"] = df["threshold"].where(np.isfinite(df["threshold"]))  # JSON has no infinity
        tooltip = [alt.Tooltip("threshold:Q", format=".3f"), alt.Tooltip("tpr:Q", format=".2f", title="TPR"),
                   alt.Tooltip("fpr:Q", format=".2f", title="FPR")]
        axis_x = alt.X("fpr:Q", title="false positive rate (human fail, judge pass)", scale=alt.Scale(domain=[0, 1]))
        axis_y = alt.Y("tpr:Q", title="true positive rate (human pass, judge pass)", scale=alt.Scale(domain=[0, 1]))
        curve = alt.Chart(df).mark_line(point=True).encode(
            x=axis_x, y=axis_y, order="fpr:Q", tooltip=tooltip)
        chance = alt.Chart(pd.DataFrame({"fpr": [0.0, 1.0], "tpr": [0.0, 1.0]})).mark_line(
            color="#999", strokeDash=[4, 4]).encode(x="fpr:Q", y="tpr:Q")
        best = df[np.isclose(df["threshold"], float(agreement.best_threshold))].head(1)
        if best.empty:  # no curve point at that threshold: mark the point of largest Youden J instead
            best = df.loc[[(df["tpr"] - df["fpr"]).idxmax()]]
        chosen = alt.Chart(best).mark_point(color="#d1495b", filled=True, size=140).encode(
            x="fpr:Q", y="tpr:Q", tooltip=tooltip)
        direction = getattr(agreement, "direction", "higher")
        rule = ">=" if direction == "higher" else "<="
        subtitle = [header, f"AUC {_fmt(agreement.auc)}; red: best threshold, pass when score {rule} "
                            f"{_fmt(agreement.best_threshold)} (max Youden J)"]
        return _layer(chance, curve, chosen).properties(
            title=alt.Title("judge vs human labels: ROC", subtitle=subtitle), width=320, height=320)
    confusion = agreement.confusion
    cells = (confusion.rename_axis(index="human", columns="judge").stack().rename("count").reset_index())
    cells["human"], cells["judge"] = cells["human"].astype(str), cells["judge"].astype(str)
    cells["count"] = cells["count"].astype(int)
    cells["match"] = cells["human"] == cells["judge"]
    x = alt.X("judge:N", title="judge verdict", sort=[str(c) for c in confusion.columns])
    y = alt.Y("human:N", title="human label", sort=[str(i) for i in confusion.index])
    rect = alt.Chart(cells).mark_rect(stroke="#fff").encode(
        x=x, y=y, color=alt.Color("count:Q", scale=alt.Scale(scheme="blues"), title="rows"),
        tooltip=[alt.Tooltip("human:N"), alt.Tooltip("judge:N"), alt.Tooltip("count:Q")])
    text = alt.Chart(cells).mark_text(fontSize=13).encode(x=x, y=y, text="count:Q")
    return _layer(rect, text).properties(
        title=alt.Title("judge vs human labels: confusion matrix", subtitle=header),
        width=alt.Step(70), height=alt.Step(40))


def _fmt(value: float | None, spec: str = ".3f") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(float(value), spec)
