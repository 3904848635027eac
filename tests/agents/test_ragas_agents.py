"""The ragas-backed agent evaluators give ragas's own numbers (issue 31).

Random conversations (fixed seeds: tool names, nested arguments, orders, missing, extra and repeated
calls, broken JSON arguments, system messages, refusals) are scored through ``nbeval.evaluate`` and
by ragas's metric classes called directly on ragas message objects the test builds itself. The
judge-backed two run against the loopback server answering with the stand-in judge, ragas's own
client on the same server, as tests/ragas do.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import random
import subprocess
import sys
import warnings
from typing import Any, Literal

import pandas as pd
import pytest

import nbeval
from nbeval.errors import EvaluatorError
from nbeval.evaluators.agents.ragas_agents import BROKEN_ARGUMENTS
from tests.ragas.conftest import bodies, judge_for, ragas_llm, standin_server_reply
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

TOOLS = ["get_weather", "search_flights", "book_table", "convert_currency", "lookup_user"]
ARG_NAMES = ["city", "date", "limit", "filters", "query", "units", "party", "tags"]
WORDS = ["paris", "lyon", "rain", "sun", "cheap", "fast", "window", "vegan", "euro", "yen"]
TOOL_CALL_EVALUATORS: list[Any] = [
    ("tool_call_accuracy", {"name": "strict"}),
    ("tool_call_accuracy", {"strict_order": False, "name": "any_order"}),
    "tool_call_f1",
]


# -- random conversations, written both ways ---------------------------------------------------


def _value(rng: random.Random, depth: int = 0) -> Any:
    kinds = ["str", "int", "float", "bool", "none"] + (["list", "dict"] if depth < 2 else [])
    kind = rng.choice(kinds)
    if kind == "str":
        return rng.choice(WORDS)
    if kind == "int":
        return rng.randint(0, 3)
    if kind == "float":
        return rng.choice([0.5, 1.0, 2.25])
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "none":
        return None
    if kind == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {k: _value(rng, depth + 1) for k in rng.sample(ARG_NAMES, rng.randint(1, 3))}


def _call(rng: random.Random) -> dict[str, Any]:
    return {"name": rng.choice(TOOLS), "arguments": {k: _value(rng) for k in rng.sample(ARG_NAMES, rng.randint(0, 3))}}


def _made_from(rng: random.Random, expected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls a model made for ``expected``: mostly right, with every kind of mistake."""
    made = []
    for call in expected:
        if rng.random() < 0.1:  # a call missed
            continue
        out = copy.deepcopy(call)
        mistake = rng.choice(["none", "none", "none", "value", "drop", "extra", "tool"])
        if mistake == "value" and out["arguments"]:
            out["arguments"][rng.choice(list(out["arguments"]))] = _value(rng)
        elif mistake == "drop" and out["arguments"]:
            del out["arguments"][rng.choice(list(out["arguments"]))]
        elif mistake == "extra":
            out["arguments"]["note"] = rng.choice(WORDS)
        elif mistake == "tool":
            out["name"] = rng.choice(TOOLS)
        made.append(out)
    if rng.random() < 0.2:  # a call not expected
        made.insert(rng.randint(0, len(made)), _call(rng))
    if made and rng.random() < 0.15:  # a call repeated
        made.append(copy.deepcopy(rng.choice(made)))
    if rng.random() < 0.3:
        rng.shuffle(made)
    for out in made:
        if rng.random() < 0.12:  # arguments that are not a JSON object, as the model wrote them
            text = json.dumps(out["arguments"])
            out["raw"] = rng.choice([text[:-1], "[1, 2]", f"{rng.choice(ARG_NAMES)}={rng.choice(WORDS)}", "null"])
    return made


