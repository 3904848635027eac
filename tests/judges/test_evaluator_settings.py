"""Evaluators carry typed, frozen settings the engine reads (issue 44): thresholds, row limit,
judge, embedder and score mode, never ``params["..."]`` strings; seating a jury is a copy."""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import Any

import pytest

import nbeval
from nbeval.evaluators.settings import EvaluatorSettings
from tests.judges.helpers import run

ROWS = [
    {"key": f"r{i}", "input": f"question {i}?", "expected_output": f"answer {i}", "actual_output": f"reply {i}"}
    for i in range(4)
]


def _says(word: str) -> Any:
    def judge(prompt: str) -> str:
        return f"Rationale: fixed.\nRating: {word}"

    judge.__name__ = f"says_{word}"
    return judge


def test_settings_hold_what_was_configured_typed() -> None:
    ev = nbeval.evaluator("correctness", threshold=0.8, max_rows=3, score_mode="expected", judge="gpt-x")
    s = ev.settings
    assert isinstance(s, EvaluatorSettings)
    assert (s.max_rows, s.judge, s.score_mode, s.expects) == (3, "gpt-x", "expected", True)
    assert dict(s.thresholds) == {"correctness": 0.8}
    assert s.own("judge") == "gpt-x" and s.own("embedder") is None
    # an evaluator without score modes says so, rather than "sampled"
    assert nbeval.evaluator("exact_match").settings.score_mode is None
    assert nbeval.evaluator("correctness").settings.score_mode == "sampled"


def test_settings_are_frozen_and_their_thresholds_read_only() -> None:
    s = nbeval.evaluator("correctness").settings
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.judge = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.thresholds["correctness"] = 0.1  # type: ignore[index]


def test_the_engine_reads_the_row_limit_from_the_settings() -> None:
    """A row limit set on the settings alone (params say none) is what the run applies."""
    ev = nbeval.evaluator("correctness")
    ev.settings = dataclasses.replace(ev.settings, max_rows=1)
    assert ev.params["max_rows"] is None
    result = run(ROWS, [ev], _says("yes"))
    scored = result.scores[result.scores["metric"] == "correctness"]["value"].notna().sum()
    assert scored == 1


def test_with_judge_is_a_copy_and_leaves_the_original_alone() -> None:
    ev = nbeval.evaluator("correctness", threshold=0.7)
    before = ev.settings
    clone = ev.with_judge("gpt-y")
    assert clone is not ev
    assert clone.settings.judge == "gpt-y" and clone.params["judge"] == "gpt-y"
    assert clone.settings.thresholds == {"correctness": 0.7}
    assert ev.settings is before and ev.settings.judge is None and ev.params["judge"] is None


def test_a_jury_run_leaves_the_users_evaluator_unchanged() -> None:
    """The jury is seated on a copy: the object passed in keeps its settings and params, and the
    jury really was asked (the rows carry the jurors' votes)."""
    ev = nbeval.evaluator("correctness")
    settings, params = ev.settings, dict(ev.params)
    result = run(ROWS, [ev], [_says("yes"), _says("no"), _says("no")])
    details = result.scores[result.scores["metric"] == "correctness"]["details"].iloc[0]
    found = json.loads(details) if isinstance(details, str) else details
    assert len(found["jury"]) == 3
    assert result.scores[result.scores["metric"] == "correctness"]["value"].tolist() == [0.0] * 4
    assert ev.settings is settings and ev.params == params


def test_settings_pickle_and_an_evaluator_pickled_before_them_loads() -> None:
    ev = nbeval.evaluator("correctness", threshold=0.6, max_rows=2)
    copy = pickle.loads(pickle.dumps(ev))
    assert copy.settings == ev.settings and copy.thresholds == {"correctness": 0.6}
    # the state of an evaluator pickled before settings existed: thresholds kept as an attribute
    old = {k: v for k, v in ev.__dict__.items() if k != "settings"}
    old["thresholds"] = {"correctness": 0.6}
    revived = type(ev).__new__(type(ev))
    revived.__setstate__(old)
    assert revived.settings.thresholds == {"correctness": 0.6} and revived.settings.max_rows == 2
    assert "thresholds" not in revived.__dict__
