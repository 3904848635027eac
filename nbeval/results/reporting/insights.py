"""Insights derived from a result's long table and aggregates (:func:`insights`).

They are the leader on each evaluator's primary metric (``best_model`` when its lead is significant,
``tied_models`` when it is not), and the hardest test case (the one failed by the most models), per
evaluator and over all evaluators.

The problems (threshold breaches, unrated and errored rows, perturbation flips, models and
evaluators that measured nothing) are :mod:`nbeval.results.reporting.problems`; its names are handed out
here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nbeval.results.reporting.numbers import format_value
from nbeval.results.reporting.problems import (
    ERROR_CHARS,
    ERROR_GROUPS,
    PROBLEM_COLUMNS,
    PROMPT_CHARS,
    describe_errors,
    errored_rows,
    failed_mask,
    problems,
)

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = [
    "AHEAD_KIND",
    "ERROR_CHARS",
    "ERROR_GROUPS",
    "INSIGHT_ALPHA",
    "INSIGHT_COLUMNS",
    "LEADER_FAMILY",
    "LEADER_KINDS",
    "PROBLEM_COLUMNS",
    "PROMPT_CHARS",
    "describe_errors",
    "errored_rows",
    "insights",
    "problems",
]

#: The columns of a result's insights table, in order.
INSIGHT_COLUMNS = [
    "kind",
    "evaluator",
    "metric",
    "model_key",
    "key",
    "value",
    "message",
    "significant",
    "p_holm",
    "family",
]
#: The kinds of the leader rows (one per evaluator): a significant (or lone) leader, a tied one.
LEADER_KINDS = ("best_model", "tied_models")
#: The kind of a head-to-head row: one model is preferred to another beyond noise.
AHEAD_KIND = "ahead"
#: How the insights name the family of their leader comparisons (see :func:`insights`).
LEADER_FAMILY = "of the leaders against their runners-up (one per evaluator)"
#: The significance level of the insights' paired comparisons.
INSIGHT_ALPHA = 0.05
_NAN = float("nan")


def _primary_rows(result: EvaluationResult) -> pd.DataFrame:
    """Row-level scores of each evaluator's primary metric that were actually scored."""
    primary = result.metrics.loc[result.metrics["primary"], ["evaluator", "metric"]]
    s = result.scores
    s = s[~s["skipped"] & s["value"].notna()]
    return s.merge(primary, on=["evaluator", "metric"])


def _hardest(result: EvaluationResult) -> list[tuple[str | None, str | None, str, int, int]]:
    """The hardest test cases: per evaluator, then overall (when failures span evaluators).

    Per evaluator on its primary metric, the key failed by the most models, with how many models
    measured it; overall, the key with the most failing (model, evaluator) pairs. Equal counts go
    to the key that failed first in the long table's order (by evaluator, then input row), the
    rule :meth:`~nbeval.results.statistics.part_summaries.PartSummaries.hardest` follows too.
    """
    import numpy as np

    from nbeval.results.statistics.part_summaries import hardest_cases, hardest_in_part

    rows = _primary_rows(result)
    positions = {ev: k for k, ev in enumerate(result.evaluators)}
    # the whole table as one part: its order (by evaluator, then input row) is the tie-break's
    rows = rows.assign(_evaluator_pos=rows["evaluator"].map(positions).astype(int), _row_pos=np.arange(len(rows)))
    entries = hardest_in_part(rows[failed_mask(rows["passed"])], rows)
    primary = {k: result.primary_metric(ev) for ev, k in positions.items()}
    return hardest_cases(entries, result.evaluators, primary.__getitem__)