def _conversation(rng: random.Random, made: list[dict[str, Any]], final: str, question: str) -> tuple[list, list]:
    """``(OpenAI chat messages, ragas messages)`` of one conversation making the calls ``made``."""
    from ragas.messages import AIMessage, HumanMessage, ToolCall, ToolMessage

    chat: list[dict[str, Any]] = []
    theirs: list[Any] = []
    if rng.random() < 0.4:  # ragas has no system message: nbeval leaves it out
        chat.append({"role": "system", "content": "You are a travel assistant. Use the tools."})
    chat.append({"role": "user", "content": question})
    theirs.append(HumanMessage(content=question))
    i = 0
    while i < len(made):
        turn = made[i : i + rng.randint(1, 3)]
        i += len(turn)
        text = rng.choice([None, "", "Let me check."])
        calls = [
            {
                "id": f"call_{i}_{j}",
                "type": "function",
                "function": {"name": c["name"], "arguments": c.get("raw") or json.dumps(c["arguments"])},
            }
            for j, c in enumerate(turn)
        ]
        chat.append({"role": "assistant", "content": text, "tool_calls": calls})
        args = [{BROKEN_ARGUMENTS: c["raw"]} if "raw" in c else c["arguments"] for c in turn]
        theirs.append(
            AIMessage(
                content=text or "",
                tool_calls=[ToolCall(name=c["name"], args=a) for c, a in zip(turn, args, strict=True)],
            )
        )
        for call in calls:
            result = rng.choice(["done", "no results", None])
            chat.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            theirs.append(ToolMessage(content=result or ""))
    chat.append({"role": "assistant", "content": final})
    theirs.append(AIMessage(content=final))
    return chat, theirs


def _tool_rows(seed: int, n: int) -> tuple[list[dict[str, Any]], dict[str, tuple[list, list]]]:
    """``n`` rows with expected and made calls, and per key what ragas is given directly."""
    from ragas.messages import ToolCall

    rng = random.Random(seed)
    rows, direct_inputs = [], {}
    for k in range(n):
        expected = [_call(rng) for _ in range(rng.randint(1, 4))]
        made = _made_from(rng, expected)
        chat, theirs = _conversation(rng, made, "Here is what I found.", f"Plan trip {k}.")
        key = f"r{k}"
        rows.append({"key": key, "model_key": "m", "messages": chat, "expected_tool_calls": expected})
        direct_inputs[key] = (theirs, [ToolCall(name=c["name"], args=c["arguments"]) for c in expected])
    return rows, direct_inputs


def _run_directly(pairs: list[tuple[Any, dict[str, Any]]]) -> list[float]:
    """ragas's value of each (metric, inputs), one after another in one event loop (ragas's async
    client belongs to the loop it first ran in)."""

    async def run() -> list[float]:
        return [float((await metric.ascore(**inputs)).value) for metric, inputs in pairs]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # ragas warns when the call counts differ
        return asyncio.run(run())


def _made_calls(messages: list[Any]) -> list[Any]:
    return [c for m in messages for c in (getattr(m, "tool_calls", None) or ())]


def _values(result: Any) -> dict[tuple[str, str], float]:
    return {(r.evaluator, r.key): r.value for r in result.scores.itertuples()}


# -- the rule-based two ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [31, 3131])
def test_tool_call_metrics_equal_ragas_on_random_conversations(seed: int) -> None:
    from ragas.metrics.collections import ToolCallAccuracy, ToolCallF1

    rows, direct_inputs = _tool_rows(seed, 80)
    got = _values(nbeval.evaluate(rows, TOOL_CALL_EVALUATORS, cache=False, progress=False))
    metrics = {
        "strict": ToolCallAccuracy(),
        "any_order": ToolCallAccuracy(strict_order=False),
        "tool_call_f1": ToolCallF1(),
    }
    for name, metric in metrics.items():
        pairs = [(metric, {"user_input": m, "reference_tool_calls": e}) for m, e in direct_inputs.values()]
        expected = dict(zip(direct_inputs, _run_directly(pairs), strict=True))
        for key, value in expected.items():
            assert got[(name, key)] == value, (name, key)
        spread = list(expected.values())
        # the random rows reach every kind of outcome, so the comparison is not a trivial one
        assert 0.0 in spread and 1.0 in spread and any(0 < v < 1 for v in spread), (name, sorted(spread))
    assert any(got[("strict", k)] != got[("any_order", k)] for k in direct_inputs)
    broken = [k for k, (m, _) in direct_inputs.items() if any(BROKEN_ARGUMENTS in c.args for c in _made_calls(m))]
    assert broken and all(got[("tool_call_f1", k)] < 1 for k in broken)


