"""Batched judging across interruptions (issue 34): a run killed while it polls resumes its batch and
sends nothing new; Ctrl-C leaves the batch running, a cancel cancels it at the provider; a batch
created just before a crash is found again; ``--batch`` on the command line."""

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
from nbeval.chat import ChatClient, OpenAIChat
from nbeval.chat.batch import BatchOptions, run_batch
from nbeval.chat.batch_store import CANCELLED_HERE, BatchStore, store_path
from nbeval.cli import main
from nbeval.data.model import TestLab
from nbeval.errors import Interrupted
from tests.chat.test_batch import ROWS, judge_of, table, verdict
from tests.support.fake_batch import FakeBatchServer

ROOT = Path(__file__).resolve().parents[2]

#: A run in a process of its own: evaluate ROWS with batch=True, print the scores as JSON.
RUN = """
import json, sys
import nbeval
url, cache, rows = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
judge = {"model": "judge-model", "base_url": url, "api_key": "sk-batch-test-key-123456"}
res = nbeval.evaluate(rows, ["safety"], judge=judge, cache=cache, progress=False, batch=True, batch_poll_s=0.05)
print(json.dumps(sorted(map(list, zip(res.scores["key"], res.scores["value"].astype(float))))))
"""


def _command(server: FakeBatchServer, cache: Path) -> list[str]:
    return [sys.executable, "-c", RUN, server.url, str(cache), json.dumps(ROWS)]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def _posts(server: FakeBatchServer) -> list[str]:
    return [path for method, path in server.calls if method == "POST"]


@pytest.mark.slow  # two processes of their own, each importing nbeval and openai
def test_a_run_killed_while_it_polls_resumes_the_same_batch(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with FakeBatchServer(verdict, delay=None) as server:  # the batch waits until released
        first = subprocess.Popen(_command(server, cache), env=_env(), cwd=tmp_path, stdout=subprocess.PIPE)
        try:
            assert server.wait_until(lambda _: len(server.polls) >= 2, timeout=120), "the first run never polled"
        finally:
            first.send_signal(signal.SIGKILL)  # no chance to clean up: as a crash or a kernel restart
            first.wait(timeout=60)
        assert first.returncode == -signal.SIGKILL
        assert _posts(server) == ["/v1/files", "/v1/batches"]
        stored = BatchStore(store_path(cache)).batches()
        assert [(b["batch_id"], b["open"], b["requests"]) for b in stored] == [("batch_fake0001", 1, 6)]

        server.release()
        second = subprocess.run(
            _command(server, cache), env=_env(), cwd=tmp_path, capture_output=True, text=True, timeout=240
        )
        assert second.returncode == 0, second.stderr
        assert _posts(server) == ["/v1/files", "/v1/batches"]  # no second submission
        assert server.batch_creates == 1 and server.request_count == 0
        assert [b["open"] for b in BatchStore(store_path(cache)).batches()] == [0]
        sync = nbeval.evaluate(ROWS, ["safety"], judge=judge_of(server), cache=False, progress=False)
    expected = sorted([k, v] for k, v in zip(sync.scores["key"], sync.scores["value"].astype(float), strict=True))
    assert json.loads(second.stdout.strip().splitlines()[-1]) == expected


def test_ctrl_c_leaves_the_batch_running_and_the_next_run_picks_it_up(tmp_path: Path) -> None:
    def interrupt(text: str) -> None:
        raise KeyboardInterrupt

    with FakeBatchServer(lambda rec: f"echo {rec.last_content}", delay=None) as server:
        client = ChatClient(OpenAIChat("m", base_url=server.url, api_key="sk-test"), cache=tmp_path / "c.sqlite")
        with pytest.raises(KeyboardInterrupt):
            run_batch(client, ["a", "b"], options=BatchOptions(poll_s=0.05, on_status=interrupt))
        assert server.batch_creates == 1 and server.cancels == []
        server.release()
        again = ChatClient(OpenAIChat("m", base_url=server.url, api_key="sk-test"), cache=tmp_path / "c.sqlite")
        out = run_batch(again, ["b", "a", "c"], options=BatchOptions(poll_s=0.05))
    assert [r.text for r in out] == ["echo b", "echo a", "echo c"]  # type: ignore[union-attr]
    assert server.batch_creates == 2  # "c" was new; "a" and "b" came from the first batch
    assert [len(data.splitlines()) for data in server.uploads.values()] == [2, 1]


def _batched(server: FakeBatchServer, cache: Path, cancel: threading.Event | None = None) -> Any:
    """A batched run of ROWS judged through ``server``."""
    judge = judge_of(server)
    return nbeval.evaluate(
        ROWS, ["safety"], judge=judge, cache=cache, progress=False, batch=True, batch_poll_s=0.05, cancel=cancel
    )


def _cancelled_once_polled(server: FakeBatchServer, cache: Path) -> Any:
    """A batched run of ROWS (in a thread), cancelled once its batch was polled: its result."""
    cancel = threading.Event()
    got: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: got.update(result=_batched(server, cache, cancel)))
    worker.start()
    assert server.wait_until(lambda _: len(server.polls) >= 1, timeout=60)
    cancel.set()
    worker.join(timeout=60)
    assert server.cancels == ["batch_fake0001"]
    return got["result"]


