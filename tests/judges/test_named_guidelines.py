"""guideline_adherence with guidelines given by name (MLflow 3's mapping): one verdict per name,
reported as the metric ``guideline_adherence/<name>``, plus the overall verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nbeval
from tests.judges.helpers import cell, run
from tests.support.fake_openai import FakeOpenAIServer, Recorded

BASE = {"request": "Can I get a refund?", "response": "Yeah, whatever. Policy 12 says 30 days."}
# An agent-evaluation set: named guidelines (as MLflow 3 takes them) next to a plain list
EVAL_SET: list[dict[str, Any]] = [
    {
        **BASE,
        "request_id": "both-ok",
        "response": "Certainly. Policy 12 allows 30 days.",
        "guidelines": {"tone": ["Be polite.", "No slang."], "facts": ["Cite the policy number."]},
    },
    {
        **BASE,
        "request_id": "rude",
        "guidelines": {"tone": ["Be polite.", "No slang."], "facts": ["Cite the policy number."]},
    },
    {
        **BASE,
        "request_id": "unclear",
        "guidelines": {"facts": ["Cite the policy number."], "length": ["At most two sentences."]},
    },
    {**BASE, "request_id": "plain", "response": "Certainly. Policy 12 allows 30 days.", "guidelines": ["Be polite."]},
]


def _judge(rec: Recorded) -> str:
    """Tone fails on slang; the length rule gets an unreadable reply; everything else passes."""
    content = rec.last_content
    if "- At most two sentences." in content:
        return "I am not sure."
    if "- No slang." in content or "- Be polite." in content:
        return "Rationale: Slang.\nRating: no" if "whatever" in content else "Rationale: Polite.\nRating: yes"
    return "Rationale: Cites policy 12.\nRating: yes"


@pytest.fixture
def result(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> nbeval.EvaluationResult:
    openai_server.reply = _judge
    return run(EVAL_SET, ["guideline_adherence"], judge)


def test_one_metric_per_guideline_name_plus_the_overall(
    result: nbeval.EvaluationResult, openai_server: FakeOpenAIServer
) -> None:
    metrics = result.metrics.set_index("metric")
    assert list(metrics.index) == [
        "guideline_adherence",
        "global_guideline_adherence",
        "guideline_adherence/tone",
        "guideline_adherence/facts",
        "guideline_adherence/length",
    ]
    assert metrics.loc["guideline_adherence", "primary"] and not metrics.loc["guideline_adherence/tone", "primary"]
    assert metrics.loc["guideline_adherence/tone", "threshold"] == metrics.loc["guideline_adherence", "threshold"]
    assert "'tone'" in metrics.loc["guideline_adherence/tone", "description"]
    want = {  # (overall, tone, facts, length) per row
        "both-ok": (1.0, 1.0, 1.0, None),
        "rude": (0.0, 0.0, 1.0, None),
        "unclear": (None, None, 1.0, None),  # a name could not be rated and none failed: no overall value
        "plain": (1.0, None, None, None),
    }
    for key, values in want.items():
        names = (
            "guideline_adherence",
            "guideline_adherence/tone",
            "guideline_adherence/facts",
            "guideline_adherence/length",
        )
        assert tuple(cell(result, key, m) for m in names) == values, key
    assert cell(result, "rude", "guideline_adherence", "label") == "no"
    assert cell(result, "unclear", "guideline_adherence", "label") == "parse_failure"
    why = cell(result, "rude", "guideline_adherence", "rationale")
    assert why == "guidelines 'tone': Slang. | guidelines 'facts': Cites policy 12."
    assert "guidelines 'length'" in cell(result, "unclear", "guideline_adherence", "error")
    # one judge call per name, each with only that name's guidelines
    assert openai_server.request_count == 2 + 2 + 2 + 1
    tone = [p for p in openai_server.prompts() if "- Be polite.\n- No slang." in p]
    assert len(tone) == 2 and not any("Cite the policy" in p for p in tone)


def test_per_name_aggregates_and_leaderboard(result: nbeval.EvaluationResult) -> None:
    agg = result.aggregates.set_index("metric")
    assert agg.loc["guideline_adherence/tone", "value"] == pytest.approx(1 / 2)
    assert (agg.loc["guideline_adherence/tone", "n"], agg.loc["guideline_adherence/tone", "N"]) == (2, 4)
    assert agg.loc["guideline_adherence/facts", "value"] == 1.0
    assert agg.loc["guideline_adherence", "value"] == pytest.approx(2 / 3)  # both-ok, rude, plain rated
    board = result.leaderboard("guideline_adherence")
    assert board["guideline_adherence/facts"].iloc[0] == 1.0


def test_the_names_survive_saving_the_result(result: nbeval.EvaluationResult, tmp_path: Path) -> None:
    back = nbeval.load_result(result.save(tmp_path / "run"))
    assert "guideline_adherence/tone" in set(back.metrics["metric"])
    assert back.dataset[0].named_guidelines == {
        "tone": ["Be polite.", "No slang."],
        "facts": ["Cite the policy number."],
    }


def test_without_names_the_metrics_are_the_catalogues(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = _judge
    ev = nbeval.evaluator("guideline_adherence", threshold=0.8)
    first = run(EVAL_SET, [ev], judge)
    assert first.metrics.set_index("metric").loc["guideline_adherence/tone", "threshold"] == 0.8
    again = run([EVAL_SET[-1]], [ev], judge)  # the same instance on data without names
    assert list(again.metrics["metric"]) == ["guideline_adherence", "global_guideline_adherence"]


def test_a_result_saved_before_names_were_kept_still_loads(result: nbeval.EvaluationResult, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    folder = result.save(tmp_path / "run")
    table = pq.read_table(folder / "dataset.parquet")
    pq.write_table(
        table.drop_columns(["named_guidelines"]).replace_schema_metadata(table.schema.metadata),
        folder / "dataset.parquet",
    )
    info = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    del info["save"]  # nor did it write a save id (its dataset.parquet is not the one the save listed)
    (folder / "result.json").write_text(json.dumps(info), encoding="utf-8")
    back = nbeval.load_result(folder)
    assert back.dataset[0].named_guidelines == {} and back.dataset[0].guidelines == [
        "Be polite.",
        "No slang.",
        "Cite the policy number.",
    ]
