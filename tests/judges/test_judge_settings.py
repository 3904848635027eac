"""Settings in a judge dict that are the client's, not the model's (issue 43, point 9).

``judge={"max_attempts": 1, ...}`` used to be sent to the provider as a request field (a real
endpoint answers 400 on every row) while the client made its default 5 attempts. The client's
settings (``max_attempts``, ``concurrency``, ``timeout``) given in a judge dict now apply to that
judge's calls, wherever the dict is given (the run's judge, an evaluator's own, a juror); a key
that is neither a client setting, a model setting nor a known request field is refused before
anything is asked, with a suggestion; ``extra_body`` sends what nbeval does not know, as given.
Every count below is what the loopback server saw.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

import nbeval
from nbeval.chat.config import resolve_chat_model
from nbeval.chat.hf_chat import HFChat
from nbeval.chat.judge_settings import client_settings_of, split_judge_settings
from nbeval.errors import EvaluatorError
from tests.support.fake_openai import FakeOpenAIServer, Hang, Status

pytestmark = pytest.mark.usefixtures("no_judge_from_env")

ROWS = [
    {"key": f"r{i}", "input": f"question {i}?", "expected_output": f"answer {i}", "actual_output": f"reply {i}"}
    for i in range(6)
]
YES = "Rationale: right.\nRating: yes"


def _judge(server: FakeOpenAIServer, **settings: Any) -> dict[str, Any]:
    return {"model": "judge", "base_url": server.url, "api_key": "sk-test-settings-0000", **settings}


def _run(judge: Any, **kw: Any) -> Any:
    return nbeval.evaluate(ROWS[:1], ["correctness"], judge=judge, cache=False, progress=False, **kw)


def test_max_attempts_in_the_judge_dict_is_the_clients_not_a_request_field(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = Status(500)
    result = _run(_judge(openai_server, max_attempts=1))
    assert openai_server.request_count == 1, "one attempt, as the judge's settings say (5 before)"
    assert "max_attempts" not in (openai_server.requests[0].body or {})
    assert result.scores["error"].notna().all()


def test_the_judges_own_max_attempts_wins_over_the_runs(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = Status(500)
    _run(_judge(openai_server, max_attempts=2), max_attempts=4)
    assert openai_server.request_count == 2


def test_concurrency_in_the_judge_dict_bounds_its_calls(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = YES
    openai_server.latency = 0.05
    nbeval.evaluate(ROWS, ["correctness"], judge=_judge(openai_server, concurrency=1), cache=False, progress=False)
    assert openai_server.request_count == len(ROWS)
    assert openai_server.max_in_flight == 1
    assert all("concurrency" not in (r.body or {}) for r in openai_server.requests)


def test_a_jurors_settings_apply_to_that_juror(openai_server: FakeOpenAIServer) -> None:
    """A juror's dict is made a model object when the jury is seated: its client settings go with it."""
    openai_server.reply = lambda rec: Status(500) if rec.model == "flaky" else YES
    flaky = {**_judge(openai_server, max_attempts=1), "model": "flaky"}
    steady = _judge(openai_server)
    _run([flaky, steady], max_attempts=3)
    models = [r.model for r in openai_server.requests]
    assert models.count("flaky") == 1 and models.count("judge") == 1


def test_an_evaluators_own_judge_dict_keeps_its_timeout_over_the_runs(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = Hang(20)
    ev = nbeval.evaluator("correctness", judge=_judge(openai_server, timeout=0.3, max_attempts=1))
    started = time.monotonic()
    result = nbeval.evaluate(ROWS[:1], [ev], cache=False, progress=False, timeout=30)
    assert time.monotonic() - started < 10, "the judge's own 0.3 s bound its call, not the run's 30 s"
    assert result.scores["error"].notna().all()
    assert openai_server.request_count == 1


@pytest.mark.parametrize(
    ("key", "hint"),
    [("max_attempt", "max_attempts"), ("concurency", "concurrency"), ("temprature", "temperature")],
)
def test_a_misspelt_setting_is_refused_with_a_suggestion(openai_server: FakeOpenAIServer, key: str, hint: str) -> None:
    with pytest.raises(EvaluatorError, match=rf"{key}.*did you mean '{hint}'") as caught:
        _run(_judge(openai_server, **{key: 1}))
    assert "extra_body" in str(caught.value)
    assert openai_server.request_count == 0


def test_an_unknown_field_goes_to_the_endpoint_only_under_extra_body(openai_server: FakeOpenAIServer) -> None:
    with pytest.raises(EvaluatorError, match="top_k"):
        _run(_judge(openai_server, top_k=5))
    assert openai_server.request_count == 0
    openai_server.reply = YES
    _run(_judge(openai_server, extra_body={"top_k": 5, "anything_at_all": True}, temperature=0.2))
    body = openai_server.requests[0].body or {}
    assert body["top_k"] == 5 and body["anything_at_all"] is True
    assert body["temperature"] == 0  # the evaluator's own parameter wins over the judge's default


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"max_attempts": "two"}, "max_attempts"),
        ({"concurrency": True}, "concurrency"),
        ({"concurrency": 1.5}, "concurrency"),
        ({"timeout": -1}, "timeout"),
        ({"timeout": float("nan")}, "timeout"),
    ],
)
def test_a_bad_client_setting_is_refused_naming_it(settings: dict[str, Any], words: str) -> None:
    with pytest.raises(EvaluatorError, match=words):
        resolve_chat_model({"model": "m", "base_url": "http://127.0.0.1:9/v1", **settings})


def test_a_local_models_settings_are_checked_too() -> None:
    with pytest.raises(EvaluatorError, match="did you mean 'max_new_tokens'"):
        resolve_chat_model({"provider": "hf", "model": "some/path", "max_new_token": 12})
    model = resolve_chat_model({"provider": "hf", "model": "some/path", "max_attempts": 2, "top_k": 3})
    assert client_settings_of(model) == {"max_attempts": 2}
    assert isinstance(model, HFChat)
    assert "max_attempts" not in model.default_params and model.default_params["top_k"] == 3


def test_split_names_each_kind_of_setting() -> None:
    model, client = split_judge_settings(
        {"model": "m", "timeout": 5, "max_attempts": 2, "concurrency": 3, "temperature": 0.1, "extra_body": {"x": 1}}
    )
    assert client == {"timeout": 5.0, "max_attempts": 2, "concurrency": 3}
    assert model == {"model": "m", "timeout": 5, "temperature": 0.1, "extra_body": {"x": 1}}


def test_a_collected_models_dict_settings_apply_to_its_calls(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = Status(500)
    suite = {"test_cases": [{"key": "c1", "prompt": "hello?"}]}
    model = {"model": "m", "base_url": openai_server.url, "api_key": "sk-test-settings-0000", "max_attempts": 1}
    nbeval.collect(suite, models={"m": model}, cache=False, max_attempts=4).complete(progress=False)
    assert openai_server.request_count == 1
    assert "max_attempts" not in (openai_server.requests[0].body or {})


def test_a_judges_name_is_what_results_call_it_and_is_never_sent(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = YES
    strict = _judge(openai_server, name="strict")
    lenient = _judge(openai_server, name="lenient")
    result = _run([strict, lenient])
    assert result.jury_agreement("correctness", n_boot=0).jurors == ("strict", "lenient")
    assert all("name" not in (r.body or {}) for r in openai_server.requests)
    resolved = resolve_chat_model(strict)
    assert resolved is not None and resolved.name == "strict"
