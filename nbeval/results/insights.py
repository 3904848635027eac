"""Problems and insights derived from a result's long table and aggregates.

* A *threshold* problem: a model's aggregate of an evaluator's primary metric is on the wrong
  side of its threshold.
* An *unrated* problem: some of a model's rows could not be rated by an evaluator (the judge's
  reply could not be parsed, a regular expression timed out): they are neither passes nor
  fails, and the model's aggregate is measured without them. One problem per model and
  evaluator, with how many rows and what happened.
* A *perturbation flip*: a test case perturbed from another (``perturbation_source``) passes on
  one side and fails on the other for the same model and evaluator.
* Insights: the best model on each evaluator's primary metric, and the hardest test case (the
  one failed by the most models), per evaluator and over all evaluators.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nbeval.results.leaderboard import format_value

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = ["INSIGHT_COLUMNS", "PROBLEM_COLUMNS", "insights", "problems"]

PROBLEM_COLUMNS = ["kind", "severity", "model_key", "evaluator", "metric", "value", "threshold", "key",
                   "source_key", "message"]
INSIGHT_COLUMNS = ["kind", "evaluator", "metric", "model_key", "key", "value", "message"]


def _failed(passed: pd.Series) -> pd.Series:
    """Where ``passed`` is False; a pass that is unknowable (``<NA>``: no value or no threshold) is no failure."""
    return passed.eq(False).fillna(False).astype(bool)


def _primary_rows(result: EvaluationResult) -> pd.DataFrame:
    """Row-level scores of each evaluator's primary metric that were actually scored."""
    primary = result.metrics.loc[result.metrics["primary"], ["evaluator", "metric"]]
    s = result.scores
    s = s[~s["skipped"] & s["value"].notna()]
    return s.merge(primary, on=["evaluator", "metric"])


def problems(result: EvaluationResult) -> pd.DataFrame:
    """Threshold breaches, unrated rows and perturbation flips, one row each (:data:`PROBLEM_COLUMNS`).

    ``kind`` is ``threshold``, ``unrated`` or ``perturbation_flip``. For ``unrated`` the ``value``
    is the number of rows that could not be rated and ``metric`` the primary metric they have no
    value for; ``severity`` is ``high`` when none of the model's rows could be rated.
    """
    import pandas as pd

    out: list[list[Any]] = []
    agg = result.aggregates
    for _, a in agg[agg["primary"] & _failed(agg["passed"])].iterrows():
        side = "below" if a["direction"] == "higher" else "above"
        msg = (f"{result.label(a['model_key'])}: {a['evaluator']}.{a['metric']} = {format_value(a['value'])} "
               f"is {side} the threshold {format_value(a['threshold'])} (measured on {a['n']}/{a['N']} rows)")
        out.append(["threshold", "high", a["model_key"], a["evaluator"], a["metric"], a["value"], a["threshold"],
                    None, None, msg])
    out.extend(_unrated(result))
    out.extend(_flips(result))
    return pd.DataFrame(out, columns=PROBLEM_COLUMNS)


def _unrated(result: EvaluationResult) -> list[list[Any]]:
    """One ``unrated`` problem per model and evaluator with rows that could not be rated: scored
    (not skipped) rows whose primary metric has no value and whose label is one of
    :data:`~nbeval.evaluators.base.UNRATED_LABELS`."""
    from nbeval.evaluators.base import UNRATED_LABELS

    primary = result.metrics.loc[result.metrics["primary"], ["evaluator", "metric"]]
    s = result.scores
    s = s[~s["skipped"] & s["value"].isna() & s["label"].isin(list(UNRATED_LABELS))]
    s = s.merge(primary, on=["evaluator", "metric"])
    if s.empty:
        return []
    totals = {(a.model_key, a.evaluator): int(a.N) for a in result.aggregates.itertuples() if a.primary}
    out = []
    for (model, ev), part in s.groupby(["model_key", "evaluator"], sort=False):
        n, total = len(part), totals.get((model, ev), len(part))
        labels = part["label"].value_counts(sort=False)
        if len(labels) == 1:
            why = UNRATED_LABELS[str(labels.index[0])]
        else:
            why = "; ".join(f"{count}: {UNRATED_LABELS[str(label)]}" for label, count in labels.items())
        msg = f"{result.label(model)}: {ev}: {n} of {total} rows could not be rated ({why})"
        out.append(["unrated", "high" if n >= total else "low", model, ev, part["metric"].iloc[0], n, None, None,
                    None, msg])
    return out


def _flips(result: EvaluationResult) -> list[list[Any]]:
    """One ``perturbation_flip`` per pair of a perturbed case and its original, on an evaluator's
    primary metric, that :func:`~nbeval.results.robustness.flipped` (the rule the robustness
    view counts)."""
    from nbeval.results.robustness import flipped, perturbation_pairs

    pairs = perturbation_pairs(result)
    if pairs.empty:
        return []
    out = []
    for p in pairs[flipped(pairs)].itertuples():
        ev, model, metric, key, src = p.evaluator, p.model_key, p.metric, p.key, p.source_key
        src_passed = bool(p.source_passed)
        how = "passed on the original but failed on the perturbed case" if src_passed else \
            "failed on the original but passed on the perturbed case"
        msg = (f"{result.label(model)}: {ev}.{metric} {how} '{key}' "
               f"({format_value(p.source_value)} -> {format_value(p.value)}; original '{src}')")
        threshold = result.metrics.loc[(result.metrics["evaluator"] == ev) & (result.metrics["metric"] == metric),
                                       "threshold"].iloc[0]
        out.append(["perturbation_flip", "high" if src_passed else "low", model, ev, metric, p.value, threshold,
                    key, src, msg])
    return out


def insights(result: EvaluationResult) -> pd.DataFrame:
    import pandas as pd

    out: list[list[Any]] = []
    agg = result.aggregates
    for ev, part in agg[agg["primary"] & agg["value"].notna()].groupby("evaluator", sort=False):
        higher = part["direction"].iloc[0] == "higher"
        best_value = part["value"].max() if higher else part["value"].min()
        best = part[part["value"] == best_value]
        names = ", ".join(result.label(m) for m in best["model_key"])
        metric = part["metric"].iloc[0]
        tie = " (tie)" if len(best) > 1 else ""
        out.append(["best_model", ev, metric, best["model_key"].iloc[0], None, best_value,
                    f"best on {ev}.{metric}: {names}{tie} with {format_value(best_value)}"])
    rows = _primary_rows(result)
    fails = rows[_failed(rows["passed"])]
    for ev, part in fails.groupby("evaluator", sort=False):
        counts = part.groupby("key")["model_key"].nunique().sort_values(ascending=False, kind="stable")
        key, n = counts.index[0], int(counts.iloc[0])
        total = rows.loc[(rows["evaluator"] == ev) & (rows["key"] == key), "model_key"].nunique()
        out.append(["hardest_case", ev, part["metric"].iloc[0], None, key, float(n),
                    f"hardest case for {ev}: '{key}' failed by {n} of {total} models"])
    if not fails.empty and fails["evaluator"].nunique() > 1:
        counts = fails.groupby("key").size().sort_values(ascending=False, kind="stable")
        key, n = counts.index[0], int(counts.iloc[0])
        out.append(["hardest_case", None, None, None, key, float(n),
                    f"hardest case overall: '{key}' with {n} failing (model, evaluator) pairs"])
    return pd.DataFrame(out, columns=INSIGHT_COLUMNS)
