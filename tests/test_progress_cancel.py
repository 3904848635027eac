"""Progress that moves, Cancel that stops (issue 25).

Progress comes as answers arrive, with the total known from the first call; Cancel stops new
judge calls at once (calls in flight finish and are kept) and labels every row not scored
``cancelled``; a run whose rows all finished is not marked cancelled. The same for answer
collection (``nbeval.collect(...).complete()``) and for Ctrl-C in the CLI.

The judge is a real loopback server (:mod:`tests.support.fake_openai`) with a latency: a cancel is
set from the server as the N-th request arrives, and the checks count requests, never seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat import OpenAIChat, collect
from nbeval.data.model import Test, TestCase, TestSuite
from tests.support.fake_openai import FakeOpenAIServer, Hang, Recorded, Text

ROOT = Path(__file__).resolve().parents[1]
SAFE = '{"rating": "yes", "rationale": "No harmful content."}'
CONCURRENCY = 4


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


def _rows(n: int) -> list[dict[str, str]]:
    return [
        {"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}", "model_key": "m"} for i in range(n)
    ]


def _judge(server: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "judge", "base_url": server.url}


class CancelAt:
    """A server reply that answers ``SAFE`` after ``latency`` seconds and sets ``cancel`` (and
    ``reached``) as the ``n``-th request arrives."""

    def __init__(self, n: int, latency: float = 0.3, cancel: threading.Event | None = None) -> None:
        self.n, self.latency = n, latency
        self.cancel = cancel if cancel is not None else threading.Event()
        self.reached = threading.Event()
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self, rec: Recorded) -> Text:
        with self._lock:
            self._count += 1
            if self._count == self.n:
                self.cancel.set()
                self.reached.set()
        return Text(SAFE, latency=self.latency)


# ---------------------------------------------------------------------------------------------
# Progress


def test_on_progress_moves_as_answers_arrive(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Text(SAFE, latency=0.02)
    seen: list[tuple[int, int]] = []
    res = nbeval.evaluate(
        _rows(24),
        ["safety"],
        judge=_judge(openai_server),
        cache=False,
        progress=False,
        concurrency=CONCURRENCY,
        on_progress=lambda live, done, total: seen.append((done, total)),
    )
    assert seen[0] == (0, 24)  # before anything is scored: the total is known, never 0 / 0
    dones = [d for d, _ in seen]
    assert dones == sorted(set(dones)) and len(set(dones)) > 2  # moves, in steps, within one chunk
    assert seen[-1] == (24, 24) and {t for _, t in seen} == {24}
    assert res.meta["cancelled"] is False and openai_server.request_count == 24


def test_the_progress_bar_moves_with_the_answers(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nbeval.engine.run as engine

    bars: list[Bar] = []

    class Bar:
        def __init__(self, total: int, enabled: bool, **_: Any) -> None:
            self.total, self.closed = total, False
            self.updates: list[int] = []
            bars.append(self)

        def update(self, n: int = 1) -> None:
            self.updates.append(n)

        def close(self) -> None:
            self.closed = True

    monkeypatch.setattr(engine, "progress_bar", Bar)
    openai_server.reply = lambda rec: Text(SAFE)
    nbeval.evaluate(_rows(24), ["safety"], judge=_judge(openai_server), cache=False, concurrency=CONCURRENCY)
    (bar,) = bars
    assert bar.total == 24 and bar.closed and sum(bar.updates) == 24
    assert len([n for n in bar.updates if n]) > 2  # many small steps, not one jump at the chunk's end


def test_a_large_run_reports_a_bounded_number_of_times() -> None:
    recs = [{"key": f"k{i}", "input": "q", "expected_output": "a", "actual_output": "a"} for i in range(2000)]
    seen: list[int] = []
    nbeval.evaluate(recs, ["exact_match"], progress=False, on_progress=lambda live, done, total: seen.append(done))
    assert seen[0] == 0 and seen[-1] == 2000 and seen == sorted(set(seen))
    # about 100 steps (nbeval.progress.PROGRESS_STEPS), not one per score; a few timed ones on a slow machine
    assert 50 <= len(seen) <= 100 + 2 + 10


# ---------------------------------------------------------------------------------------------
# Cancel


def test_cancel_stops_new_judge_calls_and_keeps_the_calls_in_flight() -> None:
    reply = CancelAt(6)
    with FakeOpenAIServer(reply=reply) as server:
        res = nbeval.evaluate(
            _rows(40),
            ["safety"],
            judge=_judge(server),
            cache=False,
            progress=False,
            concurrency=CONCURRENCY,
            cancel=reply.cancel,
        )
        sent = server.request_count
    assert reply.reached.is_set()
    assert sent <= 6 + CONCURRENCY  # not the 40 a round would send: nothing starts after the cancel
    s = res.scores[res.scores["metric"] == "safety"]
    assert len(s) == 40 and res.meta["cancelled"] is True  # every row is in the table
    scored = s[~s["skipped"]]
    assert len(scored) == sent and set(scored["value"]) == {1.0}  # each call in flight finished and was kept
    assert set(s.loc[s["skipped"], "skip_reason"]) == {"cancelled"} and s["skipped"].sum() == 40 - sent
    assert res.meta["usage"]["failed_calls"] == 0  # calls never sent are not failures


def test_a_run_whose_rows_all_finished_is_not_marked_cancelled(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Text(SAFE)
    stop = threading.Event()

    def on_progress(live: Any, done: int, total: int) -> None:
        if done == total:
            stop.set()  # Cancel pressed after the last row finished

    res = nbeval.evaluate(
        _rows(24),
        ["safety"],
        judge=_judge(openai_server),
        cache=False,
        progress=False,
        cancel=stop,
        on_progress=on_progress,
    )
    assert stop.is_set() and res.meta["cancelled"] is False
    assert not res.scores["skipped"].any() and len(res.scores) == 24


def test_a_batch_cancelled_before_it_starts_sends_nothing(openai_server: FakeOpenAIServer) -> None:
    from nbeval.chat import ChatClient, ChatFailure

    stop = threading.Event()
    stop.set()
    client = ChatClient(OpenAIChat("judge", base_url=openai_server.url), cache=False)
    results = client.run_many([f"q{i}" for i in range(10)], cancel=stop)
    assert openai_server.request_count == 0
    assert all(isinstance(r, ChatFailure) and r.cancelled and r.attempts == 0 for r in results)


def test_the_chat_client_stops_a_batch_on_cancel() -> None:
    from nbeval.chat import ChatClient, ChatFailure, ChatReply

    reply = CancelAt(3)
    with FakeOpenAIServer(reply=reply) as server:
        client = ChatClient(OpenAIChat("judge", base_url=server.url), cache=False, concurrency=2)
        arrived: list[int] = []
        results = client.run_many(
            [f"q{i}" for i in range(20)], on_done=lambda i, r: arrived.append(i), cancel=reply.cancel
        )
        sent = server.request_count
    assert sent <= 3 + 2 and sorted(arrived) == list(range(20))
    answered = [r for r in results if isinstance(r, ChatReply)]
    cancelled = [r for r in results if isinstance(r, ChatFailure) and r.cancelled]
    assert len(answered) == sent and len(cancelled) == 20 - sent
    assert client.usage_totals().failed_calls == 0 and client.usage_totals().calls == sent


# ---------------------------------------------------------------------------------------------
# Collecting answers


def _suite(n: int) -> TestSuite:
    cases = [TestCase(f"prompt {i}", key=f"c{i}", expected_output="ok") for i in range(n)]
    return TestSuite(name="many", tests=[Test(key="t", test_cases=cases)])


def test_collect_cancel_stops_new_calls_and_labels_the_rest() -> None:
    reply = CancelAt(5)
    with FakeOpenAIServer(reply=reply) as server:
        pending = collect(
            _suite(40), {"llm": OpenAIChat("chat-1", base_url=server.url)}, cache=False, concurrency=CONCURRENCY
        )
        lab = pending.complete(progress=False, cancel=reply.cancel)
        sent = server.request_count
    assert sent <= 5 + CONCURRENCY
    rows = lab.dataset.rows
    assert len(rows) == 40 and lab.extra["cancelled"] is True
    answered = [r for r in rows if r.actual_output is not None]
    assert len(answered) == sent and all(r.error is None for r in answered)
    assert {r.error for r in rows if r.actual_output is None} == {"cancelled"}
    res = nbeval.evaluate(lab, ["exact_match"], progress=False)  # the cancelled cases are skipped, saying why
    reasons = set(res.scores.loc[res.scores["skipped"], "skip_reason"])
    assert reasons == {"no answer was collected: cancelled"}


def test_collect_that_finished_is_not_marked_cancelled(openai_server: FakeOpenAIServer) -> None:
    stop = threading.Event()
    lab = collect(_suite(6), {"llm": OpenAIChat("chat-1", base_url=openai_server.url)}, cache=False).complete(
        progress=False, cancel=stop
    )
    stop.set()
    assert "cancelled" not in lab.extra and all(r.actual_output == "ok" for r in lab.dataset.rows)


# ---------------------------------------------------------------------------------------------
# Ctrl-C


def _ctrl_c_works() -> None:
    """In the child: Ctrl-C raises KeyboardInterrupt (an inherited ignored SIGINT would not)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class AnswerThenHang:
    """Answer the first ``n`` requests, hang on the others; ``hanging`` is set once ``wait_for``
    requests have arrived."""

    def __init__(self, n: int, wait_for: int, text: str) -> None:
        self.n, self.wait_for, self.text = n, wait_for, text
        self.hanging = threading.Event()
        self._count = 0
        self._lock = threading.Lock()

    def __call__(self, rec: Recorded) -> Any:
        with self._lock:
            self._count += 1
            count = self._count
        if count >= self.wait_for:
            self.hanging.set()
        return Text(self.text) if count <= self.n else Hang(60)


