"""Judge evaluators that produce numbers: fact_check, context_relevancy, answer_relevancy_score, pipeline."""

from __future__ import annotations

import json
from typing import Any

import pytest

import nbeval
from nbeval.errors import EvaluatorError
from tests.judges.helpers import cell, run
from tests.support.fake_openai import FakeOpenAIServer

ROW = {
    "key": "r1",
    "input": "How tall is the tower?",
    "expected_output": "330 m",
    "actual_output": "The tower is 330 metres tall.",
    "context": ["The tower is 330 metres tall. Tickets are sold online.", "It grew by six metres in 2022."],
}


def test_fact_check_json(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = (
        'Sure:\n```json\n{"answer": "pass", "evaluation_score": 0.9, "evaluation_summary": "The height is right."}\n```'
    )
    res = run([ROW], ["fact_check"], judge)
    assert cell(res, "r1", "fact_check") == 0.9
    assert cell(res, "r1", "fact_check", "rationale") == "The height is right."
    assert cell(res, "r1", "fact_check", "label") == "pass"
    assert cell(res, "r1", "fact_check", "passed")  # 0.9 >= 0.75
    assert "<answer>\nThe tower is 330 metres tall.\n</answer>" in openai_server.requests[0].last_content


@pytest.mark.parametrize("reply", ['{"evaluation_score": 1.7}', "I cannot verify this."])
def test_fact_check_unreadable(openai_server: FakeOpenAIServer, judge: dict[str, Any], reply: str) -> None:
    openai_server.reply = reply
    res = run([ROW], ["fact_check"], judge)
    assert cell(res, "r1", "fact_check") is None
    assert cell(res, "r1", "fact_check", "rationale") == reply and cell(res, "r1", "fact_check", "error")


def test_context_relevancy_counts_sentences(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "Reason: 1 and 3 give the height.\nRelevant: 1, 3"
    res = run([ROW], ["context_relevancy"], judge)
    assert cell(res, "r1", "context_relevancy") == pytest.approx(2 / 3)
    assert (
        "<sentences>\n[1] The tower is 330 metres tall.\n[2] Tickets are sold online.\n"
        "[3] It grew by six metres in 2022.\n</sentences>"
    ) in openai_server.requests[0].last_content
    details = json.loads(cell(res, "r1", "context_relevancy", "details"))
    assert details["relevant_sentences"] == [1, 3] and details["sentences"] == 3
    openai_server.reply = "Relevant: none"
    assert cell(run([ROW], ["context_relevancy"], judge), "r1", "context_relevancy") == 0.0


def test_answer_relevancy_score(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "3\nRight but could add the 2022 change."
    res = run([ROW], ["answer_relevancy_score"], judge)
    assert cell(res, "r1", "score") == 3.0 and cell(res, "r1", "score", "passed")
    assert cell(res, "r1", "score", "rationale") == "Right but could add the 2022 change."
    res = run([ROW], [nbeval.evaluator("answer_relevancy_score", pass_score=4)], judge)
    assert not cell(res, "r1", "score", "passed")
    openai_server.reply = "6"
    assert cell(run([ROW], ["answer_relevancy_score"], judge), "r1", "score") is None
    with pytest.raises(EvaluatorError, match="pass_score"):
        nbeval.evaluator("answer_relevancy_score", pass_score=9)


def test_answer_relevancy_prompt_is_editable(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "5\nGreat."
    ev = nbeval.evaluator("answer_relevancy_score", prompt="Grade 0-5 how useful {actual_output} is for {input}.")
    run([ROW], [ev], judge)
    assert openai_server.requests[0].last_content == (
        "Grade 0-5 how useful The tower is 330 metres tall. is for How tall is the tower?."
    )


def test_pipeline_function(judge: dict[str, Any]) -> None:
    def length_ratio(actual_output: str, expected_output: str) -> tuple[float, str]:
        return len(actual_output) / len(expected_output), "length ratio"

    ev = nbeval.evaluator("pipeline", fn=length_ratio)
    assert ev.spec.inputs == ("actual_output", "expected_output") and not ev.spec.needs_judge
    res = nbeval.evaluate([ROW], [ev], progress=False)  # no judge needed
    assert cell(res, "r1", "score") == pytest.approx(29 / 5)
    assert cell(res, "r1", "score", "rationale") == "length ratio"


def test_pipeline_row_and_context_arguments() -> None:
    seen: dict[str, Any] = {}

    def fn(row: Any, context: list[str], cost: float | None = None) -> dict[str, Any]:
        seen.update(key=row.key, context=context, cost=cost)
        return {"score": len(context), "rationale": "chunks"}

    res = nbeval.evaluate([ROW], [nbeval.evaluator("pipeline", fn=fn)], progress=False)
    assert cell(res, "r1", "score") == 2.0
    assert seen == {"key": "r1", "context": ROW["context"], "cost": None}


def test_pipeline_errors() -> None:
    with pytest.raises(EvaluatorError, match="fn="):
        nbeval.evaluator("pipeline")
    with pytest.raises(EvaluatorError, match="'answer' is not a dataset field"):
        nbeval.evaluator("pipeline", fn=lambda answer: 1.0)
    ev = nbeval.evaluator("pipeline", fn=lambda guidelines: 1.0)
    with pytest.raises(EvaluatorError, match="needs guidelines, which no row"):
        nbeval.evaluate([ROW], [ev], progress=False)
    res = nbeval.evaluate([ROW], [nbeval.evaluator("pipeline", fn=lambda input: "high")], progress=False)
    assert cell(res, "r1", "score") is None and "not a number" in cell(res, "r1", "score", "error")


def test_pipeline_judge_prompt(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "Score: 4"
    ev = nbeval.evaluator("pipeline", prompt="From 1 to 5, how relevant is {actual_output} to {input}?")
    assert ev.spec.needs_judge and ev.spec.inputs == ("actual_output", "input")
    res = run([ROW], [ev], judge)
    assert cell(res, "r1", "score") == 4.0
    req = openai_server.requests[0]
    assert req.messages[-1]["content"] == (
        "From 1 to 5, how relevant is The tower is 330 metres tall. to How tall is the tower??"
    )
