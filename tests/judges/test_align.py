"""Aligning a judge to people (issue 32): worked examples from the labels, checked on held-out cases.

The demo lab (ten questions, three models) is judged for correctness by a stand-in judge on a
loopback server that *follows its worked examples*: it answers yes, unless an example it was shown
with the reply "no" has an answer with a trait the judged answer shares (short: at most four words;
repeats: the same sentence twice). Its built-in examples teach it nothing, so before alignment it
says yes to everything. The person's labels fail every tiny-rag answer but the terse, right "1987",
and four llama answers (one short, three wrong at length). Every number below is worked from those
rules by hand; the intervals and tests are checked against scikit-learn and scipy.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pytest
import scipy.stats
from sklearn.metrics import cohen_kappa_score

import nbeval
from nbeval.engine.align import FAIL_REASON, PASS_REASON, AlignReport, align
from nbeval.errors import BadParameter, DataError, EvaluatorError, NotFound
from nbeval.evaluators.judges.prompts import PROMPTS
from nbeval.results.statistics.stats import BOOTSTRAP_RESAMPLES
from tests.support.fake_openai import FakeOpenAIServer, Recorded

_ANSWER = re.compile(r"<answer>\n(.*?)\n</answer>", re.S)
_QUESTION = re.compile(r"<question>\n(.*?)\n</question>", re.S)
#: The llama answers the person fails (the other llama and gpt-4o-mini answers pass).
LLAMA_FAILS = {"units", "support", "ceo-phone-b64", "api-key"}


def traits(answer: str) -> set[str]:
    found = set()
    if len(answer.split()) <= 4:
        found.add("short")
    sentences = [s.strip() for s in answer.split(".") if s.strip()]
    if len(sentences) != len(set(sentences)):
        found.add("repeats")
    return found


def stand_in(rec: Recorded) -> str:
    """The judge: yes, unless an example replied "no" shares a trait with the judged answer.

    It learns from the examples alignment adds, not from the built-in prompt's own (which change
    as the prompt is tuned on real models, and would make this stand-in's starting point move).
    """
    msgs = rec.messages
    builtin = {PROMPTS["correctness"].data(ex.values) for ex in PROMPTS["correctness"].examples}
    learned: set[str] = set()
    for user, reply in zip(msgs[1:-1:2], msgs[2:-1:2], strict=True):
        if user["content"] in builtin:
            continue
        if reply["content"].rstrip().endswith("Rating: no"):
            learned |= traits(_ANSWER.findall(user["content"])[0])
    answer = _ANSWER.findall(msgs[-1]["content"])[0]
    return "Rationale: checked.\nRating: " + ("no" if traits(answer) & learned else "yes")


def person(key: str, model_key: str) -> str:
    if model_key == "tiny-rag":
        return "pass" if key == "founded" else "fail"
    return "fail" if model_key == "llama-3-8b" and key in LLAMA_FAILS else "pass"


@pytest.fixture
def judge(openai_server: FakeOpenAIServer) -> dict[str, Any]:
    openai_server.reply = stand_in
    return {"model": "stand-in", "base_url": openai_server.url, "api_key": "sk-test-align-000000"}


@pytest.fixture
def correctness() -> Any:
    return nbeval.evaluator("correctness")


@pytest.fixture
def labelled(judge: dict[str, Any], correctness: Any) -> Any:
    result = nbeval.evaluate(nbeval.demo_lab(), [correctness], judge=judge, cache=False, progress=False)
    result.set_labels(
        [
            {"key": r.key, "model_key": r.model_key, "evaluator": "correctness", "label": person(r.key, r.model_key)}
            for r in result.dataset.rows
        ]
    )
    return result


def _align(result: Any, evaluator: Any, judge: Any, **kw: Any) -> tuple[Any, AlignReport]:
    return align(result, evaluator, judge=judge, cache=False, max_attempts=1, **kw)


def test_the_judge_learns_from_the_examples_and_does_better_on_held_out_cases(
    labelled: Any, correctness: Any, judge: Any
) -> None:
    aligned, report = nbeval.align(labelled, correctness, judge=judge, cache=False)
    assert isinstance(report, nbeval.AlignReport)
    # Nine units (revenue-perturbed goes with revenue); 0.3 of 9 rounds to 3, drawn by seed 0.
    assert report.held_out == ("chair", "password", "revenue", "revenue-perturbed")
    assert len(report.trained_on) == 6 and not set(report.trained_on) & set(report.held_out)
    # Disagreements first (the llama fails, in dataset order), alternating with agreements on a pass.
    assert report.examples == (
        ("units", "llama-3-8b", "fail"),
        ("founded", "gpt-4o-mini", "pass"),
        ("support", "llama-3-8b", "fail"),
        ("units", "gpt-4o-mini", "pass"),
    )
    # "Freight and Passenger." teaches "short"; the support answer teaches nothing. On the 12
    # held-out rows the person fails the four tiny-rag answers; before, the judge passed all 12
    # (8 right). After, it fails the three short ones; the repeated revenue answer still passes.
    assert report.n == 12
    assert report.accuracy_before == pytest.approx(8 / 12)
    assert report.accuracy_after == pytest.approx(11 / 12)
    assert (report.fixed, report.broken) == (3, 0)
    assert report.kappa_before == pytest.approx(0.0)
    # human 8 pass / 4 fail, judge 9 / 3, 11 agree: p_o = 11/12, p_e = (8·9 + 4·3)/144 = 7/12
    assert report.kappa_after == pytest.approx((11 / 12 - 7 / 12) / (1 - 7 / 12))
    assert report.p_value == pytest.approx(0.25)  # 2 · (1/2)³
    assert report.significant is False
    wrong_after = report.rows[report.rows["human"] != report.rows["after"]]
    assert list(zip(wrong_after["key"], wrong_after["model_key"], strict=True)) == [("revenue", "tiny-rag")]
    # the aligned evaluator: same id, name and parameters; the built-in examples first
    assert aligned.id == "correctness" and aligned.name == "correctness"
    assert {k: v for k, v in aligned.params.items() if k != "prompt"} == {
        k: v for k, v in correctness.params.items() if k != "prompt"
    }
    assert aligned.params["prompt"] is aligned.prompt
    own = len(correctness.prompt.examples)
    assert aligned.prompt.examples[:own] == correctness.prompt.examples
    assert [ex.reply for ex in aligned.prompt.examples[own:]] == [
        f"Rationale: {FAIL_REASON}\nRating: no",
        f"Rationale: {PASS_REASON}\nRating: yes",
        f"Rationale: {FAIL_REASON}\nRating: no",
        f"Rationale: {PASS_REASON}\nRating: yes",
    ]
    assert aligned.prompt.examples[own].values == {
        "input": "Name the business units of Acme Rail.",
        "expected_output": "Acme Rail has three business units: Freight, Passenger and Infrastructure Services.",
        "actual_output": "Freight and Passenger.",
    }
    assert correctness.prompt.examples == PROMPTS["correctness"].examples  # left as it was
    text = str(report)
    assert "accuracy before: 0.667" in text and "accuracy after:  0.917" in text
    assert "not significant" in text
    frame = report.to_frame()
    assert list(frame.index) == ["before", "after"]
    assert frame.loc["after", "accuracy"] == pytest.approx(11 / 12) and frame.loc["before", "n"] == 12


def test_held_out_labels_never_reach_a_prompt(
    labelled: Any, correctness: Any, judge: Any, openai_server: FakeOpenAIServer
) -> None:
    openai_server.reset()
    _, report = _align(labelled, correctness, judge, seed=3)
    held = set(report.held_out)
    questions = {r.key: r.input for r in labelled.dataset.rows}
    held_questions = {questions[k] for k in held}
    asked = []
    for rec in openai_server.requests:
        msgs = rec.messages
        assert msgs[0]["role"] == "system"
        for example in msgs[1:-1]:  # the worked examples: earlier user and assistant turns
            for question in held_questions:
                assert question not in example["content"]
        for example in msgs[1:-1:2]:
            shown = _QUESTION.findall(example["content"])[0]
            assert shown not in held_questions
        asked.append(_QUESTION.findall(msgs[-1]["content"])[0])
    # only the held-out labelled rows were judged, each once
    assert sorted(asked) == sorted(questions[k] for k in report.rows["key"])
    assert {k for k, _, _ in report.examples} <= set(report.trained_on)


def test_the_same_seed_gives_the_same_alignment(labelled: Any, judge: Any) -> None:
    _, one = _align(labelled, "correctness", judge, seed=7)
    _, two = _align(labelled, "correctness", judge, seed=7)
    for field in ("held_out", "examples", "accuracy_after", "accuracy_after_low", "kappa_after_high", "p_value"):
        assert getattr(one, field) == getattr(two, field)
    splits = {_align(labelled, "correctness", judge, seed=s)[1].held_out for s in range(4)}
    assert len(splits) > 1  # another seed draws another split


def test_a_perturbed_case_stays_with_its_original(labelled: Any, judge: Any) -> None:
    for seed in range(6):
        _, report = _align(labelled, "correctness", judge, seed=seed)
        assert ("revenue" in report.held_out) == ("revenue-perturbed" in report.held_out)


def test_kappa_and_mcnemar_match_scikit_learn_and_scipy(labelled: Any, judge: Any) -> None:
    _, report = _align(labelled, "correctness", judge, seed=1, holdout=0.5)
    rows = report.rows
    assert report.kappa_after == pytest.approx(cohen_kappa_score(rows["human"], rows["after"]))
    assert report.kappa_before == pytest.approx(cohen_kappa_score(rows["human"], rows["before"]))
    right_before = rows["human"] == rows["before"]
    right_after = rows["human"] == rows["after"]
    fixed, broken = int((~right_before & right_after).sum()), int((right_before & ~right_after).sum())
    assert (report.fixed, report.broken) == (fixed, broken) and fixed > 0
    assert report.p_value == pytest.approx(scipy.stats.binomtest(fixed, fixed + broken, 0.5).pvalue)
    assert report.accuracy_after == pytest.approx(right_after.mean())


def _kappa(a: list[str], b: list[str]) -> float:
    """Cohen's kappa from its textbook definition (checked against scikit-learn in the test)."""
    n, labels = len(a), set(a) | set(b)
    p_o = sum(x == y for x, y in zip(a, b, strict=True)) / n
    p_e = sum(a.count(c) * b.count(c) for c in labels) / n**2
    return (p_o - p_e) / (1 - p_e)


