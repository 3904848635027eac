"""Renderers, checked through sub-trees of ``chart.to_dict()`` (encodings, params, transforms, data)."""

from __future__ import annotations

import math
import time

import pytest

from nbeval.widgets.charts import distribution_chart, heatmap, leaderboard_chart, pass_fail_chart
from nbeval.widgets.display import jupyter_chart
from tests.widgets.conftest import HOSTILE, synthetic_result


def _data(spec: dict, node: dict) -> list[dict]:
    """The inline rows a (layer) node of ``spec`` draws."""
    data = node.get("data") or spec.get("data")
    assert data is not None
    name = data["name"]
    return spec["datasets"][name]


def _by(rows: list[dict], *fields: str) -> dict:
    return {tuple(r[f] for f in fields) if len(fields) > 1 else r[fields[0]]: r for r in rows}


def _largest_inlined(spec: dict) -> int:
    return max(len(v) for v in spec.get("datasets", {}).values())


# -- leaderboard ----------------------------------------------------------------------------


def test_leaderboard_ranks_best_first_and_labels_n_of_N(small_result):
    spec = leaderboard_chart(small_result, "w_overlap").to_dict()
    plot, labels = spec["hconcat"]
    bars, _error_bars, rule = plot["layer"]
    # overlap (higher is better): m1 1.0 and m3 1.0 tie (stable: m1 first), then m2 0.25
    assert bars["encoding"]["y"]["sort"] == ["m1", "m3", "m2"]
    assert labels["encoding"]["y"]["sort"] == ["m1", "m3", "m2"]  # the label column lines up
    assert bars["encoding"]["x"]["scale"]["domain"] == [0.0, 1.0]
    rows = _by(_data(spec, bars), "model")
    assert rows["m2"]["text"] == "0.250  (3/4)"
    assert rows["m3"]["text"] == "1.000  (1/4)"
    assert (rows["m1"]["status"], rows["m2"]["status"]) == ("pass", "fail")
    assert labels["encoding"]["text"]["field"] == "text" and _data(spec, labels) == _data(spec, bars)
    assert rule["mark"]["type"] == "rule" and _data(spec, rule) == [{"threshold": 0.5}]


def test_leaderboard_on_a_lower_is_better_metric_sorts_ascending(small_result):
    spec = leaderboard_chart(small_result, "w_overlap", metric="length_gap").to_dict()
    bars, _error_bars, rule = spec["hconcat"][0]["layer"]
    # length_gap: m1 (1+0+1)/3 = 0.667, m2 (9+3+0)/3 = 4.0, m3 4.0 -> smallest first
    assert bars["encoding"]["y"]["sort"] == ["m1", "m2", "m3"]
    assert "lower is better" in bars["encoding"]["x"]["title"]
    rows = _by(_data(spec, bars), "model")
    assert rows["m1"]["value"] == pytest.approx(2 / 3)
    assert _data(spec, rule) == [{"threshold": 3.0}]


def test_unknown_evaluator_or_metric_is_a_clear_error(small_result):
    with pytest.raises(KeyError, match="no evaluator 'nope'"):
        leaderboard_chart(small_result, "nope")
    with pytest.raises(KeyError, match="has no metric 'nope'"):
        heatmap(small_result, "w_overlap", "nope")
    with pytest.raises(ValueError, match="by must be"):
        heatmap(small_result, "w_overlap", by="row")
    with pytest.raises(ValueError, match="kind must be"):
        distribution_chart(small_result, "w_overlap", kind="violin")


# -- heatmap --------------------------------------------------------------------------------


