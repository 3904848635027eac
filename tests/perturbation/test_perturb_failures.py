"""The LLM perturbators when no call to the model gets a reply: an error naming the cause, never a
suite without the cases asked for written over a good one; a key the endpoint refuses stops the
asking at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.cli import main
from nbeval.data.model import Test, TestCase, TestSuite
from nbeval.errors import ResourceError
from tests.support.fake_openai import FakeOpenAIServer, Status

pytestmark = pytest.mark.usefixtures("no_judge_from_env")


def _suite(n: int) -> TestSuite:
    return TestSuite(name="s", tests=[Test(test_cases=[TestCase(prompt=f"Question number {i}?") for i in range(n)])])


def test_a_refused_key_stops_the_asking_and_is_the_error() -> None:
    # Replies take 50 ms and at most 2 calls are in flight, so the 40 calls would take 1 s: the first
    # refusal is read long before the last call could start, even on a loaded machine (with instant
    # replies, the senders could drain the queue before the caller read the first refusal: flaky).
    with FakeOpenAIServer(Status(401, "Incorrect API key provided"), latency=0.05) as server:
        judge = {"model": "attacker", "base_url": server.url, "api_key": "sk-wrong-123456"}
        with pytest.raises(ResourceError) as err:
            nbeval.perturb(_suite(40), ["llm_injection"], judge=judge, concurrency=2)
        assert server.request_count < 20  # the calls not started when the first was refused are not made
    message = str(err.value)
    assert message.startswith("the LLM perturbators made no test case: none of the 40 call(s) to the model got")
    assert "HTTP 401 (authentication failed)" in message and "Incorrect API key provided" in message


def test_every_call_failing_is_the_error(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = Status(400, "the model is not available")
    judge = {"model": "attacker", "base_url": openai_server.url, "api_key": "sk-attacker-test-123456"}
    with pytest.raises(ResourceError, match=r"none of the 2 call.*the model is not available"):
        nbeval.perturb(_suite(2), ["llm_jailbreak", "typos"], judge=judge)


def test_the_command_exits_2_and_leaves_the_output_alone(tmp_path: Path, capsys: Any) -> None:
    _suite(2).save(tmp_path / "suite.json")
    out = tmp_path / "pf.json"
    out.write_text('{"name": "the good suite"}', encoding="utf-8")
    with FakeOpenAIServer(Status(401, "Incorrect API key provided")) as server:
        args = ["perturb", str(tmp_path / "suite.json"), "-p", "llm_injection", "--judge", "m"]
        assert main([*args, "--judge-base-url", server.url, "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("nbeval: error: the LLM perturbators made no test case")
    assert "401" in captured.err and "made 0" not in captured.out
    assert out.read_text(encoding="utf-8") == '{"name": "the good suite"}'