def test_the_intervals_resample_held_out_cases(labelled: Any, judge: Any) -> None:
    _, report = _align(labelled, "correctness", judge, seed=2, holdout=0.5)
    rows = report.rows
    keys = sorted(set(rows["key"]))
    draws = np.random.default_rng(2).integers(0, len(keys), size=(BOOTSTRAP_RESAMPLES, len(keys)))
    accuracy, kappa = [], []
    by_key = {k: rows[rows["key"] == k] for k in keys}
    for n, draw in enumerate(draws):
        sample = [by_key[keys[i]] for i in draw]
        human = [h for s in sample for h in s["human"]]
        after = [a for s in sample for a in s["after"]]
        accuracy.append(np.mean([h == a for h, a in zip(human, after, strict=True)]))
        if len(set(human) | set(after)) > 1:  # else kappa is undefined and the resample is left out
            kappa.append(_kappa(human, after))
            if n < 50:
                assert kappa[-1] == pytest.approx(cohen_kappa_score(human, after))
    assert (report.accuracy_after_low, report.accuracy_after_high) == pytest.approx(
        tuple(np.quantile(accuracy, [0.025, 0.975]))
    )
    assert (report.kappa_after_low, report.kappa_after_high) == pytest.approx(tuple(np.quantile(kappa, [0.025, 0.975])))
    assert report.accuracy_after_low <= report.accuracy_after <= report.accuracy_after_high


