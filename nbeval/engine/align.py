"""Align a judge to people: worked examples chosen from the human labels, checked on held-out cases.

    judge_ev, report = nbeval.align(result, "correctness", judge=my_judge)
    print(report)                       # accuracy and kappa before and after, with intervals
    nbeval.evaluate(lab, [judge_ev])    # the judge with the worked examples in its prompt

:func:`align` reads the pass/fail labels people gave an evaluator's rows (``result.labels``, see
:mod:`nbeval.results.storage.labels`) and does four things:

1. **Split.** The labelled test cases are split in two: a held-out part, on which the judge is
   measured, and a training part, from which examples are taken. Every model's row of a test case
   goes to the same side, and so does a perturbed copy of a case (linked to it by the relationship
   ``perturbation_source``), so no held-out question appears in an example. The cases are sorted by
   key (a case and its perturbed copies as one unit, named by their smallest key), put in the order
   of ``numpy.random.default_rng(seed).permutation``, and the first ``holdout`` share of them
   (rounded half up; at least one, and at least one left to train on) is held out.
2. **Choose examples.** Up to ``k`` training rows become worked examples: first the rows where the
   judge's verdict (from the result) differed from the person's, then those where it agreed, each
   group in dataset order; the picks alternate between pass and fail labels while both are left
   (the next pick is from the label with fewer picks; on a tie, the label whose next row comes
   first). Each example shows the row's fields the prompt shows
   (:func:`~nbeval.evaluators.judges.core.row_values`), and its reply is the person's verdict in the
   judge's reply format. Labels carry no note, so the reason in the
   reply is a fixed sentence saying that a person judged the answer to meet the criteria or not
   (:data:`PASS_REASON`, :data:`FAIL_REASON`). The judge writes both: the fields an example shows
   and its reply (see :mod:`nbeval.evaluators.judges.alignment`).
3. **Configure.** The aligned evaluator is a copy of the evaluator with the same id, name and
   parameters, whose prompt is the old prompt with the examples added after its own (the judge's
   ``with_examples``).
4. **Measure.** On the held-out labelled rows, the judge's verdicts before (the result's scores)
   and after (a new run of the aligned evaluator on those rows only, through
   :func:`nbeval.evaluate`) are compared with the person's: accuracy and Cohen's kappa, each with a
   percentile bootstrap interval over held-out test cases (``2000`` resamples drawn with
   ``seed``; a resample where kappa is undefined is left out of kappa's interval; a bootstrap
   that cannot vary, with one held-out case or every verdict right, gives way to the Wilson score
   interval for accuracy and to none for kappa). A row the judge could not rate counts as a
   disagreement (in kappa it is a third verdict, ``"unrated"``). Whether the change of accuracy is
   real is the exact McNemar test on the rows whose correctness changed
   (:func:`~nbeval.results.statistics.stats.mcnemar_exact`, the two-sided binomial test of those pairs);
   ``significant`` is true when accuracy rose and ``p < alpha``. With fewer than
   :data:`~nbeval.results.statistics.align_report.MIN_HELD_OUT_ROWS` (10) held-out rows the accuracy is not
   meaningful: the report says so and ``align`` warns (:class:`~nbeval.data.fields.DataWarning`).
   See :mod:`nbeval.results.statistics.align_report`.

Supported evaluators are judges that give one pass/fail verdict per row from a prompt of worked
examples, which is what a judge's ``example_reply`` says: the rating judges (correctness,
relevance_to_query, groundedness, safety, context_sufficiency, guideline_adherence, custom_judge
rating the answer), whose example replies are ``Rationale: ...`` and ``Rating: yes|no``, and the
verdict judges (contact_information, language_mismatch, sexism, summarization_judge, byop), whose
replies are ``Reason: ...`` and ``Verdict: <word>`` (the word alone for a template that asks for
one word).
"""

from __future__ import annotations

import hashlib
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from nbeval.data.fields import DataWarning
from nbeval.data.model import LlmDataset
from nbeval.errors import BadArgumentType, BadParameter, DataError, EvaluatorError
from nbeval.evaluators.base import Evaluator
from nbeval.evaluators.case import is_case_level
from nbeval.evaluators.judges.alignment import ALIGN_SUPPORTED, FAIL_REASON, PASS_REASON
from nbeval.evaluators.judges.core import Example, JudgeEvaluator, JudgePrompt
from nbeval.results.statistics.agreement import PASS_FAIL
from nbeval.results.statistics.align_report import MIN_HELD_OUT_ROWS, AlignReport, align_report
from nbeval.results.statistics.align_report import UNRATED as _UNRATED
from nbeval.results.statistics.stats import check_level

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.data.model import Row
    from nbeval.results import EvaluationResult