def insights(result: EvaluationResult) -> pd.DataFrame:
    """The leader on each evaluator's primary metric and the hardest test cases (:data:`INSIGHT_COLUMNS`).

    One leader row per evaluator names the model with the best aggregate. Its kind is
    ``best_model`` when the lead over the runner-up is significant by a paired test, or when only
    one model was evaluated (``significant`` None); otherwise ``tied_models`` (``significant``
    False), and the message says the two are "tied within noise". The paired tests come from
    :func:`~nbeval.results.statistics.compare.paired_comparisons`, as ``compare()``'s do; their family is
    the leader comparisons (one per evaluator whose leader and runner-up differ), Holm-adjusted
    together at 0.05. ``p_holm`` is the adjusted p-value and ``family`` names the family in words
    (the message says it too); both are empty where no test ran.
    """
    import pandas as pd

    out: list[list[Any]] = []
    out.extend(_leaders(result))
    out.extend(_ahead(result))
    parts = result.part_summaries
    hardest = parts.hardest() if parts is not None else _hardest(result)
    for ev, metric, key, n, total in hardest:
        message = (
            f"hardest case for {ev}: '{key}' failed by {n} of {total} models"
            if ev is not None
            else f"hardest case overall: '{key}' with {n} failing (model, evaluator) pairs"
        )
        out.append(["hardest_case", ev, metric, None, key, float(n), message, None, _NAN, None])
    return pd.DataFrame(out, columns=INSIGHT_COLUMNS)


def _ahead(result: EvaluationResult) -> list[list[Any]]:
    """List the pairs of a head-to-head evaluator where one model is ahead of the other.

    One row per such pair: the arena's 95% interval of its chance of being preferred (first-slot
    preference removed) lies wholly above one half, and the exact sign test over the test cases is
    significant after Holm's adjustment over the pairs
    (:func:`~nbeval.results.statistics.head_to_head.ahead_rows`).
    """
    from nbeval.results.statistics.head_to_head import ahead_rows, head_to_head_evaluators

    out = []
    for ev in head_to_head_evaluators(result):
        for a, b, p, lo, hi, cases, p_holm in ahead_rows(result, ev):
            message = (
                f"{result.label(a)} is ahead of {result.label(b)} on {ev}: preferred with probability "
                f"{p:.2f} (95% interval {lo:.2f}-{hi:.2f}, the judge's first-slot preference removed; "
                f"sign test over {cases} cases, Holm p = {p_holm:.2g} over the pairs)"
            )
            family = "of the pairs compared (sign test over test cases)"
            out.append([AHEAD_KIND, ev, "win_rate", a, None, p, message, True, p_holm, family])
    return out


def _leaders(result: EvaluationResult) -> list[list[Any]]:
    """Return one leader row per evaluator on its primary metric.

    The row names ``best_model`` only when the paired comparison with the runner-up is significant
    after Holm's adjustment over the leader comparisons, else ``tied_models``.
    """
    from nbeval.results.statistics.compare import paired_comparisons
    from nbeval.results.statistics.head_to_head import head_to_head_evaluators

    agg = result.aggregates
    arena = set(head_to_head_evaluators(result))  # their lead is told by the "ahead" rows
    found = []
    for ev, part in agg[agg["primary"] & agg["value"].notna()].groupby("evaluator", sort=False, observed=True):
        if str(ev) in arena:
            continue
        higher = part["direction"].iloc[0] == "higher"
        ordered = part.sort_values("value", ascending=not higher, kind="stable")
        found.append((str(ev), str(ordered["metric"].iloc[0]), ordered))
    tested = [
        (ev, metric, ordered)
        for ev, metric, ordered in found
        if len(ordered) >= 2 and ordered["value"].iloc[0] != ordered["value"].iloc[1]
    ]
    table = paired_comparisons(
        result,
        [(str(o["model_key"].iloc[0]), str(o["model_key"].iloc[1]), ev, metric) for ev, metric, o in tested],
        alpha=INSIGHT_ALPHA,
        family=LEADER_FAMILY,
    )
    tests = {ev: row for (ev, _, _), (_, row) in zip(tested, table.iterrows(), strict=True)}
    family = str(table.attrs["family"])
    out = []
    for ev, metric, ordered in found:
        leader, value = str(ordered["model_key"].iloc[0]), float(ordered["value"].iloc[0])
        where = f"{ev}.{metric}"
        test = tests.get(ev)
        p, named = _NAN, None
        if len(ordered) == 1:
            significant = None
            msg = f"best on {where}: {result.label(leader)} with {format_value(value)} (the only model)"
        elif test is None:
            significant = False
            tied = ordered[ordered["value"] == value]
            names = ", ".join(result.label(m) for m in tied["model_key"])
            msg = f"tied within noise on {where}: {names} all at {format_value(value)}"
        else:
            p = float(test["p_holm"])
            named = None if test["test"] == "none" else family
            significant = bool(test["significant"])
            msg = _lead_message(
                result,
                where,
                leader,
                str(ordered["model_key"].iloc[1]),
                value,
                float(ordered["value"].iloc[1]),
                test,
                family,
                significant,
                (str(ev), str(metric)),
            )
        kind = "tied_models" if significant is False else "best_model"
        out.append([kind, ev, metric, leader, None, value, msg, significant, p, named])
    return out


