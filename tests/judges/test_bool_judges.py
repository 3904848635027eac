"""Boolean judge evaluators through the fake server: prompts sent and replies read."""

from __future__ import annotations

from typing import Any

import pytest

import nbeval
from nbeval.errors import EvaluatorError
from tests.judges.helpers import cell, run
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Status

ROW = {"key": "r1", "input": "Where is the town hall?", "actual_output": "It is on Market Street."}


@pytest.mark.parametrize(
    ("evaluator", "reply", "outcome"),
    [
        ("contact_information", "Reason: Only a street name.\nVerdict: absent", "pass"),
        ("contact_information", "Reason: A named person's phone number.\nVerdict: present", "fail"),
        ("contact_information", "PRESENT", "fail"),
        ("contact_information", "I am not sure what you mean.", "parse"),
        ("language_mismatch", "Reason: Both English.\nVerdict: same", "pass"),
        ("language_mismatch", "different", "fail"),
        ("language_mismatch", "The languages are English and English.", "parse"),
        ("sexism", "Reason: Neutral.\nVerdict: no", "pass"),
        ("sexism", "Verdict: Yes", "fail"),
        ("sexism", '{"verdict": "no", "reason": "neutral"}', "pass"),
        ("summarization_judge", "Reason: Complete and short.\nVerdict: good", "pass"),
        ("summarization_judge", "```\nVerdict: bad\n```", "fail"),
        ("summarization_judge", "It is fine I guess", "parse"),
        ("stereotypes", "Reason: Nothing added.\nScore: 0", "pass"),
        ("stereotypes", "Score: 5", "pass"),
        ("stereotypes", "Score: 6", "fail"),
        ("stereotypes", "Score: 11", "parse"),
        ("byop", "true", "pass"),
        ("byop", "False.", "fail"),
        ("byop", "cannot say", "parse"),
    ],
)
def test_verdicts(
    openai_server: FakeOpenAIServer, judge: dict[str, Any], evaluator: str, reply: str, outcome: str
) -> None:
    openai_server.reply = reply
    res = run([ROW], [evaluator], judge)
    got = {m: cell(res, "r1", m) for m in ("pass", "fail", "parse_failures", "generation_failures")}
    expected = {
        "pass": {"pass": 1.0, "fail": 0.0, "parse_failures": 0.0, "generation_failures": 0.0},
        "fail": {"pass": 0.0, "fail": 1.0, "parse_failures": 0.0, "generation_failures": 1.0},
        # unrated: neither a pass nor a fail, and no verdict on the answer either
        "parse": {"pass": None, "fail": None, "parse_failures": 1.0, "generation_failures": None},
    }[outcome]
    assert got == expected
    assert cell(res, "r1", "retrieval_failures") is None  # no context on this row
    if outcome == "parse":
        assert cell(res, "r1", "pass", "rationale") == reply  # the raw reply is kept
        error = cell(res, "r1", "pass", "error")
        assert "could not read" in error or "outside [0, 10]" in error
        assert cell(res, "r1", "pass", "label") == "parse_failure"
    else:
        assert cell(res, "r1", "pass", "error") is None
    assert openai_server.request_count == 1


def test_prompt_carries_question_and_answer(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "Verdict: same"
    run([ROW], ["language_mismatch"], judge)
    req = openai_server.requests[0]
    assert req.messages[0]["role"] == "system" and "same natural language" in req.messages[0]["content"]
    assert req.messages[-1] == {
        "role": "user",
        "content": "<question>\nWhere is the town hall?\n</question>\n\n<answer>\nIt is on Market Street.\n</answer>",
    }
    assert len(req.messages) == 2 + 2 * 2  # system, two worked examples, the row
    assert req.params == {"temperature": 0} and req.model == "judge-model"


def test_contact_information_checks_the_context(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    def reply(rec: Recorded) -> str:
        return "Verdict: present" if "555 0199" in rec.last_content else "Verdict: absent"

    openai_server.reply = reply
    rows: list[dict[str, Any]] = [
        {**ROW, "key": "ctx", "context": ["Call Ann Lee on 555 0199.", "Opening hours 9-5."]},
        {**ROW, "key": "plain"},
    ]
    res = run(rows, ["contact_information"], judge)
    assert (
        cell(res, "ctx", "pass"),
        cell(res, "ctx", "retrieval_failures"),
        cell(res, "ctx", "generation_failures"),
    ) == (0.0, 1.0, 0.0)
    assert cell(res, "plain", "pass") == 1.0 and cell(res, "plain", "retrieval_failures") is None
    contents = openai_server.prompts()
    assert "<text>\nIt is on Market Street.\n</text>" in contents
    assert "<text>\nCall Ann Lee on 555 0199.\n\nOpening hours 9-5.\n</text>" in contents
    assert len(contents) == 3
    openai_server.reset()
    res = run(rows[:1], [nbeval.evaluator("contact_information", evaluate_retrieved_context=False)], judge)
    assert cell(res, "ctx", "pass") == 1.0 and openai_server.request_count == 1


def test_stereotypes_threshold_and_details(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "Reason: Gives the nurse a gender.\nScore: 7"
    res = run([ROW], [nbeval.evaluator("stereotypes", max_score=8)], judge)
    assert cell(res, "r1", "pass") == 1.0
    assert '"stereotype_score": 7.0' in cell(res, "r1", "pass", "details")
    assert "7/10" in cell(res, "r1", "pass", "rationale")
    with pytest.raises(EvaluatorError, match="max_score"):
        nbeval.evaluator("stereotypes", max_score=11)


def test_byop_template(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "true"
    template = "Q={input}\nA={actual_output}\nIs A a polite reply to Q? Answer true or false."
    res = run([ROW], [nbeval.evaluator("byop", prompt=template)], judge)
    assert cell(res, "r1", "pass") == 1.0
    assert openai_server.requests[0].messages == [
        {
            "role": "user",
            "content": (
                "Q=Where is the town hall?\nA=It is on Market Street.\nIs A a polite reply to Q? Answer true or false."
            ),
        }
    ]


def test_byop_default_prompt_and_missing_fields(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "false"
    res = run([ROW], ["byop"], judge)
    assert cell(res, "r1", "fail") == 1.0
    assert "safe language" in openai_server.requests[0].last_content
    assert "It is on Market Street." in openai_server.requests[0].last_content
    needs_expected = nbeval.evaluator("byop", prompt="Does {actual_output} match {expected_output}?")
    res = run([ROW], [needs_expected], judge)
    assert cell(res, "r1", "pass", "skipped") and "expected_output" in cell(res, "r1", "pass", "skip_reason")
    with pytest.raises(EvaluatorError, match="placeholder"):
        nbeval.evaluator("byop", prompt="Is it good?")


def test_failed_call_is_an_error_not_a_verdict(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = lambda rec: Status(400, "context too long") if "BAD" in rec.last_content else "Verdict: no"
    rows = [{**ROW, "key": "ok"}, {**ROW, "key": "bad", "actual_output": "BAD answer"}]
    res = run(rows, ["sexism"], judge)
    assert cell(res, "ok", "pass") == 1.0
    assert cell(res, "bad", "pass") is None and cell(res, "bad", "parse_failures") is None
    assert "HTTP 400" in cell(res, "bad", "pass", "error") and "context too long" in cell(res, "bad", "pass", "error")
