"""The conversation view: turns numbered, tool calls linked to their results, everything escaped,
and the CaseExplorer showing each model's conversation (rows without one render as before)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import nbeval
from nbeval.data.model import Row
from nbeval.widgets.case_view import case_html
from nbeval.widgets.conversation_view import conversation_html, expected_calls_html, shared_turns
from nbeval.widgets.explorer import CaseExplorer

HOSTILE = "<script>alert('x')</script></details><img src=x onerror=alert(1)>\"q\""


def _call(cid: str, name: str, arguments: Any) -> dict[str, Any]:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


SYSTEM = {"role": "system", "content": "You book flights."}
USER = {"role": "user", "content": "Book the cheapest flight to Oslo."}
AGENT_A: list[dict[str, Any]] = [
    SYSTEM,
    USER,
    {"role": "assistant", "content": "Searching.", "tool_calls": [_call("c1", "search", {"to": "OSL"})]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"flights": ["SK800"]}'},
    {"role": "assistant", "content": None, "tool_calls": [_call("c2", "book", '{"flight": "SK8')]},
    {"role": "tool", "tool_call_id": "c2", "name": "book", "content": "booked"},
    {"role": "assistant", "content": "done"},
]
AGENT_B: list[dict[str, Any]] = [
    SYSTEM,
    USER,
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call("x1", "search", {"to": "Oslo"}), _call("x2", "weather", {"city": "Oslo"})],
    },
    {"role": "tool", "tool_call_id": "x1", "content": "SK800"},
    {"role": "tool", "tool_call_id": "nope", "content": "stray"},
    {"role": "assistant", "content": "SK800 it is"},
]
EXPECTED = [{"name": "search", "arguments": {"to": "OSL"}}, {"name": "book", "arguments": {"flight": "SK800"}}]


def _turns(html: str) -> list[tuple[int, str]]:
    return [(int(n), role) for n, role in re.findall(r'data-message="(\d+)" data-role="(\w+)"', html)]


def _no_markup(html: str) -> None:
    """No tag of the data survived: every <details> / </details> is one of the view's own."""
    assert not re.search(r"<\s*(script|img)", html, re.IGNORECASE)
    assert html.count("<details") == html.count("</details>")


# -- the view --------------------------------------------------------------------------------------


def test_one_numbered_turn_per_message_with_its_role():
    html = conversation_html(AGENT_A)
    assert _turns(html) == [
        (1, "system"),
        (2, "user"),
        (3, "assistant"),
        (4, "tool"),
        (5, "assistant"),
        (6, "tool"),
        (7, "assistant"),
    ]
    assert ">Book the cheapest flight to Oslo.</div>" in html
    assert html.count('class="nbeval-call"') == 2 and html.count('class="nbeval-result"') == 2


def test_calls_and_results_are_linked_by_id():
    html = conversation_html(AGENT_A)
    call = re.search(r'data-call-id="c1" data-call="1".*?</summary>', html, re.S)
    assert call is not None and "→ result in message 4" in call.group(0)
    result = re.search(r'data-answers="c1".*?</summary>', html, re.S)
    assert result is not None
    assert "result of call 1</b> · <code>search</code>" in result.group(0) and "made in message 3" in result.group(0)
    assert re.search(r'data-answers="c2".*?result of call 2</b> · <code>book</code>.*?made in message 5', html, re.S)


def test_arguments_pretty_printed_and_broken_json_shown_as_written_and_flagged():
    html = conversation_html(AGENT_A)
    assert "{\n  &quot;to&quot;: &quot;OSL&quot;\n}" in html  # pretty-printed
    assert "{&quot;flight&quot;: &quot;SK8" in html  # as written
    assert html.count("arguments are not valid JSON") == 1
    assert "{\n  &quot;flights&quot;: [\n" in html  # a JSON result pretty-printed too


def test_unanswered_calls_and_stray_results_are_flagged():
    html = conversation_html(AGENT_B)
    assert re.search(r'data-call-id="x2" data-call="2".*?no result</span>', html, re.S)
    assert "answers no earlier call (id nope)" in html
    assert "result of call 1</b> · <code>search</code>" in html


def test_start_and_stop_keep_the_conversation_numbers():
    tail = conversation_html(AGENT_A, start=4)
    assert _turns(tail) == [(5, "assistant"), (6, "tool"), (7, "assistant")]
    assert 'data-call="2"' in tail and "made in message 5" in tail  # numbering from the whole conversation
    assert _turns(conversation_html(AGENT_A, stop=2)) == [(1, "system"), (2, "user")]
    capped = conversation_html(AGENT_A, max_messages=3)
    assert len(_turns(capped)) == 3 and "… and 4 more messages" in capped


def test_long_texts_are_folded_and_cut():
    text = "oslo " * 400
    html = conversation_html([{"role": "user", "content": text}], fold_chars=100)
    assert '<details class="nbeval-fold">' in html and "more characters" in html
    assert html.count("oslo") == 400  # folded, not lost
    lines = "\n".join(f"line {i}" for i in range(40))
    html = conversation_html([{"role": "assistant", "content": lines}])
    head = html.split('<details class="nbeval-fold">')[0]
    assert "line 11" in head and "line 12" not in head
    cut = conversation_html([{"role": "user", "content": "x" * 10_000}], max_chars=500)
    assert cut.count("x") < 1000 and "10,000" in cut


