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

__all__ = ["INSIGHT_ALPHA", "INSIGHT_COLUMNS", "PROBLEM_COLUMNS", "insights", "problems"]

PROBLEM_COLUMNS = ["kind", "severity", "model_key", "evaluator", "metric", "value", "threshold", "key",
                   "source_key", "message"]
INSIGHT_COLUMNS = ["kind", "evaluator", "metric", "model_key", "key", "value", "message", "significant"]
#: The significance level of the insights' paired comparisons.
INSIGHT_ALPHA = 0.05


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
    for (model, ev), part in s.groupby(["model_key", "evaluator"], sort=False, observed=True):
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
    """The leader on each evaluator's primary metric and the hardest test cases (:data:`INSIGHT_COLUMNS`).

    A ``best_model`` row names the model with the best aggregate. Its message calls it "best"
    only when its lead over the runner-up is significant by a paired test
    (:func:`~nbeval.results.compare.compare_metrics`, p-values Holm-adjusted over all the
    evaluators' leader comparisons, at 0.05); otherwise it says the two are "tied within noise".
    ``significant`` is True or False, and None where only one model was evaluated.
    """
    import pandas as pd

    out: list[list[Any]] = []
    out.extend(_leaders(result))
    rows = _primary_rows(result)
    fails = rows[_failed(rows["passed"])]
    for ev, part in fails.groupby("evaluator", sort=False, observed=True):
        counts = part.groupby("key", observed=True)["model_key"].nunique().sort_values(ascending=False, kind="stable")
        key, n = counts.index[0], int(counts.iloc[0])
        total = rows.loc[(rows["evaluator"] == ev) & (rows["key"] == key), "model_key"].nunique()
        out.append(["hardest_case", ev, part["metric"].iloc[0], None, key, float(n),
                    f"hardest case for {ev}: '{key}' failed by {n} of {total} models", None])
    if not fails.empty and fails["evaluator"].nunique() > 1:
        counts = fails.groupby("key", observed=True).size().sort_values(ascending=False, kind="stable")
        key, n = counts.index[0], int(counts.iloc[0])
        out.append(["hardest_case", None, None, None, key, float(n),
                    f"hardest case overall: '{key}' with {n} failing (model, evaluator) pairs", None])
    return pd.DataFrame(out, columns=INSIGHT_COLUMNS)


def _leaders(result: EvaluationResult) -> list[list[Any]]:
    """One ``best_model`` row per evaluator: its leader on the primary metric, called best only
    when the paired comparison with the runner-up is significant after Holm's adjustment."""
    from nbeval.results.compare import compare_metrics
    from nbeval.results.stats import holm

    agg = result.aggregates
    found = []
    for ev, part in agg[agg["primary"] & agg["value"].notna()].groupby("evaluator", sort=False, observed=True):
        higher = part["direction"].iloc[0] == "higher"
        ordered = part.sort_values("value", ascending=not higher, kind="stable")
        found.append((str(ev), str(ordered["metric"].iloc[0]), ordered))
    tests: list[pd.Series | None] = []
    for ev, metric, ordered in found:
        if len(ordered) < 2 or ordered["value"].iloc[0] == ordered["value"].iloc[1]:
            tests.append(None)
            continue
        table = compare_metrics(result, str(ordered["model_key"].iloc[0]), str(ordered["model_key"].iloc[1]),
                                [(ev, metric)])
        tests.append(table.iloc[0])
    p_holm = holm([float("nan") if t is None else t["p_value"] for t in tests])
    out = []
    for (ev, metric, ordered), test, p in zip(found, tests, p_holm, strict=True):
        leader, value = str(ordered["model_key"].iloc[0]), float(ordered["value"].iloc[0])
        where = f"{ev}.{metric}"
        if len(ordered) == 1:
            significant = None
            msg = f"best on {where}: {result.label(leader)} with {format_value(value)} (the only model)"
        elif test is None:
            significant = False
            tied = ordered[ordered["value"] == value]
            names = ", ".join(result.label(m) for m in tied["model_key"])
            msg = f"tied within noise on {where}: {names} all at {format_value(value)}"
        else:
            significant = bool(p < INSIGHT_ALPHA)
            msg = _lead_message(result, where, leader, str(ordered["model_key"].iloc[1]), value,
                                float(ordered["value"].iloc[1]), test, float(p), significant)
        out.append(["best_model", ev, metric, leader, None, value, msg, significant])
    return out


def _lead_message(result: EvaluationResult, where: str, leader: str, runner: str, value: float, runner_value: float,
                  test: pd.Series, p: float, significant: bool) -> str:
    a, b = result.label(leader), result.label(runner)
    if test["test"] == "none":
        return (f"tied within noise on {where}: {a} ({format_value(value)}) leads {b} ({format_value(runner_value)}), "
                "but this aggregate is not a mean over test cases, so no paired test can confirm it")
    how = f"paired {test['test']} on {test['n']} cases, Holm p = {format_value(p)}"
    gap = abs(value - runner_value)
    if significant:
        sign = 1.0 if value >= runner_value else -1.0  # the lead as a positive number, whichever way is better
        lo, hi = sorted((sign * test["diff_lo"], sign * test["diff_hi"]))
        return (f"best on {where}: {a} with {format_value(value)}, ahead of {b} ({format_value(runner_value)}) "
                f"by {format_value(gap)} (95% CI of the paired difference {format_value(lo)} to {format_value(hi)}; "
                f"{how})")
    return (f"tied within noise on {where}: {a} ({format_value(value)}) leads {b} ({format_value(runner_value)}) "
            f"by {format_value(gap)}, but the difference is not significant ({how})")