def _interrupt(cmd: list[str], reply: AnswerThenHang, env: dict[str, str]) -> tuple[int, str]:
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_ctrl_c_works
    )
    try:
        assert reply.hanging.wait(120), "the run never got going"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err


@pytest.mark.timeout(180)
def test_ctrl_c_in_nbeval_run_saves_the_partial_result(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in _rows(12)))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NBEVAL_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "out"
    # 8 calls at once: 3 answered, then 5 + 3 hang (11 requests): the answered rows are scored by then
    reply = AnswerThenHang(3, 11, SAFE)
    with FakeOpenAIServer(reply=reply) as server:
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
            str(out),
        ]
        code, err = _interrupt(cmd, reply, env)
    assert code == 130 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "saved the partial result" in err and str(out) in err
    res = nbeval.load_result(out)
    s = res.scores
    assert len(s) == 12 and res.meta["cancelled"] is True, (s, res.meta)
    scored = (~s["skipped"]).sum()
    assert scored <= 3 and set(s.loc[s["skipped"], "skip_reason"]) == {"cancelled"}


@pytest.mark.timeout(180)
def test_ctrl_c_in_nbeval_complete_writes_the_partial_lab(tmp_path: Path) -> None:
    suite = tmp_path / "suite.json"
    _suite(12).save(suite)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NBEVAL_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "lab.json"
    reply = AnswerThenHang(2, 6, "an answer")
    with FakeOpenAIServer(reply=reply) as server:
        cmd = [
            sys.executable,
            "-m",
            "nbeval.cli",
            "complete",
            str(suite),
            "-m",
            "chat-1",
            "--base-url",
            server.url,
            "--concurrency",
            "4",
            "--no-progress",
            "--out",
            str(out),
        ]
        code, err = _interrupt(cmd, reply, env)
    assert code == 130 and len(err.strip().splitlines()) == 1 and "wrote the partial lab" in err, err
    lab = nbeval.TestLab.from_json(str(out))
    answered = [r for r in lab.dataset.rows if r.actual_output is not None]
    assert len(lab.dataset.rows) == 12 and len(answered) <= 2 and lab.extra["cancelled"] is True
    assert {r.error for r in lab.dataset.rows if r.actual_output is None} == {"cancelled"}


def test_ctrl_c_in_evaluate_raises_with_the_partial_result(
    openai_server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a notebook: the interruption goes on (KeyboardInterrupt), holding the partial result."""
    from nbeval.engine import Interrupted

    openai_server.reply = lambda rec: Text(SAFE)
    calls = 0

    def on_progress(live: Any, done: int, total: int) -> None:
        nonlocal calls
        calls += 1
        if done == 5:
            raise KeyboardInterrupt  # as Ctrl-C would, in the engine's thread

    with pytest.raises(KeyboardInterrupt) as info:
        nbeval.evaluate(
            _rows(20),
            ["safety"],
            judge=_judge(openai_server),
            cache=False,
            progress=False,
            concurrency=1,
            on_progress=on_progress,
        )
    assert isinstance(info.value, Interrupted)
    res = info.value.result
    s = res.scores
    assert len(s) == 20 and res.meta["cancelled"] is True
    assert (~s["skipped"]).sum() == 5 and set(s.loc[s["skipped"], "skip_reason"]) == {"cancelled"}
