"""The robustness chart: flip rate per model × perturbation, from :meth:`~nbeval.results.EvaluationResult.robustness`.

The table is aggregated already (one row per evaluator, metric, model, perturbator and
intensity), so the chart inlines a few dozen rows whatever the result's size. Model and
perturbator names are data: Vega draws them as text and its tooltips escape them; none is put
into an expression or a title.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

from nbeval.results.statistics.robustness import UNKNOWN
from nbeval.widgets.chart_frame import MAX_PLOT_WIDTH
from nbeval.widgets.tables import model_names

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["INTENSITY_ORDER", "ROBUSTNESS_SELECTION", "robustness_chart", "robustness_table"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("robustness_chart",)

#: Name of the chart's click selection (fields ``model_key`` and ``perturbation``).
ROBUSTNESS_SELECTION = "robustness_select"
#: Intensities in the order the columns show them; others follow, by name.
INTENSITY_ORDER = ("low", "medium", "high")


def _perturbation(perturbator: str, intensity: str) -> str:
    """A perturbation's label: the perturbator, with its intensity when known."""
    return perturbator if intensity == UNKNOWN else f"{perturbator} · {intensity}"


def robustness_table(result: EvaluationResult, evaluator: str | None = None, metric: str | None = None) -> pd.DataFrame:
    """Build the data of :func:`robustness_chart`: the robustness table with display columns.

    It is :meth:`~nbeval.results.EvaluationResult.robustness` with ``model`` (readable name),
    ``perturbation`` (``perturbator · intensity``), ``measure`` (``evaluator.metric``), ``order``
    (column order) and ``text`` (the cell's label) added.

    Args:
        result: The evaluation result holding perturbed test cases.
        evaluator: Id of the evaluator kept; ``None`` keeps every evaluator.
        metric: The metric kept; ``None`` keeps each evaluator's primary metric.

    Returns:
        One row per evaluator, metric, model, perturbator and intensity.
    """
    df = result.robustness(evaluator=evaluator, metric=metric).copy()
    names = model_names(result)
    df["model"] = [names.get(k, k) for k in df["model_key"]]
    df["perturbation"] = [_perturbation(p, i) for p, i in zip(df["perturbator"], df["intensity"], strict=True)]
    df["measure"] = df["evaluator"].astype(str) + "." + df["metric"].astype(str)
    rank = {name: i for i, name in enumerate(INTENSITY_ORDER)}
    ordered = sorted(
        set(zip(df["perturbator"], df["intensity"], strict=True)),
        key=lambda pi: (pi[0] == UNKNOWN, pi[0], rank.get(pi[1], len(rank)), pi[1]),
    )
    order = {_perturbation(p, i): n for n, (p, i) in enumerate(ordered)}
    df["order"] = [order[p] for p in df["perturbation"]]
    df["text"] = [f"{r:.0%} ({f}/{n})" for r, f, n in zip(df["flip_rate"], df["flips"], df["n"], strict=True)]
    return df


def robustness_chart(
    result: EvaluationResult, evaluator: str | None = None, metric: str | None = None
) -> alt.FacetChart:
    """Draw the flip rate per model (rows) × perturbator and intensity (columns).

    There is one panel per evaluator and metric (by default every evaluator's primary metric;
    ``evaluator=`` keeps one). Each cell is coloured by its flip rate (share of perturbed cases
    that crossed the threshold, either way) and labelled ``rate (flips/n)``; the tooltip adds the
    flips down (passed on the original, failed when perturbed) and the mean change (negative is
    worse). Clicking a cell sets the point selection :data:`ROBUSTNESS_SELECTION`. A result
    without perturbed cases gives an empty chart that says so.

    Args:
        result: The evaluation result holding perturbed test cases.
        evaluator: Id of the evaluator drawn; ``None`` draws every evaluator.
        metric: The metric drawn; ``None`` draws each evaluator's primary metric.

    Returns:
        The heatmaps faceted into one row per evaluator and metric.
    """
    df = robustness_table(result, evaluator, metric)
    models = [m for m in model_names(result).values() if m in set(df["model"])]
    selection = alt.selection_point(name=ROBUSTNESS_SELECTION, fields=["model_key", "perturbation"])
    x = alt.X(
        "perturbation:N",
        sort=alt.EncodingSortField(field="order", op="min"),
        title="perturbation",
        axis=alt.Axis(labelAngle=-30, labelLimit=200),
    )
    y = alt.Y("model:N", sort=models, title="model", axis=alt.Axis(labelLimit=200))
    tooltip = [
        alt.Tooltip("model:N"),
        alt.Tooltip("perturbator:N"),
        alt.Tooltip("intensity:N"),
        alt.Tooltip("measure:N", title="evaluator.metric"),
        alt.Tooltip("n:Q", title="pairs (n)"),
        alt.Tooltip("flips:Q"),
        alt.Tooltip("flips_down:Q", title="flips down (pass → fail)"),
        alt.Tooltip("flip_rate:Q", title="flip rate", format=".0%"),
        alt.Tooltip("mean_delta:Q", title="mean change (negative is worse)", format="+.3f"),
    ]
    rect = (
        alt.Chart()
        .mark_rect(stroke="#ffffff", strokeWidth=1)
        .encode(
            x=x,
            y=y,
            tooltip=tooltip,
            color=alt.Color(
                "flip_rate:Q",
                title="flip rate",
                scale=alt.Scale(scheme="orangered", domain=[0, 1]),
                legend=alt.Legend(format=".0%"),
            ),
            opacity=alt.when(selection).then(alt.value(1.0)).otherwise(alt.value(0.35)),
        )
        .add_params(selection)
    )
    text = (
        alt.Chart()
        .mark_text(fontSize=10)
        .encode(
            x=x,
            y=y,
            text="text:N",
            tooltip=tooltip,
            color=alt.when(alt.datum.flip_rate > 0.6).then(alt.value("#ffffff")).otherwise(alt.value("#222222")),
        )
    )
    # Columns share the plot width of the other charts, so the chart fits a notebook's output area;
    # below 45 px a cell is too narrow for its label, and the tooltip carries it alone.
    step = min(90.0, MAX_PLOT_WIDTH / max(1, df["perturbation"].nunique() if not df.empty else 1))
    if df.empty:
        subtitle = "no perturbed test cases with a scored original in this result"
    else:
        subtitle = (
            "share of perturbed cases on the other side of the threshold from their original; cell: rate (flips/n)"
        )
    if step < 45:
        text = text.transform_filter("false")
        subtitle = subtitle.replace("cell: rate (flips/n)", "a cell's tooltip: rate (flips/n)")
    layers = alt.layer(rect, text, data=df).properties(width=alt.Step(step), height=alt.Step(26))
    return layers.facet(
        row=alt.Row("measure:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
    ).properties(title=alt.Title("robustness: flip rate per model and perturbation", subtitle=subtitle))
