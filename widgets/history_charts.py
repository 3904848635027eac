"""Runs over time: one metric across the runs saved in a folder, one line per model.

:func:`history_chart` draws :func:`nbeval.results.runs.registry.run_history`: the runs in the order they
started along the x axis (each named by its label, else its folder), the metric on the y axis
with each model's interval as a bar, and tooltips giving the run, its label, date and git commit.
The data inlined grows with runs and models, never with rows. Text in the chart and its tooltips
is data: Vega escapes it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import altair as alt
import pandas as pd

from nbeval.results.runs.registry import run_history
from nbeval.widgets.chart_frame import MAX_PLOT_WIDTH, better, layer, value_axis_scale
from nbeval.widgets.tables import MetricInfo

__all__ = ["history_chart", "history_table"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("history_chart",)

_DIRTY = " (uncommitted changes)"


def history_table(
    runs: pd.DataFrame | str | Path, evaluator: str, metric: str | None = None, *, level: float = 0.95
) -> tuple[pd.DataFrame, MetricInfo]:
    """Build the data of :func:`history_chart` and describe its metric.

    The rows are the numbers of :func:`~nbeval.results.runs.registry.run_history` plus the texts
    the chart shows.

    Args:
        runs: A runs folder, or :func:`nbeval.runs`' table of one.
        evaluator: Id of the evaluator whose metric is followed.
        metric: The metric followed; ``None`` takes the evaluator's primary metric.
        level: Confidence level of each run's interval.

    Returns:
        One row per run and model, runs in time order, and the metric as the kit describes it.
    """
    history = run_history(runs, evaluator, metric, level=level)
    info = _info(history.attrs["metric"])
    df = history[["run", "label", "model_key", "value", "lo", "hi", "n"]].copy()
    df["model"] = df["model_key"]
    df["x"] = _run_names(history)
    df["date"] = pd.to_datetime(history["started_at"], utc=True).dt.strftime("%Y-%m-%d %H:%M UTC")
    df["commit"] = [_commit(c, d) for c, d in zip(history["git_commit"], history["git_dirty"], strict=True)]
    df["label"] = df["label"].fillna("")
    return df.reset_index(drop=True), info


def history_chart(
    runs: pd.DataFrame | str | Path, evaluator: str, metric: str | None = None, *, level: float = 0.95
) -> alt.LayerChart:
    """Draw ``evaluator``'s ``metric`` over the saved runs, oldest run on the left.

    Each model is a line with points, each point with its ``level`` interval as a bar (none where a
    run has no interval). Each run is loaded whole for the intervals (see
    :func:`~nbeval.results.runs.registry.run_history`).

    Args:
        runs: A runs folder, or :func:`nbeval.runs`' table of one.
        evaluator: Id of the evaluator whose metric is drawn.
        metric: The metric drawn; ``None`` takes the evaluator's primary metric.
        level: Confidence level of the interval drawn at each point.

    Returns:
        The layered chart: the interval bars under the lines and points.
    """
    df, info = history_table(runs, evaluator, metric, level=level)
    order = list(dict.fromkeys(df["x"]))
    x = alt.X("x:N", sort=order, title="run (oldest first)", axis=alt.Axis(labelAngle=-30, labelLimit=160))
    y = alt.Y("value:Q", scale=value_axis_scale(info, zero=False), title=better(info))
    colour = alt.Color("model:N", title="model", legend=alt.Legend(orient="bottom", labelLimit=240))
    tooltip = [
        alt.Tooltip("run:N"),
        alt.Tooltip("label:N"),
        alt.Tooltip("date:N"),
        alt.Tooltip("commit:N", title="git commit"),
        alt.Tooltip("model:N"),
        alt.Tooltip("value:Q", format=".3f", title=info.metric),
        alt.Tooltip("lo:Q", format=".3f", title=f"{level:.0%} interval low"),
        alt.Tooltip("hi:Q", format=".3f", title=f"{level:.0%} interval high"),
        alt.Tooltip("n:Q", title="rows measured"),
    ]
    base = alt.Chart(df).encode(x=x, color=colour)
    lines = base.mark_line(point=alt.OverlayMarkDef(size=50)).encode(y=y, tooltip=tooltip)
    # Vega-Lite would draw a bar from a missing end to the axis: runs with no interval get none.
    bars = (
        base.mark_rule(strokeWidth=2, opacity=0.6)
        .encode(y="lo:Q", y2="hi:Q", tooltip=tooltip)
        .transform_filter("isValid(datum.lo) && isValid(datum.hi)")
    )
    width = min(MAX_PLOT_WIDTH, max(240, 60 * len(order)))
    return layer(bars, lines).properties(
        width=width,
        height=260,
        title=alt.TitleParams(f"{info.evaluator} · {info.metric} over runs", subtitle=f"{level:.0%} intervals"),
    )


def _info(described: dict[str, Any]) -> MetricInfo:
    """The metric as :func:`run_history` describes it, in the kit's form."""
    lo, hi = described.get("lo"), described.get("hi")
    return MetricInfo(
        evaluator=str(described["evaluator"]),
        metric=str(described["metric"]),
        direction=str(described["direction"]),
        lo=-math.inf if lo is None else float(lo),
        hi=math.inf if hi is None else float(hi),
        threshold=described.get("threshold"),
        kind=str(described.get("kind", "score")),
    )


def _run_names(history: pd.DataFrame) -> list[str]:
    """Name each row's run as the x axis shows it: its label, else its folder.

    A name two runs share gets the folder added, so no two runs fall on one place.
    """
    names = {
        run: (label if isinstance(label, str) and label else run)
        for run, label in zip(history["run"], history["label"], strict=True)
    }
    counts = pd.Series(list(names.values())).value_counts()
    unique = {run: (f"{name} ({run})" if counts[name] > 1 and name != run else name) for run, name in names.items()}
    return [unique[run] for run in history["run"]]


def _commit(commit: Any, dirty: Any) -> str:
    """A commit as a tooltip shows it: its first 12 digits, and whether the tree had changes."""
    if not isinstance(commit, str) or not commit:
        return "unknown"
    return commit[:12] + (_DIRTY if dirty is True else "")
