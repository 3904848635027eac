"""ChatClient against the fake server: retries, timeouts, concurrency, cache, accounting, plans."""

from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nbeval.chat import CallPlan, ChatClient, ChatFailure, ChatReply, OpenAIChat
from nbeval.errors import JudgeNotConfigured, ResourceError
from nbeval.evaluators.base import Chat
from tests.support.fake_openai import (
    Behaviour,
    Drop,
    FakeOpenAIServer,
    Garbage,
    Hang,
    Status,
    Text,
    rate_limited,
    together,
)
from tests.support.replies import as_replies, as_reply


def model_for(server: FakeOpenAIServer, name: str = "judge-1") -> OpenAIChat:
    return OpenAIChat(name, base_url=server.url, api_key="sk-test-client-0000")


def client_for(server: FakeOpenAIServer, **kw: Any) -> ChatClient:
    kw.setdefault("cache", False)
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("seed", 0)
    return ChatClient(model_for(server), **kw)


# -- retries -------------------------------------------------------------------------------


def test_500_then_success(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Status(500))
    client = client_for(openai_server)
    (result,) = client.run_many(["question"])
    assert isinstance(result, ChatReply) and result.text == "ok"
    assert openai_server.request_count == 2
    assert client.usage_totals().attempts == 2


@pytest.mark.parametrize("first", [Drop(), Garbage(), Status(502), Status(408)], ids=repr)
def test_transient_failures_are_retried(openai_server: FakeOpenAIServer, first: Behaviour) -> None:
    openai_server.push(first, first)
    (result,) = client_for(openai_server).run_many(["q"])
    assert isinstance(result, ChatReply)
    assert openai_server.request_count == 3


