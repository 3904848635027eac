"""Batched judging under attack and beside other runs (issue 43): two runs sharing a store never
forget each other's batch; a reply line with a malformed field is its row's error and the batch is
given up, not resumed into the same crash; a status nbeval does not know, or a batch past its
expiry, stops the polling; a large output file is read line by line; a damaged store is set aside."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from nbeval.chat import ChatClient, OpenAIChat
from nbeval.chat.accounting import ChatFailure, ChatResult
from nbeval.chat.base import ChatReply
from nbeval.chat.batch import BatchOptions, run_batch
from nbeval.chat.batch_store import BatchStore, store_path
from nbeval.data.fields import DataWarning
from tests.support.fake_batch import FakeBatchServer, _Batch
from tests.support.fake_openai import Recorded

POLL = BatchOptions(poll_s=0.02)


def echo(rec: Recorded) -> str:
    return f"echo {rec.last_content}"


def client_of(server: FakeBatchServer, cache: Path) -> ChatClient:
    return ChatClient(OpenAIChat("m", base_url=server.url, api_key="sk-test"), cache=cache)


def texts(results: list[ChatResult]) -> list[str | None]:
    return [r.text if isinstance(r, ChatReply) else None for r in results]


def stored(cache: Path) -> list[tuple[Any, ...]]:
    return [(b["status"], b["open"], b["requests"]) for b in BatchStore(store_path(cache)).batches()]


# -- 11: two runs sharing a store ---------------------------------------------------------------


class SlowCreate(FakeBatchServer):
    """``POST /v1/batches`` waits for :attr:`go` (another run starts meanwhile)."""

    def __init__(self, reply: Any, **kw: Any) -> None:
        super().__init__(reply, **kw)
        self.creating = threading.Event()
        self.go = threading.Event()

    def _create(self, body: dict[str, Any]) -> dict[str, Any] | None:
        self.creating.set()
        self.go.wait(30)
        return super()._create(body)


def test_a_second_run_waits_for_the_batch_another_run_is_creating(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    got: dict[str, list[ChatResult]] = {}
    server = SlowCreate(echo, delay=0.05)
    with server:

        def run(name: str) -> None:
            got[name] = run_batch(client_of(server, cache), ["a", "b"], options=POLL)

        first = threading.Thread(target=run, args=("first",))
        first.start()
        assert server.creating.wait(30)
        second = threading.Thread(target=run, args=("second",))
        second.start()
        # The second run would look the batch up at the provider (GET /v1/batches) and, not finding it
        # yet, forget it and send its own: give it the time to, then let the first run's create through.
        server.wait_until(lambda _: ("GET", "/v1/batches") in server.calls or len(server.uploads) > 1, timeout=1.0)
        server.go.set()
        first.join(60)
        second.join(60)
    assert texts(got["first"]) == texts(got["second"]) == ["echo a", "echo b"]
    assert server.batch_creates == 1 and len(server.uploads) == 1 and len(server.batch_lines) == 2
    assert stored(cache) == [("completed", 0, 2)]


class LostCreate(FakeBatchServer):
    """``POST /v1/batches`` creates the batch, then the connection breaks before the answer (a
    timeout the client sees, while the provider bills the batch)."""

    def _create(self, body: dict[str, Any]) -> dict[str, Any] | None:
        super()._create(body)
        raise ConnectionResetError("the answer never came")


def test_a_batch_created_on_the_last_attempt_whose_answer_was_lost_is_kept(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with LostCreate(echo, delay=0.05) as server:
        client = ChatClient(OpenAIChat("m", base_url=server.url, api_key="sk-test"), cache=cache, max_attempts=1)
        first = run_batch(client, ["a", "b"], options=POLL)
        again = run_batch(client, ["a", "b"], options=POLL)
    # the provider created (and bills) one batch: it is found and read, never forgotten and sent again
    assert texts(first) == texts(again) == ["echo a", "echo b"]
    assert server.batch_creates == 1 and len(server.uploads) == 1


def test_created_puts_back_a_record_another_run_forgot(tmp_path: Path) -> None:
    store = BatchStore(tmp_path / "s.sqlite")
    store.add("sub1", "ident", "file-1", ["k1", "k2"])
    store.forget("sub1")  # what a concurrent run did before the fix
    store.created("sub1", "batch_1", "in_progress", identity="ident", keys=["k1", "k2"], input_file_id="file-1")
    [batch] = store.open_for("ident", ["k2"])
    assert (batch.submission, batch.batch_id, batch.status, batch.keys) == (
        "sub1",
        "batch_1",
        "in_progress",
        frozenset({"k1", "k2"}),
    )


def test_a_record_this_process_is_creating_is_kept_and_one_it_left_behind_is_not(tmp_path: Path) -> None:
    store = BatchStore(tmp_path / "s.sqlite")
    store.add("mine", "ident", "file-1", ["k1"])  # this process holds its lease (creating it now)
    assert store.forget_unsent("mine", creating={"mine"}) is False
    assert [b["submission"] for b in store.batches()] == ["mine"]
    assert store.forget_unsent("mine", creating=set()) is True  # left behind (Ctrl-C while creating it)
    assert store.batches() == []


@pytest.fixture
def other_process() -> Any:
    """A live process of this machine that is not this one."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield child.pid
    child.kill()
    child.wait()


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize(
    ("owner", "lease_s", "kept"),
    [
        ("other-live", 60, True),  # another run on this machine is creating it
        ("other-live", -1, False),  # ... but its lease ran out: it is stuck or gone
        ("dead", 60, False),  # its run died before the batch was created
        ("other-host", 60, True),  # a run on another machine: only the time tells
        ("other-host", -1, False),
        ("no-lease", 60, False),  # written by an older nbeval, which kept no lease
    ],
)
def test_a_record_is_forgotten_only_when_no_live_process_may_hold_its_lease(
    tmp_path: Path, other_process: int, owner: str, lease_s: float, kept: bool
) -> None:
    store = BatchStore(tmp_path / "s.sqlite")
    store.add("sub", "ident", "file-1", ["k1"])
    pid, host, until = {
        "other-live": (other_process, socket.gethostname(), time.time() + lease_s),
        "dead": (_dead_pid(), socket.gethostname(), time.time() + lease_s),
        "other-host": (os.getpid(), "another-machine.example", time.time() + lease_s),
        "no-lease": (None, None, None),
    }[owner]
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE batches SET owner_pid = ?, owner_host = ?, lease_until = ?", (pid, host, until))
    assert store.may_be_live("sub") is kept
    assert store.forget_unsent("sub", creating=set()) is (not kept)
    assert len(store.batches()) == (1 if kept else 0)


