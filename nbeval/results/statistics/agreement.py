"""How well a judge agrees with people: its verdicts against the human labels of a result.

For each labelled row (see :mod:`nbeval.results.storage.labels`) the judge's verdict is read from the
row of the evaluator's primary metric: ``"pass"``/``"fail"`` from its ``passed`` column when the
human label is pass or fail, otherwise the row's ``label`` column (a class such as ``"toxic"``).
Rows without a verdict (not scored, or no threshold to pass) are left out of ``n``, kappa and
the confusion matrix; a row with a score but no threshold still counts for the ROC curve, which
is how to choose a threshold for a metric that has none yet.

For a numeric score the result also says which threshold would best reproduce the human
pass/fail labels: the ROC curve of the score against them (human "pass" as the positive class),
its area, and the threshold with the largest Youden J (true-positive rate minus false-positive
rate; of equally good ones, the strictest). With ``direction`` ``"higher"`` a row passes when
``score >= threshold``, with ``"lower"`` when ``score <= threshold``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["PASS_FAIL", "JudgeAgreement", "agreement"]

#: The labels that mean a pass/fail verdict.
PASS_FAIL = ("pass", "fail")


@dataclass(frozen=True, eq=False)
class JudgeAgreement:
    """An evaluator's verdicts against human labels."""

    evaluator: str
    """The evaluator whose verdicts were checked."""
    metric: str
    """Its primary metric, whose rows hold the verdicts and scores."""
    n: int
    """Labelled rows that also have a judge verdict."""
    kappa: float
    """Cohen's kappa: agreement beyond what chance would give (1 perfect, 0 chance level); NaN
    without rows or when both always say the same one label."""
    agreement: float
    """The share of rows where judge and person say the same; NaN without rows."""
    confusion: pd.DataFrame
    """Counts: one row per human label (index ``human``), one column per judge verdict (``judge``)."""
    rows: pd.DataFrame
    """The labelled rows: ``key, model_key, human, judge, score``; ``judge`` is None where the
    row has no verdict (these count for the ROC curve when they have a score, not for ``n``)."""
    direction: str
    """``"higher"`` or ``"lower"``: which way the score passes."""
    roc: pd.DataFrame | None = None
    """The ROC curve of the score against human pass/fail (``threshold, tpr, fpr``), one row per
    distinct score, strictest first; its first row, where no row passes, has the threshold
    ``inf`` (``-inf`` for ``"lower"``). None without both a human pass and a human fail on
    scored rows."""
    auc: float = float("nan")
    """The area under :attr:`roc` (0.5 is chance, 1 a perfect ranking)."""
    best_threshold: float = float("nan")
    """The threshold on the score that best matches human pass/fail (largest Youden J)."""

    def __repr__(self) -> str:
        extra = "" if self.roc is None else f", auc={self.auc:.3f}, best_threshold={self.best_threshold:.4g}"
        return (
            f"JudgeAgreement({self.evaluator!r}, n={self.n}, kappa={self.kappa:.3f}, "
            f"agreement={self.agreement:.3f}{extra})"
        )


def _verdicts(result: EvaluationResult, evaluator: str, metric: str) -> pd.DataFrame:
    """Labelled rows with the judge's verdict and score: ``key, model_key, human, judge, score``."""
    import pandas as pd

    labels = result.labels
    labels = labels[labels["evaluator"] == evaluator]
    s = result.scores
    s = s[(s["evaluator"] == evaluator) & (s["metric"] == metric) & ~s["skipped"].astype(bool)]
    scored = pd.DataFrame(
        {
            "key": s["key"].astype(str).to_numpy(),
            "model_key": s["model_key"].astype(str).to_numpy(),
            "passed": s["passed"].to_numpy(),
            "verdict_label": s["label"].astype(object).to_numpy(),
            "score": s["value"].astype(float).to_numpy(),
        }
    )
    merged = labels.rename(columns={"label": "human"}).merge(scored, on=["key", "model_key"], how="inner")
    judge = []
    for human, passed, label in zip(merged["human"], merged["passed"], merged["verdict_label"], strict=True):
        if str(human).lower() in PASS_FAIL:
            judge.append(None if pd.isna(passed) else ("pass" if bool(passed) else "fail"))
        else:
            judge.append(None if label is None or (isinstance(label, float) and math.isnan(label)) else str(label))
    merged["human"] = [h.lower() if h.lower() in PASS_FAIL else h for h in merged["human"].astype(str)]
    merged["judge"] = judge
    return merged[["key", "model_key", "human", "judge", "score"]].reset_index(drop=True)


def agreement(result: EvaluationResult, evaluator: str) -> JudgeAgreement:
    """Measure ``evaluator``'s verdicts against the human labels of ``result``.

    See the module's description for how verdicts are read and the best threshold is chosen.
    """
    import pandas as pd

    from nbeval.results.statistics.stats import cohen_kappa

    metric = result.primary_metric(evaluator)  # KeyError naming the evaluators for an unknown one
    direction = str(
        result.metrics.loc[
            (result.metrics["evaluator"] == evaluator) & (result.metrics["metric"] == metric), "direction"
        ].iloc[0]
    )
    rows = _verdicts(result, evaluator, metric)
    judged = rows[rows["judge"].notna()]
    human, judge = judged["human"].tolist(), judged["judge"].tolist()
    classes = sorted(set(human) | set(judge), key=str)
    confusion = pd.crosstab(
        pd.Categorical(human, categories=classes), pd.Categorical(judge, categories=classes), dropna=False
    ).reindex(index=classes, columns=classes, fill_value=0)
    confusion.index.name, confusion.columns.name = "human", "judge"
    n = len(judged)
    raw = float((judged["human"] == judged["judge"]).mean()) if n else float("nan")
    roc, auc, best = _roc(rows, direction)
    return JudgeAgreement(
        evaluator=evaluator,
        metric=metric,
        n=n,
        kappa=cohen_kappa(human, judge),
        agreement=raw,
        confusion=confusion.astype(int),
        rows=rows,
        direction=direction,
        roc=roc,
        auc=auc,
        best_threshold=best,
    )


def _roc(rows: pd.DataFrame, direction: str) -> tuple[pd.DataFrame | None, float, float]:
    """The ROC curve of the score against human pass/fail, its AUC and the best threshold."""
    import numpy as np
    import pandas as pd

    from nbeval.results.statistics.stats import roc_auc, roc_curve

    scored = rows[rows["human"].isin(PASS_FAIL) & rows["score"].notna()]
    truth = (scored["human"] == "pass").to_numpy(dtype=float)
    if truth.size == 0 or truth.min() == truth.max():
        return None, float("nan"), float("nan")
    sign = 1.0 if direction == "higher" else -1.0  # "lower" passes low scores: rank on the negated score
    score = sign * scored["score"].to_numpy(dtype=float)
    fpr, tpr, thresholds = roc_curve(truth, score)
    table = pd.DataFrame({"threshold": sign * thresholds, "tpr": tpr, "fpr": fpr})
    youden = tpr[1:] - fpr[1:]  # the first point (nothing passes) has no finite threshold
    best = float(sign * thresholds[1:][int(np.argmax(youden))])
    return table, roc_auc(truth, score), best