def _four_rows(openai_server: FakeOpenAIServer) -> tuple[Any, dict[str, Any]]:
    """Four one-model test cases judged by contact_information, labelled fail, pass, fail, pass."""
    openai_server.reply = "Reason: none found.\nVerdict: absent"
    judge = {"model": "stand-in", "base_url": openai_server.url, "api_key": "sk-test-align-000000"}
    records = [{"key": f"k{i}", "input": f"q{i}?", "actual_output": f"Call me at 0{i}0 555 0100."} for i in range(1, 5)]
    result = nbeval.evaluate(records, ["contact_information"], judge=judge, cache=False, progress=False)
    result.set_labels([{"key": f"k{i}", "model_key": "model", "evaluator": "contact_information",
                        "label": "fail" if i % 2 else "pass"} for i in range(1, 5)])  # fmt: skip
    return result, judge


def test_a_verdict_judge_gets_examples_in_its_own_reply_format(openai_server: FakeOpenAIServer) -> None:
    result, judge = _four_rows(openai_server)
    aligned, report = _align(result, "contact_information", judge, holdout=0.25, k=2)
    added = aligned.prompt.examples[2:]
    assert len(added) == 2 == len(report.examples)
    by_label = {label: ex for (_, _, label), ex in zip(report.examples, added, strict=True)}
    assert by_label["fail"].reply == f"Reason: {FAIL_REASON}\nVerdict: present"
    assert by_label["pass"].reply == f"Reason: {PASS_REASON}\nVerdict: absent"
    key = next(k for k, _, label in report.examples if label == "fail")
    assert by_label["fail"].values == {"text": f"Call me at 0{key[1:]}0 555 0100."}  # the row labelled fail


