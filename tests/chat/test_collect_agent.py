"""Collecting from an agent: a function returning the messages it produced (issue 31).

The agent below is a plain Python function that calls two tools; what each row must hold is
written out by hand from what the function returns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbeval
from nbeval.data.model import Test, TestCase, TestSuite
from tests.support.fake_openai import FakeOpenAIServer, Text

SUITE = TestSuite(
    name="trips",
    tests=[
        Test(
            test_cases=[
                TestCase("Weather in Paris?", key="paris"),
                TestCase("Weather in Lima?", key="lima"),
            ]
        )
    ],
)
#: How often the agent ran (module level: a closure's log would change its cache fingerprint).
AGENT_RUNS: list[str] = []


def trip_agent(prompt: str) -> list[dict[str, Any]]:
    """Looks the city up, then the weather there, then answers."""
    AGENT_RUNS.append(prompt)
    city = prompt.removeprefix("Weather in ").rstrip("?")
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "1", "type": "function", "function": {"name": "geocode", "arguments": json.dumps({"q": city})}}
            ],
        },
        {"role": "tool", "tool_call_id": "1", "content": "48.8,2.3"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "2", "type": "function", "function": {"name": "forecast", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "2", "content": "rain"},
        {"role": "assistant", "content": f"Rain in {city}."},
    ]


def test_an_agent_s_messages_become_the_rows_conversation(tmp_path: Path) -> None:
    lab = nbeval.collect(SUITE, {"agent": trip_agent}, cache=str(tmp_path / "c.sqlite")).complete(progress=False)
    rows = {r.key: r for r in lab.dataset.rows}
    paris = rows["paris"]
    assert paris.error is None
    assert paris.actual_output == "Rain in Paris."
    assert paris.messages[0] == {"role": "user", "content": "Weather in Paris?"}  # the prompt comes first
    assert [m["role"] for m in paris.messages] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    names = [c["function"]["name"] for m in paris.messages for c in m.get("tool_calls", ())]
    assert names == ["geocode", "forecast"]
    assert rows["lima"].actual_output == "Rain in Lima."
    # a second collection is answered from the cache, conversation included
    AGENT_RUNS.clear()
    again = nbeval.collect(SUITE, {"agent": trip_agent}, cache=str(tmp_path / "c.sqlite")).complete(progress=False)
    assert AGENT_RUNS == []
    assert [r.messages for r in again.dataset.rows] == [r.messages for r in lab.dataset.rows]


def test_an_agent_that_returns_the_whole_conversation_is_not_given_the_prompt_twice() -> None:
    def whole(prompt: str) -> dict[str, Any]:
        return {"messages": [{"role": "user", "content": prompt}, {"role": "assistant", "content": "ok"}]}

    lab = nbeval.collect(SUITE, {"w": whole}, cache=False).complete(progress=False)
    assert [len(r.messages) for r in lab.dataset.rows] == [2, 2]
    assert lab.dataset.rows[0].actual_output == "ok"


def test_a_malformed_message_fails_that_answer_naming_where() -> None:
    def bad(prompt: str) -> list[dict[str, Any]]:
        return [{"role": "robot", "content": "beep"}]

    lab = nbeval.collect(SUITE, {"bad": bad}, cache=False, max_attempts=1).complete(progress=False)
    row = lab.dataset.rows[0]
    assert row.actual_output is None
    assert row.error is not None and "unknown role 'robot'" in row.error and "messages[1].role" in row.error


HISTORY = [
    {"role": "system", "content": "You answer in one word."},
    {"role": "user", "content": "I live in Lima."},
    {"role": "assistant", "content": "Noted."},
]


def _conversation_suite() -> TestSuite:
    case = TestCase("Which city do I live in?", key="where", extra={"messages": HISTORY})
    return TestSuite(tests=[Test(test_cases=[case])])


def test_a_case_with_a_conversation_sends_it_whole_to_a_chat_model(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = Text("Lima.")
    model = {"model": "m", "base_url": openai_server.url, "api_key": "sk-test-000000000000"}
    lab = nbeval.collect(_conversation_suite(), {"m": model}, cache=False, system_prompt="ignored").complete(
        progress=False
    )
    sent = openai_server.requests[0].messages
    assert sent == [*HISTORY, {"role": "user", "content": "Which city do I live in?"}]  # its own system message kept
    row = lab.dataset.rows[0]
    assert row.messages == [*sent, {"role": "assistant", "content": "Lima."}]
    assert (row.input, row.actual_output) == ("Which city do I live in?", "Lima.")


def test_an_agent_may_take_the_conversation_so_far() -> None:
    def remembering(prompt: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        city = messages[1]["content"].removeprefix("I live in ").rstrip(".")
        return [*messages, {"role": "assistant", "content": city}]

    lab = nbeval.collect(_conversation_suite(), {"r": remembering}, cache=False).complete(progress=False)
    row = lab.dataset.rows[0]
    assert row.actual_output == "Lima"
    assert row.messages[:4] == [*HISTORY, {"role": "user", "content": "Which city do I live in?"}]
