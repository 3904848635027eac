"""Where a cost is shown, a run with calls of unknown usage says so (issue 43, point 6): the report's
header, the comparison of two runs, and what a generation prints. Runs without such calls are shown
as they always were."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat.base import ChatReply, Usage
from nbeval.cli import main
from nbeval.data.fields import DataWarning
from nbeval.data.model import TestSuite
from nbeval.evaluators.judges.core import usage_details
from nbeval.generation.report import REPORT_KEY, summary_lines
from nbeval.results.reporting.usage_text import cost_text, usage_line
from nbeval.results.runs.diff import diff
from tests.stats.helpers import result_of

BEFORE = [f"{0.5 + i / 100:.2f}" for i in range(10)]


def test_usage_line_says_the_cost_is_a_lower_bound() -> None:
    assert usage_line({"calls": 3, "cost": 0.4, "unknown_usage_calls": 1}) == (
        "calls: 3, cost: at least $0.4000 (usage unknown for 1 call)"
    )
    assert cost_text({"cost": None, "unknown_usage_calls": 2}) == "not known (usage unknown for 2 calls)"
    assert usage_line({"calls": 3, "unknown_usage_calls": 2}) == "calls: 3, cost: not known (usage unknown for 2 calls)"
    assert usage_line({"calls": 3, "cost": 0.4}) == "calls: 3, cost: 0.4"  # as before


def test_a_diff_shows_the_calls_of_unknown_usage() -> None:
    before, after = result_of({"m": BEFORE}), result_of({"m": BEFORE})
    before.meta.update(usage={"calls": 10, "cost": 0.5})
    after.meta.update(usage={"calls": 10, "cost": 0.4, "unknown_usage_calls": 3})
    found = diff(before, after)
    u = found.usage.set_index("what")
    assert u.loc["calls of unknown usage", ["before", "after", "change"]].tolist() == [0.0, 3.0, 3.0]
    text = str(found)
    assert "calls of unknown usage" in text and "cost (USD) is a lower bound" in text


def test_a_diff_of_runs_without_unknown_usage_has_no_such_row() -> None:
    before, after = result_of({"m": BEFORE}), result_of({"m": BEFORE})
    before.meta.update(usage={"calls": 10, "cost": 0.5})
    after.meta.update(usage={"calls": 10, "cost": 0.4})
    assert "calls of unknown usage" not in set(diff(before, after).usage["what"])


def test_a_generation_summary_says_the_cost_is_a_lower_bound() -> None:
    suite = TestSuite()
    suite.extra[REPORT_KEY] = {"calls": 4, "cost": 0.25, "unknown_usage_calls": 1}
    line = summary_lines(suite)[1]
    assert "at least $0.2500 (usage unknown for 1 call)" in line
    suite.extra[REPORT_KEY] = {"calls": 4, "cost": 0.25}
    assert summary_lines(suite)[1].endswith(", $0.2500")  # as before


def test_nbeval_runs_shows_the_calls_of_unknown_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plain = result_of({"m": BEFORE})
    plain.meta.update(usage={"calls": 10, "cost": 0.5})
    plain.save(tmp_path / "runs" / "plain")
    assert main(["runs", str(tmp_path / "runs")]) == 0
    assert "unknown_usage_calls" not in capsys.readouterr().out  # as before, when no run had any
    odd = result_of({"m": BEFORE})
    odd.meta.update(usage={"calls": 10, "cost": 0.4, "unknown_usage_calls": 3})
    odd.save(tmp_path / "runs" / "odd")
    assert main(["runs", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "unknown_usage_calls" in out.splitlines()[0]


def test_a_row_s_judge_details_count_its_calls_of_unknown_usage() -> None:
    known = ChatReply("yes", Usage(100, 5), "judge", cost=0.1)
    unknown = ChatReply("yes", Usage(-5, 5), "judge")
    details = usage_details([known, unknown])
    assert (details["calls"], details["prompt_tokens"], details["unknown_usage_calls"]) == (2, 100, 1)
    assert "unknown_usage_calls" not in usage_details([known])  # as before


def test_a_jury_row_counts_its_jurors_calls_of_unknown_usage() -> None:
    def honest(prompt: str) -> dict[str, Any]:
        return {"text": "Rating: yes", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}

    def broken(prompt: str) -> dict[str, Any]:
        return {"text": "Rating: yes", "usage": {"prompt_tokens": -2000, "completion_tokens": 2}}

    rows = [{"key": "r1", "input": "q?", "expected_output": "a", "actual_output": "a"}]
    with pytest.warns(DataWarning, match="usage unknown"):
        res = nbeval.evaluate(rows, ["correctness"], judge=[honest, broken, honest], progress=False, cache=False)
    judge = json.loads(res.scores["details"].iloc[0])["judge"]
    assert (judge["calls"], judge["prompt_tokens"], judge["unknown_usage_calls"]) == (3, 20, 1)