def test_a_store_an_older_nbeval_made_gets_the_lease_columns(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with sqlite3.connect(path) as conn:  # the schema before leases
        conn.execute(
            "CREATE TABLE batches (submission TEXT PRIMARY KEY, batch_id TEXT, identity TEXT NOT NULL, "
            "input_file_id TEXT, status TEXT NOT NULL, open INTEGER NOT NULL, created REAL NOT NULL, "
            "updated REAL NOT NULL)"
        )
        conn.execute("INSERT INTO batches VALUES ('old', NULL, 'ident', 'f', 'submitting', 1, 1.0, 1.0)")
    store = BatchStore(path)
    store.add("new", "ident", "file-1", ["k1"])
    assert [b["submission"] for b in store.batches()] == ["old", "new"]
    assert store.forget_unsent("old", creating=set()) is True  # no lease: as before


# -- 14: a malformed field in a reply line ------------------------------------------------------


class Mangled(FakeBatchServer):
    """Answers each line, then writes each output line as ``mangle(line)`` returns it."""

    def __init__(self, reply: Any, mangle: Any, **kw: Any) -> None:
        super().__init__(reply, **kw)
        self.mangle = mangle

    def _finish(self, batch: _Batch, keep: int | None = None, ended: str = "expired") -> None:
        super()._finish(batch, keep, ended)
        if batch.output_file_id is not None:
            lines = self._outputs[batch.output_file_id].decode().splitlines()
            self._outputs[batch.output_file_id] = "".join(self.mangle(json.loads(x)) + "\n" for x in lines).encode()


def _malformed(line: dict[str, Any]) -> str:
    body = line["response"]["body"]
    content = body["choices"][0]["message"]["content"]
    if content == "echo b":
        line["response"]["status_code"] = "200 OK"
    elif content == "echo c":
        line["response"]["body"] = "lots"
    elif content == "echo d":  # a usage no call can have: the reply stands, its usage unknown (as synchronously)
        body["usage"]["prompt_tokens"] = "lots"
    return json.dumps(line)


def test_a_malformed_field_is_its_rows_error_and_the_batch_is_given_up(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    server = Mangled(echo, _malformed, delay=0.05)
    with server:
        client = client_of(server, cache)
        with pytest.warns(DataWarning, match="token usage no call can have"):
            out = run_batch(client, ["a", "b", "c", "d"], options=POLL)
        assert texts(out) == ["echo a", None, None, "echo d"]
        for result, field, n in ((out[1], "status_code is '200 OK'", 2), (out[2], "body is 'lots'", 3)):
            assert isinstance(result, ChatFailure) and field in result.error
            assert f"batch batch_fake0001, line {n} of its output file (custom_id " in result.error
        assert isinstance(out[3], ChatReply) and not out[3].usage.known
        assert stored(cache) == [("completed", 0, 4)]  # closed: a rerun does not resume it into the same crash
        server.mangle = json.dumps
        again = run_batch(client, ["a", "b", "c", "d"], options=POLL)
    assert texts(again) == ["echo a", "echo b", "echo c", "echo d"]
    assert server.batch_creates == 2 and len(server.batch_lines) == 6  # only the two rows sent anew


def test_counts_the_provider_garbles_do_not_stop_the_polling(tmp_path: Path) -> None:
    counts = {"total": "lots", "completed": "200 OK", "failed": [1]}
    with Reports(echo, {"request_counts": counts}, delay=0.05) as server:
        out = run_batch(client_of(server, tmp_path / "c.sqlite"), ["a", "b"], options=POLL)
    assert texts(out) == ["echo a", "echo b"]


# -- 15: statuses nbeval does not know, and a batch past its expiry ----------------------------


class Reports(FakeBatchServer):
    """Describes every batch with ``fields`` laid over what it would say."""

    def __init__(self, reply: Any, fields: dict[str, Any], **kw: Any) -> None:
        super().__init__(reply, **kw)
        self.fields = fields

    def _describe(self, batch: _Batch) -> dict[str, Any]:
        return {**super()._describe(batch), **self.fields}


def test_a_status_nbeval_does_not_know_stops_the_polling_and_is_named(tmp_path: Path) -> None:
    with Reports(echo, {"status": "ended"}, delay=None) as server:
        client = client_of(server, tmp_path / "c.sqlite")
        out = run_batch(client, ["a"], options=POLL, cancel=lambda: len(server.polls) > 40)
    [result] = out
    assert isinstance(result, ChatFailure) and not result.cancelled, result
    assert "'ended'" in result.error and "batch_fake0001" in result.error
    assert 2 <= len(server.polls) <= 5


def test_a_batch_still_in_progress_past_its_expiry_is_given_up(tmp_path: Path) -> None:
    due = int(time.time()) - 3 * 3600
    with Reports(echo, {"expires_at": due}, delay=None) as server:
        client = client_of(server, tmp_path / "c.sqlite")
        out = run_batch(client, ["a"], options=POLL, cancel=lambda: len(server.polls) > 40)
    [result] = out
    assert isinstance(result, ChatFailure) and not result.cancelled, result
    assert "expire" in result.error and "in_progress" in result.error and "batch_fake0001" in result.error
    assert len(server.polls) == 1


# -- 16: a large output file --------------------------------------------------------------------


class BigOutput(FakeBatchServer):
    """Serves :attr:`big` (made by the test) as the output file of every batch."""

    big: bytes = b""

    def _finish(self, batch: _Batch, keep: int | None = None, ended: str = "expired") -> None:
        batch.completed, batch.status, batch.output_file_id = len(batch.lines), "completed", "file-big"
        self._outputs["file-big"] = self.big  # no copy: made before the memory is traced


def test_a_large_output_file_is_read_line_by_line(tmp_path: Path) -> None:
    mb = 24
    server = BigOutput(echo, delay=None)
    with server:
        client = client_of(server, tmp_path / "c.sqlite")
        got: list[list[ChatResult]] = []
        run = threading.Thread(target=lambda: got.append(run_batch(client, ["a", "b"], options=POLL)))
        run.start()
        assert server.wait_until(lambda _: server.batch_creates == 1, timeout=30)
        [upload] = server.uploads.values()
        ids = [json.loads(x)["custom_id"] for x in upload.decode().splitlines()]
        server.big = _big_output(ids, mb)
        tracemalloc.start()
        try:
            server.release()
            run.join(120)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert texts(got[0]) == ["echo a", "echo b"]
    assert peak < 8 * 2**20, f"reading a {mb} MB output file took {peak / 2**20:.1f} MB at peak"


def _big_output(ids: list[str], mb: int) -> bytes:
    """An output file of about ``mb`` MB: other runs' lines, and one answer per id among them."""

    def line(custom_id: str, text: str) -> bytes:
        body = {
            "id": "chatcmpl-x",
            "object": "chat.completion",
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        }
        return json.dumps({"id": "r", "custom_id": custom_id, "response": {"status_code": 200, "body": body}}).encode()

    other = line("someone-else", "x" * 900) + b"\n"
    n = mb * 2**20 // len(other)
    half = other * (n // 2)
    return b"".join([half, line(ids[0], "echo a"), b"\n", half, line(ids[1], "echo b"), b"\n"])


# -- 17: a damaged store ------------------------------------------------------------------------


def _garbage(path: Path) -> None:
    path.write_bytes(b"this is not a database\n" * 400)


def _torn(path: Path) -> None:
    store = BatchStore(path)
    store.add("old", "ident", "file-0", [f"k{i}" for i in range(2000)])
    store.shut()
    for extra in (Path(f"{path}-wal"), Path(f"{path}-shm")):
        extra.unlink(missing_ok=True)
    data = bytearray(path.read_bytes())
    data[4096:] = b"\xa5" * (len(data) - 4096)  # every page after the first overwritten
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_garbage, _torn], ids=["not-a-database", "torn-pages"])
def test_a_damaged_store_is_set_aside_with_a_warning_and_the_run_goes_on(tmp_path: Path, damage: Any) -> None:
    cache = tmp_path / "c.sqlite"
    path = store_path(cache)
    damage(path)
    before = path.read_bytes()
    with FakeBatchServer(echo, delay=0.05) as server:
        with pytest.warns(RuntimeWarning, match="damaged") as caught:
            out = run_batch(client_of(server, cache), ["a", "b"], options=POLL)
    assert texts(out) == ["echo a", "echo b"]
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("c-batches.sqlite.damaged")]
    assert aside.read_bytes() == before
    message = str(next(w.message for w in caught if "damaged" in str(w.message)))
    assert str(path) in message and str(aside) in message
    assert stored(cache) == [("completed", 0, 2)]
    assert os.path.exists(path)


