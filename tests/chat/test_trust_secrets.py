"""Secrets stay secret: keys given through any channel appear nowhere a run leaves a trace.

Channels: headers in ``judge_params={"extra_headers": ...}``, default headers in the judge settings,
the user-info or the query of a base URL, and any other judge setting (``api_key``, headers or a
query given as settings). For each, a real run against the fake server, whose replies and error
bodies echo the secret back, and a search of every place a run leaves text: the score table, the
run's meta, reprs, the HTML report, the saved result folder, logs, and the SQLite cache file.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat import ChatClient, ChatError, resolve_chat_model
from nbeval.chat.secrets import redact, redact_params
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Status, Text

HI = [{"role": "user", "content": "hi"}]  # one user message, as ChatModel.chat takes it

SECRET = "Zq8-trust-SECRET-v4lue-7731"
ROWS = [{"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}"} for i in range(3)]


@pytest.fixture(autouse=True)
def _no_judge_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


def _with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://svc-user:{SECRET}@")


#: channel: (run-level judge settings, evaluator settings) built from the server's URL.
CHANNELS: dict[str, Callable[[str], tuple[dict[str, Any], dict[str, Any]]]] = {
    "judge_params_extra_headers": lambda url: (
        {"model": "judge", "base_url": url},
        {"judge_params": {"extra_headers": {"X-Api-Key": SECRET}}},
    ),
    "default_headers_setting": lambda url: (
        {"model": "judge", "base_url": url, "default_headers": {"Authorization": f"Bearer {SECRET}"}},
        {},
    ),
    "base_url_userinfo": lambda url: ({"model": "judge", "base_url": _with_userinfo(url)}, {}),
    "base_url_query": lambda url: ({"model": "judge", "base_url": f"{url}?api-key={SECRET}"}, {}),
    "api_key_setting": lambda url: ({"model": "judge", "base_url": url, "api_key": SECRET}, {}),
    "extra_headers_setting": lambda url: (
        {"model": "judge", "base_url": url, "extra_headers": {"X-Auth-Token": SECRET}},
        {},
    ),
    "extra_query_setting": lambda url: ({"model": "judge", "base_url": url, "extra_query": {"token": SECRET}}, {}),
    "evaluator_judge_settings": lambda url: (
        {},
        {"judge": {"model": "judge", "base_url": url, "default_headers": {"X-Api-Key": SECRET}}},
    ),
}


def _seen(rec: Recorded) -> bool:
    """Whether the secret reached the server (headers, query or Basic auth)."""
    import base64

    blob = json.dumps(dict(rec.headers)) + json.dumps(rec.query) + rec.path
    auth = str(rec.headers.get("authorization", ""))
    if auth.lower().startswith("basic "):
        blob += base64.b64decode(auth.split()[1]).decode()
    return SECRET in blob


def _echo(rec: Recorded) -> Any:
    """Echo the secret back: in a reply's rationale, and in an error body for one row."""
    if "answer 2" in rec.last_content:
        return Status(401, f"Incorrect API key provided: {SECRET}. Your headers: {dict(rec.headers)}")
    return Text(f"Rationale: the caller sent key {SECRET} and path {rec.path}.\nRating: yes")


def _all_text(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file())