def test_heatmap_cells_status_and_named_selection(small_result):
    spec = heatmap(small_result, "w_overlap").to_dict()
    assert spec["params"][0]["name"] == "case_select"
    assert spec["params"][0]["select"] == {"type": "point", "fields": ["key", "model_key"]}
    rect, grey, text = spec["layer"]
    rows = _by(spec["datasets"][spec["data"]["name"]], "key", "model_key")
    assert len(rows) == 12
    assert (rows[("capital", "m3")]["status"], rows[("capital", "m3")]["mark"]) == ("error", "err")
    assert rows[("capital", "m3")]["detail"].startswith("ValueError: the scorer exploded")
    assert all(rows[("colour", m)]["mark"] == "skip" for m in ("m1", "m2", "m3"))
    assert rows[("river", "m3")]["detail"] == "no answer was collected: timeout"
    assert rows[("capital", "m2")]["value"] == 0.25 and rows[("capital", "m2")]["mark"] == ""
    # tooltips carry data as plain text (Vega escapes it); the rationale's start is there
    assert rows[("capital", "m2")]["detail"] == f"found 1 of 4 expected words {HOSTILE}"
    # prompts and case labels are inlined once per case and joined by key
    (lookup,) = spec["transform"]
    assert lookup["lookup"] == "key" and lookup["from"]["fields"] == ["case", "prompt"]
    cases = _by(spec["datasets"][lookup["from"]["data"]["name"]], "key")
    assert cases["capital"]["prompt"] == "What is the capital of France?"
    fields = [t["field"] for t in rect["encoding"]["tooltip"]]
    assert {"prompt", "value", "detail"} <= set(fields)
    # colour: diverging around the threshold; unscored cells grey, dashed, labelled by the text layer
    colour = rect["encoding"]["color"]
    assert colour["scale"] == {"domain": [0.0, 1.0], "domainMid": 0.5, "reverse": False, "scheme": "redblue"}
    assert rect["transform"] == [{"filter": "(datum.status === 'scored')"}] and colour["field"] == "shade"
    assert rows[("colour", "m1")]["shade"] == 0.0 and rows[("capital", "m2")]["shade"] == 0.25
    assert grey["mark"]["fill"] == "#b0b0b0" and grey["mark"]["strokeDash"] == [3, 2]
    assert text["transform"] == [{"filter": "(datum.status !== 'scored')"}]
    assert text["encoding"]["text"]["field"] == "mark"
    assert rect["encoding"]["y"]["sort"] == {"field": "order", "op": "min"}
    assert [c["case"] for c in cases.values()] == [
        "1. What is the capital of France?",
        "2. What is 2+2?",
        "3. Name a colour.",
        "4. Which river crosses Paris?",
    ]
    assert sorted({(r["order"], r["key"]) for r in rows.values()}) == [
        (0, "capital"),
        (1, "sum"),
        (2, "colour"),
        (3, "river"),
    ]


def test_heatmap_lower_is_better_reverses_and_centres_on_threshold(small_result):
    spec = heatmap(small_result, "w_overlap", "length_gap").to_dict()
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    # unbounded metric: domain from the data (gaps 0..9), midpoint 3, good (low) side blue
    assert scale == {"domain": [0.0, 9.0], "domainMid": 3.0, "reverse": True, "scheme": "redblue"}


def test_heatmap_parse_failure_is_its_own_status(small_result):
    spec = heatmap(small_result, "w_mentions").to_dict()
    rows = _by(spec["datasets"][spec["data"]["name"]], "key", "model_key")
    cell = rows[("sum", "m3")]
    assert (cell["status"], cell["mark"], cell["value"]) == ("parse_failure", "parse", None)
    assert cell["detail"] == "could not read the verdict"
    assert rows[("colour", "m1")]["status"] == "scored"  # a genuine fail is a low score, not grey


def test_heatmap_by_metric_scales_each_metric_around_its_threshold(small_result):
    spec = heatmap(small_result, "w_overlap", by="metric").to_dict()
    assert spec["params"][0]["name"] == "metric_select"
    rows = _by(spec["datasets"][spec["data"]["name"]], "model_key", "metric")
    assert rows[("m2", "overlap")]["margin"] == pytest.approx(-0.25)  # (0.25 - 0.5) / range 1
    # length_gap is unbounded: scaled by the largest distance from 3 (|0.667 - 3| = 2.333), lower is better
    assert rows[("m1", "length_gap")]["margin"] == pytest.approx(1.0)
    assert rows[("m2", "length_gap")]["margin"] == pytest.approx(-1 / (7 / 3))
    scale = spec["layer"][0]["encoding"]["color"]["scale"]
    assert scale["domainMid"] == 0 and scale["domain"] == [-1, 1]
    every = heatmap(small_result, by="metric").to_dict()
    rows = _by(every["datasets"][every["data"]["name"]], "model_key", "metric")
    assert rows[("m1", "w_mentions.retrieval_failures")]["mark"] == "n/a"
    assert rows[("m1", "w_overlap.overlap")]["mark"] == "1.00"


def test_heatmap_click_selection_reaches_python(small_result):
    widget = jupyter_chart(heatmap(small_result, "w_overlap"))
    seen = []
    widget.selections.observe(lambda c: seen.append(c["new"].value), names=["case_select"])
    widget._vl_selections = {
        "case_select": {"value": {"vlPoint": {"or": [{"key": "sum", "model_key": "m2"}]}}, "store": []}
    }
    assert seen == [[{"key": "sum", "model_key": "m2"}]]