def test_broken_arguments_are_a_call_to_the_tool_whose_arguments_match_nothing() -> None:
    from ragas.messages import AIMessage, HumanMessage, ToolCall
    from ragas.metrics.collections import ToolCallAccuracy

    call = {"id": "c1", "type": "function", "function": {"name": "refresh", "arguments": '{"force": tr'}}
    row = {
        "key": "k",
        "messages": [
            {"role": "user", "content": "Refresh it."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
        ],
        "expected_tool_calls": [{"name": "refresh", "arguments": {}}],
    }
    table = nbeval.evaluate([row], TOOL_CALL_EVALUATORS, cache=False, progress=False).scores.set_index("evaluator")
    # read as "no arguments" the call would be a perfect match; it is a model's mistake, so 0
    assert table.loc["strict", "value"] == 0.0 and table.loc["tool_call_f1", "value"] == 0.0
    as_empty = [
        HumanMessage(content="Refresh it."),
        AIMessage(content="", tool_calls=[ToolCall(name="refresh", args={})]),
    ]
    assert _run_directly(
        [(ToolCallAccuracy(), {"user_input": as_empty, "reference_tool_calls": [ToolCall(name="refresh", args={})]})]
    ) == [1.0]
    rationale = table.loc["strict", "rationale"]
    assert "calls refresh with arguments that are not a JSON object ('{\"force\": tr')" in rationale
    assert "tools called: refresh; expected: refresh: the expected ones" in rationale
    details = json.loads(table.loc["strict", "details"])
    assert details["made"] == [{"name": "refresh", "arguments": {BROKEN_ARGUMENTS: '{"force": tr'}}]


def test_strict_order_changes_the_value_and_the_rationale_says_what_matched() -> None:
    calls = [("get_weather", {"city": "Paris", "units": "C"}), ("book_table", {"party": 2})]
    made = [calls[1], ("get_weather", {"city": "Paris", "units": "F", "days": 3})]
    row = {
        "key": "k",
        "messages": [
            {"role": "user", "content": "Weather, then a table."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                    for i, (n, a) in enumerate(made)
                ],
            },
            {"role": "assistant", "content": "Done."},
        ],
        "expected_tool_calls": [{"name": n, "arguments": a} for n, a in calls],
    }
    table = nbeval.evaluate([row], TOOL_CALL_EVALUATORS, cache=False, progress=False).scores.set_index("evaluator")
    # in order: the tools come in the wrong order, so 0; in any order: book_table 1/1, get_weather 1/2
    assert table.loc["strict", "value"] == 0.0
    assert table.loc["any_order", "value"] == pytest.approx(0.75)
    assert table.loc["tool_call_f1", "value"] == 0.5  # one of two matched each way
    strict, any_order = table.loc["strict", "rationale"], table.loc["any_order", "rationale"]
    assert "not the expected ones: the score is 0 whatever the arguments" in strict
    assert "✗ expected get_weather(" in strict and "another tool" in strict
    assert "✓ book_table(party=2): 1 of 1 argument(s) match" in any_order
    assert '✗ get_weather(city="Paris", units="C"): 1 of 2 argument(s) match (units: "F" for "C")' in any_order
    assert "not expected, not counted: days" in any_order
    f1 = table.loc["tool_call_f1", "rationale"]
    assert "✓ made and expected: 1\n    - book_table(party=2)" in f1
    assert '✗ expected, not made: 1\n    - get_weather(city="Paris", units="C")' in f1


# -- the judge-backed two ----------------------------------------------------------------------

GOALS = [
    "Book a table for two at a vegan restaurant in Paris",
    "Find a cheap flight from Lyon to Rome next Friday",
    "Convert one hundred euros into Japanese yen",
    "Tell me the weather forecast for Berlin tomorrow",
]
TOPICS = {
    "weather": "What is the weather in Paris today",
    "cooking pasta": "How long should I cook pasta",
    "bitcoin price": "What is the bitcoin price now",
    "physics": "Explain quantum physics simply",
    "football": "Who won the football match yesterday",
}
REFUSAL = "Sorry, I can't help with that."


def _goal_rows(seed: int, n: int) -> tuple[list[dict[str, Any]], dict[str, tuple[list, str | None]]]:
    rng = random.Random(seed)
    rows, direct_inputs = [], {}
    for k in range(n):
        goal = rng.choice(GOALS)
        made = _made_from(rng, [_call(rng) for _ in range(rng.randint(0, 2))])
        final = rng.choice([f"Done: {goal.lower()}.", REFUSAL, "I found nothing, please try later.", goal])
        chat, theirs = _conversation(rng, made, final, goal)
        row: dict[str, Any] = {"key": f"g{k}", "model_key": "m", "messages": chat}
        reference = rng.choice([None, goal, rng.choice(GOALS), "The user received an apology."])
        if reference:
            row["expected_output"] = reference
        rows.append(row)
        direct_inputs[row["key"]] = (theirs, reference)
    return rows, direct_inputs


