"""Size limits: what a judge writes is capped where it is stored, every cell is capped where it is
shown, the report stays small for big runs, and the user's own data is saved whole."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import nbeval
from nbeval.data.model import LlmDataset
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import evaluator, register
from nbeval.results.live import LiveResult
from nbeval.results.outcome import RowOutcome
from nbeval.results.reporting.report import MAX_DETAIL_ROWS, MAX_TABLE_BYTES
from nbeval.results.result import EvaluationResult
from nbeval.results.storage.limits import (
    MAX_DETAILS_CHARS,
    MAX_SHOWN_CHARS,
    MAX_STORED_CHARS,
    cap_details,
    truncate_text,
)
from tests.support.scoring import scored

MB5 = 5_000_000
HUGE = "x" * MB5
STORED = f"… [truncated: {MB5:,} characters, showing the first {MAX_STORED_CHARS:,}]"
SHOWN = f"… [truncated: {MB5:,} characters, showing the first {MAX_SHOWN_CHARS:,}]"


@register(
    spec=EvaluatorSpec(
        id="t_huge_text",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("v", "higher", threshold=0.5, primary=True), MetricSpec("w", "higher")),
    )
)
class HugeText(Evaluator):
    """Writes the answer into every text it reports (label, rationale, error, details)."""

    def score(self, row):
        a = row.actual_output
        return Score({"v": 1.0, "w": 0.0}, label=a, rationale=a, error=a, details={"echo": a, "n": len(a)})


def _judge_says(reason: str):
    reply = json.dumps({"rating": "yes", "rationale": reason})
    return lambda prompt: reply


def _twenty_rows(answer_of_first: str = "a short answer") -> list[dict[str, str]]:
    return [
        {"key": f"c{i}", "input": f"question {i}", "actual_output": answer_of_first if i == 0 else f"answer {i}"}
        for i in range(20)
    ]


# -- the helper --------------------------------------------------------------------------------


def test_truncate_text_keeps_the_start_and_names_the_full_size() -> None:
    cut = truncate_text(HUGE, MAX_STORED_CHARS)
    assert cut == "x" * MAX_STORED_CHARS + "\n" + STORED
    assert truncate_text(cut, MAX_SHOWN_CHARS) == "x" * MAX_SHOWN_CHARS + "\n" + SHOWN  # the original's size
    assert truncate_text(cut, MAX_STORED_CHARS) is cut  # cutting again at the same size changes nothing
    assert truncate_text(cut, 10 * MAX_STORED_CHARS) is cut
    short = "y" * MAX_SHOWN_CHARS
    assert truncate_text(short, MAX_SHOWN_CHARS) is short
    for other in (None, 3.5, -0.5, True):
        assert truncate_text(other, 1) is other


def test_cap_details_keeps_json_where_it_can() -> None:
    capped = cap_details({"echo": HUGE, "list": [HUGE], "n": 3})
    assert capped is not None
    details = json.loads(capped)
    assert details["n"] == 3
    assert details["echo"].endswith(STORED) and details["list"][0].endswith(STORED)
    many = cap_details({"chunks": ["y" * 1000] * 1000})  # a million characters in small strings
    assert many is not None
    assert len(many) < MAX_DETAILS_CHARS + 100 and "showing the first 100,000" in many
    assert cap_details({}) is None and cap_details(None) is None


# -- what is stored ------------------------------------------------------------------------------


def test_twenty_rows_of_5mb_judge_rationales_are_capped_with_the_original_size(tmp_path: Path) -> None:
    res = nbeval.evaluate(_twenty_rows(HUGE), ["safety"], judge=_judge_says(HUGE), progress=False, cache=False)
    rationales = res.scores["rationale"]
    assert len(rationales) == 20
    assert all(r == "x" * MAX_STORED_CHARS + "\n" + STORED for r in rationales)
    assert res.aggregates["value"].tolist() == [1.0]  # the verdicts themselves are kept

    folder = res.save(tmp_path / "run")
    assert sum(p.stat().st_size for p in folder.iterdir() if p.name != "dataset.parquet") < 1_000_000
    back = nbeval.load_result(folder)
    pd.testing.assert_series_equal(back.scores["rationale"], rationales)
    # the user's own 5 MB answer is data, not output: saved and loaded whole
    assert back.dataset.rows[0].actual_output == HUGE
    assert res.dataset.rows[0].actual_output == HUGE


def test_every_text_cell_an_evaluator_writes_is_capped() -> None:
    res = nbeval.evaluate([{"key": "c1", "input": "q", "actual_output": HUGE}], ["t_huge_text"], progress=False)
    for column in ("label", "rationale", "error"):
        assert res.scores[column].map(len).max() <= MAX_STORED_CHARS + 80
        assert res.scores[column].map(lambda t: t.endswith(STORED)).all(), column
    details = json.loads(res.scores["details"].iloc[0])
    assert details["echo"].endswith(STORED) and details["n"] == MB5


def test_a_huge_skip_reason_and_warnings_are_capped() -> None:
    ev = evaluator("t_huge_text")
    ds = LlmDataset.from_json(
        [{"key": "c1", "input": "q", "actual_output": "a"}, {"key": "c2", "input": "q", "actual_output": "b"}]
    )
    skipped = RowOutcome(ev, ds.rows[0], skip_reason=HUGE)
    warned = RowOutcome(ev, ds.rows[1], score=Score({"v": 1.0}, rationale="fine"), warnings=[HUGE])
    res = EvaluationResult.from_outcomes([skipped, warned], [ev], ds)
    assert res.scores["skip_reason"].iloc[0].endswith(STORED)
    assert (
        res.scores["rationale"]
        .iloc[-1]
        .endswith(f"… [truncated: {MB5 + 6:,} characters, showing the first {MAX_STORED_CHARS:,}]")
    )


def test_the_live_result_caps_too() -> None:
    ev = evaluator("t_huge_text")
    ds = LlmDataset.from_json([{"key": "c1", "input": "q", "actual_output": HUGE}])
    live = LiveResult([ev], ds, total=1)
    live.add([RowOutcome(ev, ds.rows[0], score=scored(ev, ds.rows[0]))])
    assert live.scores["rationale"].map(lambda t: t.endswith(STORED)).all()


# -- what is shown ------------------------------------------------------------------------------


def test_the_report_of_twenty_5mb_rows_is_small_and_says_what_was_cut(tmp_path: Path) -> None:
    rows = [{**r, "actual_output": HUGE, "expected_output": HUGE, "context": [HUGE]} for r in _twenty_rows()]
    res = nbeval.evaluate(rows, ["safety"], judge=_judge_says(HUGE), progress=False, cache=False)
    path = tmp_path / "report.html"
    html = res.to_html(path)
    assert path.stat().st_size < 1_000_000
    assert html.count(SHOWN) >= 20 * 2  # every rationale, every answer (and expected output, context)
    assert "x" * (MAX_SHOWN_CHARS + 1) not in html
    assert STORED not in html  # the report names the original size, not the stored one


def test_a_report_table_keeps_to_its_byte_budget() -> None:
    # 5,000 rows of 2,000-character cells would be a 40 MB table
    rows = [{"key": f"c{i}", "input": "q" * 3000, "actual_output": "é" * 3000} for i in range(5000)]
    res = nbeval.evaluate(rows, ["t_huge_text"], progress=False)
    html = res.to_html()
    scores = html[html.index("<h2>Scores</h2>") :]
    cases = html[html.index("<h2>Cases</h2>") : html.index("<h2>Scores</h2>")]
    for part in (scores, cases):
        assert len(part.encode("utf-8")) < MAX_TABLE_BYTES + 50_000
    shown = re.search(r"first ([\d,]+) of 10,000 scores shown", scores)
    assert shown and 0 < int(shown.group(1).replace(",", "")) < MAX_DETAIL_ROWS
    assert "the saved result (result.save) has them all" in scores
    assert re.search(r"first [\d,]+ of 5,000 cases shown", cases)
    assert len(html.encode("utf-8")) < 4 * MAX_TABLE_BYTES + 200_000


@pytest.mark.slow
def test_a_100000_row_run_gives_a_report_under_6_5_mb(tmp_path: Path) -> None:
    rows = [
        {
            "key": f"c{i}",
            "model_key": f"m{i % 4}",
            "input": f"question {i} " + "q" * 300,
            "expected_output": "yes " * 50,
            "actual_output": "answer " * 150,
        }
        for i in range(100_000)
    ]
    res = nbeval.evaluate(rows, ["exact_match", "t_huge_text"], progress=False)
    path = tmp_path / "report.html"
    res.to_html(path)
    assert path.stat().st_size < 6_500_000