def test_429_retry_after_is_honoured(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(rate_limited(1))
    (result,) = client_for(openai_server, backoff_base=0.001).run_many(["q"])
    assert isinstance(result, ChatReply)
    first, second = openai_server.requests
    assert second.started - first.started >= 1.0


def test_429_retry_after_as_http_date(openai_server: FakeOpenAIServer) -> None:
    from email.utils import formatdate

    openai_server.push(rate_limited(formatdate(time.time() + 3, usegmt=True)))
    (result,) = client_for(openai_server, backoff_base=0.001).run_many(["q"])
    assert isinstance(result, ChatReply)
    first, second = openai_server.requests
    # HTTP dates have one-second resolution: the wait is between 2 and 3 seconds (less a little
    # for the time the 429 took to arrive). The time is the point; the upper bound leaves room
    # for a busy machine and still tells the date from a number of seconds or the default backoff.
    assert 1.5 <= second.started - first.started <= 10


def test_429_waits_only_the_request_that_got_it(openai_server: FakeOpenAIServer) -> None:
    openai_server.latency = 0.05
    openai_server.push(rate_limited(1))
    results = client_for(openai_server, concurrency=2).run_many([f"q{i}" for i in range(12)])
    assert all(isinstance(r, ChatReply) for r in results)
    first = openai_server.requests[0]
    retry = [r for r in openai_server.requests[1:] if r.last_content == first.last_content]
    assert len(retry) == 1 and retry[0].started - first.started >= 1.0
    # the other worker kept going while this one waited (it has ~0.5 s of calls left: a second of
    # waiting is ample room, even on a busy machine)
    others = [r for r in openai_server.requests[1:] if first.started + 0.1 < r.started < retry[0].started]
    assert len(others) >= 2
    assert openai_server.request_count == 13


def test_hang_times_out_then_retries(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Hang(60))
    start = time.monotonic()
    (result,) = client_for(openai_server, timeout=0.4).run_many(["q"])
    assert isinstance(result, ChatReply) and result.text == "ok"
    assert openai_server.request_count == 2
    first, second = openai_server.requests
    # The server stamps a request when its handler thread reads it, which on a loaded machine is
    # later than the client started its 0.4 s clock (0.391 s was seen under load 10 on 2 cores).
    assert second.started - first.started >= 0.3
    assert time.monotonic() - start < 30  # a deadline test: cut at 0.4 s, far from the minute of the hang


def test_max_attempts_gives_a_failure(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Status(500, "backend exploded")
    client = client_for(openai_server, max_attempts=3)
    (result,) = client.run_many(["q"])
    assert isinstance(result, ChatFailure)
    assert result.attempts == 3 and result.status == 500
    assert "HTTP 500" in result.error and "backend exploded" in result.error
    assert "gave up after 3 attempts" in result.error
    assert openai_server.request_count == 3
    totals = client.usage_totals()
    assert (totals.calls, totals.failed_calls, totals.attempts) == (1, 1, 3)


def test_client_errors_are_not_retried(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Status(400, "unknown parameter 'foo'")
    (result,) = client_for(openai_server).run_many([("q", {"foo": 1})])
    assert isinstance(result, ChatFailure) and result.attempts == 1
    assert "not retried" in result.error
    assert openai_server.request_count == 1


def test_backoff_grows(openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float] = []
    real = ChatClient._delay

    def delay(self: ChatClient, *a: Any) -> float:
        waits.append(real(self, *a))
        return waits[-1]

    monkeypatch.setattr(ChatClient, "_delay", delay)
    openai_server.push(Status(500), Status(500), Status(500))
    client_for(openai_server, backoff_base=0.2, backoff_max=10).run_many(["q"])
    # Waits are base*2^(n-1), jittered down by at most half: [0.1, 0.2], [0.2, 0.4], [0.4, 0.8].
    assert len(waits) == 3
    for wait, (lo, hi) in zip(waits, [(0.1, 0.2), (0.2, 0.4), (0.4, 0.8)], strict=True):
        assert lo <= wait <= hi
    # and they were waited: no retry came sooner (later is a busy machine's doing, not a bug)
    t = [r.started for r in openai_server.requests]
    assert all(b - a >= wait - 0.01 for (a, b), wait in zip(itertools.pairwise(t), waits, strict=True))


def test_one_failure_does_not_stop_the_batch(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Status(400) if rec.last_content == "bad" else Text(rec.last_content.upper())
    results = client_for(openai_server).run_many(["a", "bad", "c"])
    assert isinstance(results[1], ChatFailure)
    assert [as_reply(r).text for r in (results[0], results[2])] == ["A", "C"]


# -- concurrency ---------------------------------------------------------------------------


@pytest.mark.parametrize("concurrency", [1, 4])
def test_concurrency_bound(openai_server: FakeOpenAIServer, concurrency: int) -> None:
    openai_server.reply = together(openai_server, concurrency)  # held until that many are in flight
    n = 24
    results = client_for(openai_server, concurrency=concurrency).run_many([f"q{i}" for i in range(n)])
    assert all(isinstance(r, ChatReply) for r in results)
    assert openai_server.max_in_flight == concurrency and openai_server.request_count == n


def test_results_keep_request_order_and_on_done_sees_each(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Text(f"echo {rec.last_content}", latency=0.002 * (len(rec.last_content) % 5))
    seen: list[int] = []
    prompts = [f"p{i}" for i in range(20)]
    results = client_for(openai_server, concurrency=5).run_many(prompts, on_done=lambda i, r: seen.append(i))
    assert [r.text for r in as_replies(results)] == [f"echo {p}" for p in prompts]
    assert sorted(seen) == list(range(20))


def test_on_done_runs_on_the_calling_thread(openai_server: FakeOpenAIServer) -> None:
    threads: set[int] = set()
    client_for(openai_server).run_many(["a", "b", "c"], on_done=lambda i, r: threads.add(threading.get_ident()))
    assert threads == {threading.get_ident()}


def test_a_raising_on_done_propagates(openai_server: FakeOpenAIServer) -> None:
    def boom(i: int, r: object) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        client_for(openai_server).run_many(["a", "b"], on_done=boom)


# -- cache ---------------------------------------------------------------------------------


def test_second_run_is_served_from_cache(openai_server: FakeOpenAIServer, cache_path: Path) -> None:
    prompts = [f"question {i}" for i in range(6)]
    openai_server.reply = lambda rec: Text(f"answer to {rec.last_content}")
    first = as_replies(client_for(openai_server, cache=cache_path).run_many(prompts))
    assert openai_server.request_count == 6 and not any(r.cached for r in first)
    second = as_replies(client_for(openai_server, cache=cache_path).run_many(prompts))
    assert openai_server.request_count == 6
    assert all(r.cached for r in second)
    assert [r.text for r in second] == [r.text for r in first]
    assert [r.usage for r in second] == [r.usage for r in first]


def test_cache_misses_on_other_params_messages_or_model(openai_server: FakeOpenAIServer, cache_path: Path) -> None:
    client = client_for(openai_server, cache=cache_path)
    client.run_many([("q", {"temperature": 0})])
    client.run_many([("q", {"temperature": 0})])
    assert openai_server.request_count == 1
    client.run_many([("q", {"temperature": 0.5})])
    assert openai_server.request_count == 2
    client.run_many([([{"role": "system", "content": "x"}, {"role": "user", "content": "q"}], {"temperature": 0})])
    assert openai_server.request_count == 3
    ChatClient(model_for(openai_server, "judge-2"), cache=cache_path).run_many([("q", {"temperature": 0})])
    assert openai_server.request_count == 4


def test_cache_off_asks_again(openai_server: FakeOpenAIServer) -> None:
    client = client_for(openai_server, cache=False)
    client.run_many(["q"])
    client.run_many(["q"])
    assert openai_server.request_count == 2


def test_default_cache_location_follows_env(openai_server: FakeOpenAIServer, _isolated_chat_env: Path) -> None:
    client_for(openai_server, cache=True).run_many(["q"])
    assert (_isolated_chat_env / "chat.sqlite").exists()


def test_failures_are_not_cached(openai_server: FakeOpenAIServer, cache_path: Path) -> None:
    openai_server.push(Status(400))
    client = client_for(openai_server, cache=cache_path)
    assert isinstance(client.run_many(["q"])[0], ChatFailure)
    assert isinstance(client.run_many(["q"])[0], ChatReply)
    assert openai_server.request_count == 2


def test_duplicates_in_a_batch_are_sent_once(openai_server: FakeOpenAIServer, cache_path: Path) -> None:
    client = client_for(openai_server, cache=cache_path)
    results = client.run_many(["same"] * 5 + ["other"])
    assert openai_server.request_count == 2
    assert len(results) == 6 and all(isinstance(r, ChatReply) for r in results)
    totals = client.usage_totals()
    assert (totals.calls, totals.cached_calls) == (6, 4)


# -- accounting ----------------------------------------------------------------------------


def test_usage_and_cost_totals(openai_server: FakeOpenAIServer, cache_path: Path) -> None:
    openai_server.reply = lambda rec: Text(
        "x", usage={"prompt_tokens": 100, "completion_tokens": 50}, model="judge-1-2024-05-13"
    )
    prices = {"judge-1": (1.0, 2.0), "judge": (9.0, 9.0)}
    client = client_for(openai_server, cache=cache_path, prices=prices)
    results = client.run_many(["a", "b"])
    # 100/1000 * $1 + 50/1000 * $2 = $0.20 per call; the longest matching prefix wins.
    assert [r.cost for r in as_replies(results)] == [pytest.approx(0.2)] * 2
    totals = client.usage_totals()
    assert (totals.calls, totals.cached_calls, totals.prompt_tokens, totals.completion_tokens) == (2, 0, 200, 100)
    assert totals.cost == pytest.approx(0.4)
    client.run_many(["a", "b"])  # cached: free
    totals = client.usage_totals()
    assert (totals.calls, totals.cached_calls, totals.prompt_tokens) == (4, 2, 200)
    assert totals.cost == pytest.approx(0.4)
    assert totals.to_dict()["cost"] == pytest.approx(0.4)


def test_no_price_means_no_cost(openai_server: FakeOpenAIServer) -> None:
    client = client_for(openai_server)
    assert as_reply(client.run_many(["a"])[0]).cost is None
    assert client.usage_totals().cost is None


def test_plan_counts_without_calling(openai_server: FakeOpenAIServer, cache_path: Path) -> None:
    client = client_for(openai_server, cache=cache_path, prices={"judge-1": (1.0, 2.0)})
    client.run_many(["abcdefgh", "ijklmnop"])
    assert openai_server.request_count == 2
    requests = [
        ("abcdefgh", None),
        ("ijklmnop", None),
        ("qrstuvwx", {"max_tokens": 10}),
        ("12345678", None),
        ("12345678", None),
    ]
    plan = client.plan(requests)
    assert openai_server.request_count == 2
    # Two to send ("qrstuvwx", "12345678" once): each 8 chars -> 2 tokens + 4 per message;
    # completions: max_tokens 10, and the 200-token guess.
    expected_cost = (12 * 1.0 + 210 * 2.0) / 1000
    assert plan.est_cost == pytest.approx(expected_cost)
    assert plan == CallPlan(
        calls=5, cached=2, to_call=2, est_prompt_tokens=12, est_completion_tokens=210, est_cost=plan.est_cost
    )
    assert "2 cached, 2 to call" in str(plan)


def test_plan_without_cache_counts_everything(openai_server: FakeOpenAIServer) -> None:
    plan = client_for(openai_server, cache=False).plan(["abcd", "abcd"])
    assert (plan.calls, plan.cached, plan.to_call, plan.est_cost) == (2, 0, 2, None)


# -- inputs and configuration --------------------------------------------------------------


def test_accepts_engine_chat_requests(openai_server: FakeOpenAIServer) -> None:
    req = Chat(messages=({"role": "user", "content": "hello"},), params={"temperature": 0})
    (result,) = client_for(openai_server).run_many([req])
    assert isinstance(result, ChatReply)
    assert openai_server.requests[0].messages == [{"role": "user", "content": "hello"}]
    assert openai_server.requests[0].params == {"temperature": 0}


def test_single_chat_raises_resource_error(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Status(403)
    client = client_for(openai_server)
    with pytest.raises(ResourceError, match="HTTP 403"):
        client.chat("q")


def test_a_crashing_model_becomes_a_failure() -> None:
    def judge(messages: list[dict[str, str]]) -> str:
        raise ValueError("my judge is broken")

    (result,) = ChatClient(judge, cache=False).run_many(["q"])
    assert isinstance(result, ChatFailure)
    assert "my judge is broken" in result.error and result.attempts == 1


def test_no_judge_is_a_clear_error() -> None:
    with pytest.raises(JudgeNotConfigured, match="NBEVAL_JUDGE_MODEL"):
        ChatClient(None)


def test_bad_settings_rejected(openai_server: FakeOpenAIServer) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        client_for(openai_server, concurrency=0)
