"""Where a cost is shown, a run with calls of unknown usage says so (issue 43, point 6): the report's
header, the comparison of two runs, and what a generation prints. Runs without such calls are shown
as they always were."""

from __future__ import annotations

from nbeval.data.model import TestSuite
from nbeval.generation.report import REPORT_KEY, summary_lines
from nbeval.results.diff import diff
from nbeval.results.usage_text import cost_text, usage_line
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
