"""The frame every chart of the kit shares.

It sets the widest plot, how layers are put together, and the value axis (its scale, the threshold
rule drawn across it, its "higher is better" title).
"""

from __future__ import annotations

import math
from typing import Any, Literal

import altair as alt
import pandas as pd

from nbeval.widgets.tables import MetricInfo

__all__ = ["MAX_PLOT_WIDTH", "better", "layer", "threshold_rule", "value_axis_scale"]

#: The widest plot area of a chart, in pixels. With its labels, legend and padding every chart then
#: fits the 968 px output area of JupyterLab in a 1,400 px window with the file browser open.
MAX_PLOT_WIDTH = 520


def layer(*charts: Any, **kwargs: Any) -> alt.LayerChart:
    """:func:`altair.layer` of charts that carry no facet encoding, which is always a layer chart."""
    chart = alt.layer(*charts, **kwargs)
    if not isinstance(chart, alt.LayerChart):  # only layers with shared row/column/facet channels facet
        msg = f"expected a layer chart, got {type(chart).__name__}"
        raise TypeError(msg)
    return chart


def value_axis_scale(info: MetricInfo, *, zero: bool = True) -> alt.Scale:
    """The value axis of ``info``'s metric: its declared range when finite, else fitted to the data."""
    if math.isfinite(info.lo) and math.isfinite(info.hi):
        return alt.Scale(domain=[info.lo, info.hi])
    return alt.Scale(zero=zero)


def threshold_rule(info: MetricInfo, orient: Literal["x", "y"] = "x") -> alt.Chart | None:
    """A dashed rule at the metric's threshold, across ``orient``'s axis (``None`` without a threshold)."""
    if info.threshold is None:
        return None
    rule = alt.Chart(pd.DataFrame({"threshold": [info.threshold]})).mark_rule(color="#222", strokeDash=[5, 3])
    channel = alt.X if orient == "x" else alt.Y
    return rule.encode(channel("threshold:Q"), tooltip=[alt.Tooltip("threshold:Q", title="threshold")])


def better(info: MetricInfo) -> str:
    """An axis title: the metric and which way is better."""
    return f"{info.metric} ({info.direction} is better)"