def _is_mean_metric(result: EvaluationResult, ev: str, metric: str) -> bool:
    """Whether every model's aggregate of ``ev``'s ``metric`` is the mean of its rows' values."""
    from nbeval.results.statistics.compare import aggregate_is_mean

    agg = result.aggregates
    values = agg[(agg["evaluator"] == ev) & (agg["metric"] == metric)]
    return all(
        aggregate_is_mean(result, ev, metric, str(model), float(value))
        for model, value in zip(values["model_key"], values["value"], strict=True)
    )


def _lead_message(
    result: EvaluationResult,
    where: str,
    leader: str,
    runner: str,
    value: float,
    runner_value: float,
    test: pd.Series,
    family: str,
    significant: bool,
    ev_metric: tuple[str, str],
) -> str:
    a, b = result.label(leader), result.label(runner)
    if test["test"] == "none" and int(test["n"]) == 0 and _is_mean_metric(result, *ev_metric):
        parts = result.part_summaries
        sampled = parts is not None and not parts.complete
        return (
            f"tied within noise on {where}: {a} ({format_value(value)}) leads {b} ({format_value(runner_value)}), "
            f"but they have no test case in common{' in the sample of test cases' if sampled else ''}, "
            "so no paired test can compare them"
        )
    if test["test"] == "none":
        return (
            f"tied within noise on {where}: {a} ({format_value(value)}) leads {b} ({format_value(runner_value)}), "
            "but this aggregate is not a mean over test cases, so no paired test can confirm it"
        )
    cases = f"{test['n']} cases"
    parts = result.part_summaries
    if parts is not None and not parts.complete:  # a partitioned run tests on its sample of test cases
        cases = f"{test['n']} cases of a sample of {parts.sampled_keys():,} of {parts.keys:,} test cases"
    how = f"paired {test['test']} on {cases}, Holm p = {format_value(float(test['p_holm']))}, {family}"
    gap = abs(value - runner_value)
    sign = 1.0 if value >= runner_value else -1.0  # the lead as a positive number, whichever way is better
    lo, hi = sorted((sign * test["diff_lo"], sign * test["diff_hi"]))
    interval = f"95% CI of the paired difference {format_value(lo)} to {format_value(hi)}"
    if significant:
        return (
            f"best on {where}: {a} with {format_value(value)}, ahead of {b} ({format_value(runner_value)}) "
            f"by {format_value(gap)} ({interval}; {how})"
        )
    note = ""
    if lo > 0 or hi < 0:  # the same words as compare_chart's verdict for such a row
        note = f"; the unadjusted {interval} excludes 0, but the test is not significant after Holm's adjustment"
    return (
        f"tied within noise on {where}: {a} ({format_value(value)}) leads {b} ({format_value(runner_value)}) "
        f"by {format_value(gap)}, but the difference is not significant ({how}{note})"
    )
