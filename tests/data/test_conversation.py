"""Rows that carry a conversation: the shapes read, what a row derives from it, files and errors.

Golden values are written by hand from the OpenAI chat format; the LangChain and ragas forms are
produced by those libraries themselves (``messages_to_dict``, ragas's message models), so a change
in what they write shows here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.data.conversation import (
    check_messages,
    check_tool_calls,
    earlier_turns,
    final_answer,
    render_messages,
    tool_call_arguments,
    tool_calls_made,
)
from nbeval.data.model import LlmDataset
from nbeval.data.readers import load
from nbeval.data.rows import Row
from nbeval.errors import DataError
from nbeval.results.storage.fingerprint import dataset_fingerprint

CALL: dict[str, Any] = {
    "id": "c1",
    "type": "function",
    "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
}
AGENT: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a travel assistant."},
    {"role": "user", "content": "Will it rain in Paris?"},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "rain, 14 C"},
    {"role": "assistant", "content": "Yes, take an umbrella."},
]


def test_a_row_from_messages_takes_its_input_and_answer_from_them() -> None:
    row = Row.from_record({"messages": AGENT, "expected_tool_calls": [{"name": "weather", "args": {"city": "Paris"}}]})
    assert row.input == "Will it rain in Paris?"
    assert row.actual_output == "Yes, take an umbrella."
    assert row.messages == AGENT
    assert row.expected_tool_calls == [{"name": "weather", "arguments": {"city": "Paris"}}]
    assert row.to_json()["messages"] == AGENT


def test_given_input_and_answer_are_kept() -> None:
    row = Row.from_record({"messages": AGENT, "input": "q", "actual_output": "a"})
    assert (row.input, row.actual_output) == ("q", "a")


def test_a_conversation_waiting_for_its_reply_has_no_answer() -> None:
    waiting = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Book a table."},
    ]
    row = Row(input=None, messages=waiting)
    assert row.input == "Book a table."
    assert row.actual_output is None  # the earlier "Hello!" answered another message
    assert earlier_turns(waiting) == waiting[:2]
    assert final_answer(waiting) is None


def test_every_model_answering_one_conversation_shares_its_key() -> None:
    given = AGENT[:2]
    a = Row(input=None, model_key="a", messages=[*given, {"role": "assistant", "content": "Yes."}])
    b = Row(input=None, model_key="b", messages=[*given, {"role": "assistant", "content": "No."}])
    other_system = [{"role": "system", "content": "You are a pirate."}, given[1]]
    c = Row(input=None, messages=[*other_system, {"role": "assistant", "content": "Arr."}])
    assert a.key == b.key
    assert c.key != a.key  # the same question after another system message is another case
    # one user message and nothing before it: the key of the plain prompt
    assert Row(input=None, messages=[given[1]]).key == Row(input=given[1]["content"]).key


def test_langchain_messages_are_read_in_the_openai_shape() -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, messages_to_dict

    lc = [
        SystemMessage("You are a travel assistant."),
        HumanMessage("Will it rain in Paris?"),
        AIMessage("", tool_calls=[{"name": "weather", "args": {"city": "Paris"}, "id": "c1"}]),
        ToolMessage("rain, 14 C", tool_call_id="c1"),
        AIMessage("Yes, take an umbrella."),
    ]
    read = check_messages(messages_to_dict(lc), "test", 1)
    assert [m["role"] for m in read] == ["system", "user", "assistant", "tool", "assistant"]
    assert read[2]["tool_calls"][0]["function"]["name"] == "weather"
    assert json.loads(read[2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert read[3]["tool_call_id"] == "c1"
    assert read[4]["content"] == "Yes, take an umbrella."
    # LangGraph's message dicts ({"type": "human", "content": ...}) too
    assert check_messages([{"type": "human", "content": "hi"}], "t", 1) == [{"role": "user", "content": "hi"}]


def test_a_ragas_multi_turn_sample_reads_as_a_row() -> None:
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

    sample = {
        "user_input": [
            HumanMessage(content="Will it rain in Paris?").model_dump(),
            AIMessage(content="", tool_calls=[ToolCall(name="weather", args={"city": "Paris"})]).model_dump(),
            ToolMessage(content="rain").model_dump(),
            AIMessage(content="Yes.").model_dump(),
        ],
        "reference": "Says it will rain.",
        "reference_tool_calls": [ToolCall(name="weather", args={"city": "Paris"}).model_dump()],
        "reference_topics": ["weather"],
    }
    row = Row.from_record(sample)
    assert row.input == "Will it rain in Paris?"
    assert row.actual_output == "Yes."
    assert row.expected_output == "Says it will rain."
    assert row.expected_tool_calls == [{"name": "weather", "arguments": {"city": "Paris"}}]
    assert row.reference_topics == ["weather"]
    assert tool_calls_made(row.messages)[0]["function"]["name"] == "weather"


def test_an_agent_eval_chat_request_keeps_the_whole_conversation() -> None:
    rec = {
        "request": {"messages": AGENT[:2], "temperature": 0},
        "response": "Yes.",
        "request_id": "r1",
    }
    row = Row.from_record(rec)
    assert row.key == "r1"
    assert row.input == "Will it rain in Paris?"
    assert row.actual_output == "Yes."
    assert row.messages == [*AGENT[:2], {"role": "assistant", "content": "Yes."}]
    assert row.extra == {"request_params": {"temperature": 0}}


def test_content_parts_keep_their_text() -> None:
    parts = [
        {"type": "text", "text": "Look"},
        {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "here"},
    ]
    assert check_messages([{"role": "user", "content": parts}], "t", 1)[0]["content"] == "Look\n\nhere"


def test_broken_arguments_of_a_model_are_kept_and_flagged() -> None:
    broken = {"id": "c9", "type": "function", "function": {"name": "f", "arguments": '{"city": "Par'}}
    msgs = check_messages(
        [{"role": "user", "content": "q"}, {"role": "assistant", "content": None, "tool_calls": [broken]}], "t", 1
    )
    call = tool_calls_made(msgs)[0]
    assert call["function"]["arguments"] == '{"city": "Par'
    assert tool_call_arguments(call) == ({}, False)
    assert tool_call_arguments(CALL) == ({"city": "Paris"}, True)


@pytest.mark.parametrize(
    ("value", "field", "words"),
    [
        ([{"role": "robot", "content": "x"}], "messages[1].role", "unknown role"),
        (["hello"], "messages[1]", "must be an object"),
        ([{"role": "user", "content": 5}], "messages[1].content", "must be text"),
        (
            [{"role": "assistant", "content": None, "tool_calls": [{"function": {"arguments": "{}"}}]}],
            "messages[1].tool_calls[1].function.name",
            "tool's name",
        ),
        ("not json", "messages", "must be a list"),
    ],
)
def test_bad_messages_name_the_file_row_and_field(value: Any, field: str, words: str) -> None:
    with pytest.raises(DataError) as err:
        Row.from_record({"input": "q", "messages": value}, source="chats.jsonl", row=7)
    assert err.value.field == field
    assert "chats.jsonl" in str(err.value) and "7" in str(err.value)
    assert words in str(err.value)


def test_bad_reference_calls_are_refused() -> None:
    with pytest.raises(DataError, match="not valid JSON") as err:
        check_tool_calls([{"name": "f", "arguments": "{oops"}], "ref.json", 2)
    assert err.value.field == "expected_tool_calls[1].arguments"
    with pytest.raises(DataError, match="JSON object"):
        check_tool_calls([{"name": "f", "arguments": [1, 2]}], "ref.json", 2)
    # the OpenAI shape is read too
    assert check_tool_calls([{"type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}], "r", 1) == [
        {"name": "f", "arguments": {"a": 1}}
    ]


def test_a_row_without_a_user_message_or_input_is_refused() -> None:
    with pytest.raises(DataError, match="user message") as err:
        Row.from_record({"messages": [{"role": "assistant", "content": "hi"}]}, source="s", row=3)
    assert err.value.field == "input"


def test_conversations_survive_jsonl_csv_and_a_saved_result(tmp_path: Path) -> None:
    rows = [
        {"key": "k1", "model_key": "m", "messages": AGENT, "reference_topics": ["weather"]},
        {"key": "k2", "model_key": "m", "input": "plain", "actual_output": "row"},
    ]
    path = tmp_path / "chats.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    ds = load(path)
    assert isinstance(ds, LlmDataset)
    assert ds.rows[0].messages == AGENT and ds.rows[1].messages == []
    csv_path = tmp_path / "chats.csv"
    ds.to_csv(csv_path)
    again = LlmDataset.from_json(csv_path)
    assert [r.messages for r in again.rows] == [AGENT, []]
    assert again.rows[0].reference_topics == ["weather"]
    result = nbeval.evaluate(ds, evaluators=["exact_match"], progress=False)
    result.save(tmp_path / "saved")
    loaded = nbeval.load_result(tmp_path / "saved")
    assert [r.to_json() for r in loaded.dataset.rows] == [r.to_json() for r in ds.rows]


def test_the_fingerprint_sees_a_changed_message_and_ignores_no_conversation() -> None:
    plain = LlmDataset([Row(input="q", key="k", actual_output="a")])
    same = LlmDataset([Row(input="q", key="k", actual_output="a")])
    assert dataset_fingerprint(plain) == dataset_fingerprint(same)
    one = LlmDataset([Row(input=None, key="k", messages=AGENT)])
    changed = [*AGENT[:-1], {"role": "assistant", "content": "No umbrella needed."}]
    other = LlmDataset([Row(input=None, key="k", messages=changed, actual_output="Yes, take an umbrella.")])
    assert dataset_fingerprint(one) != dataset_fingerprint(other)


def test_render_names_tool_results_by_their_call() -> None:
    text = render_messages(AGENT, numbered=True)
    assert '[3] assistant:\n  calls weather({"city": "Paris"})' in text
    assert "[4] tool (result of weather): rain, 14 C" in text
