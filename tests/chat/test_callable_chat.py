"""CallableChat: what the function receives, what it may return, caching identity, timeouts."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from nbeval.chat import CallableChat, ChatClient, ChatError, ChatFailure, ChatReply, Usage

MSGS = [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "Capital of France?"}]


def test_messages_by_default() -> None:
    got: list[Any] = []

    def judge(messages):
        got.append(messages)
        return "Paris"

    model = CallableChat(judge)
    assert model.takes == "messages"
    reply = model.chat(MSGS)
    assert reply == ChatReply("Paris", Usage(0, 0), "judge", duration_s=reply.duration_s)
    assert got == [MSGS]


@pytest.mark.parametrize("fn", [lambda prompt: prompt.upper(), lambda text: text.upper()])
def test_prompt_by_parameter_name(fn: Any) -> None:
    model = CallableChat(fn)
    assert model.takes == "prompt"
    assert model.chat([{"role": "user", "content": "abc"}]).text == "ABC"  # lone user message: its content
    assert model.chat(MSGS).text == "SYSTEM: BE TERSE.\n\nUSER: CAPITAL OF FRANCE?"


def test_prompt_by_annotation_and_forced_choice() -> None:
    def f(x: str) -> str:
        return type(x).__name__

    assert CallableChat(f).chat(MSGS).text == "str"
    assert CallableChat(f, takes="messages").chat(MSGS).text == "list"
    with pytest.raises(ValueError, match="takes"):
        CallableChat(f, takes="words")  # type: ignore[arg-type]


def test_dict_reply_with_usage_cost_and_model() -> None:
    def f(messages: list[dict[str, str]]) -> dict[str, Any]:
        return {"text": "yes", "usage": {"prompt_tokens": 12, "completion_tokens": 1}, "cost": 0.5, "model": "m2"}

    reply = CallableChat(f, name="mine").chat(MSGS)
    assert (reply.text, reply.usage, reply.cost, reply.model) == ("yes", Usage(12, 1), 0.5, "m2")
    assert CallableChat(lambda m: {"content": "c"}).chat(MSGS).text == "c"


def test_params_only_for_kwargs_functions() -> None:
    seen: dict[str, Any] = {}

    def f(messages: list[dict[str, str]], **params: Any) -> str:
        seen.update(params)
        return "x"

    CallableChat(f).chat(MSGS, temperature=0)
    assert seen == {"temperature": 0}
    assert CallableChat(lambda m: "y").chat(MSGS, temperature=0).text == "y"  # ignored, not an error


def test_bad_return_and_exceptions() -> None:
    with pytest.raises(ChatError, match="must return a string") as info:
        CallableChat(lambda m: 42).chat(MSGS)
    assert not info.value.retryable
    with pytest.raises(ChatError, match="ZeroDivisionError") as info:
        CallableChat(lambda m: 1 / 0).chat(MSGS)
    assert not info.value.retryable

    def flaky(m: Any) -> str:
        raise ConnectionError("socket gone")

    with pytest.raises(ChatError) as info:
        CallableChat(flaky).chat(MSGS)
    assert info.value.retryable


def test_retried_through_the_client() -> None:
    calls = {"n": 0}

    def flaky(messages: Any) -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise TimeoutError("slow")
        return "finally"

    (result,) = ChatClient(flaky, cache=False, backoff_base=0.001).run_many(["q"])
    assert isinstance(result, ChatReply) and result.text == "finally" and calls["n"] == 3


def test_timeout_abandons_a_slow_call() -> None:
    release, returned = threading.Event(), []

    def slow(messages: Any) -> str:  # returns only when the test ends, far past the timeouts
        release.wait(60)
        returned.append(messages)
        return "late"

    model = CallableChat(slow)
    try:
        with pytest.raises(ChatError, match="timed out") as info:
            model.chat(MSGS, timeout=0.2)
        assert info.value.retryable and not returned  # abandoned at the deadline, not waited for
        (result,) = ChatClient(model, cache=False, timeout=0.1, max_attempts=2, backoff_base=0.001).run_many(["q"])
        assert isinstance(result, ChatFailure) and result.attempts == 2 and not returned
    finally:
        release.set()


def test_identity_changes_with_source(cache_path: Path) -> None:
    def a(messages: Any) -> str:
        return "one"

    def b(messages: Any) -> str:
        return "two"

    ia, ib = CallableChat(a, name="j").cache_identity(), CallableChat(b, name="j").cache_identity()
    assert ia != ib
    assert ia == CallableChat(a, name="j").cache_identity()


_CALLS: list[str] = []  # module-level and mutable: read by the judges below, not part of their fingerprint


def _counted(messages: Any) -> str:
    _CALLS.append(messages[-1]["content"])
    return "r"


def test_cached_by_default_and_optional(cache_path: Path) -> None:
    _CALLS.clear()
    ChatClient(_counted, cache=cache_path).run_many(["q"])
    ChatClient(_counted, cache=cache_path).run_many(["q"])
    assert _CALLS == ["q"]
    ChatClient(CallableChat(_counted, cache=False), cache=cache_path).run_many(["q"])
    ChatClient(CallableChat(_counted, cache=False), cache=cache_path).run_many(["q"])
    assert _CALLS == ["q", "q", "q"]


def test_a_closure_over_changing_state_is_not_reused(cache_path: Path) -> None:
    # Captured values are part of the identity, by their content: a judge whose captured state
    # has changed may answer differently, so it is asked again (cache_key= pins it).
    calls = {"n": 0}

    def f(messages: Any) -> str:
        calls["n"] += 1
        return "r"

    ChatClient(f, cache=cache_path).run_many(["q"])
    ChatClient(f, cache=cache_path).run_many(["q"])
    assert calls["n"] == 2
    ChatClient(CallableChat(f, cache_key="v1"), cache=cache_path).run_many(["q"])
    ChatClient(CallableChat(f, cache_key="v1"), cache=cache_path).run_many(["q"])
    assert calls["n"] == 3


def test_not_callable() -> None:
    with pytest.raises(TypeError, match="callable"):
        CallableChat("nope")  # type: ignore[arg-type]


def test_two_lambdas_on_one_line_differ() -> None:
    a, b = CallableChat(lambda m: "a", name="j"), CallableChat(lambda m: "b", name="j")
    assert a.cache_identity() != b.cache_identity()


IDENTITY = """
from nbeval.chat import CallableChat
def judge(messages):
    return " ".join(m["content"] for m in messages if m["role"] == "user")
print(CallableChat(judge).cache_identity())
"""


def test_identity_is_stable_across_processes(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "ident.py"
    script.write_text(IDENTITY)
    env = {**os.environ, "PYTHONPATH": str(root)}
    outs = {
        subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    }
    assert len(outs) == 1 and "judge" in outs.pop()
