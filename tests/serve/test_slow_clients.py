"""Slow clients against a real ``nbeval serve`` (issue 35, point 4): connections that never finish
their headers cannot use up the process's file descriptors or lock out ``/health`` and token
holders, and a body that never arrives is answered 408 within ``--body-timeout``."""

from __future__ import annotations

import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import httpx
import pytest

from tests.serve.conftest import free_port, wait_until_up

resource = pytest.importorskip("resource")
pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")

ROOT = Path(__file__).resolve().parents[2]
TOKEN = "slow-client-test-token"
SERVER_FILES = 256  # the server's `ulimit -n`
SLOW = 400  # half-open connections the test opens: more than the server may hold


class Child:
    """``nbeval serve`` in a child process whose limit on open files is ``files``; its stderr goes
    to a file (a pipe nobody reads could fill and stall the server)."""

    def __init__(self, *args: str, files: int) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = tempfile.mkdtemp(prefix="nbeval-serve-")
        self.stderr: IO[bytes] = tempfile.TemporaryFile()
        env = {k: v for k, v in os.environ.items() if k != "NBEVAL_SERVE_TOKEN"}
        env.update({"PYTHONPATH": str(ROOT), "NBEVAL_SERVE_TOKEN": TOKEN, "HF_HUB_OFFLINE": "1"})

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))

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
                "--data-dir",
                self.data_dir,
                *args,
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            preexec_fn=limit,
        )
        wait_until_up(self.proc, self.url, self.log)

    def open_files(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def log(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        import shutil

        shutil.rmtree(self.data_dir, ignore_errors=True)


@pytest.fixture
def own_files() -> Iterator[None]:
    """The test holds ``SLOW`` sockets and more: its own soft limit raised for the test if need be."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = SLOW + 200
    if soft != resource.RLIM_INFINITY and soft < want:
        if hard != resource.RLIM_INFINITY and hard < want:
            pytest.skip(f"the test needs {want} open files; the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _half_open(port: int, n: int, within: float = 20) -> list[socket.socket]:
    """``n`` connections that send the start of a request head and never its end (connected
    without blocking: the server's accept queue may be full for a while)."""
    sel = selectors.DefaultSelector()
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        socks.append(s)
        sel.register(s, selectors.EVENT_WRITE)
    deadline = time.monotonic() + within
    pending = len(socks)
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=0.5):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            sel.unregister(sock)
            pending -= 1
            try:
                sock.send(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # and never the rest
            except OSError:  # refused, or already pushed out by the server
                pass
    sel.close()
    return socks


def test_half_open_connections_past_the_file_limit_do_not_lock_out_health(own_files: None) -> None:
    server = Child("--header-timeout", "60", files=SERVER_FILES)  # the deadline would not rescue it in time
    slow: list[socket.socket] = []
    try:
        slow = _half_open(server.port, SLOW)
        time.sleep(1)  # the server has taken what it will take
        t0 = time.monotonic()
        r = httpx.get(server.url + "/health", timeout=5)
        took = time.monotonic() - t0
        assert r.status_code == 200 and took < 2, f"/health took {took:.1f} s"
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(server.url + "/v1/evaluators", headers=auth, timeout=5).status_code == 200
        assert server.open_files() < SERVER_FILES - 32, "the service keeps descriptors for its own files"
        more = _half_open(server.port, 100, within=5)  # the attacker reconnects: still answered
        slow += more
        r = httpx.post(
            server.url + "/v1/evaluations",
            headers=auth,
            timeout=10,
            json={
                "data": [{"input": "q", "expected_output": "a", "actual_output": "a"}],
                "evaluators": ["exact_match"],
            },
        )
        assert r.status_code == 200 and r.json()["status"] == "succeeded", r.text
    finally:
        for s in slow:
            s.close()
        server.stop()
    log = server.log()
    assert "Too many open files" not in log and "out of system resource" not in log, log[-2000:]


def test_a_body_that_never_arrives_is_answered_408_within_the_deadline() -> None:
    server = Child("--body-timeout", "2", "--header-timeout", "60", files=1024)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
            s.sendall(
                b"POST /v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000000\r\n\r\n{"
            )
            t0 = time.monotonic()
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
            took = time.monotonic() - t0
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert b"did not arrive within 2 seconds" in answer
        assert 1.5 < took < 8, f"answered after {took:.1f} s"
        assert httpx.get(server.url + "/health", timeout=5).status_code == 200
    finally:
        server.stop()
    assert "Traceback" not in server.log(), server.log()[-2000:]


def test_a_body_that_arrives_in_time_is_not_cut_off() -> None:
    server = Child("--body-timeout", "3", files=1024)
    try:
        body = (
            b'{"data": [{"input": "q", "expected_output": "a", "actual_output": "a"}], "evaluators": ["exact_match"]}'
        )
        with socket.create_connection(("127.0.0.1", server.port), timeout=15) as s:
            s.sendall(
                b"POST /v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
                b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body[:10]
            )
            time.sleep(1)
            s.sendall(body[10:])
            answer = b""
            while chunk := s.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:300]
        time.sleep(3)  # past the deadline of that body: its timer must not touch the finished request
    finally:
        server.stop()
    assert "Traceback" not in server.log(), server.log()[-2000:]


def test_the_connection_limit_is_lowered_to_the_files_the_process_may_open() -> None:
    from nbeval.errors import NbevalError
    from nbeval.serve.connections import RESERVE_FDS
    from nbeval.serve.server import uvicorn_config

    small = uvicorn_config(limit_concurrency=200, open_files=256)
    assert small["limit_concurrency"] + RESERVE_FDS + 4 * small["backlog"] <= 256
    assert small["limit_concurrency"] >= 64, "still room for real clients"
    assert uvicorn_config(limit_concurrency=200, open_files=65536)["limit_concurrency"] == 200
    with pytest.raises(NbevalError, match="ulimit -n"):
        uvicorn_config(open_files=100)


def test_the_command_passes_the_body_deadline_and_the_queue_bound(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import uvicorn

    from nbeval.cli import main

    got: dict[str, object] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: got.update(kw, app=app))
    monkeypatch.delenv("NBEVAL_SERVE_TOKEN", raising=False)
    assert main(["serve", "--no-auth", "--data-dir", str(tmp_path), "--body-timeout", "7", "--max-queued", "5"]) == 0
    assert got["app"].state.jobs.max_queued == 5  # type: ignore[attr-defined]
    assert got["backlog"] and got["http"].__name__ == "HeaderDeadlineProtocol"  # type: ignore[attr-defined]
    got["app"].state.jobs.shutdown()  # type: ignore[attr-defined]
