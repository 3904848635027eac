"""The notebook kit caps every text it shows: a 5 MB answer or rationale never reaches the browser."""

from __future__ import annotations

import pytest

pytest.importorskip("ipywidgets")

import nbeval
from nbeval.data.model import LlmDataset
from nbeval.evaluators.base import Score
from nbeval.evaluators.registry import evaluator
from nbeval.results.outcome import RowOutcome
from nbeval.results.result import EvaluationResult
from nbeval.widgets.case_view import MAX_CHARS, case_html
from nbeval.widgets.explorer import CaseExplorer

MB5 = 5_000_000
HUGE = "<b>" + "x" * (MB5 - 3)  # markup, so escaping is checked on the cut text too
ROW = {
    "key": "c1",
    "model_key": "m1",
    "input": HUGE,
    "expected_output": HUGE,
    "actual_output": HUGE,
    "output_condition": '"' + "y" * MB5 + '"',
    "guidelines": [HUGE],
    "categories": [HUGE],
    "context": [HUGE] * 50,
    "expected_context": [HUGE],
    "error": HUGE,
}


def _huge_result() -> EvaluationResult:
    """A result whose every text, the user's and the evaluator's, is 5 MB (as loaded from an old save)."""
    ds = LlmDataset.from_json([ROW])
    ev = evaluator("exact_match")
    res = EvaluationResult.from_outcomes([RowOutcome(ev, ds.rows[0], score=Score({"score": 0.0}))], [ev], ds)
    for column in ("label", "rationale", "error"):  # bypass the stored cap, as a result saved before it had
        res.scores[column] = HUGE
    return res


def _marker(shown: int) -> str:
    return f"… [truncated: {MB5:,} characters, showing the first {shown:,}]"


def test_case_html_caps_every_text_and_names_its_size() -> None:
    html = case_html(_huge_result(), "c1")
    assert len(html) < 400_000  # 5 MB in each of ~10 fields would be 50 MB or more
    assert "x" * (MAX_CHARS + 1) not in html
    assert html.count(_marker(MAX_CHARS)) >= 8  # prompt, expected, answer, error, rationale, context, ...
    assert "<b>" not in html and "&lt;b&gt;" in html  # still escaped
    assert "more chunks" in html  # 50 context chunks: the first ones shown


def test_case_html_max_chars_sets_the_cap() -> None:
    html = case_html(_huge_result(), "c1", max_chars=100)
    assert len(html) < 60_000 and _marker(100) in html


def test_case_explorer_shows_capped_text() -> None:
    explorer = CaseExplorer(_huge_result(), show_heatmap=False, max_chars=500)
    assert explorer.key == "c1"
    assert len(explorer.detail.value) < 100_000 and _marker(500) in explorer.detail.value
    label = explorer.case_choice.options[0][0]
    assert len(label) < 100


def test_a_run_with_a_huge_judge_reply_shows_small_in_the_explorer() -> None:
    res = nbeval.evaluate(
        [{"key": "c1", "input": "q", "actual_output": "a"}],
        ["safety"],
        judge=lambda prompt: "y" * MB5,
        progress=False,
        cache=False,
    )  # unparsable: kept as text
    html = case_html(res, "c1")
    assert len(html) < 50_000
    assert _marker(MAX_CHARS) in html
