"""ChatReply.logprobs: read from an OpenAI-compatible reply, passed through from a function, kept
in the cache (also in a cache file an older nbeval wrote)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, cast

import pytest

from nbeval.chat import CallableChat, ChatCache, ChatClient, ChatReply, OpenAIChat, TokenLogprob, Usage
from nbeval.chat.cache import cache_key
from nbeval.chat.logprobs import as_logprobs, logprobs_to_json
from tests.support.fake_openai import FakeOpenAIServer, Text, TokenLogprobs
from tests.support.replies import as_reply

Q = [{"role": "user", "content": "q"}]
TOKENS: list[TokenLogprobs] = [
    ("Rating", -0.01, [("Rating", -0.01), ("Score", -4.7)]),
    (":", 0.0, [(":", 0.0)]),
    (" yes", -0.105, [(" yes", -0.105), (" no", -2.303), (" Yes", -4.6)]),
]
EXPECTED = (
    TokenLogprob("Rating", -0.01, (("Rating", -0.01), ("Score", -4.7))),
    TokenLogprob(":", 0.0, ((":", 0.0),)),
    TokenLogprob(" yes", -0.105, ((" yes", -0.105), (" no", -2.303), (" Yes", -4.6))),
)


def _model(server: FakeOpenAIServer) -> OpenAIChat:
    return OpenAIChat("judge", base_url=server.url, api_key="sk-test-logprobs-123456")


def test_openai_reply_carries_the_logprobs_asked_for(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = Text("Rating: yes", logprobs=TOKENS)
    reply = _model(openai_server).chat([{"role": "user", "content": "q"}], logprobs=True, top_logprobs=2)
    body = openai_server.requests[0].body or {}
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert reply.logprobs == tuple(TokenLogprob(t.token, t.logprob, t.top[:2]) for t in EXPECTED)
    assert "".join(t.token for t in reply.logprobs) == reply.text


def test_openai_reply_without_logprobs_has_none(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = Text("Rating: yes", logprobs=TOKENS)
    assert _model(openai_server).chat(Q).logprobs is None  # not asked for: the server sends null
    openai_server.reply = "Rating: yes"
    assert _model(openai_server).chat(Q, logprobs=True, top_logprobs=5).logprobs is None


def test_shapes_read_as_logprobs() -> None:
    openai = {
        "content": [
            {"token": t, "logprob": lp, "top_logprobs": [{"token": a, "logprob": b} for a, b in top]}
            for t, lp, top in TOKENS
        ]
    }
    legacy = {
        "tokens": [t for t, _, _ in TOKENS],
        "token_logprobs": [lp for _, lp, _ in TOKENS],
        "top_logprobs": [dict(top) for _, _, top in TOKENS],
    }
    assert as_logprobs(openai) == as_logprobs(legacy) == as_logprobs(logprobs_to_json(EXPECTED)) == EXPECTED
    assert json.loads(json.dumps(logprobs_to_json(EXPECTED))) == logprobs_to_json(EXPECTED)
    for none in (None, [], {"content": None}, {"refusal": None}, "yes", [{"token": "x"}]):
        assert as_logprobs(none) is None
    # given in OpenAI's shape, a reply reads it into TokenLogprob objects
    assert ChatReply("t", Usage(), "m", logprobs=cast(Any, openai)).logprobs == EXPECTED


def test_a_function_judge_passes_its_logprobs_through() -> None:
    def judge(messages: Any, **params: Any) -> dict[str, Any]:
        assert params == {"logprobs": True, "top_logprobs": 3}
        return {"text": "Rating: yes", "logprobs": logprobs_to_json(EXPECTED)}

    reply = CallableChat(judge).chat(Q, logprobs=True, top_logprobs=3)
    assert reply.logprobs == EXPECTED
    assert CallableChat(lambda prompt: "Rating: yes").chat(Q).logprobs is None


def test_cache_keeps_logprobs_and_forgets_them_with_their_reply(cache_path: Path) -> None:
    cache = ChatCache(cache_path)
    cache.put("k", "m", ChatReply("Rating: yes", Usage(1, 3), "m", logprobs=EXPECTED))
    got = as_reply(cache.get("k"))
    assert got.logprobs == EXPECTED and got.cached
    cache.put("k", "m", ChatReply("Rating: no", Usage(1, 3), "m"))  # replaced without logprobs
    assert as_reply(cache.get("k")).logprobs is None
    cache.put("k", "m", ChatReply("Rating: yes", Usage(1, 3), "m", logprobs=EXPECTED))
    assert cache.clear() == 1
    cache.put("k", "m", ChatReply("Rating: yes", Usage(1, 3), "m"))
    assert as_reply(cache.get("k")).logprobs is None
    cache.close()


def test_logprobs_of_a_reply_an_older_nbeval_replaced_are_not_read(cache_path: Path) -> None:
    cache = ChatCache(cache_path)
    cache.put("k", "m", ChatReply("Rating: yes", Usage(), "m", logprobs=EXPECTED))
    cache.close()
    conn = sqlite3.connect(cache_path)  # what an nbeval that knows no reply_logprobs table does
    conn.execute("INSERT OR REPLACE INTO replies VALUES ('k', 'm', 'Rating: no', 'm', 1, 1, 0.1, NULL, 0)")
    conn.commit()
    conn.close()
    reply = as_reply(ChatCache(cache_path).get("k"))
    assert reply.text == "Rating: no" and reply.logprobs is None


def test_a_cache_written_before_reply_logprobs_existed_still_works(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE replies (key TEXT PRIMARY KEY, identity TEXT NOT NULL, text TEXT NOT NULL, "
        "reply_model TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
        "duration_s REAL NOT NULL, cost REAL, created REAL NOT NULL)"
    )
    conn.execute("CREATE TABLE reply_notes (key TEXT PRIMARY KEY, warnings TEXT NOT NULL)")
    conn.execute("INSERT INTO replies VALUES ('k', 'm', 'old text', 'm', 1, 1, 0.1, NULL, 0)")
    conn.commit()
    conn.close()
    cache = ChatCache(path)
    old = as_reply(cache.get("k"))
    assert old.text == "old text" and old.logprobs is None
    cache.put("k2", "m", ChatReply("new", Usage(), "m", logprobs=EXPECTED))
    assert as_reply(cache.get("k2")).logprobs == EXPECTED and len(cache) == 2
    cache.close()


def test_the_client_serves_cached_logprobs_without_a_second_call(
    openai_server: FakeOpenAIServer, cache_path: Path
) -> None:
    openai_server.reply = Text("Rating: yes", logprobs=TOKENS)
    params = {"logprobs": True, "top_logprobs": 3}
    first = ChatClient(_model(openai_server), cache=cache_path).chat("q", **params)
    second = ChatClient(_model(openai_server), cache=cache_path).chat("q", **params)
    assert openai_server.request_count == 1
    assert second.cached and second.logprobs == first.logprobs == EXPECTED


def test_logprob_params_are_part_of_the_cache_key() -> None:
    msgs = [{"role": "user", "content": "q"}]
    keys = {
        cache_key("m", msgs, {"temperature": 0}),
        cache_key("m", msgs, {"temperature": 0, "logprobs": True, "top_logprobs": 20}),
        cache_key("m", msgs, {"temperature": 0, "logprobs": True, "top_logprobs": 5}),
    }
    assert len(keys) == 3


@pytest.mark.parametrize("value", [float("nan"), "x", None])
def test_a_token_without_a_number_is_not_read(value: Any) -> None:
    assert as_logprobs([{"token": "a", "logprob": value}]) is None
