"""A restart of the real `nbeval serve` keeps its jobs (issue 35, point 3 and its "Done when").

The command runs as a child process on 127.0.0.1 with a temporary ``--data-dir``; it is killed
with SIGKILL (no shutdown code runs, as after an OOM kill) and started again on the same folder.
A job that had finished is still listed and served with the same scores and report; a job that
was running at the kill comes back ``interrupted``, with the scores it had saved by then.
"""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.serve.conftest import free_port, wait_until_up
from tests.support.fake_openai import FakeOpenAIServer, Hang, Recorded

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "restart-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SLOW = "SLOW-ROW"


class Served:
    """One `nbeval serve` child process, its URL and its log file."""

    def __init__(self, data_dir: Path, log: Path, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        env = {k: v for k, v in os.environ.items() if k != "NBEVAL_SERVE_TOKEN"}
        env["PYTHONPATH"] = str(ROOT)
        with log.open("ab") as out:  # a file, not a pipe: a pipe nobody reads could block the server
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "nbeval.cli",
                    "serve",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--token",
                    TOKEN,
                    "--data-dir",
                    str(data_dir),
                    *extra,
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self._wait_up()

    def _wait_up(self) -> None:
        wait_until_up(self.proc, self.url, lambda: self.log.read_text(errors="replace"), timeout_s=90)

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return httpx.get(self.url + path, headers=AUTH, timeout=60, **kw)

    def post(self, path: str, body: Any) -> httpx.Response:
        return httpx.post(self.url + path, json=body, headers=AUTH, timeout=120)

    def kill9(self) -> None:
        """SIGKILL, as an OOM kill would: nothing of the service's own shutdown runs."""
        self.proc.send_signal(signal.SIGKILL)
        assert self.proc.wait(timeout=30) == -signal.SIGKILL

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """``serve(data_dir, *flags)``: a running `nbeval serve`, stopped after the test."""
    started: list[Served] = []

    def start(data_dir: Path, *extra: str) -> Served:
        s = Served(data_dir, tmp_path / f"serve-{len(started)}.log", *extra)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def _all_scores(svc: Served, job_id: str) -> list[dict[str, Any]]:
    """Every record of a job's scores, page after page."""
    records: list[dict[str, Any]] = []
    path: str | None = f"/v1/evaluations/{job_id}"
    while path:
        r = svc.get(path)
        assert r.status_code == 200, r.text
        body = r.json()
        records += body["scores"] or []
        path = (body.get("scores_page") or {}).get("next")
    return records


def _wait(condition: Callable[[], bool], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def test_a_finished_job_survives_a_kill_9_and_a_restart(serve: Callable[..., Served], tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    rows = [
        {"key": "a", "input": "2+2?", "expected_output": "4", "actual_output": "4"},
        {"key": "b", "input": "3+3?", "expected_output": "6", "actual_output": "seven"},
        {"key": "c", "input": "capital of France?", "expected_output": "Paris", "actual_output": "Paris"},
    ]
    first = serve(data_dir)
    r = first.post("/v1/evaluations", {"data": rows, "evaluators": ["exact_match"], "wait": True})
    assert r.status_code == 200, r.text
    job = r.json()
    assert job["status"] == "succeeded"
    job_id = job["id"]
    before = _all_scores(first, job_id)
    values = {s["key"]: s["value"] for s in before if s["metric"] == "score"}
    assert values == {"a": 1.0, "b": 0.0, "c": 1.0}
    report_before = first.get(f"/v1/evaluations/{job_id}/report")
    assert report_before.status_code == 200
    first.kill9()
    with pytest.raises(httpx.TransportError):
        httpx.get(first.url + "/health", timeout=2)

    second = serve(data_dir)
    listed = second.get("/v1/evaluations")
    assert listed.status_code == 200
    mine = [j for j in listed.json() if j["id"] == job_id]
    assert len(mine) == 1 and mine[0]["status"] == "succeeded"
    assert mine[0]["progress"] == job["progress"] and mine[0]["rows"] == 3
    shown = second.get(f"/v1/evaluations/{job_id}").json()
    assert shown["status"] == "succeeded" and shown["error"] is None
    assert shown["leaderboards"] == job["leaderboards"]
    assert _all_scores(second, job_id) == before
    report = second.get(f"/v1/evaluations/{job_id}/report")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert "exact_match" in report.text
    assert second.get("/v1/evaluations/no-such-job").status_code == 404  # it serves what it has, nothing else
    # and the restarted service still runs new jobs on the same folder
    r = second.post("/v1/evaluations", {"data": rows[:1], "evaluators": ["exact_match"], "wait": True})
    assert r.status_code == 200 and r.json()["status"] == "succeeded"
    assert {j["id"] for j in second.get("/v1/evaluations").json()} == {job_id, r.json()["id"]}


@pytest.fixture
def hanging_judge() -> Iterator[FakeOpenAIServer]:
    """A judge that answers at once, except for answers marked SLOW, which it never answers."""

    def reply(rec: Recorded) -> Any:
        return Hang(600) if SLOW in rec.last_content else "Reason: Neutral.\nVerdict: no"

    with FakeOpenAIServer(reply) as server:
        yield server


def test_a_job_running_at_a_kill_9_comes_back_interrupted(
    serve: Callable[..., Served], tmp_path: Path, hanging_judge: FakeOpenAIServer
) -> None:
    from nbeval.serve.app import create_app

    # The job runs chunk by chunk (create_app's chunk_rows; the command does not change it) and
    # saves a partial result after its first chunk: enough fast rows for one whole chunk and a
    # part of the next, then rows the judge never answers, so the job is running for good.
    chunk = inspect.signature(create_app).parameters["chunk_rows"].default
    fast = [
        {"key": f"f{i:03d}", "input": "Who cooks?", "actual_output": f"Sam cooks dinner number {i}."}
        for i in range(chunk + max(1, chunk // 4))
    ]
    slow = [{"key": f"s{i}", "input": "Who cooks?", "actual_output": f"{SLOW} {i}"} for i in range(3)]
    data_dir = tmp_path / "data"
    first = serve(data_dir, "--judge", "judge-model", "--judge-base-url", hanging_judge.url, "--workers", "1")
    r = first.post("/v1/evaluations", {"data": fast + slow, "evaluators": ["sexism"], "wait": False})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    partial = data_dir / "results" / f"{job_id}.partial" / "result.json"  # the layout nbeval.serve.jobs documents
    _wait(lambda: first.get(f"/v1/evaluations/{job_id}").json()["progress"]["done"] > 0, "a chunk is done")
    _wait(partial.is_file, "the partial result is saved")
    assert hanging_judge.wait_until(lambda s: sum(SLOW in q.last_content for q in s.requests) > 0), (
        "the judge was never asked about a slow row"
    )
    running = first.get(f"/v1/evaluations/{job_id}").json()
    assert running["status"] == "running", running
    first.kill9()

    second = serve(data_dir, "--judge", "judge-model", "--judge-base-url", hanging_judge.url, "--workers", "1")
    listed = {j["id"]: j for j in second.get("/v1/evaluations").json()}
    assert listed[job_id]["status"] == "interrupted"
    shown = second.get(f"/v1/evaluations/{job_id}").json()
    assert shown["status"] == "interrupted" and shown["finished"] is not None
    assert "stopped" in shown["error"] and "kept" in shown["error"], shown["error"]
    scores = _all_scores(second, job_id)
    passed = {s["key"]: s["value"] for s in scores if s["metric"] == "pass"}
    fast_keys = {row["key"] for row in fast}
    # the scores saved by then: at least the first chunk, only fast rows, each with the judge's verdict
    assert len(passed) >= chunk and set(passed) <= fast_keys, sorted(passed)
    assert set(passed.values()) == {1.0}
    assert not any(s["key"].startswith("s") for s in scores)
    report = second.get(f"/v1/evaluations/{job_id}/report")
    assert report.status_code == 200 and report.headers["content-type"].startswith("text/html")
    assert not partial.exists()  # the partial became the job's result
    # nothing runs it again: its state stays interrupted
    time.sleep(0.5)
    assert second.get(f"/v1/evaluations/{job_id}").json()["status"] == "interrupted"