@pytest.mark.parametrize("table", ["batches", "batch_requests"])
def test_a_store_whose_table_lacks_its_columns_is_set_aside_too(tmp_path: Path, table: str) -> None:
    # a database of another program (or of a later nbeval) at the store's path: before, every
    # batched run stopped with sqlite3's "table batches has no column named submission"
    cache = tmp_path / "c.sqlite"
    with sqlite3.connect(store_path(cache)) as conn:
        conn.execute(f"CREATE TABLE {table} (x INTEGER)")
        conn.execute(f"INSERT INTO {table} VALUES (7)")
    with FakeBatchServer(echo, delay=0.05) as server:
        with pytest.warns(RuntimeWarning, match=f"damaged .*table {table} has no column"):
            out = run_batch(client_of(server, cache), ["a", "b"], options=POLL)
    assert texts(out) == ["echo a", "echo b"]
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("c-batches.sqlite.damaged")]
    with sqlite3.connect(aside) as conn:
        assert conn.execute(f"SELECT x FROM {table}").fetchall() == [(7,)]  # kept as it was, for a look
    assert stored(cache) == [("completed", 0, 2)]


class BrokenOnce(FakeBatchServer):
    """The first download of an output file breaks off halfway (its connection closed early)."""

    broken: int = 0  # the downloads broken off so far

    def start(self) -> FakeBatchServer:
        from tests.support.fake_batch import _BatchHandler

        fake = self
        fake.broken = 0

        class Handler(_BatchHandler):
            def do_GET(self) -> None:
                if self.path.endswith("/content") and "file-out" in self.path and fake.broken == 0:
                    fake.broken += 1
                    data = fake._content(self.path.split("/")[-2]) or b""
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                super().do_GET()

        Handler.fake = self
        return self._serve(Handler)