def test_everything_is_escaped():
    messages = [
        {"role": "system", "content": HOSTILE},
        {"role": "user", "content": HOSTILE, "name": HOSTILE},
        {
            "role": "assistant",
            "content": HOSTILE,
            "tool_calls": [_call(HOSTILE, HOSTILE, {"q": HOSTILE}), _call("b", "t", HOSTILE)],
        },
        {"role": "tool", "tool_call_id": HOSTILE, "name": HOSTILE, "content": HOSTILE},
        {"role": "tool", "tool_call_id": "b", "content": json.dumps({"x": HOSTILE})},
    ]
    html = conversation_html(messages)
    _no_markup(html)
    assert html.count('class="nbeval-call"') == 2 and html.count('class="nbeval-result"') == 2
    assert "&lt;/details&gt;" in html and "&quot;q&quot;" in html
    assert 'data-call-id="&lt;script&gt;' in html  # attribute values escaped, quotes included
    assert "result of call 1" in html  # the hostile id still links its result
    listed = expected_calls_html([{"name": HOSTILE, "arguments": {HOSTILE: HOSTILE}}])
    _no_markup(listed)
    assert "&lt;script&gt;" in listed


def test_expected_calls_listed_with_their_arguments():
    html = expected_calls_html(EXPECTED)
    assert html.count('class="nbeval-expected-call"') == 2
    assert "<code>search</code>" in html and "{\n  &quot;flight&quot;: &quot;SK800&quot;\n}" in html


def test_shared_turns_stop_at_the_last_user_message():
    a = Row(input=None, messages=AGENT_A, model_key="a")
    b = Row(input=None, messages=AGENT_B, model_key="b")
    plain = Row(input="hi", model_key="c")
    assert shared_turns([a, b, plain]) == 2
    assert shared_turns([a]) == 2
    assert shared_turns([plain]) == 0
    other = Row(input=None, messages=[{"role": "user", "content": "something else"}], model_key="d")
    assert shared_turns([a, other]) == 0


# -- in the CaseExplorer ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def talk_result() -> nbeval.EvaluationResult:
    records = [
        {
            "key": "book",
            "messages": AGENT_A,
            "expected_output": "done",
            "model_key": "a",
            "expected_tool_calls": EXPECTED,
        },
        {
            "key": "book",
            "messages": AGENT_B,
            "expected_output": "done",
            "model_key": "b",
            "expected_tool_calls": EXPECTED,
        },
        {"key": "sum", "input": "What is 2+2?", "expected_output": "4", "actual_output": "4", "model_key": "a"},
        {"key": "sum", "input": "What is 2+2?", "expected_output": "4", "actual_output": "four", "model_key": "b"},
    ]
    return nbeval.evaluate(records, ["exact_match"], progress=False)


def test_the_explorer_shows_each_models_conversation_above_its_verdicts(talk_result):
    explorer = CaseExplorer(talk_result)
    assert explorer.key == "book"
    html = explorer.detail.value
    fields, table = html.split('<div style="overflow-x:auto">', 1)
    assert ">conversation</th>" in fields and ">prompt</th>" not in fields  # the shared messages, once
    assert _turns(fields) == [(1, "system"), (2, "user")]
    assert ">expected tool calls</th>" in fields and fields.count('class="nbeval-expected-call"') == 2
    row = re.search(r">conversation</th>(.*?)</tr>", table, re.S)
    assert row is not None
    cells = row.group(1).split("<td")[1:]
    assert len(cells) == 2  # one per model
    assert [n for n, _ in _turns(cells[0])] == [3, 4, 5, 6, 7]
    assert [n for n, _ in _turns(cells[1])] == [3, 4, 5, 6]
    assert "messages 1–2: the conversation above" in cells[0]
    assert table.index(">conversation</th>") < table.index(">answer</th>") < table.index(">exact_match.score</th>")
    assert explorer.chart is not None and explorer.chart.spec["datasets"]  # the heatmap draws as ever
    _no_markup(html)


def test_rows_without_messages_render_as_before(talk_result, small_result):
    explorer = CaseExplorer(talk_result, show_heatmap=False)
    explorer.case_choice.value = "sum"
    html = explorer.detail.value
    assert ">prompt</th>" in html and "What is 2+2?" in html
    assert "nbeval-turn" not in html and ">conversation</th>" not in html and "expected tool calls" not in html
    for key in ("capital", "sum", "colour", "river"):
        assert "nbeval-conversation" not in case_html(small_result, key)


def test_a_model_without_a_conversation_beside_one_with(talk_result):
    rows = {
        "book": [
            next(r for r in talk_result.dataset.rows if r.key == "book" and r.model_key == "a"),
            Row(input="Book the cheapest flight to Oslo.", key="book", model_key="b", actual_output="SK800"),
        ]
    }
    html = case_html(talk_result, "book", rows=rows)
    assert "no conversation" in html and _turns(html)[:2] == [(1, "system"), (2, "user")]
