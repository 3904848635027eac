"""CaseExplorer: pick or click a case; everything shown is escaped."""

from __future__ import annotations

import re

import pytest

from nbeval.widgets.explorer import CaseExplorer


def _click(explorer: CaseExplorer, key: str, model_key: str) -> None:
    """What the front end sends when a heatmap cell is clicked."""
    explorer.chart._vl_selections = {
        "case_select": {"value": {"vlPoint": {"or": [{"key": key, "model_key": model_key}]}}, "store": []}
    }


@pytest.fixture
def explorer(small_result) -> CaseExplorer:
    return CaseExplorer(small_result)


def test_cases_listed_in_dataset_order_and_first_shown(explorer):
    assert [k for _, k in explorer.case_choice.options] == ["capital", "sum", "colour", "river"]
    assert explorer.case_choice.options[0][0] == "1. What is the capital of France?"
    assert explorer.key == "capital"
    assert "What is the capital of France?" in explorer.detail.value


def test_hostile_rationale_and_error_show_as_text(explorer):
    html = explorer.detail.value
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert not re.search(r"<\s*(script|img)", html, re.IGNORECASE)
    assert "ValueError: the scorer exploded &lt;b&gt;loudly&lt;/b&gt;" in html
    assert "<b>loudly" not in html


def test_side_by_side_answers_and_every_metric(explorer):
    html = explorer.detail.value
    for answer in ("Paris is the capital.", "It is Lyon.", "boom"):
        assert answer in html
    for row in (
        "w_overlap.overlap",
        "w_overlap.length_gap",
        "w_mentions.pass",
        "w_mentions.parse_failures",
        "w_overlap: rationale",
        "w_overlap: error / skipped",
    ):
        assert f">{row}</th>" in html
    assert "0.250" in html  # m2's overlap on this case


def test_picking_a_case_shows_context_parse_failure_and_skips(explorer):
    explorer.case_choice.value = "sum"
    assert explorer.key == "sum"
    html = explorer.detail.value
    assert "Arithmetic &lt;i&gt;basics&lt;/i&gt;" in html and "[math.md]" in html
    assert "could not read the verdict" in html and "label: parse_failure" in html
    explorer.case_choice.value = "river"
    html = explorer.detail.value
    assert "answer not collected: timeout" in html
    assert "skipped: no answer was collected: timeout" in html


def test_clicking_a_heatmap_cell_selects_case_and_model(explorer):
    _click(explorer, "river", "m2")
    assert (explorer.key, explorer.model_key) == ("river", "m2")
    assert explorer.case_choice.value == "river"
    assert 'background:#fff8dc">m2</th>' in explorer.detail.value
    explorer.evaluator_choice.value = "w_mentions"  # a new heatmap: clicks must still arrive
    assert explorer.chart.spec["layer"][0]["encoding"]["color"]["title"] == "pass"
    _click(explorer, "sum", "m3")
    assert (explorer.key, explorer.model_key) == ("sum", "m3")


def test_a_new_result_reloads_and_none_clears(small_result):
    explorer = CaseExplorer(show_heatmap=False)
    assert explorer.chart is None and "no result yet" in explorer.detail.value
    explorer.result = small_result
    assert explorer.key == "capital" and "Lyon" in explorer.detail.value
    explorer.result = None
    assert explorer.case_choice.options == () and "no result yet" in explorer.detail.value