@pytest.mark.parametrize("channel", sorted(CHANNELS))
def test_the_secret_appears_nowhere(
    channel: str, openai_server: FakeOpenAIServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    openai_server.reply = _echo
    run_judge, ev_params = CHANNELS[channel](openai_server.url)
    cache = tmp_path / "cache" / "chat.sqlite"
    caplog.set_level(logging.DEBUG)
    ev = nbeval.evaluator("safety", **ev_params)
    res = nbeval.evaluate(ROWS, [ev], judge=run_judge or None, cache=cache, max_attempts=1, progress=False)

    assert openai_server.request_count == len(ROWS)
    assert all(_seen(r) for r in openai_server.requests), "the secret must reach the server"
    scores = res.scores
    assert list(scores["value"].iloc[:2]) == [1.0, 1.0]
    assert "authentication failed" in scores["error"].iloc[2]
    # The echo came through, masked (the judge parser drops the "***" as markdown emphasis).
    assert "the caller sent key" in scores["rationale"].iloc[0]

    spec = run_judge or ev_params["judge"]
    texts = {
        "scores": scores.to_csv() + scores.to_json(),
        "meta_usage": json.dumps(res.meta["usage"], default=str),
        "repr_result": repr(res),
        "repr_model": repr(resolve_chat_model(spec)),
        "repr_client": repr(ChatClient(spec, cache=cache)),
        "html": res.to_html(),
        "logs": caplog.text,
    }
    leaks = [where for where, text in texts.items() if SECRET in text]
    assert leaks == []
    folder = res.save(tmp_path / "out")
    res.to_html(folder / "report.html")
    saved = {p.name for p in folder.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()}
    meta_leak = SECRET in json.dumps(res.meta, default=str)
    assert saved == set() and not meta_leak
    cache_bytes = _all_text(cache.parent)
    assert b"Rating: yes" in cache_bytes  # the replies are there...
    assert SECRET.encode() not in cache_bytes  # ...the secret is not


def test_judge_params_headers_are_not_saved_with_the_evaluator_params(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    openai_server.reply = "Rating: yes"
    ev = nbeval.evaluator("safety", judge_params={"extra_headers": {"X-Api-Key": SECRET}})
    res = nbeval.evaluate(
        ROWS[:1], [ev], judge={"model": "judge", "base_url": openai_server.url}, cache=False, progress=False
    )
    assert openai_server.requests[0].headers["X-Api-Key"] == SECRET
    assert SECRET not in json.dumps(res.meta, default=str) and SECRET not in repr(ev)
    assert SECRET.encode() not in _all_text(res.save(tmp_path / "out"))


def test_errors_raised_directly_are_redacted(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Status(403, f"forbidden for {SECRET}"))
    model = resolve_chat_model(
        {"model": "judge", "base_url": openai_server.url, "default_headers": {"X-Api-Key": SECRET}}
    )
    assert model is not None
    with pytest.raises(ChatError) as info:
        model.chat(HI)
    assert "permission denied" in str(info.value) and SECRET not in str(info.value)


def test_a_reply_echoing_a_call_header_is_masked_without_a_client(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: f"you sent {rec.headers.get('x-session-token')}"
    model = resolve_chat_model({"model": "judge", "base_url": openai_server.url})
    assert model is not None
    reply = model.chat(HI, extra_headers={"X-Session-Token": SECRET})
    assert reply.text == "you sent ***"


def test_the_cache_key_differs_by_secret_without_holding_it(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    # Two keys of one endpoint may be two accounts: their replies are kept apart, by a hash.
    cache = tmp_path / "c.sqlite"
    a = ChatClient({"model": "judge", "base_url": openai_server.url, "extra_query": {"token": SECRET}}, cache=cache)
    b = ChatClient(
        {"model": "judge", "base_url": openai_server.url, "extra_query": {"token": SECRET + "x"}}, cache=cache
    )
    a.run_many(["q"])
    b.run_many(["q"])
    assert openai_server.request_count == 2
    assert SECRET.encode() not in _all_text(tmp_path)


def test_redaction_helper() -> None:
    settings = {
        "model": "m",
        "api_key": SECRET,
        "base_url": f"https://u:{SECRET}@h.example/v1?api-key={SECRET}&v=2",
        "default_headers": {"Authorization": f"Bearer {SECRET}", "X-Trace": "abc"},
        "extra_body": {"client_secret": SECRET, "max_tokens": 5, "stop_token_ids": [1]},
        "temperature": 0,
    }
    clean = redact_params(settings)
    assert SECRET not in json.dumps(clean)
    assert clean["base_url"] == "https://h.example/v1?v=2"
    assert clean["default_headers"] == {"Authorization": "***", "X-Trace": "abc"}
    assert clean["extra_body"] == {"client_secret": "***", "max_tokens": 5, "stop_token_ids": [1]}
    assert clean["temperature"] == 0 and clean["model"] == "m"
    assert settings["api_key"] == SECRET  # the original is untouched
    assert redact(f"key={SECRET}!") == "key=***!"  # known since redact_params saw it


def test_only_headers_and_secret_named_parameters_count_as_secrets() -> None:
    from nbeval.chat.secrets import is_secret_name, secrets_in_params

    params = {
        "extra_headers": {"X-Api-Key": "hdr-secret-1", "X-Trace": "trace-123456"},
        "extra_query": {"sig": "sig-secret-2"},
        "client_secret": "param-secret-3",
        "test_case": {"key": "row-key-000001"},
        "max_tokens": 5,
        "temperature": 0,
    }
    assert sorted(secrets_in_params(params)) == ["hdr-secret-1", "param-secret-3", "sig-secret-2"]
    named = [
        "Authorization",
        "Proxy-Authorization",
        "api-key",
        "X-Api-Key",
        "xApiKey",
        "X-Auth-Token",
        "PRIVATE-TOKEN",
        "Ocp-Apim-Subscription-Key",
        "client_secret",
        "password",
        "Cookie",
        "sig",
    ]
    plain = ["X-Trace", "Content-Type", "OpenAI-Organization", "api-version", "temperature", "keywords", "model"]
    assert all(is_secret_name(n) for n in named) and not any(is_secret_name(n) for n in plain)


def test_a_rag_functions_row_keys_are_not_masked() -> None:
    from nbeval.chat.collect import RagFunction

    def rag(question: str, test_case: dict[str, Any]) -> str:
        return f"answer for {test_case['key']}"

    (reply,) = ChatClient(RagFunction(rag), cache=False).run_many(
        [([{"role": "user", "content": "q"}], {"test_case": {"key": "row-key-000042"}})]
    )
    assert "row-key-000042" in reply.text  # type: ignore[union-attr]