__all__ = ["FAIL_REASON", "PASS_REASON", "AlignReport", "align"]

_PERTURBATION_SOURCE = "perturbation_source"


def align(
    result: EvaluationResult,
    evaluator: Evaluator | str,
    *,
    holdout: float = 0.3,
    seed: int = 0,
    k: int = 4,
    judge: Any = None,
    level: float = 0.95,
    alpha: float = 0.05,
    **run_options: Any,
) -> tuple[JudgeEvaluator, AlignReport]:
    """Align ``evaluator``'s judge to the human labels of ``result`` with worked examples.

    Returns the aligned evaluator (its prompt carries up to ``k`` worked examples) and an
    :class:`AlignReport` measured on the held-out ``holdout`` share of the labelled test cases (see
    :mod:`nbeval.engine.align`).

    Args:
        result: The evaluation result whose human pass/fail labels (``result.labels``) the judge is
            aligned to; it also gives the judge's verdicts before alignment.
        evaluator: The evaluator object the result was made with, or its name in the result (rebuilt
            from the parameters the result records; one with its own prompt must be given as the
            object, one with its own judge too unless ``judge`` is given).
        holdout: The share of labelled test cases held out to measure on, between 0 and 1.
        seed: Draws the split and the bootstrap.
        k: The most worked examples to add, a whole number of at least 1.
        judge: The judge of the verdicts after, as :func:`nbeval.evaluate` takes it (an evaluator
            object with its own keeps it); a result keeps only its judge's name, so give it unless the
            environment names one.
        level: The confidence level of the report's intervals.
        alpha: The significance level of the McNemar test of the change in accuracy.
        **run_options: Passed to :func:`nbeval.evaluate` (``cache``, ``max_attempts``, ``progress``,
            which is off unless given).

    Returns:
        The aligned evaluator and the :class:`AlignReport`, as a pair.

    Raises:
        BadParameter: When ``holdout``, ``k``, ``level`` or ``alpha`` is out of range.
        BadArgumentType: When ``evaluator`` is neither an evaluator object nor a name.
        EvaluatorError: When ``evaluator`` cannot be rebuilt from what the result records, or is not
            a judge that align supports.
        DataError: When ``result`` has no labels for the evaluator, or has pass/fail labels of it on
            fewer than 2 test cases (a perturbed copy counts with its original).
    """
    _check_options(holdout, k, level, alpha)
    ev = _supported(_evaluator_of(result, evaluator, judge))
    labelled = _labelled_rows(result, ev.name)
    rows = {(r.key, r.model_key): r for r in result.dataset.rows}
    units = _units(result.dataset.rows, sorted(set(labelled["key"])))
    if len(units) < 2:
        msg = (
            f"align needs pass/fail labels of '{ev.name}' on at least 2 test cases (one held out to measure on, "
            f"one to take examples from; a perturbed copy counts with its original); it has labels on "
            + (f"{len(units)}: {', '.join(k for u in units for k in u)}" if units else _none_usable(result, ev.name))
        )
        raise DataError(msg, source="labels")
    held = _split(units, holdout, seed)
    held_keys = {key for i in held for key in units[i]}
    test = labelled[labelled["key"].isin(held_keys)].reset_index(drop=True)
    train = labelled[~labelled["key"].isin(held_keys)].reset_index(drop=True)
    chosen = _choose(train, k)
    examples = tuple(
        Example(ev.example_values(rows[(key, model)]), _reply(ev, label == "pass")) for key, model, label in chosen
    )
    aligned = ev.with_examples(examples)
    after = _verdicts_after(
        aligned, [rows[(a, b)] for a, b in zip(test["key"], test["model_key"], strict=True)], judge, run_options
    )
    test["after"] = [after.get((a, b), _UNRATED) for a, b in zip(test["key"], test["model_key"], strict=True)]
    report = align_report(ev.name, test, units, held, chosen, seed, level, alpha)
    if report.n < MIN_HELD_OUT_ROWS:
        warnings.warn(f"nbeval.align: {report.note}", DataWarning, stacklevel=2)
    return aligned, report


