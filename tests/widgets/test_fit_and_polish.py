"""Issue 26: charts fit JupyterLab's output area, the heatmap draws what its legend says, the
explorer's dropdown and Previous / Next highlight the heatmap, the picker opens several families,
and the suite builder shows its fields disabled until a case exists."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import nbeval
from nbeval.widgets import charts
from nbeval.widgets.display import overview_chart
from nbeval.widgets.explorer import CaseExplorer
from nbeval.widgets.picker import EvaluatorPicker
from nbeval.widgets.suite_builder import SuiteBuilder

vlc = pytest.importorskip("vl_convert")

#: JupyterLab's output area in a 1,400 px window with the file browser open.
OUTPUT_AREA = 968

LONG_MODELS = [
    f"meta-llama/Llama-3.1-{n}B-Instruct-Turbo-v{i}"
    for i, n in enumerate((8, 70, 405, 3, 1, 11, 90, 7, 13, 34, 65, 180))
]


def _svg_width(chart) -> float:
    svg = vlc.vegalite_to_svg(chart.to_dict())
    root = re.search(r"<svg[^>]*>", svg)
    assert root is not None, svg[:200]
    width = re.search(r'\swidth="([\d.]+)"', root.group(0))
    assert width is not None, root.group(0)
    return float(width.group(1))


@pytest.fixture(scope="module")
def demo_result() -> nbeval.EvaluationResult:
    """The quickstart's run: three assistants, ten cases, four evaluators."""
    return nbeval.evaluate(
        nbeval.demo_lab(), ["rouge", "text_matching", "pii_leakage", "encoding_guardrail"], progress=False
    )


@pytest.fixture(scope="module")
def wide_result() -> nbeval.EvaluationResult:
    """Twelve models with long names, long prompts: the widest labels the charts must hold."""
    records = []
    for i in range(8):
        prompt = f"Question {i}: " + "please explain in detail how the refund policy of the railway applies " * 3
        for j, model in enumerate(LONG_MODELS):
            records.append(
                {
                    "key": f"case-{i}",
                    "input": prompt,
                    "expected_output": "the refund policy applies",
                    "actual_output": "the policy applies" if (i + j) % 3 else "no idea ???",
                    "model_key": model,
                }
            )
    return nbeval.evaluate(records, ["w_overlap", "w_mentions"], progress=False)


def _every_chart(result: nbeval.EvaluationResult) -> dict[str, object]:
    a, b = result.model_keys[:2]
    return {
        "summary": overview_chart(result),
        "leaderboard": charts.leaderboard_chart(result),
        "heatmap": charts.heatmap(result),
        "heatmap by metric": charts.heatmap(result, by="metric"),
        "pass/fail": charts.pass_fail_chart(result),
        "box": charts.distribution_chart(result),
        "histogram": charts.distribution_chart(result, kind="hist"),
        "compare": charts.compare_chart(result, a, b),
    }


@pytest.mark.parametrize("which", ["demo_result", "wide_result", "small_result"])
def test_every_chart_fits_jupyterlabs_output_area(which, request):
    result = request.getfixturevalue(which)
    widths = {name: _svg_width(chart) for name, chart in _every_chart(result).items()}
    too_wide = {name: w for name, w in widths.items() if w > OUTPUT_AREA}
    assert not too_wide, f"wider than the {OUTPUT_AREA} px output area: {too_wide}"


def test_the_summary_stacks_its_leaderboards_in_one_column(demo_result):
    spec = overview_chart(demo_result).to_dict()
    assert spec["columns"] == 1 and len(spec["concat"]) == 4
    # each leaderboard still labels its bars with value (n/N) beside them, inside the drawing
    one = _svg_width(charts.leaderboard_chart(demo_result, "rouge"))
    assert abs(_svg_width(overview_chart(demo_result)) - one) <= 2


def test_the_agreement_chart_fits_too():
    from tests.widgets.test_stats_charts import HUMAN, _records

    result = nbeval.evaluate(_records(), ["w_overlap"], progress=False)
    result.set_labels(
        pd.DataFrame([{"key": k, "model_key": "bad", "evaluator": "w_overlap", "label": v} for k, v in HUMAN.items()])
    )
    assert _svg_width(charts.agreement_chart(result.agreement("w_overlap"))) <= OUTPUT_AREA