def test_an_output_file_broken_off_midway_is_read_again(tmp_path: Path) -> None:
    # Streamed, the body is read after the SDK returned the response: its HTTP library's error must
    # still be a retryable ChatError, not an exception that stops the run.
    server = BrokenOnce(echo, delay=0.05)
    with server:
        out = run_batch(client_of(server, tmp_path / "c.sqlite"), ["a", "b", "c", "d"], options=POLL)
    assert texts(out) == ["echo a", "echo b", "echo c", "echo d"]
    assert server.broken == 1  # the download broken off, then one read whole


@pytest.mark.slow  # a process of its own, importing nbeval and openai
def test_a_run_waits_for_the_batch_another_process_is_creating(tmp_path: Path) -> None:
    import openai  # noqa: F401 - imported before the race: this run reaches the store at once

    import nbeval
    from tests.chat.test_batch import ROWS, judge_of, verdict
    from tests.chat.test_batch_resume import _command, _env

    cache = tmp_path / "c.sqlite"
    got: list[Any] = []
    server = SlowCreate(verdict, delay=0.1)
    with server:
        other = subprocess.Popen(_command(server, cache), env=_env(), cwd=tmp_path, stdout=subprocess.PIPE)
        try:
            assert server.creating.wait(120), "the other process never created its batch"
            mine = threading.Thread(
                target=lambda: got.append(
                    nbeval.evaluate(
                        ROWS, ["safety"], judge=judge_of(server), cache=cache, progress=False, batch=True,
                        batch_poll_s=0.05,
                    )
                )
            )  # fmt: skip
            mine.start()
            # Before the lease, this run looked the batch up (GET /v1/batches), did not find it yet,
            # forgot it and sent its own: give it the time to, then let the other's create through.
            server.wait_until(lambda _: ("GET", "/v1/batches") in server.calls, timeout=5.0)
            server.go.set()
            mine.join(240)
            out, _ = other.communicate(timeout=240)
        finally:
            server.go.set()
            if other.poll() is None:
                other.kill()
    assert other.returncode == 0
    assert server.batch_creates == 1 and len(server.uploads) == 1 and server.request_count == 0
    scores = sorted([k, v] for k, v in zip(got[0].scores["key"], got[0].scores["value"].astype(float), strict=True))
    assert json.loads(out.decode().strip().splitlines()[-1]) == scores
