"""A result's jury verdicts as a table, and how far the jurors agree on them.

A judge evaluator run with a jury (:mod:`nbeval.evaluators.jury`) keeps every juror's values in
each row's ``details["jury"]``. :func:`jury_values` lays one metric of them out as a table (a row
per scored row, a column per juror, missing where a juror gave no value); :func:`jury_agreement`
measures agreement on it with :mod:`nbeval.results.statistics.jury_agreement`: nominal for a verdict (every
value 0 or 1), interval for a score.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from nbeval.errors import EvaluatorError
from nbeval.results.statistics.jury_agreement import JuryAgreement, disagreement, jury_agreement_of

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["jury_agreement", "jury_level", "jury_values", "repeated_groups"]


def _jury(details: Any) -> list[dict[str, Any]] | None:
    try:
        found = json.loads(details) if isinstance(details, str) else details
    except ValueError:
        return None
    jurors = found.get("jury") if isinstance(found, dict) else None
    return [j for j in jurors if isinstance(j, dict)] if isinstance(jurors, list) else None


def jury_values(result: EvaluationResult, evaluator: str, metric: str | None = None) -> pd.DataFrame:
    """Tabulate each juror's value for every row a jury scored, with the jurors' disagreement.

    Columns ``key``, ``model_key`` and one per juror (its value of ``metric``, the evaluator's
    primary metric by default; NaN where the juror gave none), plus ``disagreement``: the share of
    juror pairs that differ (a verdict) or the jurors' standard deviation (a score). A
    :class:`~nbeval.errors.EvaluatorError` says when the evaluator had no jury.
    """
    import numpy as np
    import pandas as pd

    result.check_evaluator(evaluator)
    name = metric or result.primary_metric(evaluator)
    scores = result.scores
    rows = scores[(scores["evaluator"] == evaluator) & (scores["metric"] == name)]
    records: list[dict[str, Any]] = []
    jurors: list[str] = []
    for key, model_key, details in zip(rows["key"], rows["model_key"], rows["details"], strict=True):
        panel = _jury(details)
        if not panel:
            continue
        rec: dict[str, Any] = {"key": key, "model_key": model_key}
        for j in panel:
            juror = str(j.get("juror"))
            if juror not in jurors:
                jurors.append(juror)
            value = (j.get("values") or {}).get(name)
            rec[juror] = np.nan if value is None else float(value)
        records.append(rec)
    if not records:
        msg = (
            f"evaluator '{evaluator}' was not run with a jury, so there is no agreement between jurors to "
            "measure; run it with judge=[judge1, judge2, ...] or nbeval.jury([...])"
        )
        raise EvaluatorError(msg)
    table = pd.DataFrame.from_records(records, columns=["key", "model_key", *jurors])
    values = table[jurors].to_numpy(dtype=np.float64)
    table["disagreement"] = disagreement(values, jury_level(values))
    return table


def jury_level(values: Any) -> str:
    """``"nominal"`` when every given value is 0 or 1 (verdicts), else ``"interval"`` (scores)."""
    import numpy as np

    given = values[~np.isnan(values)]
    return "nominal" if np.isin(given, (0.0, 1.0)).all() else "interval"


def jury_agreement(
    result: EvaluationResult,
    evaluator: str,
    *,
    metric: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> JuryAgreement:
    """Measure how far the jurors of ``evaluator`` agree on ``metric`` (its primary by default).

    Krippendorff's α with a bootstrap interval over rows, Fleiss' κ and Cohen's κ for every pair of
    jurors (for verdicts); see :class:`~nbeval.results.statistics.jury_agreement.JuryAgreement`.
    """
    import numpy as np

    table = jury_values(result, evaluator, metric)
    jurors = [c for c in table.columns if c not in ("key", "model_key", "disagreement")]
    values = table[jurors].to_numpy(dtype=np.float64)
    repeated = repeated_groups(result, evaluator, jurors)
    return jury_agreement_of(
        values, jurors, jury_level(values), n_boot=n_boot, seed=seed, confidence=confidence, repeated=repeated
    )


def repeated_groups(result: EvaluationResult, evaluator: str, jurors: list[str]) -> tuple[tuple[str, ...], ...]:
    """Find the groups of ``jurors`` that are one judge named several times.

    Each row's ``details["jury"]`` says which juror each repeats; each group comes in juror order.
    """
    scores = result.scores
    first: dict[str, str] = {}
    for details in scores.loc[scores["evaluator"] == evaluator, "details"]:
        for j in _jury(details) or ():
            repeat = j.get("repeat_of")
            if isinstance(repeat, str):
                first.setdefault(str(j.get("juror")), repeat)
    groups: dict[str, list[str]] = {}
    for name in jurors:
        head = first.get(name, name)
        groups.setdefault(head, []).append(name)
    return tuple(tuple(g) for g in groups.values() if len(g) > 1)