def test_cancel_cancels_the_batch_at_the_provider(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with FakeBatchServer(verdict, delay=None) as server:
        result = _cancelled_once_polled(server, cache)
        assert result.meta["cancelled"] and (result.scores["skip_reason"] == "cancelled").all()
        assert [b["status"] for b in BatchStore(store_path(cache)).batches()] == [CANCELLED_HERE]
        # new-user review (3): the next run failed every row ("batch ... was cancelled"); it sends a new batch
        server.release()
        again = _batched(server, cache)
        assert server.batch_creates == 2 and server.request_count == 0
        assert not any(table(again)["error"])
        stored = BatchStore(store_path(cache)).batches()  # the cancelled batch is forgotten
        assert [(b["batch_id"], b["open"]) for b in stored] == [("batch_fake0002", 0)]
        sync = nbeval.evaluate(ROWS, ["safety"], judge=judge_of(server), cache=False, progress=False)
    assert table(again).equals(table(sync))


def test_the_run_after_a_cancel_keeps_what_the_batch_answered_and_sends_the_rest(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with FakeBatchServer(verdict, delay=None, cancel_keeps=4) as server:  # 4 of 6 answered before it stopped
        _cancelled_once_polled(server, cache)
        server.release()
        again = _batched(server, cache)
        assert not any(table(again)["error"])
        assert server.batch_creates == 2 and server.request_count == 0
        assert [len(data.splitlines()) for data in server.uploads.values()] == [6, 2]  # only the unanswered two
        sync = nbeval.evaluate(ROWS, ["safety"], judge=judge_of(server), cache=False, progress=False)
    assert table(again).equals(table(sync))


def test_a_batch_that_expired_is_reported_once_then_a_batched_run_sends_only_the_rest(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with FakeBatchServer(verdict, delay=0.1, expire_after=4) as server:
        judge = judge_of(server)
        first = nbeval.evaluate(
            ROWS, ["safety"], judge=judge, cache=cache, progress=False, batch=True, batch_poll_s=0.05
        )
        errors = [e for e in table(first)["error"] if e]
        assert len(errors) == 2 and all("batch=True sends the requests it did not answer" in e for e in errors)
        assert [b["open"] for b in BatchStore(store_path(cache)).batches()] == [0]  # closed: no run waits on it
        second = nbeval.evaluate(
            ROWS, ["safety"], judge=judge, cache=cache, progress=False, batch=True, batch_poll_s=0.05
        )
        assert not any(table(second)["error"])
        assert server.batch_creates == 2 and [len(d.splitlines()) for d in server.uploads.values()] == [6, 2]


def _ctrl_c_at_the_first_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    from nbeval.chat.batch_api import BatchAPI

    def interrupted(self: BatchAPI, batch_id: str) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(BatchAPI, "retrieve", interrupted)


def test_ctrl_c_names_the_batch_left_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # new-user review (12b): Ctrl-C said nothing of the batch still running (and billed) at the provider
    with FakeBatchServer(verdict, delay=None) as server:
        with monkeypatch.context() as patched:
            _ctrl_c_at_the_first_poll(patched)
            with pytest.raises(Interrupted) as stop:
                nbeval.evaluate(
                    ROWS, ["safety"], judge=judge_of(server), cache=tmp_path / "c.sqlite", progress=False,
                    batch=True, batch_poll_s=0.05,
                )  # fmt: skip
        assert stop.value.batches == ("batch_fake0001",) and server.cancels == []
        text = str(stop.value)
        assert "batch batch_fake0001 is still running at the provider, and billed" in text
        assert "running the same evaluate(..., batch=True) again picks it up" in text
        assert "cancel it at the provider (its Batch API: POST .../batches/batch_fake0001/cancel)" in text


def test_ctrl_c_on_the_command_line_names_the_batch_left_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "rows.json"
    data.write_text(json.dumps(ROWS))
    with FakeBatchServer(verdict, delay=None) as server:
        argv = ["run", str(data), "-e", "safety", "--judge", "judge-model", "--judge-base-url", server.url]
        _ctrl_c_at_the_first_poll(monkeypatch)
        assert main([*argv, "--out", str(tmp_path / "o"), "--no-progress", "--batch"]) == 130
    err = capsys.readouterr().err
    assert f"saved the partial result to {tmp_path / 'o'}/" in err
    assert "batch batch_fake0001 is still running at the provider, and billed; running the same command again " in err
    assert "picks it up" in err and "POST .../batches/batch_fake0001/cancel" in err


def test_a_batch_created_just_before_a_crash_is_found_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(self: BatchStore, submission: str, batch_id: str, status: str, **_: object) -> None:
        raise KeyboardInterrupt  # killed between the provider's answer and writing its id down

    with FakeBatchServer(lambda rec: f"echo {rec.last_content}", delay=0.1) as server:
        client = ChatClient(OpenAIChat("m", base_url=server.url, api_key="sk-test"), cache=tmp_path / "c.sqlite")
        with monkeypatch.context() as patched:
            patched.setattr(BatchStore, "created", crash)
            with pytest.raises(KeyboardInterrupt):
                run_batch(client, ["a", "b"], options=BatchOptions(poll_s=0.05))
        assert server.batch_creates == 1
        assert [b["status"] for b in BatchStore(store_path(tmp_path / "c.sqlite")).batches()] == ["submitting"]
        out = run_batch(client, ["a", "b"], options=BatchOptions(poll_s=0.05))
    assert [r.text for r in out] == ["echo a", "echo b"]  # type: ignore[union-attr]
    assert server.batch_creates == 1 and ("GET", "/v1/batches") in server.calls


def test_cli_run_and_complete_with_batch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "rows.json"
    data.write_text(json.dumps(ROWS))
    with FakeBatchServer(verdict, delay=0) as server:
        argv = ["run", str(data), "-e", "safety", "--judge", "judge-model", "--judge-base-url", server.url]
        assert main([*argv, "--dry-run", "--batch"]) == 0 and server.calls == []
        assert "judge calls: 6 (0 cached, 6 to make)" in capsys.readouterr().out
        code = main([*argv, "--out", str(tmp_path / "o"), "--no-progress", "--batch"])
        assert code == 0, capsys.readouterr().err
        assert server.batch_creates == 1 and server.request_count == 0
        res = nbeval.load_result(tmp_path / "o")
        assert sorted(res.scores["value"].tolist()) == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]

        suite = tmp_path / "suite.json"
        cases = [{"key": "c1", "prompt": "What is 2+2?"}, {"key": "c2", "prompt": "Capital of France?"}]
        suite.write_text(json.dumps({"name": "s", "tests": [{"test_cases": cases}]}))
        server.reply = lambda rec: f"{rec.body['model'] if rec.body else ''} says: {rec.last_content}"
        out = tmp_path / "lab.json"
        argv = ["complete", str(suite), "-m", "alpha", "--base-url", server.url, "--out", str(out)]
        assert main([*argv, "--no-progress", "--batch"]) == 0, capsys.readouterr().err
        assert server.batch_creates == 2 and server.request_count == 0
    lab = nbeval.load(out)
    assert isinstance(lab, TestLab)
    assert [r.actual_output for r in lab.dataset] == ["alpha says: What is 2+2?", "alpha says: Capital of France?"]


def test_ctrl_c_while_collecting_names_the_batch_left_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = {"name": "s", "tests": [{"test_cases": [{"key": "c1", "prompt": "What is 2+2?"}]}]}
    with FakeBatchServer("4", delay=None) as server:
        pending = nbeval.collect(
            suite, {"alpha": {"model": "alpha", "base_url": server.url, "api_key": "sk-test"}},
            cache=tmp_path / "c.sqlite", batch=True, batch_poll_s=0.05,
        )  # fmt: skip
        _ctrl_c_at_the_first_poll(monkeypatch)
        with pytest.raises(Interrupted) as stop:
            pending.complete(progress=False)
    assert stop.value.batches == ("batch_fake0001",)
    assert "running the same complete(batch=True) again picks it up" in str(stop.value)
