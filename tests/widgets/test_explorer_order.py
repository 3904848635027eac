"""The CaseExplorer's case order (issue 32): by juror disagreement, by the label queue.

Worked by hand from test_jury_view.VERDICTS (jurors alpha, beta, gamma; ? and ! give no value):

disagreement (share of the pairs of jurors with a value that differ; a case takes its largest
over the models, ties going to the larger mean, then to dataset order; no pair: last)::

    calm    m1 yyy 0      m2 nnn 0      -> 0
    split   m1 yyn 2/3    m2 yyy 0      -> 2/3 (mean 1/3)
    torn    m1 ynn 2/3    m2 yyn 2/3    -> 2/3 (mean 2/3)
    broken  m1 nn? 0      m2 y!n 1      -> 1
    lone    m1 y?? -      m2 ??n -      -> none

    order: broken, torn, split, calm, lone

label queue (the share of the three jurors outside the largest group of equal verdicts; ties in
dataset order, every value being 0 or 1 and so as far from the threshold 0.5)::

    2/3: broken m2, lone m1, lone m2;  1/3: split m1, torn m1, torn m2, broken m1;
    0: calm m1, calm m2, split m2      -> cases: broken, lone, split, torn, calm
"""

from __future__ import annotations

import pytest

import nbeval
from nbeval.errors import BadParameter, EvaluatorError
from nbeval.widgets.explorer import CaseExplorer, case_order
from nbeval.widgets.jury_view import cases_by_disagreement
from nbeval.widgets.labelling import cases_by_queue, next_to_label
from tests.widgets.test_jury_view import jury_result

DATASET = ["calm", "split", "torn", "broken", "lone"]
BY_DISAGREEMENT = [("broken", 1.0), ("torn", 2 / 3), ("split", 2 / 3), ("calm", 0.0), ("lone", None)]
QUEUE = [
    ("broken", "m2"),
    ("lone", "m1"),
    ("lone", "m2"),
    ("split", "m1"),
    ("torn", "m1"),
    ("torn", "m2"),
    ("broken", "m1"),
    ("calm", "m1"),
    ("calm", "m2"),
    ("split", "m2"),
]


@pytest.fixture(scope="module")
def jresult() -> nbeval.EvaluationResult:
    return jury_result()


@pytest.fixture
def fresh() -> nbeval.EvaluationResult:
    """A result of its own: labelling changes it."""
    return jury_result()


def _keys(explorer: CaseExplorer) -> list[str]:
    return [k for _, k in explorer.case_choice.options]


def _same(got: list[tuple[str, float | None]], expected: list[tuple[str, float | None]]) -> None:
    assert [k for k, _ in got] == [k for k, _ in expected]
    for (_, a), (_, b) in zip(got, expected, strict=True):
        assert a == pytest.approx(b) if b is not None else a is None


def test_cases_by_disagreement_hand_worked(jresult):
    _same(cases_by_disagreement(jresult, "correctness"), BY_DISAGREEMENT)
    ordered, used = case_order(jresult, "disagreement")
    _same(ordered, BY_DISAGREEMENT)
    assert used == "correctness"
    # only the keys asked for, in the same order
    picked = cases_by_disagreement(jresult, "correctness", ["lone", "calm", "torn"])
    _same(picked, [BY_DISAGREEMENT[i] for i in (1, 3, 4)])


def test_explorer_ordered_by_disagreement(jresult):
    explorer = CaseExplorer(jresult, order="disagreement", evaluator="correctness", show_heatmap=False)
    assert _keys(explorer) == ["broken", "torn", "split", "calm", "lone"]
    assert (explorer.order, explorer.order_evaluator) == ("disagreement", "correctness")
    assert explorer.key == "broken" and explorer.position.value == "case 1 of 5"
    labels = [label for label, _ in explorer.case_choice.options]
    assert labels[0] == "1. (disagreement 1.00) question broken?"
    assert labels[2] == "3. (disagreement 0.67) question split?"
    assert labels[4] == "5. question lone?"  # no two jurors gave a value
    explorer.step(1)
    assert explorer.key == "torn"
    explorer.order_by("dataset")
    assert _keys(explorer) == DATASET and explorer.key == "calm"
    assert explorer.case_choice.options[0][0] == "1. question calm?"


def test_the_order_dropdown_reorders(jresult):
    explorer = CaseExplorer(jresult, show_heatmap=False)
    assert _keys(explorer) == DATASET
    assert [v for _, v in explorer.order_choice.options] == ["dataset", "disagreement", "label_queue"]
    explorer.order_choice.value = "disagreement"
    assert _keys(explorer) == ["broken", "torn", "split", "calm", "lone"]
    assert explorer.order_evaluator_choice.value == "correctness"
    explorer.order_choice.value = "label_queue"
    assert _keys(explorer) == ["broken", "lone", "split", "torn", "calm"]