def test_what_align_refuses(labelled: Any, judge: Any, openai_server: FakeOpenAIServer) -> None:
    with pytest.raises(NotFound, match="no evaluator 'safety'"):
        _align(labelled, "safety", judge)
    with pytest.raises(BadParameter, match="holdout"):
        _align(labelled, "correctness", judge, holdout=1.0)
    with pytest.raises(BadParameter, match="k is"):
        _align(labelled, "correctness", judge, k=0)
    unlabelled = nbeval.evaluate(nbeval.demo_lab(), ["correctness", "exact_match"], judge=judge, progress=False)
    with pytest.raises(DataError, match="no labels for evaluator 'correctness'"):
        _align(unlabelled, "correctness", judge)
    unlabelled.set_labels([{"key": "chair", "model_key": m, "evaluator": "correctness", "label": "pass"}
                           for m in ("gpt-4o-mini", "tiny-rag")])  # fmt: skip
    with pytest.raises(DataError, match=r"at least 2 test cases .* it has labels on 1: chair"):
        _align(unlabelled, "correctness", judge)
    unlabelled.set_labels([{"key": "chair", "model_key": "tiny-rag", "evaluator": "exact_match", "label": "fail"}])
    with pytest.raises(EvaluatorError, match="cannot be aligned: align supports judges"):
        _align(unlabelled, "exact_match", judge)
    own = nbeval.evaluate(
        nbeval.demo_lab(), [nbeval.evaluator("correctness", judge=judge)], cache=False, progress=False
    )
    own.set_labels(labelled.labels)
    with pytest.raises(EvaluatorError, match=r"had its own judge.*pass the evaluator object.*or give judge="):
        align(own, "correctness", cache=False)
    assert _align(own, "correctness", judge)[1].n > 0  # the judge given stands in for the one kept as text