# -- pass/fail and distributions -----------------------------------------------------------


def test_pass_fail_counts_parse_failures_and_skips_apart(small_result):
    spec = pass_fail_chart(small_result, "w_mentions").to_dict()
    counts = {(r["model"], r["outcome"]): r["count"] for r in spec["datasets"][spec["data"]["name"]]}
    assert counts == {
        ("m1", "pass"): 2,
        ("m1", "fail"): 2,
        ("m2", "fail"): 4,
        ("m3", "fail"): 2,
        ("m3", "parse failure"): 1,
        ("m3", "skipped"): 1,
    }
    enc = spec["encoding"]
    assert enc["x"]["stack"] == "zero" and enc["order"]["field"] == "stack"
    assert enc["color"]["scale"]["domain"] == ["pass", "fail", "parse failure", "skipped"]


def test_box_plot_statistics(small_result):
    spec = distribution_chart(small_result, "w_overlap").to_dict()
    rows = _by(_data(spec, spec["layer"][0]), "model")
    # m2's overlaps: 0.25, 0.0, 0.5 -> quartiles by linear interpolation 0.125 / 0.25 / 0.375
    assert [rows["m2"][k] for k in ("min", "q1", "median", "q3", "max", "mean", "count")] == pytest.approx(
        [0.0, 0.125, 0.25, 0.375, 0.5, 0.25, 3]
    )
    assert rows["m3"]["count"] == 1 and rows["m3"]["median"] == 1.0
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["rule", "bar", "tick", "point", "rule"]


def test_histogram_shares_bin_edges(small_result):
    spec = distribution_chart(small_result, "w_overlap", kind="hist", bins=4).to_dict()
    rows = spec["datasets"][spec["data"]["name"]]
    by_model: dict[str, list[int]] = {}
    for r in rows:
        by_model.setdefault(r["model"], []).append(r["count"])
    assert by_model["m2"] == [1, 1, 1, 0]  # 0.0, 0.25, 0.5 in [0,.25) [.25,.5) [.5,.75)
    assert by_model["m1"] == [0, 0, 0, 3]  # 1.0 falls in the closed last bin
    assert spec["encoding"]["row"]["field"] == "model"
    assert spec["encoding"]["x"]["bin"] == "binned"


# -- size and speed -------------------------------------------------------------------------


def test_charts_on_100k_rows_inline_little_and_never_raise(big_result):
    assert len(big_result.scores) == 100_000
    charts = [
        leaderboard_chart(big_result),
        heatmap(big_result),
        heatmap(big_result, by="metric"),
        pass_fail_chart(big_result),
        distribution_chart(big_result),
        distribution_chart(big_result, kind="hist"),
    ]
    for chart in charts:
        spec = chart.to_dict()  # MaxRowsError would raise here
        assert _largest_inlined(spec) <= 5000
    spec = heatmap(big_result).to_dict()
    assert spec["title"]["subtitle"][0] == "showing the 1,000 hardest of 10,000 cases"


def test_capped_heatmap_keeps_the_hardest_cases():
    result = synthetic_result(40, 5, seed=3)
    spec = heatmap(result, max_cells=50).to_dict()
    kept = {r["key"] for r in spec["datasets"][spec["data"]["name"]]}
    assert len(kept) == 10
    s = result.scores[result.scores["metric"] == "overlap"]
    bad = s["passed"].eq(False) | s["value"].isna()
    per_case = bad.groupby(s["key"]).sum()
    assert per_case[list(kept)].min() >= per_case.drop(list(kept)).max()


def test_heatmap_of_1000_cases_by_5_models_builds_in_under_a_second():
    result = synthetic_result(1000, 5)
    best = math.inf
    for _ in range(3):
        # CPU time of this process: the build is single-threaded, and a busy CI machine must not fail it
        t = time.process_time()
        spec = heatmap(result).to_dict()
        best = min(best, time.process_time() - t)
    assert len(spec["datasets"][spec["data"]["name"]]) == 5000
    assert best < 1.0, f"heatmap took {best:.2f} s of CPU"
    cases = spec["datasets"][spec["transform"][0]["from"]["data"]["name"]]
    assert len(cases) == 1000
    assert len(cases[0]["prompt"]) == 121 and cases[0]["prompt"].endswith("…")  # 120 characters and an ellipsis
