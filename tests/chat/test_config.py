"""resolve_chat_model, judge_help_text and the small helpers of nbeval.chat.base."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import nbeval.chat
from nbeval.chat import CallableChat, ChatClient, ChatModel, HFChat, OpenAIChat, judge_help_text, resolve_chat_model
from nbeval.chat.base import Usage, estimate_tokens, messages_to_prompt, normalize_messages, redact
from nbeval.errors import EvaluatorError, JudgeNotConfigured
from tests.support.fake_openai import FakeOpenAIServer

HI = [{"role": "user", "content": "hi"}]  # one user message, as ChatModel.chat takes it

ROOT = Path(__file__).resolve().parents[2]


def test_none_without_env_is_none() -> None:
    assert resolve_chat_model(None) is None
    with pytest.raises(JudgeNotConfigured) as info:
        resolve_chat_model(None, required=True)
    assert judge_help_text() in str(info.value)


def test_openai_key_alone_configures_no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-judge-config")
    assert resolve_chat_model(None) is None


def test_none_from_env(monkeypatch: pytest.MonkeyPatch, openai_server: FakeOpenAIServer) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_MODEL", "env-judge")
    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", openai_server.url)
    model = resolve_chat_model(None)
    assert isinstance(model, OpenAIChat) and model.name == "env-judge"
    assert model.chat(HI).text == "ok"


def test_base_url_without_model_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", "http://localhost:11434/v1")
    with pytest.raises(JudgeNotConfigured, match="NBEVAL_JUDGE_MODEL"):
        resolve_chat_model(None)


def test_string_uses_env_base_url(monkeypatch: pytest.MonkeyPatch, openai_server: FakeOpenAIServer) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", openai_server.url)
    model = resolve_chat_model("llama3")
    assert isinstance(model, OpenAIChat)
    model.chat(HI)
    assert openai_server.requests[0].model == "llama3"


def test_hf_prefix_and_dicts(openai_server: FakeOpenAIServer) -> None:
    hf = resolve_chat_model("hf:/models/tiny")
    assert isinstance(hf, HFChat) and hf.model_name_or_path == "/models/tiny"
    hf2 = resolve_chat_model({"provider": "hf", "model": "/models/tiny", "device": "cpu"})
    assert isinstance(hf2, HFChat) and hf2.device == "cpu"
    oa = resolve_chat_model({"model": "m", "base_url": openai_server.url, "temperature": 0})
    assert isinstance(oa, OpenAIChat) and oa.default_params == {"temperature": 0}
    with pytest.raises(EvaluatorError, match="provider"):
        resolve_chat_model({"provider": "carrier-pigeon"})


def test_objects_and_callables() -> None:
    model = CallableChat(lambda m: "x")
    assert resolve_chat_model(model) is model
    assert resolve_chat_model(ChatClient(model, cache=False)) is model
    wrapped = resolve_chat_model(lambda prompt: "y")
    assert isinstance(wrapped, CallableChat) and isinstance(wrapped, ChatModel)
    with pytest.raises(EvaluatorError, match="cannot use a int"):
        resolve_chat_model(3)
    with pytest.raises(JudgeNotConfigured):
        resolve_chat_model("  ")


def test_help_text_names_every_way() -> None:
    text = judge_help_text()
    for needle in (
        "NBEVAL_JUDGE_MODEL",
        "NBEVAL_JUDGE_BASE_URL",
        "NBEVAL_JUDGE_API_KEY",
        "OPENAI_API_KEY",
        "judge=",
        "hf:",
        "my_function",
    ):
        assert needle in text


def test_all_is_complete() -> None:
    import types

    public = {
        n
        for n, v in vars(nbeval.chat).items()
        if not n.startswith("_") and not isinstance(v, types.ModuleType) and n != "annotations"
    }
    assert set(nbeval.chat.__all__) == public


def test_import_is_light() -> None:
    code = (
        "import sys, nbeval.chat; heavy = [m for m in ('openai', 'torch', 'transformers', 'httpx') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- base helpers --------------------------------------------------------------------------


def test_usage_helpers() -> None:
    assert Usage(1, 2) + Usage(10, 20) == Usage(11, 22)
    assert Usage(3, 4).total_tokens == 7
    assert Usage.from_any({"input_tokens": 5, "output_tokens": 6}) == Usage(5, 6)
    assert Usage.from_any(None) == Usage(0, 0)


def test_messages_helpers() -> None:
    assert normalize_messages("hi") == [{"role": "user", "content": "hi"}]
    with pytest.raises(TypeError, match="message 0"):
        normalize_messages([{"role": "user"}])
    assert messages_to_prompt([{"role": "user", "content": "q"}]) == "q"
    assert messages_to_prompt([{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]) == (
        "System: s\n\nUser: q"
    )
    assert estimate_tokens("") == 0 and estimate_tokens("abcde") == 2


def test_redact() -> None:
    text = "key sk-abcdefghijklmnop and Bearer abc.def-ghijkl and hf_ABCDEFGHIJKLMN and mysecret"
    out = redact(text, ["mysecret"])
    assert "sk-abcdefghijklmnop" not in out and "abc.def-ghijkl" not in out
    assert "hf_ABCDEFGHIJKLMN" not in out and "mysecret" not in out
    assert out.count("***") == 4


# -- judge_configured: the one rule for "is there a judge" ----------------------------------

JUDGE_SETUPS = {  # name: (environment, judge argument, configured?)
    "nothing set": ({}, None, False),
    "only the API key": ({"OPENAI_API_KEY": "sk-not-a-judge-config"}, None, False),
    "only NBEVAL_JUDGE_MODEL": ({"NBEVAL_JUDGE_MODEL": "env-judge"}, None, True),
    "only NBEVAL_JUDGE_BASE_URL": ({"NBEVAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"}, None, True),
    "judge passed": ({}, "my-judge", True),
}


@pytest.mark.parametrize("setup", JUDGE_SETUPS)
def test_judge_configured_follows_the_rule_resolve_chat_model_uses(setup: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbeval.chat.config import judge_configured

    env, judge, configured = JUDGE_SETUPS[setup]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert judge_configured(judge) is configured
    if judge is None:
        # resolve_chat_model(None) finds no judge exactly when judge_configured() is false; a judge
        # configured incompletely (no model name, no API key) says what is missing instead
        try:
            found = resolve_chat_model(None) is not None
        except JudgeNotConfigured as exc:
            assert "no model name" in str(exc) or "no API key" in str(exc)
            found = True
        assert found is configured


def test_judge_configured_builds_and_contacts_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from nbeval.chat.config import judge_configured

    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", "http://127.0.0.1:9/v1")  # no model name: building would fail
    assert judge_configured()
    assert judge_configured(lambda prompt: "yes")


@pytest.mark.parametrize("setup", JUDGE_SETUPS)
def test_run_resources_agree_with_judge_configured(setup: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbeval.chat.config import judge_configured
    from nbeval.request_kinds.chat import chat_client
    from nbeval.runtime import Resources

    env, judge, configured = JUDGE_SETUPS[setup]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-test")  # so an env model name alone can be built
    assert judge_configured(judge) is configured
    try:
        client = chat_client(Resources(judge=judge, cache=False))
    except JudgeNotConfigured as exc:
        # unconfigured: the help text; configured but incomplete: what is missing
        assert ("no judge model is configured" in str(exc)) is not configured
        assert setup in ("nothing set", "only the API key", "only NBEVAL_JUDGE_BASE_URL")
    else:
        assert configured and isinstance(client, ChatClient)