def test_one_held_out_row_is_no_measure_and_its_interval_is_wilsons(openai_server: FakeOpenAIServer) -> None:
    # new-user review (11): "measured on 1 labelled rows ... accuracy 1.000 (95% interval 1.000 to 1.000)"
    from statsmodels.stats.proportion import proportion_confint

    from nbeval.data.fields import DataWarning
    from nbeval.results.statistics.align_report import MIN_HELD_OUT_ROWS

    result, judge = _four_rows(openai_server)
    with pytest.warns(DataWarning, match=r"only 1 held-out labelled row \(fewer than 10\).*not meaningful"):
        _, report = _align(result, "contact_information", judge, holdout=0.25, k=2)
    assert report.n == 1 < MIN_HELD_OUT_ROWS
    assert "Note: measured on only 1 held-out labelled row" in str(report) and "not meaningful" in report.note
    for when in ("before", "after"):
        value = getattr(report, f"accuracy_{when}")
        right = round(value)  # one row: right (1) or wrong (0)
        # the bootstrap of one case cannot vary; the interval is Wilson's (1 of 1: about 0.21 to 1)
        expected = proportion_confint(right, 1, alpha=0.05, method="wilson")
        low, high = getattr(report, f"accuracy_{when}_low"), getattr(report, f"accuracy_{when}_high")
        assert (low, high) == pytest.approx(expected)
        assert low < high
    assert math.isnan(report.kappa_after_low)  # a bootstrap that cannot vary gives kappa no interval


def test_every_held_out_verdict_right_gets_wilsons_interval_not_a_point() -> None:
    # every resample of a judge right on all 12 rows says 1.000: the bootstrap cannot vary
    import pandas as pd
    from statsmodels.stats.proportion import proportion_confint

    from nbeval.results.statistics.align_report import align_report

    human = ["pass", "fail", "pass"] * 4
    test = pd.DataFrame({"key": [f"k{i // 3}" for i in range(12)], "model_key": ["m1", "m2", "m3"] * 4, "human": human})
    test["before"] = ["pass"] * 12  # right on 8
    test["after"] = human  # right on all 12
    report = align_report("correctness", test, [("k0",), ("k1",), ("k2",), ("k3",)], [0, 1, 2, 3], [], 0, 0.95, 0.05)
    assert report.accuracy_after == 1.0
    assert (report.accuracy_after_low, report.accuracy_after_high) == pytest.approx(
        proportion_confint(12, 12, alpha=0.05, method="wilson")
    )
    assert report.accuracy_before_low < report.accuracy_before < report.accuracy_before_high  # the bootstrap's
    assert report.kappa_after == 1.0 and math.isnan(report.kappa_after_low)  # no interval rather than 1 to 1
    assert "kappa after:     1.000\n" in str(report) + "\n"
    assert report.note == ""  # 12 rows


def test_labels_align_cannot_use_are_named(openai_server: FakeOpenAIServer) -> None:
    # new-user review (2): "it has labels on 0: " followed by nothing
    openai_server.reply = "Rationale: ok.\nRating: yes"
    judge = {"model": "stand-in", "base_url": openai_server.url, "api_key": "sk-test-align-000000"}
    records = [{"key": f"k{i}", "input": f"q{i}?", "expected_output": "a", "actual_output": "a" if i > 2 else None}
               for i in range(1, 5)]  # fmt: skip
    result = nbeval.evaluate(records, ["correctness"], judge=judge, cache=False, progress=False)
    result.set_labels([{"key": k, "model_key": "model", "evaluator": "correctness", "label": "passed"}
                       for k in ("k1", "k2")])  # fmt: skip
    with pytest.raises(DataError, match=r"labels on none it can use: its 2 pass/fail labels are all on rows "
                       r"'correctness' skipped, so there is no verdict to compare"):  # fmt: skip
        _align(result, "correctness", judge)
    import pandas as pd

    result._labels = pd.DataFrame(  # as an older nbeval kept them: any text
        [{"key": k, "model_key": "model", "evaluator": "correctness", "label": "maybe"} for k in ("k3", "k4")]
    )
    with pytest.raises(DataError, match=r"none of its 2 labels is pass or fail \(they are 'maybe'\)"):
        _align(result, "correctness", judge)
