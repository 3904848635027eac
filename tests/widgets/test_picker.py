"""EvaluatorPicker: catalogue by family, usability against the data and judge, configured output."""

from __future__ import annotations

import pytest

import nbeval
from nbeval.data.model import TestCase, TestSuite
from nbeval.widgets.picker import EvaluatorPicker


def test_catalogue_is_grouped_by_family_with_inputs_and_metrics(wrecords):
    p = EvaluatorPicker(dataset=wrecords)
    titles = list(p.accordion.titles)
    families = [t.split(" (")[0] for t in titles]
    assert families[0] == "deterministic" and "custom" in families
    expected = {s.family for s in nbeval.catalogue().values()}
    assert set(families) == expected
    custom = p.accordion.groups[families.index("custom")]
    n_custom = sum(1 for s in nbeval.catalogue().values() if s.family == "custom")
    assert titles[families.index("custom")] == f"custom ({n_custom})" and len(custom.children) == n_custom
    info = p.rows["w_overlap"].info.value
    assert "<b>reads</b> expected_output, actual_output" in info
    assert "overlap (primary): higher is better, length_gap: lower is better" in info


def test_evaluators_the_data_cannot_feed_are_disabled_with_the_reason(wrecords):
    p = EvaluatorPicker(dataset=wrecords)
    assert not p.rows["w_overlap"].disabled
    row = p.rows["text_matching"]  # reads output_condition, which these records lack
    assert row.disabled and "the data has no output_condition" in row.reason.value
    judged = p.rows["w_judged"]
    assert judged.disabled and "needs a judge" in judged.reason.value
    judged.checkbox.value = True  # a disabled box set from code still yields nothing
    assert p.value == [] and p.selected == []


def test_a_judge_or_the_environment_enables_judge_evaluators(wrecords, monkeypatch):
    assert not EvaluatorPicker(dataset=wrecords, judge="my-model").rows["w_judged"].disabled
    monkeypatch.setenv("NBEVAL_JUDGE_MODEL", "env-model")
    assert not EvaluatorPicker(dataset=wrecords).rows["w_judged"].disabled


def test_ticked_evaluators_come_out_configured(wrecords):
    p = EvaluatorPicker(dataset=wrecords)
    p.rows["w_overlap"].checkbox.value = True
    assert p.rows["w_overlap"].settings.layout.display is None  # settings appear when ticked
    p.rows["w_overlap"].threshold.value = "0.7"
    p.rows["w_slow"].checkbox.value = True
    p.rows["w_slow"].params["delay"].value = 0.0
    overlap, slow = p.value
    assert overlap.id == "w_overlap" and overlap.thresholds["overlap"] == 0.7
    assert slow.params["delay"] == 0.0
    assert p.selected == ["w_overlap", "w_slow"]
    assert "2 evaluators chosen" in p.message.value
    result = nbeval.evaluate(wrecords, p.value, progress=False)
    agg = result.aggregates.set_index(["model_key", "evaluator", "metric"])
    # m2's overlap 0.25 fails 0.7 as it did 0.5; m3's 1.0 (one row) passes
    assert agg.loc[("m3", "w_overlap", "overlap"), "threshold"] == 0.7
    assert agg.loc[("m3", "w_overlap", "overlap"), "passed"]  # True (NA would raise)


def test_bad_settings_are_reported_on_the_row(wrecords):
    p = EvaluatorPicker(dataset=wrecords)
    p.select("w_overlap")
    p.rows["w_overlap"].threshold.value = "high"
    assert p.value == [] and p.selected == ["w_overlap"]
    assert "threshold must be a number" in p.errors["w_overlap"]
    assert "threshold must be a number" in p.rows["w_overlap"].reason.value
    assert "1 with a problem" in p.message.value
    p.rows["w_overlap"].threshold.value = ""
    assert [e.id for e in p.value] == ["w_overlap"] and p.errors == {}


def test_select_helper_sets_thresholds_and_params(wrecords):
    p = EvaluatorPicker(dataset=wrecords)
    p.select("w_overlap", w_slow={"delay": 0.5, "threshold": 0.9})
    _, slow = p.value
    assert slow.params["delay"] == 0.5 and slow.thresholds["score"] == 0.9
    with pytest.raises(KeyError, match="no evaluator 'nope'"):
        p.select("nope")


def test_changing_the_data_rechecks_and_unticks():
    p = EvaluatorPicker()
    p.select("w_overlap")
    assert len(p.value) == 1
    suite = TestSuite()
    suite.add_test_case(TestCase(prompt="q", expected_output="a"))
    p.dataset = suite
    assert p.rows["w_overlap"].disabled and p.value == []
    assert "the data has no actual_output" in p.rows["w_overlap"].reason.value


@pytest.mark.parametrize(
    ("env", "judge", "configured"),
    [
        ({}, None, False),
        ({"OPENAI_API_KEY": "sk-not-a-judge-config"}, None, False),
        ({"NBEVAL_JUDGE_MODEL": "env-model"}, None, True),
        ({"NBEVAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}, None, True),
        ({}, "my-model", True),
    ],
    ids=["nothing set", "only the API key", "only MODEL", "only BASE_URL", "judge passed"],
)
def test_picker_agrees_with_judge_configured(wrecords, monkeypatch, env, judge, configured):
    from nbeval.chat.config import judge_configured
    from nbeval.widgets.picker import unusable_reasons

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert judge_configured(judge) is configured
    spec = nbeval.catalogue()["w_judged"]
    assert bool(unusable_reasons(spec, None, judge)) is not configured
    assert EvaluatorPicker(dataset=wrecords, judge=judge).rows["w_judged"].disabled is not configured
