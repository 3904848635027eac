"""The chart of a diff of two runs: its inlined data is the diff's table, one row per comparison;
regressions and improvements are marked by colour."""

from __future__ import annotations

import pytest

from nbeval.results.runs.diff import diff
from nbeval.widgets.diff_charts import DIFF_VERDICTS, diff_chart
from tests.stats.helpers import result_of

HOSTILE = "<img src=x onerror=alert(1)>"
LOW = [f"{0.1 + i / 100:.2f}" for i in range(30)]
HIGH = [f"{0.5 + i / 100:.2f}" for i in range(30)]


def _data(spec: dict, node: dict) -> list[dict]:
    data = node.get("data") or spec.get("data")
    assert data is not None
    return spec["datasets"][data["name"]]


@pytest.fixture(scope="module")
def run_diff():
    """ "better"'s answers rise from LOW to HIGH, HOSTILE's fall: s and hit (higher is better)
    improve for "better" and regress for HOSTILE; err (lower is better) the other way round."""
    before = result_of({"better": LOW, HOSTILE: HIGH}, ("st_score", "st_low"))
    after = result_of({"better": HIGH, HOSTILE: LOW}, ("st_score", "st_low"))
    return diff(before, after)


def test_the_inlined_data_is_the_diffs_table(run_diff):
    spec = diff_chart(run_diff).to_dict()
    zero, intervals, points, stars = spec["layer"]
    rows = _data(spec, points)
    assert len(rows) == len(run_diff.table) == 6  # comparisons, not result rows
    assert _data(spec, intervals) == rows == _data(spec, stars)
    table = run_diff.table.set_index(["evaluator", "metric", "model_key"])
    for row in rows:
        want = table.loc[(row["evaluator"], row["metric"], row["model_key"])]
        for column in ("mean_before", "mean_after", "diff", "diff_lo", "diff_hi", "p_value", "p_holm"):
            assert row[column] == pytest.approx(float(want[column]), rel=1e-12), column
        assert row["n"] == want["n"] == 30
        assert row["row"] == f"{row['evaluator']}.{row['metric']} · {row['model_key']}"
    assert (intervals["encoding"]["x"]["field"], intervals["encoding"]["x2"]["field"]) == ("diff_lo", "diff_hi")
    assert points["encoding"]["x"]["field"] == "diff" and zero["mark"]["strokeDash"] == [5, 3]
    assert "Holm-adjusted over the 6 comparisons" in spec["title"]["subtitle"][0]


def test_regressions_and_improvements_are_marked(run_diff):
    spec = diff_chart(run_diff).to_dict()
    points = spec["layer"][2]
    verdicts = {(r["evaluator"], r["metric"], r["model_key"]): r["verdict"] for r in _data(spec, points)}
    table = run_diff.table
    for row in table.itertuples():
        want = "regression" if row.regression else "improvement" if row.improvement else "no significant change"
        assert verdicts[(row.evaluator, row.metric, row.model_key)] == want
    assert verdicts[("st_score", "s", "better")] == verdicts[("st_low", "err", HOSTILE)] == "improvement"
    assert verdicts[("st_score", "s", HOSTILE)] == verdicts[("st_low", "err", "better")] == "regression"
    assert verdicts[("st_score", "hit", HOSTILE)] == "regression"
    scale = points["encoding"]["color"]["scale"]
    colours = dict(zip(scale["domain"], scale["range"], strict=True))
    assert (
        colours["regression"] == DIFF_VERDICTS["regression"] and colours["improvement"] == DIFF_VERDICTS["improvement"]
    )
    assert {r["mark"] for r in _data(spec, points)} == {"★"}  # every change here is significant


def test_model_keys_are_data_not_markup(run_diff):
    spec = diff_chart(run_diff).to_dict()
    keys = {r["model_key"] for r in _data(spec, spec["layer"][2])}
    assert HOSTILE in keys  # left as text for Vega to escape; no HTML is built from it
    assert HOSTILE not in str(spec["title"])
    sort = spec["layer"][2]["encoding"]["y"]["sort"]  # the rows' order: the same text, unchanged
    assert f"st_score.s · {HOSTILE}" in sort
