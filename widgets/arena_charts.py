"""Head-to-head charts: arena ratings with their intervals, and who beats whom.

Both read the arena fit of a head-to-head evaluator (``pairwise``): :func:`arena_chart` draws
``result.arena()`` (ratings on the Elo scale with 95% bootstrap intervals, best first) and
:func:`win_matrix` draws ``result.head_to_head()`` as a model × model heatmap of the chance that
the row's model is preferred to the column's, the judge's first-slot preference removed, with the
counts behind each cell in its tooltip. The data inlined grows with models, not with rows. Text in
charts and tooltips is data: Vega escapes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import altair as alt
import pandas as pd

from nbeval.widgets.chart_frame import layer
from nbeval.widgets.tables import model_names

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["arena_chart", "win_matrix"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("arena_chart", "win_matrix")


def arena_chart(result: EvaluationResult, evaluator: str = "pairwise", *, level: float = 0.95) -> alt.LayerChart:
    """Draw each model's arena rating as a point with its interval, best first.

    The rating is on the Elo scale, 1000 being the mean model; the tooltip gives the interval,
    wins, losses, ties and verdicts.

    Args:
        result: The evaluation result that holds the head-to-head verdicts.
        evaluator: Id of the head-to-head evaluator whose arena fit is drawn.
        level: Confidence level of the bootstrap interval drawn around each rating.

    Returns:
        The layered chart: a dashed rule at the mean, the interval bars and the rating points.
    """
    table = result.arena(evaluator, level=level)
    names = model_names(result)
    df = pd.DataFrame(
        {
            "model": [names.get(str(k), str(k)) for k in table["model_key"]],
            "rating": table["rating"].round(1),
            "lo": table["rating_lo"].round(1),
            "hi": table["rating_hi"].round(1),
            "wins": table["wins"],
            "losses": table["losses"],
            "ties": table["ties"],
            "n": table["n"],
            "win_rate": table["win_rate"],
        }
    )
    y = alt.Y("model:N", sort=list(df["model"]), title=None, axis=alt.Axis(labelLimit=240))
    tooltip = [
        alt.Tooltip("model:N"),
        alt.Tooltip("rating:Q", format=".0f"),
        alt.Tooltip("lo:Q", format=".0f", title=f"{level:.0%} interval low"),
        alt.Tooltip("hi:Q", format=".0f", title=f"{level:.0%} interval high"),
        alt.Tooltip("wins:Q"),
        alt.Tooltip("losses:Q"),
        alt.Tooltip("ties:Q"),
        alt.Tooltip("n:Q", title="verdicts"),
        alt.Tooltip("win_rate:Q", format=".2f", title="raw win rate"),
    ]
    finite = "isFinite(datum.lo) && isFinite(datum.hi)"
    x = alt.X("rating:Q", title="rating (Elo scale; 1000 = the mean model)", scale=alt.Scale(zero=False))
    whiskers = (
        alt.Chart(df)
        .mark_rule(color="#555", strokeWidth=2)
        .encode(y=y, x="lo:Q", x2="hi:Q", tooltip=tooltip)
        .transform_filter(finite)
    )
    points = alt.Chart(df).mark_point(filled=True, size=90, color="#1f5fa8").encode(y=y, x=x, tooltip=tooltip)
    mean = alt.Chart(pd.DataFrame({"rating": [1000.0]})).mark_rule(strokeDash=[4, 4], color="#999").encode(x="rating:Q")
    subtitle = [
        f"ranked best first; bars: {level:.0%} bootstrap interval over test cases",
        "Bradley-Terry fit to every single-order verdict, the judge's first-slot preference removed",
    ]
    return layer(mean, whiskers, points).properties(
        width=420, height=alt.Step(26), title=alt.Title(f"{evaluator}: arena ratings", subtitle=subtitle)
    )


def win_matrix(result: EvaluationResult, evaluator: str = "pairwise", *, level: float = 0.95) -> alt.LayerChart:
    """Draw a model × model heatmap of who beats whom.

    Each cell is the chance that the row's model is preferred to the column's (first-slot
    preference removed), blue above one half and red below; the tooltip gives its interval and the
    verdicts (wins, losses, ties, inconsistent cases) behind it. Models are ordered by arena rating.

    Args:
        result: The evaluation result that holds the head-to-head verdicts.
        evaluator: Id of the head-to-head evaluator whose verdicts are drawn.
        level: Confidence level of the interval shown in each cell's tooltip.

    Returns:
        The layered chart: the coloured cells with each cell's probability written on it.
    """
    h2h = result.head_to_head(evaluator, level=level)
    names = model_names(result)
    order = [names.get(str(k), str(k)) for k in result.arena(evaluator, level=level)["model_key"]]
    cells = []
    for r in h2h.itertuples():
        a, b = names.get(str(r.model_a), str(r.model_a)), names.get(str(r.model_b), str(r.model_b))
        common = {"ties": r.ties, "inconsistent": r.inconsistent, "n": r.n}
        cells.append(
            {
                "row": a,
                "column": b,
                "p": r.p_a_beats_b,
                "lo": r.lo,
                "hi": r.hi,
                "wins": r.wins_a,
                "losses": r.wins_b,
                **common,
            }
        )
        cells.append(
            {
                "row": b,
                "column": a,
                "p": 1 - r.p_a_beats_b,
                "lo": 1 - r.hi,
                "hi": 1 - r.lo,
                "wins": r.wins_b,
                "losses": r.wins_a,
                **common,
            }
        )
    df = pd.DataFrame(cells, columns=["row", "column", "p", "lo", "hi", "wins", "losses", "ties", "inconsistent", "n"])
    df["text"] = df["p"].map(lambda p: f"{p:.2f}")
    tooltip = [
        alt.Tooltip("row:N", title="model"),
        alt.Tooltip("column:N", title="against"),
        alt.Tooltip("p:Q", format=".2f", title="P(model preferred)"),
        alt.Tooltip("lo:Q", format=".2f", title=f"{level:.0%} interval low"),
        alt.Tooltip("hi:Q", format=".2f", title=f"{level:.0%} interval high"),
        alt.Tooltip("wins:Q"),
        alt.Tooltip("losses:Q"),
        alt.Tooltip("ties:Q"),
        alt.Tooltip("inconsistent:Q", title="cases whose two orders disagree"),
        alt.Tooltip("n:Q", title="verdicts"),
    ]
    x = alt.X("column:N", sort=order, title="against", axis=alt.Axis(labelAngle=-30, labelLimit=160))
    y = alt.Y("row:N", sort=order, title="model", axis=alt.Axis(labelLimit=200))
    scale = alt.Scale(scheme="redblue", domain=[0, 1], domainMid=0.5)
    rects = (
        alt.Chart(df)
        .mark_rect()
        .encode(x=x, y=y, color=alt.Color("p:Q", scale=scale, title="P(preferred)"), tooltip=tooltip)
    )
    ink = alt.condition("datum.p < 0.2 || datum.p > 0.8", alt.value("white"), alt.value("black"))
    text = alt.Chart(df).mark_text(fontSize=11).encode(x=x, y=y, text="text:N", color=ink, tooltip=tooltip)
    subtitle = [
        "cell: chance the row's model is preferred to the column's (first-slot preference removed)",
        "tooltip: interval and the verdicts behind it",
    ]
    return layer(rects, text).properties(
        width=alt.Step(56), height=alt.Step(30), title=alt.Title(f"{evaluator}: who beats whom", subtitle=subtitle)
    )
