"""Deadlines: ``timeout=`` bounds a whole judge call, and Ctrl-C stops a run within seconds.

The slow servers here are real sockets on 127.0.0.1: one that sends its headers and then one byte
a second (no gap between bytes is long, so a per-read timeout never fires), one that never answers.

The time is the point of some tests here (a deadline is kept; Ctrl-C is quick): their bounds sit
between the deadline and what a missing deadline would take (a reply dripping for minutes, a
server hanging for a minute), far enough from both to hold with two busy processes on two cores.
Slow Python functions wait on an event, not the clock: a test checks that the call was abandoned
(it had not returned when the run did), not how long the run took.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat import CallableChat, ChatCache, ChatClient, ChatError, ChatFailure, OpenAIChat
from nbeval.chat.collect import RagFunction
from tests.support.fake_openai import Drip, FakeOpenAIServer, Hang

HI = [{"role": "user", "content": "hi"}]  # one user message, as ChatModel.chat takes it

ROOT = Path(__file__).resolve().parents[2]
ROWS = [{"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}"} for i in range(3)]


@pytest.fixture(autouse=True)
def _no_judge_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


@pytest.mark.timeout(60)
def test_a_dripping_server_times_out_on_the_whole_call(openai_server: FakeOpenAIServer) -> None:
    openai_server.push(Drip("Rating: yes", interval=1.0))
    model = OpenAIChat("judge", base_url=openai_server.url)
    start = time.monotonic()
    with pytest.raises(ChatError, match="timed out after 1 s") as info:
        model.chat(HI, timeout=1)
    elapsed = time.monotonic() - start
    assert info.value.retryable
    # a deadline test: not before the deadline, and far from the minutes the whole reply would take
    assert 0.9 <= elapsed < 30, elapsed


@pytest.mark.timeout(60)
def test_a_steady_trickle_is_cut_at_the_deadline(openai_server: FakeOpenAIServer) -> None:
    # Twenty bytes a second: every read returns quickly, yet the whole body would take ~10 s.
    openai_server.push(Drip("x" * 40, interval=0.05))
    model = OpenAIChat("judge", base_url=openai_server.url)
    start = time.monotonic()
    with pytest.raises(ChatError, match="timed out"):
        model.chat(HI, timeout=1.5)  # the body (310 bytes) needs ~15 s at 20 bytes a second
    # a deadline test: cut at ~1.5 s, well before the ~15 s the body takes (more on a busy machine)
    assert time.monotonic() - start < 10


@pytest.mark.timeout(60)
def test_a_fast_enough_reply_is_not_cut(openai_server: FakeOpenAIServer) -> None:
    # ~250 bytes in ~0.5 s (a few seconds on a busy machine), well under a 30 s deadline
    openai_server.push(Drip("yes", interval=0.002))
    reply = OpenAIChat("judge", base_url=openai_server.url).chat(HI, timeout=30)
    assert reply.text == "yes"
    assert (
        OpenAIChat("judge", base_url=openai_server.url).chat([{"role": "user", "content": "again"}], timeout=30).text
        == "ok"
    )  # pool still fine


@pytest.mark.timeout(60)
def test_a_run_with_a_dripping_judge_finishes_with_the_rows_error(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Drip("Rating: yes", interval=1.0)  # minutes per reply
    res = nbeval.evaluate(
        ROWS,
        ["safety"],
        judge={"model": "judge", "base_url": openai_server.url},
        timeout=1,
        max_attempts=1,
        cache=False,
        progress=False,
    )  # it ends: pytest-timeout
    errors = list(res.scores["error"])
    assert len(errors) == len(ROWS) == openai_server.request_count
    assert all("timed out after 1 s" in e for e in errors), errors


class _Stuck:
    """A Python function that does not return until the test ends (far past any timeout here);
    ``returned`` counts the calls that did return."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.returned = 0

    def __call__(self, text: str) -> str:
        self.release.wait(60)
        self.returned += 1
        return "Rating: yes"


@pytest.fixture
def stuck() -> Iterator[_Stuck]:
    fn = _Stuck()
    yield fn
    fn.release.set()