def test_a_heatmap_of_many_models_narrows_its_columns_and_turns_labels_upright(wide_result):
    spec = charts.heatmap(wide_result).to_dict()
    step = spec["width"]["step"]
    assert step * len(LONG_MODELS) <= charts.MAX_PLOT_WIDTH and step < 70
    x_axis = spec["layer"][0]["encoding"]["x"]["axis"]
    assert x_axis["labelAngle"] == -90 and x_axis["labels"] is True
    few = charts.heatmap(
        nbeval.evaluate(
            [{"key": "a", "input": "q", "expected_output": "x", "actual_output": "x", "model_key": "m"}],
            ["w_overlap"],
            progress=False,
        )
    ).to_dict()
    assert few["width"]["step"] == 70 and few["layer"][0]["encoding"]["x"]["axis"]["labelAngle"] == -30


# -- heatmap: dashed unscored cells, axis title ----------------------------------------------


def _walk(node):
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from _walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v)


@pytest.mark.parametrize("by", ["case", "metric"])
def test_unscored_cells_are_a_layer_of_their_own_with_a_constant_dash(small_result, by):
    spec = charts.heatmap(small_result, "w_overlap", by=by).to_dict()
    scored, unscored, _text = spec["layer"]
    assert scored["transform"] == [{"filter": "(datum.status === 'scored')"}]
    assert unscored["transform"] == [{"filter": "(!(datum.status === 'scored'))"}]
    assert unscored["mark"]["strokeDash"] == [3, 2] and unscored["mark"]["fill"] == "#b0b0b0"
    assert "strokeDash" not in scored["mark"] and "color" not in unscored["encoding"]
    # nothing in the spec asks Vega for a conditional dash (it ignores one, with a console warning)
    assert not any("strokeDash" in n.get("encoding", {}) for n in _walk(spec))
    # the click selection lives on the scored layer; both layers fade the cells it does not pick
    (selection,) = [p for p in spec["params"] if "select" in p]
    assert selection["views"] == [scored["name"]]
    for layer in (scored, unscored):
        assert layer["encoding"]["opacity"]["value"] == 0.35
    # the unscored cells are drawn: the grey layer inlines their rows through the shared data
    if by == "case":
        rows = spec["datasets"][spec["data"]["name"]]
        assert any(r["status"] != "scored" for r in rows)


def test_unscored_cells_are_drawn_dashed_in_the_rendered_svg(small_result):
    svg = vlc.vegalite_to_svg(charts.heatmap(small_result, "w_overlap").to_dict())
    dashed = re.findall(r'<path[^>]*stroke-dasharray="3,2"[^>]*>', svg)
    # small_result's w_overlap: capital/m3 err, colour × 3 skip, river/m3 skip: five unscored cells
    assert len(dashed) == 5


def test_the_case_axis_title_sits_above_the_labels(small_result):
    axis = charts.heatmap(small_result, "w_overlap").to_dict()["layer"][0]["encoding"]["y"]["axis"]
    assert axis["titleAngle"] == 0 and axis["titleY"] < 0 and axis["titleAlign"] == "right"


# -- explorer: the dropdown and Previous / Next highlight the heatmap -----------------------


def _click(explorer: CaseExplorer, key: str, model_key: str) -> None:
    point = {"vlPoint": {"or": [{"key": key, "model_key": model_key}]}}
    explorer.chart._vl_selections = {"case_select": {"value": point, "store": []}}


def test_choosing_a_case_in_the_dropdown_focuses_its_row_in_the_heatmap(small_result):
    explorer = CaseExplorer(small_result)
    params = explorer.chart.params
    assert (params.case_focus, params.model_focus) == ("capital", "")  # the first case is shown
    explorer.case_choice.value = "river"
    assert (params.case_focus, params.model_focus) == ("river", "")
    _click(explorer, "sum", "m2")  # a click focuses that one cell
    assert (params.case_focus, params.model_focus) == ("sum", "m2")
    explorer.case_choice.value = "colour"  # the model stays highlighted, as in the detail below
    assert (params.case_focus, params.model_focus) == ("colour", "m2")
    explorer.select("river")
    assert (params.case_focus, params.model_focus) == ("river", "")
    # the focus params reach the front end (synced) and drive the cells' opacity in the spec
    assert explorer.chart._params["case_focus"] == "river"
    opacity = explorer.chart.spec["layer"][0]["encoding"]["opacity"]["condition"]
    assert "datum.key === case_focus" in opacity[0]["test"] and opacity[1]["test"] == "(case_focus !== '')"