def test_an_order_needs_a_jury_or_a_known_name(small_result):
    with pytest.raises(EvaluatorError, match="no evaluator of this result was run with a jury"):
        CaseExplorer(small_result, order="disagreement", show_heatmap=False)
    with pytest.raises(EvaluatorError, match="not run with a jury"):
        CaseExplorer(small_result, order="disagreement", evaluator="w_overlap", show_heatmap=False)
    explorer = CaseExplorer(small_result, show_heatmap=False)
    with pytest.raises(BadParameter, match="unknown case order 'nope'"):
        explorer.order_by("nope")
    assert explorer.order == "dataset" and _keys(explorer) == ["capital", "sum", "colour", "river"]
    # without a jury, the dropdown offers no disagreement order
    assert [v for _, v in explorer.order_choice.options] == ["dataset", "label_queue"]


def test_next_to_label_follows_the_label_queue(fresh):
    item = next_to_label(fresh, "correctness")
    assert item is not None
    assert (item.key, item.model_key, item.left) == ("broken", "m2", 10)
    assert item.uncertainty == pytest.approx(2 / 3)
    assert "the jurors disagree" in item.why
    after = next_to_label(fresh, "correctness", skip={("broken", "m2"), ("lone", "m1")})
    assert after is not None and (after.key, after.model_key) == ("lone", "m2")
    fresh.set_labels([{"key": "broken", "model_key": "m2", "evaluator": "correctness", "label": "fail"}])
    item = next_to_label(fresh, "correctness")
    assert item is not None and (item.key, item.model_key, item.left) == ("lone", "m1", 9)


def test_cases_by_queue_hand_worked(fresh):
    _same(
        cases_by_queue(fresh, "correctness"),
        [("broken", 2 / 3), ("lone", 2 / 3), ("split", 1 / 3), ("torn", 1 / 3), ("calm", 0.0)],
    )
    for key, model in [*QUEUE[:3], ("calm", "m1"), ("calm", "m2")]:
        fresh.set_labels([{"key": key, "model_key": model, "evaluator": "correctness", "label": "pass"}])
    # broken m1 is left at 1/3; calm and lone are labelled: last, in dataset order, nothing to rank
    _same(
        cases_by_queue(fresh, "correctness"),
        [("split", 1 / 3), ("torn", 1 / 3), ("broken", 1 / 3), ("calm", None), ("lone", None)],
    )


def _row(explorer: CaseExplorer, model_key: str):
    assert explorer.labeller is not None
    return next(r for r in explorer.labeller.rows if r.verdict.model_key == model_key)


def test_labelling_in_queue_order(fresh):
    explorer = CaseExplorer(fresh, order="label_queue", show_heatmap=False)
    labeller = explorer.labeller
    assert labeller is not None
    assert _keys(explorer) == ["broken", "lone", "split", "torn", "calm"]
    assert (explorer.key, explorer.model_key) == ("broken", "m2")  # the most uncertain verdict
    assert labeller.follow_queue.value and labeller.evaluator_choice.value == "correctness"
    assert "10 left to label" in labeller.queue_info.value
    assert _row(explorer, "m2").info.value.startswith('<div style="background:#fff8dc">')
    # a label goes on to the next most uncertain unlabelled verdict
    _row(explorer, "m2").agree_button.click()
    assert fresh.labels[["key", "model_key", "label"]].values.tolist() == [["broken", "m2", "fail"]]
    assert (explorer.key, explorer.model_key) == ("lone", "m1")
    assert "9 left to label" in labeller.queue_info.value
    # the button skips the verdict shown while it is unlabelled
    labeller.queue_button.click()
    assert (explorer.key, explorer.model_key) == ("lone", "m2")
    labeller.queue_button.click()
    assert (explorer.key, explorer.model_key) == ("split", "m1")
    # labelling a skipped one and following: the next is the first not skipped
    _row(explorer, "m1").disagree_button.click()
    assert (explorer.key, explorer.model_key) == ("torn", "m1")
    assert len(fresh.labels) == 2


def test_the_queue_comes_back_to_skipped_verdicts_and_ends(fresh):
    explorer = CaseExplorer(fresh, show_heatmap=False)
    labeller = explorer.labeller
    assert labeller is not None and not labeller.follow_queue.value
    labels = [{"key": k, "model_key": m, "evaluator": "correctness", "label": "pass"} for k, m in QUEUE[:-1]]
    fresh.set_labels(labels)
    labeller.queue_button.click()
    assert (explorer.key, explorer.model_key) == ("split", "m2")
    labeller.queue_button.click()  # only the skipped one is left: back to it
    assert (explorer.key, explorer.model_key) == ("split", "m2")
    _row(explorer, "m2").agree_button.click()  # not following: stays
    assert (explorer.key, explorer.model_key) == ("split", "m2")
    labeller.queue_button.click()
    assert "every verdict of correctness is labelled" in labeller.queue_info.value


def test_without_a_jury_the_queue_button_follows_the_label_queue(small_result):
    explorer = CaseExplorer(small_result, show_heatmap=False)
    labeller = explorer.labeller
    assert labeller is not None
    first = small_result.label_queue(labeller.evaluator_choice.value).iloc[0]
    labeller.queue_button.click()
    assert (explorer.key, explorer.model_key) == (first["key"], first["model_key"])