# -- the evaluator ---------------------------------------------------------------------------------


def _check_options(holdout: float, k: int, level: float, alpha: float) -> None:
    if isinstance(holdout, bool) or not isinstance(holdout, (int, float)) or not 0 < holdout < 1:
        msg = f"holdout is the share of labelled test cases held out, between 0 and 1 (e.g. 0.3), got {holdout!r}"
        raise BadParameter(msg)
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        msg = f"k is the most worked examples to add, a whole number of at least 1, got {k!r}"
        raise BadParameter(msg)
    check_level(level)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        msg = f"alpha is a significance level between 0 and 1 (e.g. 0.05), got {alpha!r}"
        raise BadParameter(msg)


def _evaluator_of(result: EvaluationResult, evaluator: Evaluator | str, judge: Any) -> Evaluator:
    """Return the evaluator object to align.

    The one given, or one rebuilt from what the result records (its own judge replaced by ``judge``
    when given).
    """
    if isinstance(evaluator, Evaluator):
        result.check_evaluator(evaluator.name)
        return evaluator
    if not isinstance(evaluator, str):
        msg = f"evaluator must be an evaluator object or its name in the result, got {type(evaluator).__name__}"
        raise BadArgumentType(msg)
    result.check_evaluator(evaluator)
    record = result.record
    entry = record.evaluator(evaluator)
    pass_object = "; pass the evaluator object the result was made with instead of its name"
    if entry is None:
        raise EvaluatorError(f"the result does not record how evaluator '{evaluator}' was configured{pass_object}")
    params = dict(entry.params or {})
    own = " and ".join(p for p in ("judge", "prompt") if params.get(p) is not None and (p == "prompt" or judge is None))
    if own:
        hint = " (or give judge=...)" if own == "judge" else ""
        raise EvaluatorError(f"evaluator '{evaluator}' had its own {own}, kept only as text{pass_object}{hint}")
    from nbeval.evaluators.registry import evaluator as make

    ev = make(str(entry.id), **{k: v for k, v in params.items() if k not in ("judge", "prompt")})
    recorded = ((record.run.prompts if record.run else None) or {}).get(evaluator)
    prompt = getattr(ev, "prompt", None)
    if recorded and isinstance(prompt, JudgePrompt):
        now = hashlib.sha256(prompt.text().encode("utf-8", "surrogatepass")).hexdigest()
        if now != recorded:
            raise EvaluatorError(f"evaluator '{evaluator}' has another prompt than the result's{pass_object}")
    return ev


def _supported(ev: Evaluator) -> JudgeEvaluator:
    """Return ``ev`` as a judge that can be aligned.

    Such a judge says how it writes an example's reply; :class:`EvaluatorError` for an evaluator
    align does not support.
    """
    prompt = getattr(ev, "prompt", None)
    if (
        not isinstance(ev, JudgeEvaluator)
        or not isinstance(prompt, JudgePrompt)
        or is_case_level(ev)
        or ev.example_reply(True) is None
    ):
        raise EvaluatorError(f"evaluator '{ev.name}' ({ev.id}) cannot be aligned: {ALIGN_SUPPORTED}")
    return ev


def _reply(ev: JudgeEvaluator, passed: bool) -> str:
    """The judge's example reply carrying a person's verdict (``_supported`` checked there is one)."""
    reply = ev.example_reply(passed)
    if reply is None:  # not reached: _supported refused such a judge
        raise EvaluatorError(f"evaluator '{ev.name}' ({ev.id}) cannot be aligned: {ALIGN_SUPPORTED}")
    return reply


# -- labels, split, examples -----------------------------------------------------------------------


def _labelled_rows(result: EvaluationResult, name: str) -> pd.DataFrame:
    """The rows with a pass/fail label that the result scored: ``key, model_key, human, before``."""
    found = result.labels
    if found[found["evaluator"] == name].empty:
        msg = f"there are no labels for evaluator '{name}'; add some with result.set_labels(...) or the CaseExplorer"
        raise DataError(msg, source="labels")
    rows = result.agreement(name).rows
    rows = rows[rows["human"].isin(PASS_FAIL)].copy()
    rows["before"] = [j if j in PASS_FAIL else _UNRATED for j in rows["judge"]]
    order = {(r.key, r.model_key): i for i, r in enumerate(result.dataset.rows)}
    rows["_pos"] = [order[(a, b)] for a, b in zip(rows["key"], rows["model_key"], strict=True)]
    rows = rows.sort_values("_pos", kind="mergesort")
    return rows[["key", "model_key", "human", "before"]].reset_index(drop=True)