def test_the_focus_survives_a_new_heatmap(small_result):
    explorer = CaseExplorer(small_result)
    explorer.case_choice.value = "sum"
    explorer.evaluator_choice.value = "w_mentions"
    assert explorer.chart.params.case_focus == "sum"


def test_previous_and_next_walk_the_cases(small_result):
    explorer = CaseExplorer(small_result)
    assert explorer.previous_button.disabled and not explorer.next_button.disabled
    explorer.next_button.click()
    assert explorer.key == "sum" and explorer.case_choice.value == "sum"
    assert explorer.chart.params.case_focus == "sum"
    explorer.next_button.click()
    explorer.next_button.click()
    assert explorer.key == "river" and explorer.next_button.disabled and not explorer.previous_button.disabled
    explorer.next_button.click()  # at the end: stays
    assert explorer.key == "river"
    explorer.previous_button.click()
    assert explorer.key == "colour" and "Name a colour." in explorer.detail.value
    assert explorer.position.value == "case 3 of 4"


def test_previous_and_next_without_a_result_are_disabled():
    explorer = CaseExplorer(None, show_heatmap=False)
    assert explorer.previous_button.disabled and explorer.next_button.disabled


# -- picker: several families open at once -------------------------------------------------


def test_opening_one_family_leaves_the_others_open(wrecords):
    p = EvaluatorPicker(dataset=wrecords)
    families = p.accordion.families
    first, custom = families.index("deterministic"), families.index("custom")
    p.accordion.selected_index = first
    p.accordion.sections[custom].selected_index = 0  # what a click on the custom header does
    assert p.accordion.open_families == ["deterministic", "custom"]
    assert p.accordion.sections[first].selected_index == 0
    p.accordion.sections[first].selected_index = None  # closing one leaves the other open
    assert p.accordion.open_families == ["custom"]
    # each family is its own one-section accordion holding that family's rows
    assert all(len(s.children) == 1 for s in p.accordion.sections)
    assert p.rows["w_overlap"] in p.accordion.groups[custom].children


# -- suite builder: disabled until a case exists ----------------------------------------------


def test_the_fields_are_disabled_and_say_add_a_case_until_one_exists():
    b = SuiteBuilder()
    fields = [b.key_field, b.prompt, b.expected_output, b.condition, b.categories, b.guidelines, b.expected_context]
    assert all(f.disabled for f in fields)
    assert "Add a case to start" in b.editor_hint.value
    assert all(f.placeholder == "add a case to start" for f in fields)
    assert "nbeval-disabled" in b.editor._dom_classes
    b.add_button.click()
    assert not any(f.disabled for f in fields) and b.editor_hint.value == ""
    assert "nbeval-disabled" not in b.editor._dom_classes
    assert b.prompt.placeholder != "add a case to start"
    b.delete_button.click()
    assert all(f.disabled for f in fields) and "Add a case to start" in b.editor_hint.value


def test_a_view_drawn_afresh_gets_the_current_focus_back(small_result):
    explorer = CaseExplorer(small_result)
    explorer.select("sum", "m3")
    # the heatmap is drawn with the focus it starts from ...
    spec_params = {p["name"]: p.get("value") for p in explorer.chart.spec["params"]}
    assert (spec_params["case_focus"], spec_params["model_focus"]) == ("capital", "")
    # ... so a view rendered now reports that one: the explorer puts the current focus back
    explorer.chart._params = {"case_focus": "capital", "model_focus": ""}
    assert (explorer.chart.params.case_focus, explorer.chart.params.model_focus) == ("sum", "m3")
    assert explorer.chart._params == {"case_focus": "sum", "model_focus": "m3"}
    # a heatmap drawn now starts from the case shown
    explorer.evaluator_choice.value = "w_mentions"
    spec_params = {p["name"]: p.get("value") for p in explorer.chart.spec["params"]}
    assert (spec_params["case_focus"], spec_params["model_focus"]) == ("sum", "m3")
