"""The statistics charts: how two models differ, and how a judge agrees with human labels.

:func:`compare_chart` draws the paired differences between two models and their significance
(from ``result.compare``), and :func:`agreement_chart` a judge's agreement with human labels (from
``result.agreement``: ROC curve or confusion matrix).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from nbeval.widgets.chart_frame import layer
from nbeval.widgets.tables import model_names

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult
    from nbeval.results.statistics.agreement import JudgeAgreement

__all__ = ["UNADJUSTED_ONLY", "agreement_chart", "compare_chart", "compare_table"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("agreement_chart", "compare_chart")

#: What :func:`compare_chart` calls a difference whose unadjusted interval excludes 0 but whose
#: test is not significant after Holm's adjustment.
UNADJUSTED_ONLY = "interval excludes 0, not significant after Holm"
#: Colours of :func:`compare_chart`'s verdicts.
_COMPARE_COLOURS = {
    "A better": "#3a9c5b",
    "B better": "#d1495b",
    UNADJUSTED_ONLY: "#e0a33b",
    "tied within noise": "#9a9a9a",
}


def compare_table(
    result: EvaluationResult, model_a: str, model_b: str, evaluator: str | None = None, *, alpha: float = 0.05
) -> pd.DataFrame:
    """Build the data of :func:`compare_chart`: ``result.compare(...)`` with what the chart draws.

    Each row gets a ``label`` (``evaluator.metric`` when several evaluators are compared), the
    metric's ``direction``, a ``verdict`` and a ``note``.

    The verdict follows the Holm-adjusted test, as ``significant`` does: which model is better
    when it is significant (read with the metric's direction); :data:`UNADJUSTED_ONLY` when it is
    not but the (unadjusted) 95% interval of the paired difference excludes 0; else ``"tied within
    noise"``. ``note`` says in words where the interval and the adjusted test disagree.
    ``attrs["family"]`` names the family of ``p_holm``.

    Args:
        result: The evaluation result holding both models' scores.
        model_a: The model whose mean comes first in each difference (A).
        model_b: The model whose mean is subtracted (B).
        evaluator: Id of the evaluator whose metrics are compared; ``None`` compares every evaluator's.
        alpha: Significance level of the Holm-adjusted tests.

    Returns:
        One row per evaluator and metric, with the columns the chart draws added.
    """
    table = result.compare(model_a, model_b, evaluator, alpha=alpha)
    df = table.reset_index(drop=True).copy()
    df.attrs.update(table.attrs)
    directions = result.metrics.set_index(["evaluator", "metric"])["direction"]
    df["direction"] = [
        str(directions.get((e, m), "higher")) for e, m in zip(df["evaluator"], df["metric"], strict=True)
    ]
    many = df["evaluator"].nunique() > 1
    df["label"] = (df["evaluator"] + "." + df["metric"]) if many else df["metric"]
    a_ahead = (df["diff"].astype(float) > 0) == (df["direction"] == "higher")
    significant = df["significant"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    lo, hi = df["diff_lo"].astype(float).to_numpy(), df["diff_hi"].astype(float).to_numpy()
    excludes_zero = (lo > 0) | (hi < 0)  # NaN compares False: no interval excludes nothing
    df["verdict"] = np.where(
        significant,
        np.where(a_ahead, "A better", "B better"),
        np.where(excludes_zero, UNADJUSTED_ONLY, "tied within noise"),
    )
    family = str(df.attrs.get("family", "Holm-adjusted over this table"))
    df["note"] = np.select(
        [~significant & excludes_zero, significant & ~excludes_zero & np.isfinite(lo)],
        [
            f"the unadjusted 95% interval excludes 0, but the test is not significant ({family})",
            f"significant ({family}), though the bootstrap interval touches 0",
        ],
        default="",
    )
    df["mark"] = np.where(significant, "★", "")
    return df


def compare_chart(
    result: EvaluationResult, model_a: str, model_b: str, evaluator: str | None = None, *, alpha: float = 0.05
) -> alt.LayerChart:
    """Draw the paired differences ``mean_a - mean_b`` per metric, with their significance.

    The differences come from ``result.compare``, each with its 95% bootstrap interval as a rule,
    beside a dashed line at zero.

    Points and intervals are coloured by verdict (:func:`compare_table`): green when ``model_a``
    is significantly better (Holm-adjusted p below ``alpha``, over the comparisons of this table,
    read with the metric's direction), red when ``model_b`` is, amber when the unadjusted interval
    excludes 0 but the adjusted test is not significant, grey when the two are tied within noise;
    significant rows also carry a star (A is ``model_a``, B ``model_b``, as in the title). Tooltips
    give both means, the paired rows ``n``, the test, both p-values and a note where the interval
    and the test disagree.

    Args:
        result: The evaluation result holding both models' scores.
        model_a: The model whose mean comes first in each difference (A).
        model_b: The model whose mean is subtracted (B).
        evaluator: Id of the evaluator whose metrics are compared; ``None`` compares every evaluator's.
        alpha: Significance level of the Holm-adjusted tests.

    Returns:
        The layered chart: the zero line, the intervals, the points and the stars.
    """
    df = compare_table(result, model_a, model_b, evaluator, alpha=alpha)
    names = model_names(result)
    name_a, name_b = names.get(model_a, model_a), names.get(model_b, model_b)
    family = str(df.attrs.get("family", "Holm-adjusted over this table"))
    y = alt.Y("label:N", sort=list(df["label"]), title=None, axis=alt.Axis(labelLimit=260))
    tooltip = [
        alt.Tooltip("evaluator:N"),
        alt.Tooltip("metric:N"),
        alt.Tooltip("direction:N", title="better"),
        alt.Tooltip("mean_a:Q", format=".3f", title=f"mean {name_a}"),
        alt.Tooltip("mean_b:Q", format=".3f", title=f"mean {name_b}"),
        alt.Tooltip("diff:Q", format=".3f"),
        alt.Tooltip("diff_lo:Q", format=".3f", title="95% CI low"),
        alt.Tooltip("diff_hi:Q", format=".3f", title="95% CI high"),
        alt.Tooltip("n:Q", title="paired rows"),
        alt.Tooltip("test:N"),
        alt.Tooltip("p_value:Q", format=".4f", title="p"),
        alt.Tooltip("p_holm:Q", format=".4f", title="p (Holm, this table)"),
        alt.Tooltip("verdict:N"),
        alt.Tooltip("note:N"),
    ]
    base = alt.Chart(df)
    colour = alt.Color(
        "verdict:N",
        title=None,
        legend=alt.Legend(orient="bottom", labelLimit=400),
        scale=alt.Scale(domain=list(_COMPARE_COLOURS), range=list(_COMPARE_COLOURS.values())),
    )
    zero = alt.Chart(pd.DataFrame({"zero": [0.0]})).mark_rule(color="#222", strokeDash=[5, 3]).encode(x="zero:Q")
    intervals = (
        base.mark_rule(strokeWidth=2)
        .encode(
            y=y,
            x=alt.X("diff_lo:Q", title=f"{name_a} − {name_b} (mean paired difference)"),
            x2="diff_hi:Q",
            color=colour,
            tooltip=tooltip,
        )
        .transform_filter("isValid(datum.diff_lo) && isValid(datum.diff_hi)")
    )
    points = base.mark_point(filled=True, size=80).encode(y=y, x="diff:Q", color=colour, tooltip=tooltip)
    stars = base.mark_text(dy=-10, fontSize=14, color="#222").encode(y=y, x="diff:Q", text="mark:N")
    subtitle = [
        "bars: unadjusted 95% interval of the paired difference",
        f"★ significant at alpha {alpha:g}, p-values {family}",
        "tests: exact McNemar for 0/1 metrics, Wilcoxon signed-rank for scores",
    ]
    return layer(zero, intervals, points, stars).properties(
        title=alt.Title(f"{name_a} vs {name_b}", subtitle=subtitle), width=420, height=alt.Step(28)
    )


def agreement_chart(agreement: JudgeAgreement) -> alt.LayerChart:
    """How a judge agrees with human labels (``result.agreement(evaluator)``).

    With a numeric score: the ROC curve of the score against human pass/fail, the chance diagonal,
    and the best threshold (maximum Youden J) as a red point; the title gives AUC and Cohen's κ.
    Without one: the confusion matrix, human labels down, judge verdicts across, with counts.

    Args:
        agreement: The judge's agreement with the human labels, as ``result.agreement(evaluator)``
            returns it.

    Returns:
        The layered chart: the ROC curve with its chance diagonal and best threshold, or the
        confusion matrix with its counts.
    """
    header = f"κ = {_fmt(agreement.kappa)}, raw agreement {_fmt(agreement.agreement, '.0%')}, n = {agreement.n}"
    roc = getattr(agreement, "roc", None)
    if roc is not None and len(roc):
        df = pd.DataFrame(
            {
                "threshold": roc["threshold"].astype(float),
                "tpr": roc["tpr"].astype(float),
                "fpr": roc["fpr"].astype(float),
            }
        )
        df = df[np.isfinite(df["threshold"]) | (df["fpr"] == 0)].reset_index(drop=True)
        df["threshold"] = df["threshold"].where(np.isfinite(df["threshold"]))  # JSON has no infinity
        tooltip = [
            alt.Tooltip("threshold:Q", format=".3f"),
            alt.Tooltip("tpr:Q", format=".2f", title="TPR"),
            alt.Tooltip("fpr:Q", format=".2f", title="FPR"),
        ]
        axis_x = alt.X("fpr:Q", title="false positive rate (human fail, judge pass)", scale=alt.Scale(domain=[0, 1]))
        axis_y = alt.Y("tpr:Q", title="true positive rate (human pass, judge pass)", scale=alt.Scale(domain=[0, 1]))
        curve = alt.Chart(df).mark_line(point=True).encode(x=axis_x, y=axis_y, order="fpr:Q", tooltip=tooltip)
        chance = (
            alt.Chart(pd.DataFrame({"fpr": [0.0, 1.0], "tpr": [0.0, 1.0]}))
            .mark_line(color="#999", strokeDash=[4, 4])
            .encode(x="fpr:Q", y="tpr:Q")
        )
        best = df[np.isclose(df["threshold"], float(agreement.best_threshold))].head(1)
        if best.empty:  # no curve point at that threshold: mark the point of largest Youden J instead
            best = df.loc[[(df["tpr"] - df["fpr"]).idxmax()]]
        chosen = (
            alt.Chart(best)
            .mark_point(color="#d1495b", filled=True, size=140)
            .encode(x="fpr:Q", y="tpr:Q", tooltip=tooltip)
        )
        direction = getattr(agreement, "direction", "higher")
        rule = ">=" if direction == "higher" else "<="
        subtitle = [
            header,
            f"AUC {_fmt(agreement.auc)}; red: best threshold, pass when score {rule} "
            f"{_fmt(agreement.best_threshold)} (max Youden J)",
        ]
        return layer(chance, curve, chosen).properties(
            title=alt.Title("judge vs human labels: ROC", subtitle=subtitle), width=320, height=320
        )
    confusion = agreement.confusion
    cells = confusion.rename_axis(index="human", columns="judge").stack().rename("count").reset_index()
    cells["human"], cells["judge"] = cells["human"].astype(str), cells["judge"].astype(str)
    cells["count"] = cells["count"].astype(int)
    cells["match"] = cells["human"] == cells["judge"]
    x = alt.X("judge:N", title="judge verdict", sort=[str(c) for c in confusion.columns])
    y = alt.Y("human:N", title="human label", sort=[str(i) for i in confusion.index])
    rect = (
        alt.Chart(cells)
        .mark_rect(stroke="#fff")
        .encode(
            x=x,
            y=y,
            color=alt.Color("count:Q", scale=alt.Scale(scheme="blues"), title="rows"),
            tooltip=[alt.Tooltip("human:N"), alt.Tooltip("judge:N"), alt.Tooltip("count:Q")],
        )
    )
    text = alt.Chart(cells).mark_text(fontSize=13).encode(x=x, y=y, text="count:Q")
    return layer(rect, text).properties(
        title=alt.Title("judge vs human labels: confusion matrix", subtitle=header),
        width=alt.Step(70),
        height=alt.Step(40),
    )


def _fmt(value: float | None, spec: str = ".3f") -> str:
    """``value`` formatted with ``spec``, or ``"n/a"`` when missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return format(float(value), spec)
