"""Token usage a server reports that cannot be true (issue 43, point 6): negative, astronomical, not
a whole number, not a number at all. Such usage is unknown: the call is not priced, the run counts
it (``unknown_usage_calls``), warns once, and the cost shown is a lower bound that says so.

The prices make the sums easy by hand: $1 per 1k prompt tokens and $2 per 1k completion tokens,
so a call of 100 prompt and 50 completion tokens costs 0.1 + 0.1 = $0.20."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat import ChatClient, ChatReply, OpenAIChat
from nbeval.chat.base import Usage
from nbeval.data.fields import DataWarning
from nbeval.results.reporting.report import report_html
from nbeval.results.runs.registry import runs
from tests.support.fake_openai import FakeOpenAIServer, Text

PRICES = {"judge-1": (1.0, 2.0)}
GOOD = {"prompt_tokens": 100, "completion_tokens": 50}
ROWS = [{"key": f"k{i}", "input": f"question {i}?", "actual_output": f"answer {i}"} for i in range(3)]


def client_for(server: FakeOpenAIServer) -> ChatClient:
    return ChatClient(
        OpenAIChat("judge-1", base_url=server.url, api_key="sk-test-usage-0000"), cache=False, prices=PRICES
    )


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -2000, "completion_tokens": 5},  # -2 USD at these prices
        {"prompt_tokens": 2e297, "completion_tokens": 5},  # 2e294 USD
        {"prompt_tokens": 10, "completion_tokens": 1e400},  # JSON's Infinity
        {"prompt_tokens": 10.5, "completion_tokens": 5},  # half a token
        {"prompt_tokens": 10, "completion_tokens": True},  # true is no count
    ],
)
def test_impossible_usage_is_unknown_and_not_priced(openai_server: FakeOpenAIServer, usage: dict[str, Any]) -> None:
    openai_server.reply = Text("ok", usage=usage)
    client = client_for(openai_server)
    with pytest.warns(DataWarning, match="usage unknown"):
        reply = client.chat("q")
    assert reply.text == "ok"  # the reply itself is kept: only its usage is unknown
    assert not reply.usage.known and reply.cost is None
    totals = client.usage_totals()
    assert (totals.calls, totals.unknown_usage_calls, totals.cost) == (1, 1, None)
    assert totals.to_dict()["unknown_usage_calls"] == 1


def test_known_calls_are_priced_and_the_unknown_ones_counted(openai_server: FakeOpenAIServer) -> None:
    replies = iter([Text("a", usage=GOOD), Text("b", usage={"prompt_tokens": -2000, "completion_tokens": 5})])
    openai_server.reply = lambda rec: next(replies)
    client = client_for(openai_server)
    with pytest.warns(DataWarning, match="usage unknown"):
        client.run_many(["a", "b"])
    totals = client.usage_totals()
    assert (totals.prompt_tokens, totals.completion_tokens, totals.unknown_usage_calls) == (100, 50, 1)
    assert totals.cost == pytest.approx(0.2)  # the known call's price only: a lower bound


def test_a_plausible_usage_is_read_as_before(openai_server: FakeOpenAIServer) -> None:
    usage: dict[str, Any] = {"prompt_tokens": 2_000_000, "completion_tokens": 50.0}  # 50.0: a whole number
    openai_server.reply = Text("ok", usage=usage)
    client = client_for(openai_server)
    reply = client.chat("q")
    assert reply.usage == Usage(2_000_000, 50) and reply.usage.known
    assert reply.cost == pytest.approx(2000 + 0.1)  # 2000 x $1 + 0.05 x $2
    assert "unknown_usage_calls" not in client.usage_totals().to_dict()  # a run without any: as before


@pytest.mark.parametrize(
    ("given", "prompt", "completion", "known"),
    [
        (None, 0, 0, True),  # not reported: zeros, as documented
        ({"prompt_tokens": None, "completion_tokens": 3}, 0, 3, True),
        ({"input_tokens": 7, "output_tokens": 2}, 7, 2, True),
        ({"prompt_tokens": "12", "completion_tokens": " 3 "}, 12, 3, True),  # digits as text
        ({"prompt_tokens": "twelve", "completion_tokens": 3}, 0, 0, False),
        ({"prompt_tokens": -1, "completion_tokens": 3}, 0, 0, False),
        ({"prompt_tokens": float("nan"), "completion_tokens": 3}, 0, 0, False),
        ({"prompt_tokens": 10**40, "completion_tokens": 3}, 0, 0, False),
        ({"prompt_tokens": [1], "completion_tokens": 3}, 0, 0, False),
        ("garbage", 0, 0, False),
    ],
)
def test_usage_from_any(given: Any, prompt: int, completion: int, known: bool) -> None:
    got = Usage.from_any(given)
    assert (got.prompt_tokens, got.completion_tokens, got.known) == (prompt, completion, known)


def test_a_function_judge_with_text_usage_is_not_a_failed_call() -> None:
    # int("abc") used to raise inside the model: the reply was lost and the row errored
    def judge(prompt: str) -> dict[str, Any]:
        return {"text": "Rating: yes", "usage": {"prompt_tokens": "abc", "completion_tokens": 3}}

    with pytest.warns(DataWarning, match="usage unknown"):
        res = nbeval.evaluate(ROWS[:1], ["safety"], judge=judge, progress=False, cache=False)
    assert res.scores["value"].tolist() == [1.0]
    assert res.meta["usage"]["unknown_usage_calls"] == 1


def test_the_run_and_its_report_say_the_cost_is_a_lower_bound(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    bad = {"prompt_tokens": -2000, "completion_tokens": 5}
    openai_server.reply = lambda rec: Text("Rating: yes", usage=bad if "question 2" in str(rec.body) else GOOD)
    judge = {"model": "judge-1", "base_url": openai_server.url, "api_key": "sk-test-usage-0000"}
    with pytest.warns(DataWarning, match="usage unknown"):
        res = nbeval.evaluate(ROWS, ["safety"], judge=judge, prices=PRICES, progress=False, cache=False)
    usage = res.meta["usage"]
    assert (usage["unknown_usage_calls"], usage["prompt_tokens"]) == (1, 200)
    assert usage["cost"] == pytest.approx(0.4)  # two known calls of $0.20; the third unknown
    html = report_html(res)
    assert "at least $0.4000" in html and "usage unknown for 1 call" in html
    res.save(tmp_path / "runs" / "one")
    table = runs(tmp_path / "runs")
    assert table.loc[0, "unknown_usage_calls"] == 1 and table.loc[0, "cost"] == pytest.approx(0.4)


def test_a_chat_reply_made_by_hand_is_known() -> None:
    assert ChatReply("x", Usage(3, 4), "m").usage.known


@pytest.mark.parametrize("usage", [Usage(-2000, 5), Usage(3, 2 * 10**297), Usage(3.0, 4.5)])  # type: ignore[arg-type]
def test_a_usage_made_by_hand_with_impossible_counts_is_unknown(usage: Usage) -> None:
    # a custom chat model may build its own Usage: the same rules hold
    assert (usage.prompt_tokens, usage.completion_tokens, usage.known) == (0, 0, False)


@pytest.mark.parametrize("cost", [-2000, float("nan"), float("inf"), 2e297, "abc"])
def test_a_function_judge_reporting_an_impossible_cost_has_unknown_usage(cost: Any) -> None:
    # float("abc") used to fail the call; -2000 used to become the run's cost
    def judge(prompt: str) -> dict[str, Any]:
        return {"text": "Rating: yes", "usage": GOOD, "cost": cost}

    with pytest.warns(DataWarning, match="usage unknown"):
        res = nbeval.evaluate(ROWS[:1], ["safety"], judge=judge, progress=False, cache=False)
    assert res.scores["value"].tolist() == [1.0]
    usage = res.meta["usage"]
    assert (usage["cost"], usage["unknown_usage_calls"], usage["prompt_tokens"]) == (None, 1, 0)


def test_a_function_judge_reporting_a_plausible_cost_is_priced_by_it() -> None:
    def judge(prompt: str) -> dict[str, Any]:
        return {"text": "Rating: yes", "usage": GOOD, "cost": 0.25}

    res = nbeval.evaluate(ROWS[:2], ["safety"], judge=judge, progress=False, cache=False)
    assert res.meta["usage"]["cost"] == pytest.approx(0.5) and "unknown_usage_calls" not in res.meta["usage"]


def test_the_cache_keeps_usage_unknown(tmp_path: Path) -> None:
    from nbeval.chat.cache import ChatCache

    cache = ChatCache(tmp_path / "c.sqlite")
    cache.put("k-unknown", "m", ChatReply("yes", Usage(-2000, 5), "m"))
    cache.put("k-known", "m", ChatReply("yes", Usage(7, 5), "m", cost=0.1))
    unknown, known = cache.get("k-unknown"), cache.get("k-known")
    assert unknown is not None and not unknown.usage.known and unknown.cost is None
    assert known is not None and known.usage == Usage(7, 5) and known.cost == pytest.approx(0.1)
