"""Rating judge evaluators (yes/no with a rationale) through the fake server."""

from __future__ import annotations

import json
from typing import Any

import pytest

import nbeval
from nbeval.errors import EvaluatorError
from tests.judges.helpers import cell, run
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Status

ROW = {
    "key": "r1",
    "input": "When does the museum open?",
    "expected_output": "At 9:00 on weekdays.",
    "actual_output": "It opens at 9:00 on weekdays.",
    "context": ["The museum opens at 9:00 on weekdays.", "Entry costs 12 euros."],
}
SIMPLE = ["correctness", "relevance_to_query", "groundedness", "safety", "context_sufficiency"]


@pytest.mark.parametrize("evaluator", SIMPLE)
@pytest.mark.parametrize(
    ("reply", "value", "label", "rationale"),
    [
        ("Rationale: Matches the reference.\nRating: yes", 1.0, "yes", "Matches the reference."),
        ("No. The key fact is missing.", 0.0, "no", "The key fact is missing"),
        ("Hmm, hard to say.", None, "parse_failure", "Hmm, hard to say."),
    ],
)
def test_ratings(
    openai_server: FakeOpenAIServer,
    judge: dict[str, Any],
    evaluator: str,
    reply: str,
    value: float | None,
    label: str,
    rationale: str,
) -> None:
    openai_server.reply = reply
    res = run([ROW], [evaluator], judge)
    assert cell(res, "r1", evaluator) == value
    assert cell(res, "r1", evaluator, "label") == label
    assert cell(res, "r1", evaluator, "rationale") == rationale
    assert (cell(res, "r1", evaluator, "error") is None) == (value is not None)


@pytest.mark.parametrize(
    ("evaluator", "tags"),
    [
        ("correctness", ["question", "expected_answer", "answer"]),
        ("relevance_to_query", ["question", "answer"]),
        ("groundedness", ["question", "retrieved_context", "answer"]),
        ("safety", ["question", "answer"]),
        ("context_sufficiency", ["question", "expected_answer", "retrieved_context"]),
    ],
)
def test_prompts_show_the_right_fields(
    openai_server: FakeOpenAIServer, judge: dict[str, Any], evaluator: str, tags: list[str]
) -> None:
    openai_server.reply = "Rating: yes"
    run([ROW], [evaluator], judge)
    content = openai_server.requests[0].last_content
    assert [t for t in ("question", "expected_answer", "retrieved_context", "answer") if f"<{t}>" in content] == tags
    if "retrieved_context" in tags:
        assert "[1] The museum opens at 9:00 on weekdays.\n\n[2] Entry costs 12 euros." in content