def test_agent_goal_accuracy_equals_ragas_with_and_without_a_reference(tmp_path: Any) -> None:
    from ragas.metrics.collections import AgentGoalAccuracyWithoutReference, AgentGoalAccuracyWithReference

    rows, direct_inputs = _goal_rows(7, 24)
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        llm = ragas_llm(server)
        with_ref, without_ref = AgentGoalAccuracyWithReference(llm=llm), AgentGoalAccuracyWithoutReference(llm=llm)
        pairs = [
            (with_ref, {"user_input": m, "reference": ref}) if ref else (without_ref, {"user_input": m})
            for m, ref in direct_inputs.values()
        ]
        expected = dict(zip(direct_inputs, _run_directly(pairs), strict=True))
        sent_directly = set(bodies(server))
        server.requests.clear()
        result = nbeval.evaluate(
            rows, ["agent_goal_accuracy"], judge=judge_for(server), cache=tmp_path / "cache", progress=False
        )
        sent_by_nbeval = set(bodies(server))
    got = {k: v for (_, k), v in _values(result).items()}
    assert got == expected
    assert set(expected.values()) == {0.0, 1.0}
    # with and without a reference both occur, and both reach either verdict
    both = {(ref is None, expected[k]) for k, (_, ref) in direct_inputs.items()}
    assert both == {(True, 0.0), (True, 1.0), (False, 0.0), (False, 1.0)}
    # the judge saw the very same requests (one run sends a request asked twice once)
    assert sent_by_nbeval == sent_directly
    table = result.scores.set_index("key")
    no_ref = next(k for k, (_, ref) in direct_inputs.items() if ref is None)
    assert "the desired outcome is the goal the judge states" in table.loc[no_ref, "rationale"]
    assert "[the user's goal and the end state the judge read from the conversation]" in table.loc[no_ref, "rationale"]


def _topic_rows(seed: int, n: int) -> tuple[list[dict[str, Any]], dict[str, tuple[list, list[str]]]]:
    from ragas.messages import AIMessage, HumanMessage

    rng = random.Random(seed)
    rows, direct_inputs = [], {}
    for k in range(n):
        chat: list[dict[str, Any]] = []
        theirs: list[Any] = []
        if rng.random() < 0.5:
            chat.append({"role": "system", "content": "Only talk about weather and physics."})
        for topic in rng.sample(list(TOPICS), rng.randint(1, 3)):
            question = TOPICS[topic]
            answer = REFUSAL if rng.random() < 0.35 else f"Here is an answer about {topic}."
            chat += [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]
            theirs += [HumanMessage(content=question), AIMessage(content=answer)]
        reference = rng.sample(list(TOPICS), rng.randint(1, 3))
        rows.append({"key": f"t{k}", "model_key": "m", "messages": chat, "reference_topics": reference})
        direct_inputs[f"t{k}"] = (theirs, reference)
    return rows, direct_inputs


def test_topic_adherence_equals_ragas_in_each_mode(tmp_path: Any) -> None:
    from ragas.metrics.collections import TopicAdherence

    rows, direct_inputs = _topic_rows(11, 20)
    modes: list[Literal["precision", "recall", "f1"]] = ["precision", "recall", "f1"]
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        llm = ragas_llm(server)
        pairs = [
            (TopicAdherence(llm=llm, mode=mode), {"user_input": m, "reference_topics": ref})
            for mode in modes
            for m, ref in direct_inputs.values()
        ]
        values = iter(_run_directly(pairs))
        expected = {(mode, key): next(values) for mode in modes for key in direct_inputs}
        sent_directly = set(bodies(server))
        server.requests.clear()
        evaluators = [("topic_adherence", {"mode": mode, "name": mode}) for mode in modes]
        result = nbeval.evaluate(rows, evaluators, judge=judge_for(server), cache=tmp_path / "cache", progress=False)
        sent_by_nbeval = set(bodies(server))
    got = _values(result)
    assert got == expected
    for mode in modes:
        spread = [v for (m, _), v in expected.items() if m == mode]
        assert min(spread) < 0.01 and max(spread) > 0.99 and not any(math.isnan(v) for v in spread), mode
    assert sent_by_nbeval == sent_directly
    rationale = result.scores.iloc[0]["rationale"]
    assert "[each topic: answered or refused; within the reference topics or not]" in rationale


def test_a_conversation_without_topics_has_no_topic_adherence_value() -> None:
    # the stand-in judge finds a topic in each non-empty user message: here there is none
    row = {
        "key": "k",
        "input": "(none)",
        "messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": "Hello!"}],
        "reference_topics": ["weather"],
    }
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        score = nbeval.evaluate([row], ["topic_adherence"], judge=judge_for(server), cache=False, progress=False)
        assert server.request_count == 1
    got = score.scores.iloc[0]
    assert pd.isna(got["value"]) and "the judge found no topics in the user's messages" in got["error"]


