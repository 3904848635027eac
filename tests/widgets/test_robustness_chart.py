"""The robustness chart, checked through sub-trees of ``chart.to_dict()`` (encodings, params, data)."""

from __future__ import annotations

import pytest

import nbeval
import nbeval.widgets as nw
from nbeval.widgets.robustness import ROBUSTNESS_SELECTION, robustness_chart, robustness_table
from tests.widgets.conftest import HOSTILE


def _perturbed(source: str, category: str) -> dict:
    return {"relationships": [{"type": "perturbation_source", "target": source}], "categories": [category]}


def _result() -> nbeval.EvaluationResult:
    """w_overlap (threshold 0.5) and w_mentions on two originals and three perturbed copies.

    Overlap per model (expected "Paris is the capital" / "4"):
    * m1: capital 1.0 pass; capital-typo 0.25 fail (flip down); capital-case 1.0; sum 1.0; sum-typo 0.0
      (flip down) -> Typos · medium: 2 flips of 2; Case: 0 of 1.
    * HOSTILE-named model: capital 0.25 fail; capital-typo 1.0 pass (flip up); capital-case 0.25;
      sum 0.0; sum-typo 0.0 -> Typos · medium: 1 of 2; Case: 0 of 1.
    """
    answers = {
        "m1": {
            "capital": "Paris is the capital",
            "capital-typo": "Paris",
            "capital-case": "PARIS IS THE CAPITAL",
            "sum": "4",
            "sum-typo": "four",
        },
        HOSTILE: {
            "capital": "It is Lyon",
            "capital-typo": "Paris is the capital",
            "capital-case": "IT IS LYON",
            "sum": "five",
            "sum-typo": "five",
        },
    }
    how = {
        "capital-typo": _perturbed("capital", "perturbed_by:Typos:medium"),
        "capital-case": _perturbed("capital", "perturbed_by:Case"),
        "sum-typo": _perturbed("sum", "perturbed_by:Typos:medium"),
    }
    expected = {"capital": "Paris is the capital", "sum": "4"}
    recs = [
        {
            "key": key,
            "input": f"q {key}",
            "expected_output": expected[key.split("-")[0]],
            "actual_output": a,
            "model_key": model,
            **how.get(key, {}),
        }
        for model, by_key in answers.items()
        for key, a in by_key.items()
    ]
    return nbeval.evaluate(recs, ["w_overlap", "w_mentions"], progress=False)


def _rows(spec: dict) -> list[dict]:
    return spec["datasets"][spec["data"]["name"]]


def test_flip_rate_per_model_and_perturbation_with_n_and_flips():
    spec = robustness_chart(_result(), "w_overlap").to_dict()
    rect, text = spec["spec"]["layer"]
    assert rect["mark"]["type"] == "rect" and text["mark"]["type"] == "text"
    enc = rect["encoding"]
    assert (enc["x"]["field"], enc["y"]["field"], enc["color"]["field"]) == ("perturbation", "model", "flip_rate")
    assert enc["color"]["scale"]["domain"] == [0, 1]
    assert enc["y"]["sort"] == ["m1", HOSTILE]
    assert {"n", "flips", "flips_down", "flip_rate", "mean_delta"} <= {t["field"] for t in enc["tooltip"]}
    assert spec["facet"]["row"]["field"] == "measure"
    cells = {(r["model_key"], r["perturbation"]): r for r in _rows(spec)}
    assert set(cells) == {("m1", "Typos · medium"), ("m1", "Case"), (HOSTILE, "Typos · medium"), (HOSTILE, "Case")}
    m1 = cells[("m1", "Typos · medium")]
    assert (m1["n"], m1["flips"], m1["flips_down"], m1["flip_rate"], m1["text"]) == (2, 2, 2, 1.0, "100% (2/2)")
    assert m1["mean_delta"] == pytest.approx(((0.25 - 1.0) + (0.0 - 1.0)) / 2)
    hostile = cells[(HOSTILE, "Typos · medium")]
    assert (hostile["n"], hostile["flips"], hostile["flips_down"], hostile["text"]) == (2, 1, 0, "50% (1/2)")
    assert cells[("m1", "Case")]["flip_rate"] == 0.0
    assert {r["measure"] for r in _rows(spec)} == {"w_overlap.overlap"}


def test_columns_are_ordered_by_perturbator_then_intensity():
    res = _result()
    df = robustness_table(res)
    assert (
        df.loc[df["perturbation"] == "Case", "order"].iloc[0]
        < df.loc[df["perturbation"] == "Typos · medium", "order"].iloc[0]
    )
    spec = robustness_chart(res).to_dict()  # every evaluator's primary metric, one panel each
    assert {r["measure"] for r in _rows(spec)} == {"w_overlap.overlap", "w_mentions.pass"}
    assert spec["spec"]["layer"][0]["encoding"]["x"]["sort"] == {"field": "order", "op": "min"}


def test_click_selection_is_named():
    spec = robustness_chart(_result(), "w_overlap").to_dict()
    rect = spec["spec"]["layer"][0]
    (param,) = spec["params"]  # Altair lifts a faceted view's params to the top, naming the view
    assert param["name"] == ROBUSTNESS_SELECTION and param["select"]["fields"] == ["model_key", "perturbation"]
    assert param["views"] == [rect["name"]]


def test_model_text_is_data_never_markup_or_expression():
    spec = robustness_chart(_result(), "w_overlap").to_dict()
    assert HOSTILE in {r["model"] for r in _rows(spec)}  # as data: Vega draws and tooltips escape it
    for layer in spec["spec"]["layer"]:
        layer["encoding"]["y"].pop("sort")  # the model order: a list of names, also data
    outside = {k: v for k, v in spec.items() if k != "datasets"}
    assert "<script>" not in str(outside)  # not in a title, an axis or an expression


def test_a_result_without_perturbed_cases_draws_an_empty_chart_that_says_so():
    res = nbeval.evaluate(
        [{"key": "a", "input": "q", "expected_output": "4", "actual_output": "4"}], ["w_overlap"], progress=False
    )
    spec = robustness_chart(res).to_dict()
    assert _rows(spec) == []
    assert "no perturbed test cases" in spec["title"]["subtitle"]


def test_exported_from_the_kit_and_drawn_offline():
    assert nw.robustness_chart is robustness_chart and "robustness_chart" in nw.__all__
    vlc = pytest.importorskip("vl_convert")
    svg = vlc.vegalite_to_svg(
        robustness_chart(nbeval.evaluate(nbeval.demo_lab(), ["text_matching"], progress=False)).to_json()
    )
    assert "llama-3-8b" in svg and "lowercase_and_typos · high" in svg


def test_many_perturbations_fit_a_notebook_output_area():
    """14 perturbations at 90 px a column drew 1,400 px: columns now share the plot width (issue 26)."""
    import vl_convert as vlc

    recs = [
        {
            "key": "capital",
            "input": "q",
            "expected_output": "Paris is the capital",
            "actual_output": "Paris is the capital",
            "model_key": "m1",
        }
    ]
    recs += [
        {
            "key": f"capital-{i}",
            "input": f"q {i}",
            "expected_output": "Paris is the capital",
            "actual_output": "Paris" if i % 2 else "Paris is the capital",
            "model_key": "m1",
            **_perturbed("capital", f"perturbed_by:Perturbation{i:02d}"),
        }
        for i in range(14)
    ]
    result = nbeval.evaluate(recs, ["w_overlap"], progress=False)
    svg = vlc.vegalite_to_svg(robustness_chart(result).to_dict())
    width = float(svg.split('width="', 1)[1].split('"', 1)[0])
    assert 400 < width <= 968, width