def test_a_slow_python_judge_is_abandoned_and_counted_as_a_timeout(stuck: _Stuck) -> None:
    client = ChatClient(CallableChat(stuck), cache=False, timeout=0.3, max_attempts=1)
    (result,) = client.run_many(["q"])
    assert isinstance(result, ChatFailure) and "timed out after 0.3 s" in result.error
    assert stuck.returned == 0  # abandoned at the deadline, not waited for
    assert client.usage_totals().failed_calls == 1


def test_a_slow_rag_function_is_abandoned_too(stuck: _Stuck) -> None:
    model = RagFunction(stuck)
    with pytest.raises(ChatError, match=r"timed out after 0\.3 s") as info:
        model.chat([{"role": "user", "content": "q"}], timeout=0.3)
    assert info.value.retryable and stuck.returned == 0
    (result,) = ChatClient(model, cache=False, timeout=0.3, max_attempts=1).run_many(["q"])
    assert isinstance(result, ChatFailure) and "timed out" in result.error and stuck.returned == 0


# ---------------------------------------------------------------------------------------------
# Ctrl-C


def _ctrl_c_works() -> None:
    """In the child before it starts: Ctrl-C as a terminal delivers it. A process inherits an
    ignored SIGINT, and Python then never raises KeyboardInterrupt; something earlier in a long
    pytest session (a library in this process) may have left SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


INTERRUPTED = """
import sys, time
from nbeval.chat import ChatClient, OpenAIChat
client = ChatClient(OpenAIChat("judge", base_url=sys.argv[1]), cache=sys.argv[2], concurrency=4, timeout=120)
print("ready", flush=True)
try:
    client.run_many([f"q{i}" for i in range(12)])
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def _answer_first(n: int) -> Any:
    def reply(rec: Any) -> Any:
        return f"reply to {rec.last_content}" if rec.last_content in {f"q{i}" for i in range(n)} else Hang(60)

    return reply


def _wait_for(cond: Any, seconds: float) -> None:
    """Until ``cond()``, for what only the child process sees (a generous bound, not a measure)."""
    end = time.monotonic() + seconds
    while not cond():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.02)


@pytest.mark.timeout(120)
def test_ctrl_c_stops_a_batch_within_seconds_and_keeps_the_cache(tmp_path: Path) -> None:
    # The first two prompts are answered, the rest hang; hung calls must not hold up the exit.
    cache = tmp_path / "c.sqlite"
    with FakeOpenAIServer(reply=_answer_first(2)) as server:
        proc = subprocess.Popen(
            [sys.executable, "-c", INTERRUPTED, server.url, str(cache)],
            preexec_fn=_ctrl_c_works,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert server.wait_until(lambda s: s.request_count >= 6 and s.in_flight >= 4, 60)
        _wait_for(lambda: len(ChatCache(cache)) >= 2, 60)  # the two answers reached the cache
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - start
    assert proc.returncode == 130, err
    assert out.split() == ["ready", "interrupted"]
    # the point is the time: the hung calls (a minute each) must not hold up the exit; the bound
    # is far from both, for a machine with two busy processes on two cores
    assert took < 30, took
    assert len(ChatCache(cache)) == 2


CLI_ROWS = "\n".join(f'{{"key": "k{i}", "input": "q{i}", "actual_output": "a{i}"}}' for i in range(12))


@pytest.mark.timeout(120)
def test_ctrl_c_in_nbeval_run_is_one_line_and_exit_130(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(CLI_ROWS)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NBEVAL_CACHE_DIR": str(tmp_path / "cache")}
    with FakeOpenAIServer(reply=lambda rec: Hang(60)) as server:
        cmd = [
            sys.executable,
            "-m",
            "nbeval.cli",
            "run",
            str(data),
            "-e",
            "safety",
            "--judge",
            "judge",
            "--judge-base-url",
            server.url,
            "--no-progress",
            "--out",
            str(tmp_path / "out"),
        ]
        proc = subprocess.Popen(
            cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_works
        )
        assert server.wait_until(lambda s: s.request_count >= 4, 60)
        start = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - start
    assert took < 30, took  # the point is the time: the hung calls (a minute each) do not hold up the exit
    assert proc.returncode == 130
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1 and "interrupted" in err
