"""Problems derived from a result's long table and aggregates (:func:`problems`).

* A *threshold* problem: a model's aggregate of an evaluator's primary metric is on the wrong
  side of its threshold.
* An *unrated* problem: some of a model's rows could not be rated by an evaluator (the judge's
  reply could not be parsed, a regular expression timed out): they are neither passes nor
  fails, and the model's aggregate is measured without them. One problem per model and
  evaluator, with how many rows and what happened.
* A *perturbation flip*: a test case perturbed from another (``perturbation_source``) passes on
  one side and fails on the other for the same model and evaluator.
* An *errored* problem: some of a model's rows could not be scored by an evaluator because the
  call (to the judge, a model) or the scoring failed: the long table's ``error`` is set and the
  primary metric has no value. One problem per model and evaluator, with the commonest errors.
* An *unmeasured* problem: a model and evaluator measured on none of its rows (``n`` = 0 of
  ``N`` > 0), whatever the reason (errors, skipped or unrated rows); see :func:`problems` for the
  one kind of skip that is not a problem.

The insights (leaders and hardest cases) are :mod:`nbeval.results.reporting.insights`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from nbeval.results.reporting.numbers import format_value
from nbeval.results.statistics.tallies import ERROR_CHARS, Tally, first_line, result_tallies

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = [
    "ERROR_CHARS",
    "ERROR_GROUPS",
    "PROBLEM_COLUMNS",
    "PROMPT_CHARS",
    "describe_error_lines",
    "describe_errors",
    "errored_rows",
    "errors_of_run",
    "failed_mask",
    "problems",
    "unmeasured_problems",
]

#: The columns of a result's problems table, in order.
PROBLEM_COLUMNS = [
    "kind",
    "severity",
    "model_key",
    "evaluator",
    "metric",
    "value",
    "threshold",
    "key",
    "source_key",
    "message",
]
#: How many groups of errors a message names.
ERROR_GROUPS = 3


def failed_mask(passed: pd.Series) -> pd.Series:
    """Where ``passed`` is False; a pass that is unknowable (``<NA>``: no value or no threshold) is no failure."""
    return passed.eq(False).fillna(False).astype(bool)


def problems(result: EvaluationResult) -> pd.DataFrame:
    """List a result's problems, one row each (:data:`PROBLEM_COLUMNS`).

    Rows that measured nothing, errors, threshold breaches, unrated rows and perturbation flips, in
    that order.

    ``kind`` is one of:

    * ``unmeasured``: a model and evaluator with rows (``N`` > 0) none of which was measured on
      the primary metric (``n`` = 0), because every row errored, was skipped or could not be
      rated. ``value`` is ``N``; ``severity`` is ``high``; the message says what happened to the
      rows. One kind of skip is fine: when *every* row of the pair was skipped because an
      **optional** input of the evaluator was missing (``byop`` with a prompt using ``{context}``
      on rows without context: the evaluator does not apply to this data), it is no problem. A
      missing answer (``actual_output``) is never such a skip, and neither is a required input
      missing, an answer that was not collected, an error or an unrated row. Nor is a run that
      measured nothing at all: when no model and evaluator was measured on any row, each of them
      is ``unmeasured``, whatever the reason.
    * ``errored``: a model and evaluator with rows whose call or scoring failed (the long
      table's ``error`` is set, the primary metric has no value, and the row is not unrated).
      ``value`` is the number of such rows; ``severity`` is ``high`` when every row of the pair
      errored. The message groups the errors by their first line (:func:`describe_errors`).
    * ``threshold``: the aggregate of the primary metric is on the wrong side of its threshold.
    * ``unrated``: ``value`` is the number of rows that could not be rated and ``metric`` the
      primary metric they have no value for; ``severity`` is ``high`` when none of the model's
      rows could be rated.
    * ``perturbation_flip``: a perturbed test case and its original on either side of the
      primary metric's threshold (``key`` and ``source_key`` name them).
    """
    import pandas as pd

    out: list[list[Any]] = []
    tallies = result_tallies(result)
    out.extend(unmeasured_problems(result, tallies))
    out.extend(_errored(result, tallies))
    agg = result.aggregates
    for _, a in agg[agg["primary"] & failed_mask(agg["passed"])].iterrows():
        side = "below" if a["direction"] == "higher" else "above"
        msg = (
            f"{result.label(a['model_key'])}: {a['evaluator']}.{a['metric']} = {format_value(a['value'])} "
            f"is {side} the threshold {format_value(a['threshold'])} (measured on {a['n']}/{a['N']} rows)"
        )
        out.append(
            [
                "threshold",
                "high",
                a["model_key"],
                a["evaluator"],
                a["metric"],
                a["value"],
                a["threshold"],
                None,
                None,
                msg,
            ]
        )
    out.extend(_unrated(result, tallies))
    out.extend(_flips(result))
    return pd.DataFrame(out, columns=PROBLEM_COLUMNS)


def _on_primary(result: EvaluationResult, scores: pd.DataFrame) -> pd.DataFrame:
    """Return the rows of ``scores`` on each evaluator's primary metric.

    ``scores`` is a slice of the long table; the rows returned are one per dataset row and
    evaluator.
    """
    primary = result.metrics.loc[result.metrics["primary"], ["evaluator", "metric"]]
    return scores.merge(primary, on=["evaluator", "metric"])


def errored_rows(result: EvaluationResult) -> pd.DataFrame:
    """Return the long table's rows whose call or scoring failed, on each evaluator's primary metric.

    Such a row is scored (not skipped), with an ``error`` and no value, and not unrated (those are
    :data:`~nbeval.evaluators.base.UNRATED_LABELS` rows, reported as ``unrated``).
    """
    from nbeval.evaluators.base import UNRATED_LABELS

    s = result.scores
    s = s[~s["skipped"] & s["error"].notna() & s["value"].isna() & ~s["label"].isin(list(UNRATED_LABELS))]
    return _on_primary(result, s)


def describe_errors(errors: pd.Series) -> str:
    """Describe errors grouped by their first line, commonest first (ties in text order), with how many rows had each.

    For example ``Connection refused (30); HTTP 500 (2)``; at most :data:`ERROR_GROUPS` groups, then
    how many other rows errored.
    """
    counts = errors.dropna().astype(str).value_counts(sort=False)
    groups: dict[str, int] = {}
    for text, n in counts.items():  # each distinct error once, however many rows had it
        line = first_line(str(text))
        groups[line] = groups.get(line, 0) + int(n)
    return describe_error_lines(groups)


def describe_error_lines(groups: dict[str, int], unnamed: int = 0) -> str:
    """:func:`describe_errors` of errors already counted by first line (equal counts in text order).

    Ties go by the text, not by which came first, so that a run's description does not depend on
    how its rows were split (a partitioned run adds its parts' counts in any order). ``unnamed``
    rows errored with lines not kept (a partitioned run's tally keeps the commonest,
    :data:`~nbeval.results.statistics.tallies.MAX_ERROR_LINES`): they count among the others,
    whose number of kinds is then not known.
    """
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))
    shown = "; ".join(f"{line} ({n})" for line, n in ordered[:ERROR_GROUPS])
    rest = sum(n for _, n in ordered[ERROR_GROUPS:]) + unnamed
    if rest and unnamed:
        shown += f"; other errors ({rest})"
    elif rest:
        shown += f"; {len(ordered) - ERROR_GROUPS} other error{'s' * (len(ordered) - ERROR_GROUPS != 1)} ({rest})"
    return shown


def errors_of_run(result: EvaluationResult) -> str:
    """:func:`describe_errors` of every errored row of the result, whatever its model and evaluator."""
    groups: dict[str, int] = {}
    unnamed = 0
    for t in result_tallies(result).values():
        unnamed += t.other_errors
        for line, n in t.errored.items():
            groups[line] = groups.get(line, 0) + n
    return describe_error_lines(groups, unnamed)


def _totals(result: EvaluationResult) -> dict[tuple[str, str], int]:
    """Rows per model and evaluator (``N`` of the primary metric's aggregate)."""
    return {(str(a.model_key), str(a.evaluator)): int(a.N) for a in result.aggregates.itertuples() if a.primary}


def _errored(result: EvaluationResult, tallies: dict[tuple[str, str], Tally]) -> list[list[Any]]:
    """One ``errored`` problem per model and evaluator with rows whose call or scoring failed."""
    totals = _totals(result)
    out = []
    for (model, ev), t in tallies.items():
        n = t.errored_rows
        if not n:
            continue
        total = totals.get((model, ev), n)
        errors = describe_error_lines(t.errored, t.other_errors)
        msg = f"{result.label(model)}: {ev}: {n} of {total} rows errored: {errors}"
        out.append(["errored", "high" if n >= total else "low", model, ev, t.metric, n, None, None, None, msg])
    return out


def _optional_inputs(result: EvaluationResult) -> dict[str, frozenset[str]]:
    """Per evaluator name: its declared optional inputs (none when its id is not registered)."""
    from nbeval.errors import NbevalError
    from nbeval.evaluators.registry import get_spec

    out = {}
    for name, ev_id in result.metrics[["evaluator", "evaluator_id"]].drop_duplicates().itertuples(index=False):
        try:
            out[str(name)] = frozenset(get_spec(str(ev_id)).optional_inputs)
        except (NbevalError, KeyError):
            out[str(name)] = frozenset()
    return out


def _optional_skip(reason: Any, optional: frozenset[str]) -> bool:
    """Whether a skip reason says only optional inputs were missing (never the answer)."""
    if not isinstance(reason, str) or not reason.startswith("missing "):
        return False
    names = {n.strip() for n in reason[len("missing ") :].split(",")}
    return bool(names) and names <= optional and "actual_output" not in names


def unmeasured_problems(
    result: EvaluationResult, tallies: dict[tuple[str, str], Tally] | None = None
) -> list[list[Any]]:
    """Return one ``unmeasured`` problem per model and evaluator measured on none of its rows.

    See :func:`problems` for the skips that are fine. ``tallies`` are the result's
    (:func:`~nbeval.results.statistics.tallies.result_tallies`), counted here when not given.
    """
    agg = result.aggregates
    primary = agg[agg["primary"] & (agg["N"] > 0)]
    empty = primary[primary["n"] == 0]
    if empty.empty:
        return []
    whole_run = len(empty) == len(primary)  # nothing at all was measured: always a problem
    if tallies is None:
        tallies = result_tallies(result)
    optional = _optional_inputs(result)
    out = []
    for a in empty.itertuples():
        model, ev, total = str(a.model_key), str(a.evaluator), int(a.N)
        t = tallies.get((model, ev))
        why: list[str] = []
        if t is not None:
            skipped = sum(t.skipped.values())
            if (
                not whole_run
                and skipped == t.rows == total
                and all(_optional_skip(r, optional.get(ev, frozenset())) for r in t.skipped)
            ):
                continue  # every row lacks an optional input this evaluator needs here: it does not apply
            errored, unrated = t.errored_rows, sum(t.unrated.values())
            if errored:
                why.append(f"{errored} errored")
            if skipped:
                top = first_line(min(t.skipped.items(), key=lambda kv: (-kv[1], kv[0]))[0])
                why.append(f"{skipped} skipped ({top}{' and other reasons' if len(t.skipped) > 1 else ''})")
            if unrated:
                why.append(f"{unrated} could not be rated")
            if t.no_value:
                why.append(f"{t.no_value} gave no value")
        msg = f"{result.label(model)}: {ev}: nothing measured (0 of {total} rows{': ' + ', '.join(why) if why else ''})"
        out.append(["unmeasured", "high", a.model_key, ev, a.metric, total, None, None, None, msg])
    return out


def _unrated(result: EvaluationResult, tallies: dict[tuple[str, str], Tally]) -> list[list[Any]]:
    """Return one ``unrated`` problem per model and evaluator with rows that could not be rated.

    Those are scored (not skipped) rows whose primary metric has no value and whose label is one of
    :data:`~nbeval.evaluators.base.UNRATED_LABELS`.
    """
    from nbeval.evaluators.base import UNRATED_LABELS

    totals = _totals(result)
    out = []
    for (model, ev), t in tallies.items():
        n = sum(t.unrated.values())
        if not n:
            continue
        total = totals.get((model, ev), n)
        if len(t.unrated) == 1:
            why = UNRATED_LABELS[next(iter(t.unrated))]
        else:
            ordered = sorted(t.unrated.items(), key=lambda kv: (-kv[1], kv[0]))  # not by which part came first
            why = "; ".join(f"{count}: {UNRATED_LABELS[label]}" for label, count in ordered)
        msg = f"{result.label(model)}: {ev}: {n} of {total} rows could not be rated ({why})"
        out.append(["unrated", "high" if n >= total else "low", model, ev, t.metric, n, None, None, None, msg])
    return out


#: How much of a test case's prompt a problem message quotes beside its key.
PROMPT_CHARS = 40


def _prompt_starts(result: EvaluationResult) -> dict[str, str]:
    """Map each test case key to the start of its prompt, to follow the key in a message.

    Each is `` "the prompt's start…"`` (at most :data:`PROMPT_CHARS` characters, on one line): a
    perturbed case's key is a hash, its prompt says which case it is.
    """
    starts: dict[str, str] = {}
    for row in result.dataset:
        key, text = str(row.key), " ".join(str(row.input or "").split())
        if key in starts or not text:
            continue
        cut = text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 1].rstrip() + "…"
        starts[key] = f" {json.dumps(cut, ensure_ascii=False)}"
    return starts


def _flips(result: EvaluationResult) -> list[list[Any]]:
    """Return one ``perturbation_flip`` problem per perturbed case that flipped against its original.

    One per pair of a perturbed case and its original, on an evaluator's primary metric, that
    :func:`~nbeval.results.statistics.robustness.flipped` (the rule the robustness view counts).
    """
    from nbeval.results.statistics.robustness import flipped, perturbation_pairs

    if result.part_summaries is not None and not result.part_summaries.perturbed:
        return []  # a partitioned run without perturbed rows: nothing to read for
    pairs = perturbation_pairs(result)
    if pairs.empty:
        return []
    out = []
    prompts = _prompt_starts(result)
    for p in pairs[flipped(pairs)].itertuples():
        ev, model, metric, key, src = p.evaluator, p.model_key, p.metric, p.key, p.source_key
        src_passed = bool(p.source_passed)
        how = (
            "passed on the original but failed on the perturbed case"
            if src_passed
            else "failed on the original but passed on the perturbed case"
        )
        msg = (
            f"{result.label(model)}: {ev}.{metric} {how} '{key}'{prompts.get(key, '')} "
            f"({format_value(p.source_value)} -> {format_value(p.value)}; original '{src}'{prompts.get(src, '')})"
        )
        threshold = result.metrics.loc[
            (result.metrics["evaluator"] == ev) & (result.metrics["metric"] == metric), "threshold"
        ].iloc[0]
        out.append(
            ["perturbation_flip", "high" if src_passed else "low", model, ev, metric, p.value, threshold, key, src, msg]
        )
    return out
