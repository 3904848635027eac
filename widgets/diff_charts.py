"""The chart of a diff of two runs (:func:`nbeval.results.runs.diff.diff`).

Per metric and model, it draws the change from the first run to the second with its interval,
regressions and improvements marked.

Like the kit's other charts it inlines its data (no network): one row per comparison of the
diff's table, so the data grows with metrics × models, never with result rows. Text in the
chart and its tooltips (model keys, evaluator names) is data, which Vega escapes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from nbeval.widgets.chart_frame import MAX_PLOT_WIDTH, layer

if TYPE_CHECKING:
    from nbeval.results.runs.diff import RunDiff

__all__ = ["DIFF_VERDICTS", "diff_chart", "diff_chart_table"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("diff_chart",)

#: The verdict of each comparison, and its colour.
DIFF_VERDICTS = {
    "regression": "#d1495b",
    "improvement": "#3a9c5b",
    "no significant change": "#9a9a9a",
    "not tested": "#c9c9c9",
}


def diff_chart_table(d: RunDiff) -> pd.DataFrame:
    """Build the rows that :func:`diff_chart` draws.

    They are the diff's table (comparisons with a change) with a ``label`` (``evaluator.metric``),
    a ``row`` (label and model), a ``verdict`` and a star mark.

    Args:
        d: The diff of two runs.

    Returns:
        One row per comparison with a change, the diff table's ``attrs`` kept.
    """
    t = d.table
    df = t[t["diff"].notna()].reset_index(drop=True).copy()
    df["label"] = df["evaluator"].astype(str) + "." + df["metric"].astype(str)
    df["row"] = df["label"] + " · " + df["model_key"].astype(str)
    df["verdict"] = np.select(
        [df["regression"].to_numpy(dtype=bool), df["improvement"].to_numpy(dtype=bool), (df["test"] == "none")],
        ["regression", "improvement", "not tested"],
        default="no significant change",
    )
    df["mark"] = np.where(df["significant"].to_numpy(dtype=bool), "★", "")
    df.attrs.update(t.attrs)
    return df


def diff_chart(d: RunDiff) -> alt.LayerChart:
    """Draw the mean paired change ``after - before`` of each metric and model with its interval.

    Each change is a point with its 95% interval (a rule), beside a dashed rule at zero. Colour:
    red for a regression (significant, in the metric's wrong direction, at least the diff's
    ``min_effect``), green for an improvement, grey otherwise, light grey where no test applies (an
    aggregate that is not a mean of rows); a star marks a significant change. Tooltips give both
    means, the pairs, the test and both p-values.

    Args:
        d: The diff of two runs, as :func:`nbeval.results.runs.diff.diff` returns it.

    Returns:
        The layered chart: the zero rule, the intervals, the points and the stars.
    """
    df = diff_chart_table(d)
    y = alt.Y("row:N", sort=list(df["row"]), title=None, axis=alt.Axis(labelLimit=300))
    tooltip = [
        alt.Tooltip("evaluator:N"),
        alt.Tooltip("metric:N"),
        alt.Tooltip("model_key:N", title="model"),
        alt.Tooltip("direction:N", title="better"),
        alt.Tooltip("mean_before:Q", format=".3f", title="before"),
        alt.Tooltip("mean_after:Q", format=".3f", title="after"),
        alt.Tooltip("diff:Q", format="+.3f", title="change"),
        alt.Tooltip("diff_lo:Q", format=".3f", title="95% CI low"),
        alt.Tooltip("diff_hi:Q", format=".3f", title="95% CI high"),
        alt.Tooltip("n:Q", title="paired rows"),
        alt.Tooltip("test:N"),
        alt.Tooltip("p_value:Q", format=".4f", title="p"),
        alt.Tooltip("p_holm:Q", format=".4f", title="p (Holm)"),
        alt.Tooltip("verdict:N"),
    ]
    present = [v for v in DIFF_VERDICTS if v in set(df["verdict"])] or list(DIFF_VERDICTS)
    colour = alt.Color(
        "verdict:N",
        title=None,
        legend=alt.Legend(orient="bottom"),
        scale=alt.Scale(domain=present, range=[DIFF_VERDICTS[v] for v in present]),
    )
    base = alt.Chart(df)
    zero = alt.Chart(pd.DataFrame({"zero": [0.0]})).mark_rule(color="#222", strokeDash=[5, 3]).encode(x="zero:Q")
    intervals = (
        base.mark_rule(strokeWidth=2)
        .encode(y=y, x=alt.X("diff_lo:Q", title="after − before (mean paired change)"), x2="diff_hi:Q", color=colour)
        .encode(tooltip=tooltip)
        .transform_filter("isValid(datum.diff_lo) && isValid(datum.diff_hi)")
    )
    points = base.mark_point(filled=True, size=80).encode(y=y, x="diff:Q", color=colour, tooltip=tooltip)
    stars = base.mark_text(dy=-10, fontSize=14, color="#222").encode(y=y, x="diff:Q", text="mark:N")
    effect = f", at least {d.min_effect:g} in size" if d.min_effect else ""
    subtitle = [
        f"★ significant at alpha {df.attrs.get('alpha', 0.05):g}{effect}; p-values {df.attrs.get('family', '')}",
        f"bars: 95% interval ({df.attrs.get('interval', '')})",
    ]
    if d.warnings:
        subtitle.append(f"the configuration changed: {len(d.warnings)} warning(s), see the diff's text")
    return layer(zero, intervals, points, stars).properties(
        title=alt.Title("before → after", subtitle=subtitle), width=min(420, MAX_PLOT_WIDTH), height=alt.Step(24)
    )
