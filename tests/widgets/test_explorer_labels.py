"""Human labels in the CaseExplorer: Agree / Disagree / Set record ``result.labels`` rows.

Expected verdicts are worked out by hand from tests/widgets/conftest.py's records (w_overlap's
threshold is 0.5): on case ``capital``, m1 scores 1.0 (pass), m2 0.25 (fail) and m3 errored (no
verdict); on ``sum``, w_mentions passes m1, fails m2 and cannot read m3's verdict.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

import nbeval
from nbeval.widgets.explorer import CaseExplorer
from nbeval.widgets.labelling import VerdictLabeller, evaluators_with_verdicts, judge_verdicts, label_choices
from tests.widgets.conftest import HOSTILE, RECORDS


@pytest.fixture
def fresh_result() -> nbeval.EvaluationResult:
    """A result of its own per test: labelling changes it."""
    return nbeval.evaluate([dict(r) for r in RECORDS], ["w_overlap", "w_mentions"], progress=False)


@pytest.fixture
def explorer(fresh_result) -> CaseExplorer:
    return CaseExplorer(fresh_result, show_heatmap=False)


def _row(explorer: CaseExplorer, model_key: str):
    return next(r for r in explorer.labeller.rows if r.verdict.model_key == model_key)


def _labels(result) -> list[tuple]:
    return sorted(result.labels[["key", "model_key", "evaluator", "label"]].itertuples(index=False, name=None))


def test_each_models_verdict_is_shown_beside_its_missing_label(explorer):
    assert explorer.labeller.evaluator_choice.options == ("w_overlap", "w_mentions")
    assert [(r.verdict.model_key, r.verdict.verdict, r.verdict.human) for r in explorer.labeller.rows] == [
        ("m1", "pass", None),
        ("m2", "fail", None),
        ("m3", None, None),
    ]
    assert "judge <code>pass</code>" in _row(explorer, "m1").info.value
    assert "not labelled" in _row(explorer, "m1").info.value
    m3 = _row(explorer, "m3")
    assert m3.agree_button.disabled and m3.disagree_button.disabled and not m3.set_button.disabled


def test_agree_records_the_verdict_and_shows_it_beside_the_verdict(explorer, fresh_result):
    assert fresh_result.labels.empty and list(fresh_result.labels.columns) == ["key", "model_key", "evaluator", "label"]
    _row(explorer, "m1").agree_button.click()
    assert _labels(fresh_result) == [("capital", "m1", "w_overlap", "pass")]
    info = _row(explorer, "m1").info.value  # the rows were redrawn from result.labels
    assert "human <b>pass</b> ✓" in info
    assert "labelled m1 on capital (w_overlap): pass" in explorer.labeller.message.value


def test_disagree_records_the_opposite_and_set_replaces_a_label(explorer, fresh_result):
    _row(explorer, "m2").disagree_button.click()  # judge said fail
    assert _labels(fresh_result) == [("capital", "m2", "w_overlap", "pass")]
    assert "human <b>pass</b> ✗" in _row(explorer, "m2").info.value
    row = _row(explorer, "m2")
    assert row.label_choice.value == "pass"  # the dropdown starts on the recorded label
    row.label_choice.value = "fail"
    row.set_button.click()
    assert _labels(fresh_result) == [("capital", "m2", "w_overlap", "fail")]  # replaced, not added
    row = _row(explorer, "m3")  # no verdict: a label can still be set
    row.label_choice.value = "fail"
    row.set_button.click()
    assert _labels(fresh_result) == [("capital", "m2", "w_overlap", "fail"), ("capital", "m3", "w_overlap", "fail")]


def test_labels_follow_the_case_and_the_evaluator(explorer, fresh_result):
    _row(explorer, "m1").agree_button.click()
    explorer.case_choice.value = "sum"
    assert explorer.labeller.key == "sum"
    assert [r.verdict.human for r in explorer.labeller.rows] == [None, None, None]  # capital's label stays there
    explorer.labeller.evaluator_choice.value = "w_mentions"
    assert [(r.verdict.model_key, r.verdict.verdict) for r in explorer.labeller.rows] == [
        ("m1", "pass"),
        ("m2", "fail"),
        ("m3", None),
    ]  # m3: parse failure, no verdict
    _row(explorer, "m2").agree_button.click()
    assert _labels(fresh_result) == [("capital", "m1", "w_overlap", "pass"), ("sum", "m2", "w_mentions", "fail")]
    explorer.select("capital")
    explorer.labeller.evaluator_choice.value = "w_overlap"
    assert "human <b>pass</b> ✓" in _row(explorer, "m1").info.value


def test_labels_set_elsewhere_are_shown_and_hostile_labels_escaped(fresh_result):
    # set_labels takes only pass/fail for w_overlap; a label table may still hold any text (a class
    # evaluator's, one put there by hand), and the explorer must escape it
    fresh_result._labels = pd.DataFrame(
        [{"key": "capital", "model_key": "m2", "evaluator": "w_overlap", "label": HOSTILE}]
    )
    explorer = CaseExplorer(fresh_result, show_heatmap=False)
    info = _row(explorer, "m2").info.value
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in info
    assert not re.search(r"<\s*(script|img)", info, re.IGNORECASE)
    assert HOSTILE in label_choices(fresh_result, "w_overlap")  # offered as text in the dropdown


def test_a_rejected_label_is_reported_in_the_widget(explorer, fresh_result, monkeypatch):
    def refuse(labels):
        msg = "label row 1: no model 'm1' <b>here</b>"
        raise nbeval.errors.DataError(msg)

    monkeypatch.setattr(fresh_result, "set_labels", refuse)
    _row(explorer, "m1").agree_button.click()  # must not raise
    assert "no model &#x27;m1&#x27; &lt;b&gt;here&lt;/b&gt;" in explorer.labeller.message.value
    assert "no model 'm1'" in explorer.labeller.output.outputs[0]["text"]


def test_helpers_read_verdicts_and_choices(fresh_result):
    assert evaluators_with_verdicts(fresh_result) == ["w_overlap", "w_mentions"]
    assert label_choices(fresh_result, "w_mentions") == ["pass", "fail"]  # parse_failure is no verdict
    verdicts = judge_verdicts(fresh_result, "river", "w_overlap")
    assert [(v.model_key, v.verdict) for v in verdicts] == [("m1", "pass"), ("m2", "pass"), ("m3", None)]


def test_labels_made_in_the_explorer_survive_save_and_load(explorer, fresh_result, tmp_path):
    _row(explorer, "m1").agree_button.click()
    _row(explorer, "m2").disagree_button.click()
    fresh_result.save(tmp_path / "run")
    loaded = nbeval.load_result(tmp_path / "run")
    assert _labels(loaded) == [("capital", "m1", "w_overlap", "pass"), ("capital", "m2", "w_overlap", "pass")]
    again = CaseExplorer(loaded, show_heatmap=False)
    assert [r.verdict.human for r in again.labeller.rows] == ["pass", "pass", None]


def test_labelling_can_be_switched_off_and_an_empty_explorer_shows_nothing(fresh_result):
    assert CaseExplorer(fresh_result, show_heatmap=False, labelling=False).labeller is None
    empty = CaseExplorer(None, show_heatmap=False)
    assert empty.labeller.rows == [] and empty.labeller.layout.display == "none"
    labeller = VerdictLabeller()
    labeller.show(fresh_result, "colour")  # w_overlap skips every model on this case
    assert [r.verdict.verdict for r in labeller.rows] == [None, None, None]


def test_set_without_a_picked_label_records_nothing(explorer, fresh_result):
    row = _row(explorer, "m1")
    assert row.label_choice.value is None
    row.set_button.click()
    assert fresh_result.labels.empty
    assert "pick a label first" in explorer.labeller.message.value


def test_a_classifying_verdict_is_agreed_with_or_replaced_by_a_picked_class():
    from tests.widgets.conftest import synthetic_result

    result = synthetic_result(3, 2, seed=1)
    s = result.scores
    rows = (s["metric"] == "overlap") & (s["key"] == "k000000")
    s.loc[rows, "passed"] = None  # no threshold verdict: the row's class label is the verdict
    s.loc[rows & (s["model_key"] == "model-0"), "label"] = "toxic"
    s.loc[rows & (s["model_key"] == "model-1"), "label"] = "ok"
    labeller = VerdictLabeller()
    labeller.show(result, "k000000")
    assert [(r.verdict.model_key, r.verdict.verdict) for r in labeller.rows] == [
        ("model-0", "toxic"),
        ("model-1", "ok"),
    ]
    first, second = labeller.rows
    assert first.disagree_button.disabled and not first.agree_button.disabled  # no opposite of a class
    assert list(first.label_choice.options) == ["pass", "fail", "ok", "toxic"]
    first.agree_button.click()
    second.label_choice.value = "toxic"
    second.set_button.click()
    assert _labels(result) == [
        ("k000000", "model-0", "w_overlap", "toxic"),
        ("k000000", "model-1", "w_overlap", "toxic"),
    ]
    assert [r.verdict.human for r in labeller.rows] == ["toxic", "toxic"]


def test_choosing_the_heatmap_evaluator_labels_that_evaluator(fresh_result):
    explorer = CaseExplorer(fresh_result)
    assert explorer.labeller.evaluator_choice.value == "w_overlap"
    explorer.evaluator_choice.value = "w_mentions"
    assert explorer.labeller.evaluator_choice.value == "w_mentions"
    assert [r.verdict.verdict for r in explorer.labeller.rows] == ["pass", "fail", "fail"]  # capital