def test_share_of_yes_per_model(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    replies = {"a": "Rating: yes", "b": "Rating: no", "c": "unclear", "d": "Rating: yes"}
    openai_server.reply = lambda rec: replies[rec.last_content.split("<answer>\n")[1][0]]
    rows = [{**ROW, "key": k, "actual_output": f"{k} answer"} for k in replies]
    res = run(rows, ["safety"], judge)
    agg = res.aggregates.set_index("metric").loc["safety"]
    assert agg["value"] == pytest.approx(2 / 3) and agg["n"] == 3 and agg["N"] == 4


def test_guideline_adherence_row_and_global(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    def reply(rec: Recorded) -> str:
        content = rec.last_content
        if "- Be brief." in content:
            return "Rationale: Short enough.\nRating: yes"
        return "Rationale: Not in French.\nRating: no"

    openai_server.reply = reply
    ev = nbeval.evaluator("guideline_adherence", global_guidelines=["Answer in French."])
    rows = [{**ROW, "key": "both", "guidelines": ["Be brief."]}, {**ROW, "key": "global_only"}]
    res = run(rows, [ev], judge)
    assert cell(res, "both", "guideline_adherence") == 1.0
    assert cell(res, "both", "global_guideline_adherence") == 0.0
    assert cell(res, "both", "guideline_adherence", "rationale") == (
        "guidelines: Short enough. | global guidelines: Not in French."
    )
    assert cell(res, "global_only", "guideline_adherence") is None
    assert cell(res, "global_only", "global_guideline_adherence") == 0.0
    assert openai_server.request_count == 3
    assert any("<guidelines>\n- Answer in French.\n</guidelines>" in c for c in openai_server.prompts())


def test_guideline_adherence_needs_some_guidelines(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    res = run([ROW], ["guideline_adherence"], judge)
    assert cell(res, "r1", "guideline_adherence", "skipped")
    assert "guidelines" in cell(res, "r1", "guideline_adherence", "skip_reason")
    assert openai_server.request_count == 0
    with pytest.raises(EvaluatorError, match="global_guidelines"):
        nbeval.evaluator("guideline_adherence", global_guidelines=[""])


def test_chunk_relevance_precision(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    def reply(rec: Recorded) -> Any:
        passage = rec.last_content.split("<passage>\n")[1]
        if passage.startswith("broken"):
            return Status(400, "bad chunk")
        return "Rationale: about opening.\nRating: yes" if "opens" in passage else "Rationale: off topic.\nRating: no"

    openai_server.reply = reply
    row = {**ROW, "context": ["The museum opens at 9.", "Entry costs 12 euros.", "It opens late on Fridays."]}
    res = run([row], ["chunk_relevance"], judge)
    assert cell(res, "r1", "precision") == pytest.approx(2 / 3)
    details = json.loads(cell(res, "r1", "precision", "details"))
    assert details["ratings"] == ["yes", "no", "yes"]
    assert details["rationales"] == ["about opening.", "off topic.", "about opening."]
    assert details["judge"]["calls"] == 3
    assert cell(res, "r1", "precision", "label") == "2/3 relevant"
    openai_server.reset()
    row["context"] = ["The museum opens at 9.", "broken chunk"]
    res = run([row], ["chunk_relevance"], judge)
    assert cell(res, "r1", "precision") == 1.0  # rated on the one chunk that could be rated
    assert "1 of 2 chunks could not be rated" in cell(res, "r1", "precision", "error")
    assert json.loads(cell(res, "r1", "precision", "details"))["ratings"] == ["yes", None]


def test_custom_judge_answer(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "Rationale: It names a time.\nRating: yes"
    ev = nbeval.evaluator(
        "custom_judge", assessment_name="mentions_time", instructions="Rate yes when the answer gives a concrete time."
    )
    assert ev.name == "mentions_time" and [m.name for m in ev.spec.metrics] == ["custom_judge"]
    res = run([ROW], [ev], judge)
    assert cell(res, "r1", "custom_judge", evaluator="mentions_time") == 1.0
    system = openai_server.requests[0].messages[0]["content"]
    assert system.startswith("Rate yes when the answer gives a concrete time.") and "Rating: <yes or no>" in system


def test_custom_judge_retrieval_and_inputs(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    def reply(rec: Recorded) -> str:
        return "Rating: yes" if "9:00" in rec.last_content.split("<passage>")[1] else "Rating: no"

    openai_server.reply = reply
    ev = nbeval.evaluator("custom_judge", assessment_type="retrieval", instructions="Does the passage give hours?")
    assert [m.name for m in ev.spec.metrics] == ["precision"] and ev.spec.inputs == ("input", "context")
    res = run([ROW], [ev], judge)
    assert cell(res, "r1", "precision") == 0.5
    ev2 = nbeval.evaluator("custom_judge", instructions="x", inputs=["expected_output", "actual_output"])
    assert ev2.spec.inputs == ("expected_output", "actual_output")
    with pytest.raises(EvaluatorError, match="instructions"):
        nbeval.evaluator("custom_judge")
    with pytest.raises(EvaluatorError, match="assessment_type"):
        nbeval.evaluator("custom_judge", instructions="x", assessment_type="both")
    with pytest.raises(EvaluatorError, match="unknown inputs"):
        nbeval.evaluator("custom_judge", instructions="x", inputs=["answer"])


def test_chunk_relevance_unreadable_replies_are_unrated_failed_calls_are_errors(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    openai_server.reply = "Hmm, hard to say."
    res = run([ROW], ["chunk_relevance"], judge)
    assert cell(res, "r1", "precision") is None  # never a 0
    assert cell(res, "r1", "precision", "label") == "parse_failure"
    assert list(res.problems["kind"]) == ["unmeasured", "unrated"]  # the only row could not be rated
    openai_server.reset()
    openai_server.reply = Status(400, "bad chunk")
    res = run([ROW], ["chunk_relevance"], judge)
    assert cell(res, "r1", "precision") is None and cell(res, "r1", "precision", "label") is None
    assert "HTTP 400" in cell(res, "r1", "precision", "error")
    # a failed call is the row's error (errored), not an unreadable reply; the only row measured nothing
    assert list(res.problems["kind"]) == ["unmeasured", "errored"]
