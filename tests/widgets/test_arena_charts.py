"""``arena_chart`` and ``win_matrix``: what they draw is the result's arena fit, cell by cell."""

from __future__ import annotations

import json
from typing import Any

import pytest

import nbeval
import nbeval.widgets as nw
from tests.judges.test_pairwise import ORDERED, longer_wins, records
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture(scope="module")
def result() -> Any:
    with FakeOpenAIServer(longer_wins) as server:
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-judge-test-key-123456"}
        return nbeval.evaluate(records(ORDERED), ["pairwise"], judge=judge, progress=False, cache=False)


def _data(chart: Any) -> list[dict[str, Any]]:
    spec = chart.to_dict()
    return next(iter(spec["datasets"].values())) if "datasets" in spec else spec["data"]["values"]


def _all_data(chart: Any) -> list[list[dict[str, Any]]]:
    return list(chart.to_dict()["datasets"].values())


def test_the_arena_chart_draws_the_ratings_best_first(result: Any) -> None:
    arena = result.arena()
    chart = nw.arena_chart(result)
    rows = next(d for d in _all_data(chart) if d and "rating" in d[0] and "model" in d[0])
    assert [r["model"] for r in rows] == ["m3", "m2", "m1"]
    assert [r["rating"] for r in rows] == pytest.approx(arena.rating.round(1).tolist())
    assert [(r["wins"], r["losses"], r["ties"], r["n"]) for r in rows] == [(8, 0, 0, 8), (4, 4, 0, 8), (0, 8, 0, 8)]
    assert "first-slot preference removed" in json.dumps(chart.to_dict()["title"])


def test_the_win_matrix_has_both_cells_of_each_pair(result: Any) -> None:
    h2h = result.head_to_head()
    cells = next(d for d in _all_data(nw.win_matrix(result)) if d and "row" in d[0])
    by = {(c["row"], c["column"]): c for c in cells}
    assert len(cells) == 6  # 3 pairs, both ways, no diagonal
    for r in h2h.itertuples():
        ab, ba = by[r.model_a, r.model_b], by[r.model_b, r.model_a]
        assert ab["p"] == pytest.approx(r.p_a_beats_b) and ba["p"] == pytest.approx(1 - r.p_a_beats_b)
        assert (ab["wins"], ab["losses"]) == (ba["losses"], ba["wins"]) == (r.wins_a, r.wins_b)
        assert ba["lo"] == pytest.approx(1 - r.hi) and ba["hi"] == pytest.approx(1 - r.lo)
    assert by["m3", "m1"]["wins"] == 4 and by["m3", "m1"]["inconsistent"] == 0  # 2 cases x 2 orders, all won


def test_a_result_without_verdicts_is_refused_by_name() -> None:
    res = nbeval.evaluate(records(), ["exact_match"], progress=False)
    with pytest.raises(nbeval.NbevalError, match="no head-to-head verdicts"):
        nw.arena_chart(res, "exact_match")


def test_the_case_view_shows_each_pair_side_by_side_with_both_rationales() -> None:
    from nbeval.widgets.case_view import case_html

    def slot_judge(rec: Any) -> str:  # always the first answer, with markup in its rationale
        return json.dumps({"rationale": "<script>alert(1)</script> first one", "winner": "A"})

    with FakeOpenAIServer(slot_judge) as server:
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-judge-test-key-123456"}
        res = nbeval.evaluate(records(ORDERED), ["pairwise"], judge=judge, progress=False, cache=False)
    html = case_html(res, "c1")
    block = html[html.index("pairwise: comparisons") :]
    assert block.count("(inconsistent)") == 3  # every pair: the judge followed the slot
    assert block.count("&lt;script&gt;alert(1)&lt;/script&gt; first one") == 6  # both orders of 3 pairs
    assert "<script>" not in html
    # the pair m1 vs m2 shows both answers in one row, then each order with its winner
    pair = block[block.index("<b>m1</b> vs <b>m2</b>") :]
    pair = pair[: pair.index("</tbody>")]
    assert ORDERED["c1"]["m1"] in pair and ORDERED["c1"]["m2"] in pair
    assert "A: m1<br>B: m2</td><td" in pair and "A: m2<br>B: m1</td><td" in pair
