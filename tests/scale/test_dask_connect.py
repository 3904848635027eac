"""`--scheduler ADDRESS` (and `scheduler=` in Python, `%nbeval run --scheduler`) when nothing, or
not Dask, answers there: one line `nbeval: error: ...`, exit status 2, within the connect timeout
(NBEVAL_SCHEDULER_TIMEOUT; short here). Every server here listens on 127.0.0.1 only. Also: an
evaluator that cannot be pickled is named before anything is sent, and a cluster without workers
ends the run with an error instead of a wait."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.cli import main
from tests.support.dask_cluster import in_process_client
from tests.support.fake_openai import FakeOpenAIServer

distributed = pytest.importorskip("distributed")

#: The connect timeout the tests set (seconds). Not shorter: with two busy processes on two
#: cores, even a refused loopback connection took over 0.5 s to be reported.
TIMEOUT = 5.0
#: How long a test lets `nbeval run` take before calling it a hang. It is no measure of speed:
#: the command gives up after TIMEOUT; the margin is for a machine with two busy processes on
#: two cores (starting Python threads, importing distributed).
HANG = 60.0


class _LoopbackServer:
    """A TCP server on 127.0.0.1 that does ``answer(connection)`` with each connection it accepts."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.answer = answer
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self.conns.append(conn)
            self.answer(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Callable[[socket.socket], None]], str]]:
    servers: list[_LoopbackServer] = []

    def start(answer: Callable[[socket.socket], None]) -> str:
        servers.append(_LoopbackServer(answer))
        return f"tcp://127.0.0.1:{servers[-1].port}"

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NBEVAL_SCHEDULER_TIMEOUT", str(TIMEOUT))
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "rows.jsonl"
    path.write_text(
        json.dumps({"key": "a", "input": "q", "expected_output": "4", "actual_output": "4"}) + "\n", encoding="utf-8"
    )
    return path


def _run(data: Path, address: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """`nbeval run DATA -e exact_match --scheduler ADDRESS`: its exit status and its stderr."""
    got: list[int] = []
    thread = threading.Thread(
        target=lambda: got.append(
            main(["run", str(data), "-e", "exact_match", "--scheduler", address, "--no-progress", "--out", "out"])
        ),
        daemon=True,
    )
    thread.start()
    thread.join(HANG)
    assert got, f"nbeval run --scheduler {address} still waits after {HANG:g} s (the connect timeout is {TIMEOUT} s)"
    return got[0], capsys.readouterr().err


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nbeval: error: "), err
    assert "Traceback" not in err and "EiB" not in err
    return lines[0]


def _talks_http_first(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def _writes_garbage(conn: socket.socket) -> None:
    conn.sendall(bytes(range(256)) * 4)


def _says_nothing(conn: socket.socket) -> None:
    pass


@pytest.mark.parametrize("answer", [_talks_http_first, _writes_garbage], ids=["http-reply", "garbage"])
def test_a_server_that_is_not_dask_is_one_line_and_exit_2(
    answer: Callable[[socket.socket], None], serve: Any, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = serve(answer)
    status, err = _run(data, address, capsys)
    line = _one_error_line(err)
    assert status == 2 and line.startswith(f"nbeval: error: something answered at '{address}', but not as a Dask"), line


def test_a_web_server_is_one_line_and_exit_2(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeOpenAIServer() as web:  # a real HTTP server: it waits for a request line, then says 400
        address = "tcp://" + web.url.split("//", 1)[1].split("/", 1)[0]
        status, err = _run(data, address, capsys)
    assert status == 2 and address in _one_error_line(err)


def test_a_port_that_accepts_and_stays_silent_times_out(
    serve: Any, data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = serve(_says_nothing)  # Dask's own client would wait for its handshake for ever
    status, err = _run(data, address, capsys)
    line = _one_error_line(err)
    assert status == 2 and f"no Dask scheduler answered at '{address}' within {TIMEOUT:g} s" in line
    assert "NBEVAL_SCHEDULER_TIMEOUT" in line


def test_a_closed_port_is_refused_in_one_line(data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:  # bound, never listening: refused, and no other process can take the port
        sock.bind(("127.0.0.1", 0))
        status, err = _run(data, f"tcp://127.0.0.1:{sock.getsockname()[1]}", capsys)
    line = _one_error_line(err)
    # Usually "connection refused" at once; on a loaded machine Dask's own retry of a refused
    # connection can run into the deadline first. Either way: one line, exit 2, within the timeout.
    assert status == 2 and ("connection refused" in line or f"within {TIMEOUT:g} s" in line), line


@pytest.mark.parametrize("address", ["127.0.0.1", "tcp://", "nosuch://127.0.0.1:8786"])
def test_an_address_that_is_not_one_is_said_so(address: str, data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = _run(data, address, capsys)
    assert status == 2 and "not a Dask scheduler address" in _one_error_line(err)


@pytest.mark.parametrize("value", ["soon", "0", "-3", "nan"])
def test_a_bad_timeout_setting_is_said_so(
    value: str, data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NBEVAL_SCHEDULER_TIMEOUT", value)
    status, err = _run(data, "tcp://127.0.0.1:8786", capsys)
    assert status == 2 and "NBEVAL_SCHEDULER_TIMEOUT must be a number of seconds" in _one_error_line(err)


def test_python_callers_get_an_nbeval_error(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from nbeval.engine.dask_connect import CONNECT_TIMEOUT_S, connect, connect_timeout

    monkeypatch.delenv("NBEVAL_SCHEDULER_TIMEOUT", raising=False)
    assert connect_timeout() == CONNECT_TIMEOUT_S == 10.0
    with pytest.raises(nbeval.NbevalError, match="not as a Dask scheduler"):
        connect(serve(_writes_garbage), timeout=TIMEOUT)
    with pytest.raises(TypeError, match="scheduler must be"):
        connect(8786)


def test_an_evaluator_that_does_not_pickle_is_named_before_anything_is_sent() -> None:
    import threading

    rows = [{"key": "a", "input": "q", "expected_output": "a b", "actual_output": "a c"}]
    used = nbeval.evaluator("exact_match")
    # an attribute no Evaluator declares, set on purpose: what a plugin might keep, a lock never pickles
    used.guard = threading.Lock()  # type: ignore[attr-defined]
    with pytest.raises(nbeval.NbevalError, match="evaluator 'exact_match' cannot be sent to the Dask workers"):
        nbeval.evaluate(rows, [used], progress=False, scheduler="tcp://127.0.0.1:9")  # nothing listens: never asked


def test_a_cluster_without_workers_ends_the_run_with_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from nbeval.engine import dask_run

    monkeypatch.setattr(dask_run, "WORKER_WAIT_S", TIMEOUT)
    rows = [{"key": "a", "input": "q", "expected_output": "4", "actual_output": "4"}]
    with in_process_client(n_workers=0) as client:
        with pytest.raises(nbeval.NbevalError, match=f"no workers: none joined within {TIMEOUT:g} s"):
            nbeval.evaluate(rows, ["exact_match"], progress=False, scheduler=client)


def test_the_in_process_test_cluster_listens_on_loopback_only() -> None:
    """What tests/support/dask_cluster.py starts serves HTTP on 127.0.0.1 alone (by default Dask's
    scheduler and workers listen on every interface even with no dashboard)."""
    with in_process_client(n_workers=1) as client:
        cluster = client.cluster
        servers = [cluster.scheduler.http_server, *(w.http_server for w in cluster.workers.values())]
        hosts = {s.getsockname()[0] for server in servers for s in server._sockets.values()}
    assert hosts == {"127.0.0.1"}