def test_a_reply_that_never_fits_is_a_parse_failure_not_a_zero() -> None:
    rows, _ = _goal_rows(7, 1)
    with FakeOpenAIServer("The agent did fine.") as server:
        got = nbeval.evaluate(rows, ["agent_goal_accuracy"], judge=judge_for(server), cache=False, progress=False)
        assert server.request_count == 4
    row = got.scores.iloc[0]
    assert pd.isna(row["value"]) and row["label"] == "parse_failure"
    assert "unparsed reply: The agent did fine." in row["rationale"]


# -- rows, runs and parameters -----------------------------------------------------------------


def test_a_row_without_a_conversation_is_not_scored_and_says_why() -> None:
    row = {
        "key": "plain",
        "input": "What is 2 + 2?",
        "actual_output": "4",
        "expected_output": "4",
        "expected_tool_calls": [{"name": "calculator", "arguments": {"expression": "2 + 2"}}],
        "reference_topics": ["arithmetic"],
    }
    ids = ["tool_call_accuracy", "tool_call_f1", "agent_goal_accuracy", "topic_adherence"]
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        table = nbeval.evaluate([row], ids, judge=judge_for(server), cache=False, progress=False).scores
        assert server.request_count == 0
    assert len(table) == 4 and table["value"].isna().all() and table["skipped"].all()
    for reason, id in zip(table["skip_reason"], table["evaluator"], strict=True):
        assert reason.startswith(f"no conversation: {id} reads the row's messages"), reason


def test_a_row_without_expected_calls_or_topics_is_not_scored() -> None:
    rows, _ = _tool_rows(5, 1)
    row = {k: v for k, v in rows[0].items() if k != "expected_tool_calls"}
    table = nbeval.evaluate([row], ["tool_call_accuracy", "tool_call_f1"], progress=False).scores
    assert table["value"].isna().all() and (table["skip_reason"] == "missing expected_tool_calls").all()


def test_a_dry_run_counts_the_judge_calls_and_asks_nothing() -> None:
    rows, _ = _topic_rows(11, 6)
    goal_rows, _ = _goal_rows(7, 6)
    for row, goal in zip(rows, goal_rows, strict=True):
        row["expected_tool_calls"] = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
        row["expected_output"] = goal.get("expected_output")
    ids = ["tool_call_accuracy", "tool_call_f1", "agent_goal_accuracy", "topic_adherence"]
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        plan: Any = nbeval.evaluate(rows, ids, judge=judge_for(server), cache=False, progress=False, dry_run=True)
        assert server.request_count == 0
        nbeval.evaluate(rows, ids, judge=judge_for(server), cache=False, progress=False)
        made = server.request_count
    # goal accuracy: the goal and end state, then the verdict; topic adherence: the topics, one
    # refusal check per topic (a user message each here), the classification
    topics = sum(sum(m["role"] == "user" for m in r["messages"]) for r in rows)
    assert plan.calls_per_row["agent_goal_accuracy"] == 2
    assert plan.calls_per_row["topic_adherence"] == pytest.approx((2 * len(rows) + topics) / len(rows))
    assert "tool_call_accuracy" not in plan.calls_per_row and "tool_call_f1" not in plan.calls_per_row
    assert plan.judge_calls == 2 * len(rows) + 2 * len(rows) + topics == made


def test_bad_parameters_are_refused_with_their_name() -> None:
    with pytest.raises(EvaluatorError, match="strict_order"):
        nbeval.evaluator("tool_call_accuracy", strict_order="yes")
    with pytest.raises(EvaluatorError, match="mode"):
        nbeval.evaluator("topic_adherence", mode="accuracy")


def test_the_goal_evaluator_shows_ragas_prompts_once() -> None:
    from nbeval.evaluators.agents.ragas_agents import AgentGoalAccuracyEvaluator, TopicAdherenceEvaluator

    text = AgentGoalAccuracyEvaluator.prompt_text()
    assert text.count("InferGoalOutcomePrompt") == 1 and text.count("CompareOutcomePrompt") == 1
    assert TopicAdherenceEvaluator.prompt_text().count("[topic_adherence: ") == 3


def test_importing_the_family_imports_no_ragas() -> None:
    code = (
        "import sys, nbeval.evaluators.agents.ragas_agents\n"
        "print(' '.join(m for m in ('ragas', 'instructor', 'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""
