"""The heatmaps: models × test cases (one cell per row, the kit's one detail view) and models × metrics.

Cells with no score are grey with a dashed border; a click selects a cell, and the case explorer can point the per-case
heatmap's focus at the case it shows (:data:`CASE_FOCUS`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import altair as alt

from nbeval.widgets.chart_frame import MAX_PLOT_WIDTH, better, layer
from nbeval.widgets.tables import MAX_INLINE_ROWS, case_cells, metric_cells, metric_info, model_names

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["CASE_FOCUS", "CASE_SELECTION", "METRIC_SELECTION", "MODEL_FOCUS", "heatmap"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("heatmap",)

#: Name of the heatmap's click selection (fields ``key`` and ``model_key``).
CASE_SELECTION = "case_select"
#: Names of the per-case heatmap's focus params, set from Python (``JupyterChart.params``): while
#: ``case_focus`` is not empty, the cells of that case (only ``model_focus``'s, when that is set) are
#: highlighted instead of the clicked one. The case explorer points them at the case it shows.
CASE_FOCUS, MODEL_FOCUS = "case_focus", "model_focus"
#: Name of the models × metrics heatmap's click selection (fields ``model_key`` and ``metric``).
METRIC_SELECTION = "metric_select"
_UNSCORED = "#b0b0b0"  # mid grey: outside the red–white–blue value scale


def _band_step(n: int, widest: float, most: float = MAX_PLOT_WIDTH) -> float:
    """The width of one of ``n`` bands: ``widest`` until the plot would pass ``most`` pixels."""
    return round(max(1.0, min(widest, most / max(n, 1))), 2)


def _band_axis(step: float, label_limit: int) -> alt.Axis:
    """An axis of band labels: slanted on wide bands, upright on narrow ones, none below 11 px."""
    return alt.Axis(labelAngle=-30 if step >= 50 else -90, labelLimit=label_limit, labels=step >= 11)


def _diverging(domain: list[float], mid: float | None, reverse: bool) -> alt.Scale:
    """A red-blue colour scale over ``domain``, centred on ``mid`` (the threshold) when it falls inside."""
    if mid is None or not domain[0] < mid < domain[1]:
        return alt.Scale(scheme="redblue", domain=domain, reverse=reverse)
    return alt.Scale(scheme="redblue", domain=domain, domainMid=mid, reverse=reverse)


def _cell_layers(
    x: alt.X,
    y: alt.Y,
    tooltip: list[alt.Tooltip],
    scored_colour: alt.Color,
    selection: alt.Parameter,
    focus: tuple[Any, Any] | None = None,
) -> list[alt.Chart]:
    """Build two rect layers over the same cells: scored cells and unscored ones.

    Scored cells are coloured by ``scored_colour`` with a white border, and unscored cells grey
    with a dashed dark border (a constant ``strokeDash``: Vega ignores a conditional one).
    ``selection`` goes on the first. The cells it picks are opaque and the others faded, unless a
    ``focus`` (``(active, match)`` predicates over params set from Python) is active: then the
    cells it matches are opaque.
    """
    scored = alt.datum.status == "scored"
    if focus is None:
        lit = alt.when(selection).then(alt.value(1.0)).otherwise(alt.value(0.35))
    else:
        active, match = focus
        lit = (
            alt.when(active & match)
            .then(alt.value(1.0))
            .when(active)
            .then(alt.value(0.35))
            .when(selection)
            .then(alt.value(1.0))
            .otherwise(alt.value(0.35))
        )
    shown = (
        alt.Chart()
        .mark_rect(strokeWidth=1, stroke="#ffffff")
        .encode(x=x, y=y, tooltip=tooltip, color=scored_colour, opacity=lit)
        .transform_filter(scored)
    )
    grey = (
        alt.Chart()
        .mark_rect(strokeWidth=1, stroke="#444444", strokeDash=[3, 2], fill=_UNSCORED)
        .encode(x=x, y=y, tooltip=tooltip, opacity=lit)
        .transform_filter(~scored)
    )
    return [shown.add_params(selection), grey]


def heatmap(
    result: EvaluationResult,
    evaluator: str | None = None,
    metric: str | None = None,
    by: Literal["case", "metric"] = "case",
    *,
    max_cells: int = MAX_INLINE_ROWS,
    focus: tuple[str, str | None] | None = None,
) -> alt.LayerChart:
    """Models × test cases (``by="case"``) or models × metrics (``by="metric"``), coloured by value.

    The threshold is the midpoint of a diverging scale (reversed for lower-is-better metrics).
    Cells with no score (skipped, errored, unparsable judge reply, no value) are grey with a dashed
    border and labelled ``skip``/``err``/``parse``/``n/a``. Clicking a cell sets the point
    selection :data:`CASE_SELECTION` (fields ``key``, ``model_key``). ``focus=(key, model_key)``
    highlights one case's row (one cell when ``model_key`` is given) from the start; the params
    :data:`CASE_FOCUS` and :data:`MODEL_FOCUS` move it later (``JupyterChart.params``). By metric,
    each cell's colour is its range-scaled distance from that metric's threshold, and
    ``evaluator=None`` shows all.

    Args:
        result: The evaluation result to chart.
        evaluator: Id of the evaluator to chart; ``None`` takes the result's first evaluator by
            case, and every evaluator by metric.
        metric: The metric whose values colour the cells by case; ``None`` takes the evaluator's
            primary metric. Unused by metric.
        by: ``"case"`` for models × test cases, ``"metric"`` for models × metrics.
        max_cells: How many cells the per-case heatmap inlines at most; past that it keeps the
            hardest cases and says so in its subtitle. Unused by metric.
        focus: ``(key, model_key)`` of the case (and model, unless ``None``) highlighted from the
            start; ``None`` highlights none. Unused by metric.

    Returns:
        The layered heatmap: the scored cells, the unscored cells and their labels.

    Raises:
        ValueError: When ``by`` is neither ``"case"`` nor ``"metric"``, or the result has no evaluators.
        KeyError: When the evaluator or the metric is not in the result.
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
    focused = (
        case_focus != "",
        (alt.datum.key == case_focus) & ((model_focus == "") | (alt.datum.model_key == model_focus)),
    )
    labelled = shown <= 60
    models = [m for m in model_names(result).values() if m in set(df["model"])]
    step = _band_step(len(models), 70)
    x = alt.X("model:N", sort=models, title="model", axis=_band_axis(step, 160))
    # The axis title sits above the case labels, like a table header: beside them it would run past
    # a short plot (three cases are 48 px high) into the labels.
    y = alt.Y(
        "case:N",
        sort=alt.EncodingSortField(field="order", op="min"),
        title="test case",
        axis=alt.Axis(
            labels=labelled,
            ticks=labelled,
            labelLimit=240,
            titleAngle=0,
            titleAlign="right",
            titleBaseline="bottom",
            titleX=-6,
            titleY=-6,
        ),
    )
    tooltip = [
        alt.Tooltip("case:N", title="case"),
        alt.Tooltip("prompt:N", title="prompt"),
        alt.Tooltip("model:N", title="model"),
        alt.Tooltip("value:Q", format=".3f"),
        alt.Tooltip("status:N"),
        alt.Tooltip("detail:N", title="rationale / reason"),
    ]
    df["shade"] = df["value"].fillna(lo)  # only scored cells use it; never null, so no cell is dropped
    colour = alt.Color("shade:Q", scale=scale, title=info.metric, legend=alt.Legend(titleLimit=140))
    cells = _cell_layers(x, y, tooltip, colour, selection, focused)
    text = (
        alt.Chart()
        .mark_text(fontSize=9, color="#111")
        .encode(x=x, y=y, text="mark:N", tooltip=tooltip)
        .transform_filter(alt.datum.status != "scored")
    )
    subtitle = [
        f"colour midpoint: threshold {info.threshold:g}" if info.threshold is not None else "no threshold",
        "grey dashed cells hold no score (skip, err, parse, n/a); click a cell to select it",
    ]
    if shown < total_cases:
        subtitle.insert(0, f"showing the {shown:,} hardest of {total_cases:,} cases")
    height = alt.Step(16) if labelled else 600
    prompts = alt.LookupData(data=cases, key="key", fields=["case", "prompt"])  # each prompt inlined once
    layers = (
        layer(*cells, text, data=df).add_params(case_focus, model_focus).transform_lookup(lookup="key", from_=prompts)
    )
    return layers.properties(
        title=alt.Title(f"{info.evaluator}: {better(info)}", subtitle=subtitle), width=alt.Step(step), height=height
    )


