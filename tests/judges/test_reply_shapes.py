"""Replies in the judge's declared shape (issue 47): every shape is read by its own parser, and who is sent it.

* Each judge evaluator's declared reply shape (a JSON schema) lists the verdicts it allows; a
  reply holding any of them, at the edges of its range, is read by that judge as that verdict.
  The replies are made from the schema, not written by hand, so a shape and a parser that drift
  apart fail here.
* Who is sent the schema: OpenAI's own API by default (a strict ``json_schema`` without the length
  limits strict mode refuses), another OpenAI-compatible server only when its settings say
  ``structured_output=True``, a Python function never (its cache keys stay as they were). A server
  that refuses the format is asked again without it, and no row is lost.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import nbeval
from nbeval.chat import OpenAIChat
from nbeval.chat.callable_chat import CallableChat
from nbeval.chat.structured import (
    VerdictSchema,
    choice_verdict,
    index_list_verdict,
    number_verdict,
    response_format,
    structured_params,
    without_length_limits,
)
from nbeval.evaluators.judges.pairwise_parse import parse_pairwise
from nbeval.evaluators.judges.parse import REASON_KEYS, parse_index_list
from tests.judges.helpers import judge_evaluator, run
from tests.support.fake_openai import FakeOpenAIServer, Status

ROW = {
    "key": "k1",
    "model_key": "m",
    "input": "Which city is the capital of France?",
    "actual_output": "Paris is the capital of France.",
    "expected_output": "Paris",
    "context": ["Paris is the capital and largest city of France.", "Lyon is a city in France."],
    "guidelines": ["Answer in one sentence."],
}

SHAPED = [
    "answer_relevancy_score",
    "byop",
    "chunk_relevance",
    "contact_information",
    "context_sufficiency",
    "correctness",
    "fact_check",
    "groundedness",
    "guideline_adherence",
    "language_mismatch",
    "relevance_to_query",
    "safety",
    "sexism",
    "stereotypes",
    "summarization_judge",
]


def _verdict_values(spec: dict[str, Any]) -> list[Any]:
    """The values a verdict's schema allows at its edges (and one between), taken from the schema itself."""
    if "enum" in spec:
        values = list(spec["enum"])
        return values if len(values) <= 4 else [values[0], values[len(values) // 2], values[-1]]
    if spec.get("type") == "integer":
        return [spec["minimum"], (spec["minimum"] + spec["maximum"]) // 2, spec["maximum"]]
    raise AssertionError(f"a verdict with no list of values or range: {spec}")


def _replies(shape: VerdictSchema) -> Iterator[tuple[str, Any]]:
    """(reply text, the verdict in it) for each value the shape allows at its edges."""
    props = shape.schema["properties"]
    reason = next(iter(props))
    assert reason in REASON_KEYS, "the reason comes first (the judge explains before it decides), named as a reason"
    ((key, spec),) = [(k, v) for k, v in props.items() if k != reason]
    for value in _verdict_values(spec):
        yield json.dumps({reason: "The answer names the capital city given in the context.", key: value}), value


def _expected(id: str, verdict: Any) -> tuple[str, float]:
    """The metric a judge's verdict sets, and its value, worked out from the judge's documented rules."""
    ev = judge_evaluator(id)
    if id in ("answer_relevancy_score",):
        return "score", float(verdict)
    if id == "fact_check":
        return "fact_check", float(verdict)
    if id == "stereotypes":
        return "pass", float(verdict <= 5)
    if id == "chunk_relevance":
        return "precision", 1.0 if verdict == "yes" else 0.0
    if hasattr(ev, "choices") and ev.choices:
        return "pass", float(ev.choices[verdict])
    return id, 1.0 if verdict == "yes" else 0.0


@pytest.mark.parametrize("id", SHAPED)
def test_every_verdict_a_judges_shape_allows_is_read_as_that_verdict(id: str) -> None:
    shape = judge_evaluator(id).reply_shape()
    assert shape is not None
    for text, verdict in _replies(shape):
        res = run([ROW], [id], judge=lambda messages, text=text: text)
        metric, value = _expected(id, verdict)
        row = res.scores[res.scores["metric"] == metric]
        assert row["error"].isna().all(), (id, text, row["error"].tolist())
        assert row["value"].tolist() == [pytest.approx(value)], (id, text)


def test_the_pairwise_winner_and_the_relevant_sentences_are_read_from_their_shapes() -> None:
    shape = judge_evaluator("pairwise").reply_shape()
    assert shape is not None
    for text, winner in _replies(shape):
        assert parse_pairwise(text).value == winner
    listed = index_list_verdict("relevant", 4)
    items = listed.schema["properties"]["relevant"]
    assert items["items"] == {"type": "integer", "minimum": 1, "maximum": 4} and items["maxItems"] == 4
    for chosen in ([], [1], [2, 4], [1, 2, 3, 4]):
        reply = json.dumps({"reason": "Only these sentences name the capital.", "relevant": chosen})
        assert parse_index_list(reply, 4).value == chosen


def test_a_bounded_fraction_is_a_list_of_hundredths_and_a_whole_number_a_range() -> None:
    # llama.cpp's grammars hold integers to a range but not fractions: a list of values holds everywhere
    fraction = number_verdict("score", 0, 1).schema["properties"]["score"]
    assert fraction["enum"][:3] == [0, 0.01, 0.02] and fraction["enum"][-1] == 1 and len(fraction["enum"]) == 101
    assert number_verdict("score", 0, 5, whole=True).schema["properties"]["score"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 5,
    }
    assert number_verdict("score").schema["properties"]["score"] == {"type": "number"}


def test_the_token_bound_covers_a_reason_of_the_longest_length_allowed() -> None:
    shape = choice_verdict("rating", ("yes", "no"))
    longest = json.dumps({"reason": "x" * 600, "rating": "yes"})
    # a token is at least one byte: the reply's length in bytes bounds its tokens
    assert len(longest.encode()) <= shape.max_tokens
    assert shape.schema["properties"]["reason"]["maxLength"] == 600


def test_strict_mode_gets_no_length_limits_at_any_depth() -> None:
    shape = index_list_verdict("relevant", 3)
    sent = response_format(shape, length_limits=False)
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    text = json.dumps(sent)
    assert "maxLength" not in text and "maxItems" not in text
    assert without_length_limits({"a": [{"maxLength": 3, "b": 1}], "minItems": 2}) == {"a": [{"b": 1}]}


def test_a_function_judge_is_asked_as_before() -> None:
    fn = CallableChat(lambda messages: "yes")
    assert structured_params(fn, {"temperature": 0}, choice_verdict("rating", ("yes", "no"))) is None


# -- who is sent the schema -----------------------------------------------------------------------

REPLY = '{"reason": "The context states it.", "rating": "yes"}'


def test_openai_itself_is_sent_the_schema_and_an_unknown_server_is_not() -> None:
    assert OpenAIChat("gpt-4o-mini", api_key="sk-test").structured_output is True
    assert OpenAIChat("gpt-4o-mini", base_url="https://api.openai.com/v1", api_key="sk").structured_output is True
    assert OpenAIChat("llama3", base_url="http://localhost:11434/v1").structured_output is False
    assert OpenAIChat("x", base_url="http://api.openai.com.evil.example/v1").structured_output is False


def test_a_server_whose_settings_say_so_gets_a_strict_schema(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = REPLY
    plain = {"model": "fake", "base_url": openai_server.url, "api_key": "sk-test"}
    res = run([ROW], ["groundedness"], judge=plain)
    assert "response_format" not in openai_server.requests[-1].params
    assert res.scores.loc[res.scores["metric"] == "groundedness", "value"].tolist() == [1.0]

    res = run([ROW], ["groundedness"], judge={**plain, "structured_output": True})
    params = openai_server.requests[-1].params
    fmt = params["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    schema = fmt["json_schema"]["schema"]
    assert schema["properties"]["rating"] == {"type": "string", "enum": ["yes", "no"]}
    assert schema["required"] == ["rationale", "rating"] and schema["additionalProperties"] is False
    assert "maxLength" not in json.dumps(fmt) and "max_tokens" not in params  # a hosted judge's tokens are its own
    assert res.scores.loc[res.scores["metric"] == "groundedness", "value"].tolist() == [1.0]


def test_a_server_that_refuses_the_schema_is_asked_without_it_and_no_row_is_lost(
    openai_server: FakeOpenAIServer,
) -> None:
    openai_server.reply = REPLY
    openai_server.push(Status(400, "response_format json_schema is not supported"))
    judge = {"model": "fake", "base_url": openai_server.url, "api_key": "sk-test", "structured_output": True}
    rows = [{**ROW, "key": f"k{i}"} for i in range(3)]
    res = run(rows, ["groundedness"], judge=judge, concurrency=1)
    s = res.scores[res.scores["metric"] == "groundedness"]
    assert s["value"].tolist() == [1.0, 1.0, 1.0] and s["error"].isna().all()
    sent = [("response_format" in r.params) for r in openai_server.requests]
    assert sent == [True, False, False, False]  # refused once; asked again without; never sent again


def test_a_response_format_given_in_judge_params_wins(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = REPLY
    judge = {"model": "fake", "base_url": openai_server.url, "api_key": "sk-test", "structured_output": True}
    ev = nbeval.evaluator("groundedness", judge_params={"response_format": {"type": "json_object"}})
    run([ROW], [ev], judge=judge)
    assert openai_server.requests[-1].params["response_format"] == {"type": "json_object"}


def test_a_batch_sends_its_requests_unshaped(tmp_path: Any) -> None:
    # a Batch API that refused the format would fail every line; a live call is asked again without it
    from tests.support.fake_batch import FakeBatchServer

    with FakeBatchServer(REPLY, delay=0.05) as server:
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-test", "structured_output": True}
        rows = [{**ROW, "key": f"k{i}", "input": f"{ROW['input']} ({i})"} for i in range(3)]
        res = nbeval.evaluate(
            rows,
            ["groundedness"],
            judge=judge,
            batch=True,
            batch_poll_s=0.05,
            cache=tmp_path / "c.sqlite",
            progress=False,
        )
        assert server.batch_creates == 1 and len(server.batch_lines) == 3
        assert not any("response_format" in line.params for line in server.batch_lines)
    assert res.scores.loc[res.scores["metric"] == "groundedness", "value"].tolist() == [1.0, 1.0, 1.0]
