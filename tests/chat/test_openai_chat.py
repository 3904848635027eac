"""OpenAIChat against the fake server: wire format, error mapping, configuration, secrets."""

from __future__ import annotations

import sys
import time
from email.utils import formatdate
from typing import Any

import pytest

from nbeval.chat import ChatError, OpenAIChat
from nbeval.chat.openai_chat import parse_retry_after, public_url
from nbeval.errors import JudgeNotConfigured, MissingDependency
from tests.support.fake_openai import Behaviour, Drop, FakeOpenAIServer, Garbage, Hang, Status, Text, rate_limited

HI = [{"role": "user", "content": "hi"}]  # one user message, as ChatModel.chat takes it

KEY = "sk-test-0123456789abcdef"


def make(server: FakeOpenAIServer, **kw: Any) -> OpenAIChat:
    return OpenAIChat("judge-1", base_url=server.url, api_key=KEY, **kw)


def test_request_and_reply_wire_format(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = "The answer is yes"
    model = make(openai_server, temperature=0)
    msgs = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "is water wet ?"}]
    reply = model.chat(msgs, max_tokens=5)
    assert reply.text == "The answer is yes"
    # Fake server's usage: words over all messages (2 + 4), words of the reply (4).
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (6, 4)
    assert reply.model == "judge-1" and reply.cached is False and reply.duration_s > 0
    (req,) = openai_server.requests
    assert req.path == "/v1/chat/completions"
    assert req.model == "judge-1"
    assert req.messages == msgs
    assert req.params == {"temperature": 0, "max_tokens": 5}
    assert req.headers["Authorization"] == f"Bearer {KEY}"


def test_call_params_override_defaults(openai_server: FakeOpenAIServer) -> None:
    make(openai_server, temperature=0, top_p=0.5).chat(HI, temperature=1)
    assert openai_server.requests[0].params == {"temperature": 1, "top_p": 0.5}


def test_usage_and_model_from_server(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Text("x", usage={"prompt_tokens": 11, "completion_tokens": 7}, model="judge-1-2024"))
    reply = make(openai_server).chat(HI)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.model) == (11, 7, "judge-1-2024")


@pytest.mark.parametrize(
    ("behaviour", "retryable", "status", "fragment"),
    [
        (Status(500), True, 500, "HTTP 500"),
        (Status(503), True, 503, "HTTP 503"),
        (rate_limited(2), True, 429, "rate limited"),
        (Status(400, "bad request body"), False, 400, "bad request body"),
        (Status(404), False, 404, "not found"),
        (Drop(), True, None, "connection failed"),
        (Garbage(), True, None, "not a chat completion"),
    ],
)
def test_failures_map_to_chat_errors(
    openai_server: FakeOpenAIServer, behaviour: Behaviour, retryable: bool, status: int | None, fragment: str
) -> None:
    openai_server.push(behaviour)
    with pytest.raises(ChatError) as info:
        make(openai_server).chat(HI)
    err = info.value
    assert err.retryable is retryable
    assert err.status == status
    assert fragment in str(err)
    assert err.rate_limited is (status == 429)


def test_retry_after_header_is_read(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(rate_limited(3))
    with pytest.raises(ChatError) as info:
        make(openai_server).chat(HI)
    assert info.value.retry_after == 3.0


def test_hang_times_out(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Hang(60))
    start = time.monotonic()
    with pytest.raises(ChatError, match="timed out") as info:
        make(openai_server).chat(HI, timeout=0.3)
    assert info.value.retryable
    assert 0.3 <= time.monotonic() - start < 30  # a deadline test: cut at 0.3 s, far from the minute of the hang


def test_no_retries_inside_openai_client(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Status(500)
    with pytest.raises(ChatError):
        make(openai_server).chat(HI)
    assert openai_server.request_count == 1


def test_key_never_in_errors_repr_or_identity(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Status(401, f"Incorrect API key provided: {KEY}"))
    model = make(openai_server)
    with pytest.raises(ChatError) as info:
        model.chat(HI)
    assert KEY not in str(info.value) and "authentication failed" in str(info.value)
    assert KEY not in repr(model)
    assert KEY not in model.cache_identity()
    assert not any(KEY == v for k, v in vars(model).items() if not k.startswith("_OpenAIChat__"))


def test_config_from_env(monkeypatch: pytest.MonkeyPatch, openai_server: FakeOpenAIServer) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_MODEL", "env-model")
    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", openai_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fallback-key-000000")
    model = OpenAIChat()
    assert model.chat(HI).text == "ok"
    req = openai_server.requests[0]
    assert req.model == "env-model"
    assert req.headers["Authorization"] == "Bearer sk-fallback-key-000000"
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-judge-key-1111111")
    OpenAIChat().chat(HI)
    assert openai_server.requests[1].headers["Authorization"] == "Bearer sk-judge-key-1111111"


def test_arguments_beat_env(monkeypatch: pytest.MonkeyPatch, openai_server: FakeOpenAIServer) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_MODEL", "env-model")
    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    OpenAIChat("arg-model", base_url=openai_server.url).chat(HI)
    assert openai_server.requests[0].model == "arg-model"


def test_local_server_needs_no_key(openai_server: FakeOpenAIServer) -> None:
    assert OpenAIChat("m", base_url=openai_server.url).chat(HI).text == "ok"


def test_missing_configuration_is_clear() -> None:
    with pytest.raises(JudgeNotConfigured, match="NBEVAL_JUDGE_MODEL"):
        OpenAIChat()
    with pytest.raises(JudgeNotConfigured, match="OPENAI_API_KEY"):
        OpenAIChat("gpt-4o-mini")  # the real OpenAI API, and no key anywhere


def test_missing_openai_package(monkeypatch: pytest.MonkeyPatch, openai_server: FakeOpenAIServer) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    with pytest.raises(MissingDependency, match=r'pip install "nbeval\[judge\]"'):
        make(openai_server).chat(HI)


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_700_000_000.0
    date = formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(30.0)
    assert parse_retry_after({"Retry-After": formatdate(now - 30, usegmt=True)}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_public_url_strips_secrets() -> None:
    url = "https://user:pw@host.example:8443/openai/v1/?api-version=2024&api_key=abc&sig=zz"
    assert public_url(url) == "https://host.example:8443/openai/v1?api-version=2024"


def test_any_param_reaches_the_server(openai_server: FakeOpenAIServer) -> None:
    model = make(openai_server, top_k=5)
    model.chat(
        HI, repetition_penalty=1.1, extra_body={"guided_choice": ["yes", "no"]}, extra_headers={"X-Trace": "abc"}
    )
    req = openai_server.requests[0]
    assert req.params == {"top_k": 5, "repetition_penalty": 1.1, "guided_choice": ["yes", "no"]}
    assert req.headers["X-Trace"] == "abc"
