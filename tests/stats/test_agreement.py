"""result.agreement: Cohen's kappa, raw agreement, confusion and ROC against scikit-learn."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, roc_auc_score, roc_curve

from nbeval.results.statistics.agreement import JudgeAgreement
from tests.stats.helpers import demo_result, result_of

# st_score passes at s >= 0.5; the second word is the verdict label
SCORES: dict[str, Sequence[str | None]] = {
    "A": ["0.9 safe", "0.2 toxic", "0.7 safe", "0.6 toxic", "0.55 safe", "0.3 safe"],
    "B": ["0.4 safe", "0.65 toxic", "0.1 toxic", "x", "0.8 safe", None],
}
HUMAN = [
    ("c1", "A", "pass"),
    ("c2", "A", "fail"),
    ("c3", "A", "fail"),
    ("c4", "A", "pass"),
    ("c5", "A", "pass"),
    ("c6", "A", "fail"),
    ("c1", "B", "pass"),
    ("c2", "B", "fail"),
    ("c3", "B", "pass"),
    ("c5", "B", "fail"),
    ("c4", "B", "pass"),  # B's c4 could not be scored: no verdict, left out
    ("c6", "B", "pass"),
]  # B's c6 was skipped: left out


def _labelled():
    res = result_of(SCORES)
    res.set_labels([{"key": k, "model_key": m, "evaluator": "st_score", "label": lab} for k, m, lab in HUMAN])
    return res


def _by_hand() -> tuple[list[str], list[str], list[float]]:
    """Human labels, judge verdicts (s >= 0.5) and scores of the rows that have a verdict."""
    human, judge, score = [], [], []
    for key, model, label in HUMAN:
        answer = SCORES[model][int(key[1:]) - 1]
        if answer is None or answer.startswith("x"):
            continue
        s = float(answer.split()[0])
        human.append(label)
        judge.append("pass" if s >= 0.5 else "fail")
        score.append(s)
    return human, judge, score


def test_pass_fail_agreement_matches_sklearn() -> None:
    agreed = _labelled().agreement("st_score")
    human, judge, _ = _by_hand()
    assert isinstance(agreed, JudgeAgreement) and agreed.metric == "s" and agreed.direction == "higher"
    assert agreed.n == len(human) == 10
    assert agreed.kappa == pytest.approx(cohen_kappa_score(human, judge), abs=1e-12)
    assert agreed.agreement == pytest.approx(np.mean(np.array(human) == np.array(judge)))
    ref = confusion_matrix(human, judge, labels=["fail", "pass"])
    assert agreed.confusion.loc[["fail", "pass"], ["fail", "pass"]].to_numpy().tolist() == ref.tolist()
    assert (agreed.confusion.index.name, agreed.confusion.columns.name) == ("human", "judge")


def test_roc_auc_and_best_threshold_match_sklearn() -> None:
    agreed = _labelled().agreement("st_score")
    human, _, score = _by_hand()
    truth = [h == "pass" for h in human]
    fpr, tpr, thresholds = roc_curve(truth, score, drop_intermediate=False)
    assert agreed.roc is not None and list(agreed.roc.columns) == ["threshold", "tpr", "fpr"]
    np.testing.assert_allclose(agreed.roc["fpr"], fpr)
    np.testing.assert_allclose(agreed.roc["tpr"], tpr)
    np.testing.assert_allclose(agreed.roc["threshold"].iloc[1:], thresholds[1:])
    assert agreed.auc == pytest.approx(roc_auc_score(truth, score), abs=1e-12)
    j = tpr[1:] - fpr[1:]
    assert agreed.best_threshold == pytest.approx(thresholds[1:][np.argmax(j)])

    # the threshold found reproduces the human labels at least as well as the configured 0.5
    def hits(t: float) -> int:
        return sum((s >= t) == p for s, p in zip(score, truth, strict=True))

    assert hits(agreed.best_threshold) >= hits(0.5)


def test_lower_is_better_scores_pass_below_the_threshold() -> None:
    res = result_of({"A": ["0.1", "0.2", "0.8", "0.9", "0.3"]}, ["st_low"])
    res.set_labels(
        [
            {"key": f"c{i}", "model_key": "A", "evaluator": "st_low", "label": lab}
            for i, lab in enumerate(["pass", "pass", "fail", "fail", "fail"], 1)
        ]
    )
    agreed = res.agreement("st_low")
    scores, truth = [0.1, 0.2, 0.8, 0.9, 0.3], [1, 1, 0, 0, 0]
    # sklearn ranks high scores as positive: give it the negated error
    assert agreed.auc == pytest.approx(roc_auc_score(truth, [-s for s in scores])) == 1.0
    assert agreed.direction == "lower" and agreed.best_threshold == pytest.approx(0.2)


def test_class_labels_are_compared_with_the_verdict_label() -> None:
    res = result_of(SCORES)
    res.set_labels(
        [
            {"key": "c1", "model_key": "A", "evaluator": "st_score", "label": "safe"},
            {"key": "c2", "model_key": "A", "evaluator": "st_score", "label": "safe"},
            {"key": "c2", "model_key": "B", "evaluator": "st_score", "label": "toxic"},
            {"key": "c3", "model_key": "B", "evaluator": "st_score", "label": "safe"},
        ]
    )
    agreed = res.agreement("st_score")
    human, judge = ["safe", "safe", "toxic", "safe"], ["safe", "toxic", "toxic", "toxic"]
    assert agreed.n == 4 and agreed.kappa == pytest.approx(cohen_kappa_score(human, judge))
    assert agreed.confusion.loc["safe", "toxic"] == 2 and agreed.roc is None and math.isnan(agreed.auc)


def test_no_labels_and_unknown_evaluator() -> None:
    res = result_of(SCORES)
    agreed = res.agreement("st_score")
    assert agreed.n == 0 and math.isnan(agreed.kappa) and math.isnan(agreed.agreement) and agreed.roc is None
    assert agreed.confusion.empty
    with pytest.raises(KeyError, match="no evaluator 'nope'"):
        res.agreement("nope")


def test_demo_rouge_threshold_that_matches_people() -> None:
    """The README's example: people pass two answers below rouge_l's 0.75."""
    res = demo_result()
    labelled = [
        ("chair", "gpt-4o-mini", "pass"),
        ("units", "gpt-4o-mini", "pass"),
        ("founded", "llama-3-8b", "pass"),
        ("support", "llama-3-8b", "fail"),
        ("support", "tiny-rag", "fail"),
        ("revenue", "tiny-rag", "fail"),
    ]
    res = copy.copy(res)  # the cached demo result stays unlabelled
    res.set_labels([{"key": k, "model_key": m, "evaluator": "rouge", "label": lab} for k, m, lab in labelled])
    agreed = res.agreement("rouge")
    s = res.scores.set_index(["key", "model_key", "metric"])["value"]
    score = [s[(k, m, "rouge_l")] for k, m, _ in labelled]
    truth = [lab == "pass" for _, _, lab in labelled]
    assert agreed.auc == pytest.approx(roc_auc_score(truth, score)) == 1.0
    fpr, tpr, thresholds = roc_curve(truth, score)
    assert agreed.best_threshold == pytest.approx(thresholds[np.argmax(tpr - fpr)]) == pytest.approx(0.7)
    judge = ["pass" if v >= 0.75 else "fail" for v in score]
    assert agreed.kappa == pytest.approx(cohen_kappa_score([lab for *_, lab in labelled], judge))


def test_a_score_without_threshold_gets_one_from_the_labels() -> None:
    res = result_of({"A": ["0.9", "0.35", "0.6", "0.2", "0.5"]}, ["st_plain"])
    truth = [1, 0, 1, 0, 1]
    res.set_labels(
        [
            {"key": f"c{i}", "model_key": "A", "evaluator": "st_plain", "label": "pass" if t else "fail"}
            for i, t in enumerate(truth, 1)
        ]
    )
    agreed = res.agreement("st_plain")
    assert agreed.n == 0 and math.isnan(agreed.kappa)  # no threshold: no verdicts to agree with
    assert agreed.rows["judge"].isna().all() and len(agreed.rows) == 5
    score = [0.9, 0.35, 0.6, 0.2, 0.5]
    assert agreed.auc == pytest.approx(roc_auc_score(truth, score)) == 1.0
    fpr, tpr, thresholds = roc_curve(truth, score)
    assert agreed.best_threshold == pytest.approx(thresholds[np.argmax(tpr - fpr)]) == 0.5
