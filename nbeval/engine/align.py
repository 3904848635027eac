"""Align a judge to people: worked examples chosen from the human labels, checked on held-out cases.

    judge_ev, report = nbeval.align(result, "correctness", judge=my_judge)
    print(report)                       # accuracy and kappa before and after, with intervals
    nbeval.evaluate(lab, [judge_ev])    # the judge with the worked examples in its prompt

:func:`align` reads the pass/fail labels people gave an evaluator's rows (``result.labels``, see
:mod:`nbeval.results.labels`) and does four things:

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
   first). Each example shows the row's fields the prompt shows (:func:`row_values`), and its reply
   is the person's verdict in the judge's reply format. Labels carry no note, so the reason in the
   reply is a fixed sentence saying that a person judged the answer to meet the criteria or not
   (:data:`PASS_REASON`, :data:`FAIL_REASON`).
3. **Configure.** The aligned evaluator is a copy of the evaluator with the same id, name and
   parameters, whose prompt is the old prompt with the examples added after its own.
4. **Measure.** On the held-out labelled rows, the judge's verdicts before (the result's scores)
   and after (a new run of the aligned evaluator on those rows only, through
   :func:`nbeval.evaluate`) are compared with the person's: accuracy and Cohen's kappa, each with a
   percentile bootstrap interval over held-out test cases (``2000`` resamples drawn with
   ``seed``; a resample where kappa is undefined is left out of kappa's interval). A row the judge
   could not rate counts as a disagreement (in kappa it is a third verdict, ``"unrated"``). Whether
   the change of accuracy is real is the exact McNemar test on the rows whose correctness changed
   (:func:`~nbeval.results.stats.mcnemar_exact`, the two-sided binomial test of those pairs);
   ``significant`` is true when accuracy rose and ``p < alpha``.

Supported evaluators are judges that give one pass/fail verdict per row from a prompt of worked
examples: the rating judges (correctness, relevance_to_query, groundedness, safety,
context_sufficiency, guideline_adherence, custom_judge rating the answer), whose example replies
are ``Rationale: ...`` and ``Rating: yes|no``, and the verdict judges (contact_information,
language_mismatch, sexism, summarization_judge, byop), whose replies are ``Reason: ...`` and
``Verdict: <word>`` (the word alone for a template that asks for one word).
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from nbeval.data.model import LlmDataset
from nbeval.errors import BadArgumentType, BadParameter, DataError, EvaluatorError
from nbeval.evaluators.base import Evaluator
from nbeval.evaluators.case import is_case_level
from nbeval.evaluators.judges.core import Example, JudgeEvaluator, JudgePrompt, row_values
from nbeval.results.agreement import PASS_FAIL
from nbeval.results.stats import BOOTSTRAP_RESAMPLES, check_level, cohen_kappa, mcnemar_exact

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.data.model import Row
    from nbeval.results import EvaluationResult

__all__ = ["FAIL_REASON", "PASS_REASON", "AlignReport", "align"]

#: The reason written in an example whose person said pass (labels carry no reason of their own).
PASS_REASON = "A person who reviewed this answer judged that it meets the criteria."
#: The reason written in an example whose person said fail.
FAIL_REASON = "A person who reviewed this answer judged that it does not meet the criteria."
_UNRATED = "unrated"
_PERTURBATION_SOURCE = "perturbation_source"


@dataclass(frozen=True, eq=False)
class AlignReport:
    """How an aligned judge did on held-out labelled rows, before and after (see
    :mod:`nbeval.engine.align`). ``str()`` says it in words; :meth:`to_frame` gives the table."""

    evaluator: str
    """The evaluator aligned (its name in the result)."""
    held_out: tuple[str, ...]
    """The held-out test cases, by key, sorted."""
    trained_on: tuple[str, ...]
    """The test cases examples could be taken from, sorted."""
    examples: tuple[tuple[str, str, str], ...]
    """The examples added to the prompt, in order: ``(key, model_key, label)``."""
    n: int
    """Held-out labelled rows measured."""
    accuracy_before: float
    accuracy_before_low: float
    accuracy_before_high: float
    accuracy_after: float
    accuracy_after_low: float
    accuracy_after_high: float
    kappa_before: float
    kappa_before_low: float
    kappa_before_high: float
    kappa_after: float
    kappa_after_low: float
    kappa_after_high: float
    fixed: int
    """Held-out rows the judge got wrong before and right after."""
    broken: int
    """Held-out rows the judge got right before and wrong after."""
    p_value: float
    """The two-sided p-value of the exact McNemar test on ``fixed`` and ``broken``."""
    significant: bool
    """Accuracy rose and ``p_value < alpha``."""
    level: float
    """The confidence level of the intervals."""
    alpha: float
    """The significance level of the test."""
    rows: pd.DataFrame
    """The held-out rows: ``key, model_key, human, before, after`` (verdicts ``pass``, ``fail``
    or ``unrated``)."""

    def to_frame(self) -> pd.DataFrame:
        """One row each for ``before`` and ``after``: ``n, accuracy, accuracy_low, accuracy_high,
        kappa, kappa_low, kappa_high``."""
        import pandas as pd

        columns = ["n", "accuracy", "accuracy_low", "accuracy_high", "kappa", "kappa_low", "kappa_high"]
        data = [
            [
                self.n,
                *(getattr(self, f"{m}_{when}{end}") for m in ("accuracy", "kappa") for end in ("", "_low", "_high")),
            ]
            for when in ("before", "after")
        ]
        return pd.DataFrame(data, index=pd.Index(["before", "after"], name="judge"), columns=columns)

    def __str__(self) -> str:
        pct = f"{self.level:.0%}"
        lines = [
            f"Aligned '{self.evaluator}' with {len(self.examples)} worked examples from {len(self.trained_on)} "
            f"test cases; measured on {self.n} labelled rows of {len(self.held_out)} held-out test cases.",
        ]
        for measure in ("accuracy", "kappa"):
            for when in ("before", "after"):
                value, low, high = (getattr(self, f"{measure}_{when}{end}") for end in ("", "_low", "_high"))
                lines.append(f"  {measure} {when}:".ljust(19) + _with_interval(value, low, high, pct))
        verdict = "significant" if self.significant else "not significant"
        what = "improvement" if self.accuracy_after > self.accuracy_before else "change"
        lines.append(
            f"Aligned, the judge is right on {self.fixed} rows it had wrong and wrong on {self.broken} it had "
            f"right; exact McNemar p = {self.p_value:.3g}: the {what} is {verdict} at the {self.alpha:g} level."
        )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"AlignReport({self.evaluator!r}, n={self.n}, accuracy {self.accuracy_before:.3f} -> "
            f"{self.accuracy_after:.3f}, kappa {self.kappa_before:.3f} -> {self.kappa_after:.3f}, "
            f"p={self.p_value:.3g})"
        )


def _with_interval(value: float, low: float, high: float, pct: str) -> str:
    if math.isnan(value):
        return "undefined (every verdict is the same one)"
    if math.isnan(low):
        return f"{value:.3f}"
    return f"{value:.3f} ({pct} interval {low:.3f} to {high:.3f})"


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
    """Align ``evaluator``'s judge to the human labels of ``result``: returns the aligned evaluator
    (its prompt carries up to ``k`` worked examples) and an :class:`AlignReport` measured on the
    held-out ``holdout`` share of the labelled test cases (see :mod:`nbeval.engine.align`).

    ``evaluator``: the evaluator object the result was made with, or its name in the result (rebuilt
    from the parameters the result records; one with its own prompt must be given as the object, one
    with its own judge too unless ``judge`` is given). ``judge``: the judge of the verdicts after, as
    :func:`nbeval.evaluate` takes it (an evaluator object with its own keeps it); a result keeps only
    its judge's name, so give it unless the environment names one. ``seed`` draws the split and the
    bootstrap. ``run_options`` go to :func:`nbeval.evaluate` (``cache``, ``max_attempts``,
    ``progress``, which is off unless given).
    """
    _check_options(holdout, k, level, alpha)
    ev, reply_for = _supported(_evaluator_of(result, evaluator, judge))
    labelled = _labelled_rows(result, ev.name)
    rows = {(r.key, r.model_key): r for r in result.dataset.rows}
    units = _units(result.dataset.rows, sorted(set(labelled["key"])))
    if len(units) < 2:
        msg = (
            f"align needs pass/fail labels of '{ev.name}' on at least 2 test cases (one held out to measure on, "
            f"one to take examples from; a perturbed copy counts with its original); it has labels on "
            f"{len(units)}: {', '.join(key for u in units for key in u)}"
        )
        raise DataError(msg, source="labels")
    held = _split(units, holdout, seed)
    held_keys = {key for i in held for key in units[i]}
    test = labelled[labelled["key"].isin(held_keys)].reset_index(drop=True)
    train = labelled[~labelled["key"].isin(held_keys)].reset_index(drop=True)
    chosen = _choose(train, k)
    prompt = ev.prompt
    examples = tuple(
        Example(_example_values(ev, prompt, rows[(key, model)]), reply_for(label == "pass"))
        for key, model, label in chosen
    )
    aligned = _with_prompt(ev, prompt.replace(examples=(*prompt.examples, *examples)))
    after = _verdicts_after(
        aligned, [rows[(a, b)] for a, b in zip(test["key"], test["model_key"], strict=True)], judge, run_options
    )
    test["after"] = [after.get((a, b), _UNRATED) for a, b in zip(test["key"], test["model_key"], strict=True)]
    report = _report(ev.name, test, units, held, chosen, seed, level, alpha)
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
    """The evaluator object: the one given, or one rebuilt from what the result records (its own
    judge replaced by ``judge`` when given)."""
    if isinstance(evaluator, Evaluator):
        result.check_evaluator(evaluator.name)
        return evaluator
    if not isinstance(evaluator, str):
        msg = f"evaluator must be an evaluator object or its name in the result, got {type(evaluator).__name__}"
        raise BadArgumentType(msg)
    result.check_evaluator(evaluator)
    entry = next((e for e in result.meta.get("evaluators", []) if e.get("name") == evaluator), None)
    pass_object = "; pass the evaluator object the result was made with instead of its name"
    if entry is None:
        raise EvaluatorError(f"the result does not record how evaluator '{evaluator}' was configured{pass_object}")
    params = dict(entry.get("params") or {})
    own = " and ".join(p for p in ("judge", "prompt") if params.get(p) is not None and (p == "prompt" or judge is None))
    if own:
        hint = " (or give judge=...)" if own == "judge" else ""
        raise EvaluatorError(f"evaluator '{evaluator}' had its own {own}, kept only as text{pass_object}{hint}")
    from nbeval.evaluators.registry import evaluator as make

    ev = make(str(entry["id"]), **{k: v for k, v in params.items() if k not in ("judge", "prompt")})
    recorded = result.meta.get("run", {}).get("prompts", {}).get(evaluator)
    prompt = getattr(ev, "prompt", None)
    if recorded and isinstance(prompt, JudgePrompt):
        now = hashlib.sha256(prompt.text().encode("utf-8", "surrogatepass")).hexdigest()
        if now != recorded:
            raise EvaluatorError(f"evaluator '{evaluator}' has another prompt than the result's{pass_object}")
    return ev


_SUPPORTED = (
    "align supports judges with one pass/fail verdict per row and a prompt of worked examples: the rating "
    "judges (correctness, relevance_to_query, groundedness, safety, context_sufficiency, guideline_adherence, "
    "custom_judge rating the answer) and the verdict judges (contact_information, language_mismatch, sexism, "
    "summarization_judge, byop)"
)


def _supported(ev: Evaluator) -> tuple[JudgeEvaluator, Callable[[bool], str]]:
    """``ev`` as a judge, and how an example reply with a pass (True) or fail verdict is written
    for it; :class:`EvaluatorError` for an evaluator align does not support."""
    from nbeval.evaluators.judges.boolean import VerdictJudge
    from nbeval.evaluators.judges.rating import CustomJudge, GuidelineAdherence, RatingJudge

    prompt = getattr(ev, "prompt", None)
    if not isinstance(ev, JudgeEvaluator) or not isinstance(prompt, JudgePrompt) or is_case_level(ev):
        raise EvaluatorError(f"evaluator '{ev.name}' ({ev.id}) cannot be aligned: {_SUPPORTED}")
    retrieval = isinstance(ev, CustomJudge) and ev.params.get("assessment_type") == "retrieval"
    if isinstance(ev, (RatingJudge, GuidelineAdherence, CustomJudge)) and not retrieval:
        return ev, lambda ok: f"Rationale: {PASS_REASON if ok else FAIL_REASON}\nRating: {'yes' if ok else 'no'}"
    if isinstance(ev, VerdictJudge) and set(ev.choices.values()) == {True, False}:
        words = {ok: next(w for w, v in ev.choices.items() if v is ok) for ok in (True, False)}
        if "Verdict:" in prompt.output_format or not prompt.template:
            return ev, lambda ok: f"Reason: {PASS_REASON if ok else FAIL_REASON}\nVerdict: {words[ok]}"
        return ev, lambda ok: words[ok]
    raise EvaluatorError(f"evaluator '{ev.name}' ({ev.id}) cannot be aligned: {_SUPPORTED}")


def _example_values(ev: Evaluator, prompt: JudgePrompt, row: Row) -> dict[str, str]:
    """The fields ``prompt`` shows, from ``row`` as ``ev`` reads it (and the earlier turns of a
    conversation, which a judge of a multi-turn row shows)."""
    read = getattr(ev, "values", None)
    values: dict[str, str] = dict(read(row)) if callable(read) else row_values(row)
    values.setdefault("text", row.actual_output or "")  # the answer, for a prompt that shows "text"
    keep = {f: values.get(f, "") for f in prompt.fields}
    if values.get("conversation"):
        keep.setdefault("conversation", values["conversation"])
    return keep


def _with_prompt(ev: JudgeEvaluator, prompt: JudgePrompt) -> JudgeEvaluator:
    """A copy of ``ev`` (same id, name, parameters and resolved judge settings) asking with ``prompt``."""
    clone = copy.copy(ev)
    clone.params = {**ev.params, "prompt": prompt}
    clone.thresholds = dict(ev.thresholds)
    clone.prompt = prompt
    return clone


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


def _units(dataset_rows: Sequence[Row], keys: Sequence[str]) -> list[tuple[str, ...]]:
    """``keys`` grouped so that a perturbed copy goes with its original, each unit sorted, the
    units sorted by their first key."""
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
    """Up to ``k`` training rows as ``(key, model_key, label)``: disagreements first, alternating
    between pass and fail labels (see the module's description)."""
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


# -- the report ------------------------------------------------------------------------------------


def _report(
    name: str,
    test: pd.DataFrame,
    units: Sequence[tuple[str, ...]],
    held: Sequence[int],
    chosen: Sequence[tuple[str, str, str]],
    seed: int,
    level: float,
    alpha: float,
) -> AlignReport:
    human = test["human"].tolist()
    before, after = test["before"].tolist(), test["after"].tolist()
    right_before = np.array([h == b for h, b in zip(human, before, strict=True)])
    right_after = np.array([h == a for h, a in zip(human, after, strict=True)])
    fixed = int((~right_before & right_after).sum())
    broken = int((right_before & ~right_after).sum())
    p = mcnemar_exact(fixed, broken)
    acc_b, acc_a = float(right_before.mean()), float(right_after.mean())
    intervals = _bootstrap(test, seed, level)
    held_keys = sorted(key for i in held for key in units[i])
    trained = sorted(key for i, u in enumerate(units) if i not in set(held) for key in u)
    return AlignReport(
        evaluator=name,
        held_out=tuple(held_keys),
        trained_on=tuple(trained),
        examples=tuple(chosen),
        n=len(test),
        accuracy_before=acc_b,
        accuracy_before_low=intervals["accuracy_before"][0],
        accuracy_before_high=intervals["accuracy_before"][1],
        accuracy_after=acc_a,
        accuracy_after_low=intervals["accuracy_after"][0],
        accuracy_after_high=intervals["accuracy_after"][1],
        kappa_before=cohen_kappa(human, before),
        kappa_before_low=intervals["kappa_before"][0],
        kappa_before_high=intervals["kappa_before"][1],
        kappa_after=cohen_kappa(human, after),
        kappa_after_low=intervals["kappa_after"][0],
        kappa_after_high=intervals["kappa_after"][1],
        fixed=fixed,
        broken=broken,
        p_value=p,
        significant=bool(acc_a > acc_b and p < alpha),
        level=level,
        alpha=alpha,
        rows=test[["key", "model_key", "human", "before", "after"]].copy(),
    )


_VERDICTS = ("pass", "fail", _UNRATED)


def _bootstrap(test: pd.DataFrame, seed: int, level: float) -> dict[str, tuple[float, float]]:
    """Percentile bootstrap intervals of accuracy and kappa, before and after, resampling the
    held-out test cases. Each case is reduced to counts of (human, judge) verdict pairs, so a
    resample is a matrix product."""
    keys = sorted(set(test["key"]))
    index = {k: i for i, k in enumerate(keys)}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(keys), size=(BOOTSTRAP_RESAMPLES, len(keys)))
    weights = np.zeros((BOOTSTRAP_RESAMPLES, len(keys)))
    np.add.at(weights, (np.arange(BOOTSTRAP_RESAMPLES)[:, None], draws), 1.0)
    out: dict[str, tuple[float, float]] = {}
    for when in ("before", "after"):
        counts = np.zeros((len(keys), 2, len(_VERDICTS)))  # case, human (pass, fail), judge
        for key, h, j in zip(test["key"], test["human"], test[when], strict=True):
            counts[index[key], PASS_FAIL.index(h), _VERDICTS.index(j)] += 1
        cells = (weights @ counts.reshape(len(keys), -1)).reshape(BOOTSTRAP_RESAMPLES, 2, len(_VERDICTS))
        total = cells.sum(axis=(1, 2))
        agree = cells[:, 0, 0] + cells[:, 1, 1]
        p_o = agree / total
        human_share = cells.sum(axis=2) / total[:, None]
        judge_share = cells.sum(axis=1)[:, :2] / total[:, None]
        p_e = (human_share * judge_share).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            kappa = np.where(p_e >= 1.0, np.nan, (p_o - p_e) / (1 - p_e))
        out[f"accuracy_{when}"] = _percentiles(p_o, level)
        out[f"kappa_{when}"] = _percentiles(kappa, level)
    return out


def _percentiles(values: np.ndarray, level: float) -> tuple[float, float]:
    known = values[~np.isnan(values)]
    if known.size == 0:
        return float("nan"), float("nan")
    lo, hi = np.quantile(known, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)