def _none_usable(result: EvaluationResult, name: str) -> str:
    """Why none of ``name``'s labels can be used (the end of align's error)."""
    labels = result.labels
    mine = labels[labels["evaluator"] == name]
    pass_fail = mine[mine["label"].isin(PASS_FAIL)]
    if pass_fail.empty:
        shown = ", ".join(repr(x) for x in list(dict.fromkeys(mine["label"]))[:5])
        return f"none it can use: none of its {len(mine)} labels is pass or fail (they are {shown})"
    return (
        f"none it can use: its {len(pass_fail)} pass/fail labels are all on rows '{name}' skipped, so there is no "
        "verdict to compare; label rows the judge rated (result.label_queue lists them)"
    )


def _units(dataset_rows: Sequence[Row], keys: Sequence[str]) -> list[tuple[str, ...]]:
    """Group ``keys`` into units, a perturbed copy with its original.

    Each unit is sorted, and the units are sorted by their first key.
    """
    wanted = set(keys)
    parent = {k: k for k in wanted}

    def root(k: str) -> str:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for row in dataset_rows:
        for rel in row.relationships:
            if rel.type == _PERTURBATION_SOURCE and row.key in wanted and rel.target in wanted:
                a, b = sorted((root(row.key), root(rel.target)))
                parent[b] = a
    groups: dict[str, list[str]] = {}
    for k in sorted(wanted):
        groups.setdefault(root(k), []).append(k)
    return sorted(tuple(g) for g in groups.values())


def _split(units: Sequence[tuple[str, ...]], holdout: float, seed: int) -> list[int]:
    """The indices of the held-out units (see the module's description)."""
    n = len(units)
    n_held = min(n - 1, max(1, int(holdout * n + 0.5)))
    order = np.random.default_rng(seed).permutation(n)
    return sorted(int(i) for i in order[:n_held])


def _choose(train: pd.DataFrame, k: int) -> list[tuple[str, str, str]]:
    """Choose up to ``k`` training rows as ``(key, model_key, label)``.

    Disagreements come first, alternating between pass and fail labels (see the module's
    description).
    """
    ranked = sorted(range(len(train)), key=lambda i: (train["human"].iat[i] == train["before"].iat[i], i))
    queues: dict[str, list[int]] = {label: [i for i in ranked if train["human"].iat[i] == label] for label in PASS_FAIL}
    rank = {i: r for r, i in enumerate(ranked)}
    taken: dict[str, int] = dict.fromkeys(PASS_FAIL, 0)
    chosen: list[tuple[str, str, str]] = []
    while len(chosen) < k and any(queues.values()):
        label = min((lab for lab in PASS_FAIL if queues[lab]), key=lambda lab: (taken[lab], rank[queues[lab][0]]))
        i = queues[label].pop(0)
        taken[label] += 1
        chosen.append((str(train["key"].iat[i]), str(train["model_key"].iat[i]), label))
    return chosen


# -- after: the aligned judge on the held-out rows -------------------------------------------------


def _verdicts_after(
    ev: Evaluator, rows: Sequence[Row], judge: Any, run_options: Mapping[str, Any]
) -> dict[tuple[str, str], str]:
    """The aligned evaluator's verdict on each of ``rows``: ``pass``, ``fail`` or ``unrated``."""
    import pandas as pd

    from nbeval.engine.run import evaluate

    options = {"progress": False, **run_options}
    after = evaluate(LlmDataset(rows, source="held-out rows"), [ev], judge=judge, **options)
    s = after.scores
    metric = after.primary_metric(ev.name)
    s = s[(s["evaluator"] == ev.name) & (s["metric"] == metric) & ~s["skipped"].astype(bool)]
    out = {}
    for key, model, passed in zip(s["key"], s["model_key"], s["passed"], strict=True):
        out[(str(key), str(model))] = _UNRATED if pd.isna(passed) else ("pass" if bool(passed) else "fail")
    return out