def _metric_heatmap(result: EvaluationResult, evaluator: str | None) -> alt.LayerChart:
    """Draw the model × metric heatmap of ``evaluator``'s mean values, its cells selectable.

    With ``evaluator=None`` it shows every evaluator's metrics.
    """
    df = metric_cells(result, evaluator)
    selection = alt.selection_point(name=METRIC_SELECTION, fields=["model_key", "metric"])
    metrics = list(dict.fromkeys(df["metric"]))
    step = _band_step(len(metrics), 80)
    x = alt.X("metric:N", sort=metrics, title="metric", axis=_band_axis(step, 200))
    y = alt.Y("model:N", sort=list(dict.fromkeys(df["model"])), title="model", axis=alt.Axis(labelLimit=200))
    tooltip = [
        alt.Tooltip("model:N"),
        alt.Tooltip("metric:N"),
        alt.Tooltip("value:Q", format=".3f"),
        alt.Tooltip("threshold:Q", format=".3f"),
        alt.Tooltip("direction:N", title="better"),
        alt.Tooltip("n:Q", title="rows measured"),
        alt.Tooltip("N:Q", title="rows"),
    ]
    df["shade"] = df["margin"].fillna(0.0)  # only scored cells use it (see heatmap)
    colour = alt.Color("shade:Q", title="vs threshold", scale=alt.Scale(scheme="redblue", domain=[-1, 1], domainMid=0))
    cells = _cell_layers(x, y, tooltip, colour, selection)
    dark = (alt.datum.status == "scored") & ((alt.datum.shade > 0.6) | (alt.datum.shade < -0.6))
    text = (
        alt.Chart()
        .mark_text(fontSize=10)
        .encode(
            x=x,
            y=y,
            text="mark:N",
            tooltip=tooltip,
            color=alt.when(dark).then(alt.value("#ffffff")).otherwise(alt.value("#222222")),
        )
    )
    title = f"{evaluator or 'all evaluators'}: models × metrics"
    subtitle = "colour: distance from each metric's threshold (blue = good side), scaled by its range"
    return layer(*cells, text, data=df).properties(
        title=alt.Title(title, subtitle=subtitle), width=alt.Step(step), height=alt.Step(26)
    )
