"""The SQLite reply cache: keys, concurrency across threads and processes, and no secrets on disk."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from nbeval.chat import ChatCache, ChatClient, ChatReply, OpenAIChat, Usage, default_cache_path
from nbeval.chat.cache import cache_key
from tests.support.fake_openai import FakeOpenAIServer, Text
from tests.support.replies import as_replies, as_reply

ROOT = Path(__file__).resolve().parents[2]
MSGS = [{"role": "user", "content": "hi"}]


def reply(text: str = "hello") -> ChatReply:
    return ChatReply(text=text, usage=Usage(3, 4), model="m", duration_s=0.5, cost=0.01)


def test_key_depends_on_identity_params_and_exact_messages() -> None:
    base = cache_key("openai|h|m", MSGS, {"temperature": 0, "max_tokens": 5})
    assert base == cache_key("openai|h|m", MSGS, {"max_tokens": 5, "temperature": 0})
    assert base == cache_key("openai|h|m", [{"content": "hi", "role": "user"}], {"max_tokens": 5, "temperature": 0})
    others = [
        cache_key("openai|h|m2", MSGS, {"temperature": 0, "max_tokens": 5}),
        cache_key("openai|h|m", MSGS, {"temperature": 0.1, "max_tokens": 5}),
        cache_key("openai|h|m", MSGS, {"temperature": 0}),
        cache_key("openai|h|m", [{"role": "user", "content": "hi "}], {"temperature": 0, "max_tokens": 5}),
        cache_key("openai|h|m", [{"role": "system", "content": "hi"}], {"temperature": 0, "max_tokens": 5}),
    ]
    assert len({base, *others}) == 6
    assert len(base) == 64 and int(base, 16) >= 0


def test_put_get_roundtrip(cache_path: Path) -> None:
    cache = ChatCache(cache_path)
    assert cache.get("k") is None
    cache.put("k", "id", reply())
    got = cache.get("k")
    assert got == ChatReply("hello", Usage(3, 4), "m", cached=True, duration_s=0.5, cost=0.01)
    assert len(cache) == 1 and cache.contains(["k", "other"]) == {"k"}
    assert cache.clear("another-id") == 0 and cache.clear("id") == 1 and len(cache) == 0
    cache.close()


def test_default_path_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_path() == tmp_path / "c" / "chat.sqlite"
    monkeypatch.delenv("NBEVAL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "nbeval" / "chat.sqlite"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_path() == Path("~/.cache/nbeval/chat.sqlite").expanduser()


def test_concurrent_writes_from_threads(cache_path: Path) -> None:
    cache = ChatCache(cache_path)
    errors: list[BaseException] = []

    def writer(t: int) -> None:
        try:
            for i in range(50):
                cache.put(f"{t}-{i}", "id", reply(f"text {t} {i}"))
                assert cache.get(f"{t}-{i}") is not None
        except BaseException as e:  # collected for the main thread
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(cache) == 400
    assert as_reply(cache.get("7-49")).text == "text 7 49"


WRITER = """
import sys
from nbeval.chat import ChatCache, ChatReply, Usage
cache = ChatCache(sys.argv[1])
p = sys.argv[2]
for i in range(60):
    cache.put(f"{p}-{i}", "id", ChatReply(f"from {p} {i}", Usage(1, 1), "m"))
    assert cache.get(f"{p}-{i}").text == f"from {p} {i}"
"""


def test_concurrent_writes_from_processes(cache_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(cache_path), str(p)], env=env, stderr=subprocess.PIPE)
        for p in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    cache = ChatCache(cache_path)
    assert len(cache) == 240
    assert as_reply(cache.get("3-59")).text == "from 3 59"


def test_api_key_is_never_written(openai_server: FakeOpenAIServer, cache_path: Path) -> None:
    key = "sk-proj-SECRETKEY-4f9a8b7c6d5e"
    openai_server.reply = lambda rec: Text(f"MARKER-REPLY for {rec.last_content}")
    model = OpenAIChat("judge-x", base_url=openai_server.url, api_key=key)
    client = ChatClient(model, cache=cache_path)
    client.run_many([f"prompt {i}" for i in range(5)])
    assert openai_server.requests[0].headers["Authorization"] == f"Bearer {key}"  # it was used
    data = b"".join(p.read_bytes() for p in cache_path.parent.iterdir() if p.is_file())
    assert b"MARKER-REPLY for prompt 3" in data  # the replies are there...
    assert key.encode() not in data and b"SECRETKEY" not in data  # ...the key is not


def test_unusable_cache_warns_and_the_run_goes_on(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    # (a folder is no longer unusable: cache= takes one and puts chat.sqlite inside)
    not_a_database = tmp_path / "garbage.sqlite"
    not_a_database.write_bytes(b"this is not an SQLite database\n" * 100)
    model = OpenAIChat("m", base_url=openai_server.url)
    with pytest.warns(RuntimeWarning, match="unusable"):
        results = ChatClient(model, cache=not_a_database).run_many(["a", "b"])
    assert [r.text for r in as_replies(results)] == ["ok", "ok"]


def test_switching_to_wal_waits_out_a_lock_sqlite_reports_at_once() -> None:
    # SQLite says "database is locked" without waiting when several processes open a new cache
    # together (a deadlock it refuses to wait for); the switch is retried instead of failing.
    import sqlite3

    from nbeval.chat.cache import enable_wal

    calls: list[str] = []

    def execute(sql: str) -> None:
        calls.append(sql)
        if len(calls) < 3:
            raise sqlite3.OperationalError("database is locked")

    enable_wal(execute, patience_s=5)
    assert calls == ["PRAGMA journal_mode = WAL"] * 3

    def always_locked(sql: str) -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(sqlite3.OperationalError):
        enable_wal(always_locked, patience_s=0.05)

    def broken(sql: str) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    with pytest.raises(sqlite3.OperationalError, match="disk"):
        enable_wal(broken, patience_s=5)  # only a lock is waited out
