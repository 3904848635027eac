"""An on-disk cache of chat replies (SQLite), shared by threads and processes.

A reply is keyed by the SHA-256 of the model's cache identity (endpoint and model, never a key in
clear), the generation parameters (sorted; secret ones such as an ``X-Api-Key`` header only as a
hash of their value) and the exact messages, and is written the moment it arrives, so a run that
is killed keeps every reply it got and a re-run asks only for what is missing.

The database runs in WAL mode with a busy timeout: several threads of one process share one
connection behind a lock, several processes each open their own and wait for each other's writes.

A reply's :attr:`~nbeval.chat.base.ChatReply.warnings` (text nbeval had to repair) are kept in a
table of their own, ``reply_notes``, so a reply read back says what it said the first time and a
cache written by an older nbeval (which has no such table) is read and written as it is. Its
:attr:`~nbeval.chat.base.ChatReply.logprobs` (asked for with ``logprobs=True``, which is part of
the key) are kept the same way, in ``reply_logprobs`` (JSON, compressed), with a hash of the text
they belong to: logprobs whose reply an older nbeval has since replaced are not read back.
A reply whose usage was unknown (:attr:`~nbeval.chat.base.Usage.known`) is stored with token
counts of -1, which read back as unknown usage again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nbeval.chat.base import ChatReply, Message, Usage, cap_reply
from nbeval.chat.logprobs import TokenLogprob, as_logprobs, logprobs_to_json
from nbeval.chat.secrets import hash_secrets
from nbeval.data.text import repair_text

__all__ = [
    "CACHE_FILE_NAME",
    "ENV_CACHE_DIR",
    "ChatCache",
    "cache_key",
    "default_cache_path",
    "enable_wal",
    "open_sqlite",
]

#: The environment variable that moves the reply cache's folder elsewhere.
ENV_CACHE_DIR = "NBEVAL_CACHE_DIR"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    text TEXT NOT NULL,
    reply_model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    cost REAL,
    created REAL NOT NULL
)
"""
_NOTES_SCHEMA = "CREATE TABLE IF NOT EXISTS reply_notes (key TEXT PRIMARY KEY, warnings TEXT NOT NULL)"
_LOGPROBS_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS reply_logprobs (key TEXT PRIMARY KEY, text_sha TEXT NOT NULL, logprobs BLOB NOT NULL)"
)

#: The cache file inside a cache folder.
CACHE_FILE_NAME = "chat.sqlite"


def default_cache_path() -> Path:
    """Where the chat cache lives.

    ``$NBEVAL_CACHE_DIR/chat.sqlite``, else ``$XDG_CACHE_HOME/nbeval/chat.sqlite``, else
    ``~/.cache/nbeval/chat.sqlite``.
    """
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return Path(env).expanduser() / CACHE_FILE_NAME
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "nbeval" / CACHE_FILE_NAME


def cache_key(identity: str, messages: Sequence[Message], params: Mapping[str, Any] | None = None) -> str:
    """The cache key of one request.

    A hex SHA-256 over identity, sorted params (secrets hashed first) and exact messages.
    """
    payload = json.dumps(
        {"model": identity, "params": hash_secrets(dict(params or {})), "messages": [dict(m) for m in messages]},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=repr,
    )
    # surrogatepass: a message holding a lone surrogate still has a key (it is only hashed).
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def _notes(stored: str | None) -> tuple[str, ...]:
    if not stored:
        return ()
    try:
        notes = json.loads(stored)
    except ValueError:
        return ()
    return tuple(str(n) for n in notes) if isinstance(notes, list) else ()


def _text_sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _pack_logprobs(logprobs: tuple[TokenLogprob, ...]) -> bytes:
    payload = json.dumps(logprobs_to_json(logprobs), ensure_ascii=True, separators=(",", ":"))
    return zlib.compress(payload.encode("ascii"))


def _unpack_logprobs(blob: bytes | None, sha: str | None, text: str) -> tuple[TokenLogprob, ...] | None:
    """The logprobs stored for ``text``, if they can be used.

    ``None`` when there are none, they belong to another text (a reply replaced by an nbeval that
    does not know this table), or they cannot be read.
    """
    if blob is None or sha != _text_sha(text):
        return None
    try:
        return as_logprobs(json.loads(zlib.decompress(blob).decode("ascii")))
    except (zlib.error, ValueError, UnicodeDecodeError):
        return None


def enable_wal(execute: Callable[[str], Any], patience_s: float) -> None:
    """Switch the database to write-ahead logging through ``execute``, retrying while it is locked.

    The switch needs an exclusive lock, and SQLite answers "database is locked" at once, without
    waiting out the busy timeout, when waiting could deadlock: several processes opening a new
    cache file together can meet that. WAL is kept in the file, so one success serves all.
    """
    end = time.monotonic() + patience_s
    delay = 0.01
    while True:
        try:
            execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= end:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.25)


def open_sqlite(path: Path, busy_timeout_s: float, synchronous: str = "NORMAL") -> sqlite3.Connection:
    """Open the SQLite database at ``path``.

    The connection is in autocommit mode (the folder is made if missing), usable from any thread
    (callers hold their own lock), waits up to ``busy_timeout_s`` for other writers, and is in WAL
    mode (:func:`enable_wal`) with ``PRAGMA synchronous = synchronous``.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
    enable_wal(conn.execute, busy_timeout_s)
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    return conn


class ChatCache:
    """Replies on disk at ``path`` (default: :func:`default_cache_path`)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path).expanduser() if path is not None else default_cache_path()
        if self.path.is_dir():  # a folder, as NBEVAL_CACHE_DIR takes: the cache file goes inside it
            self.path = self.path / CACHE_FILE_NAME
        self.busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def __repr__(self) -> str:
        return f"ChatCache({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        # Called with the lock held. A forked child must not reuse its parent's connection.
        if self._conn is None or self._pid != os.getpid():
            conn = open_sqlite(self.path, self.busy_timeout_s, "NORMAL")  # durable across a killed process
            conn.execute(_SCHEMA)
            conn.execute(_NOTES_SCHEMA)
            conn.execute(_LOGPROBS_SCHEMA)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def get(self, key: str) -> ChatReply | None:
        """The cached reply under ``key`` (marked ``cached=True``), or ``None``."""
        with self._lock:
            row = (
                self._connection()
                .execute(
                    "SELECT r.text, r.reply_model, r.prompt_tokens, r.completion_tokens, r.duration_s, r.cost, "
                    "n.warnings, l.text_sha, l.logprobs FROM replies r LEFT JOIN reply_notes n ON n.key = r.key "
                    "LEFT JOIN reply_logprobs l ON l.key = r.key WHERE r.key = ?",
                    (key,),
                )
                .fetchone()
            )
        if row is None:
            return None
        text, model, p, c, duration, cost, notes, sha, blob = row
        return ChatReply(
            text=text,
            usage=Usage(p, c),
            model=model,
            cached=True,
            duration_s=duration,
            cost=cost,
            warnings=_notes(notes),
            logprobs=_unpack_logprobs(blob, sha, text),
        )

    def contains(self, keys: Sequence[str]) -> set[str]:
        """The subset of ``keys`` that have a cached reply."""
        found: set[str] = set()
        with self._lock:
            conn = self._connection()
            for i in range(0, len(keys), 500):  # stay under SQLite's bound-parameter limit
                chunk = list(keys[i : i + 500])
                marks = ",".join("?" * len(chunk))
                found.update(r[0] for r in conn.execute(f"SELECT key FROM replies WHERE key IN ({marks})", chunk))
        return found

    def put(self, key: str, identity: str, reply: ChatReply) -> None:
        """Store ``reply`` (and its warnings) under ``key`` now, in one transaction."""
        reply = cap_reply(reply)  # never more than MAX_REPLY_CHARS on disk, whoever stores it
        text, model = repair_text(reply.text)[0], repair_text(reply.model)[0]  # a reply made some other way
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")  # the reply and its notes together, or neither
            try:
                conn.execute(
                    "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        key,
                        repair_text(identity)[0],
                        text,
                        model,
                        # -1: usage unknown (Usage reads a negative count back as unknown)
                        reply.usage.prompt_tokens if reply.usage.known else -1,
                        reply.usage.completion_tokens if reply.usage.known else -1,
                        reply.duration_s,
                        reply.cost,
                        time.time(),
                    ),
                )
                if reply.warnings:
                    conn.execute(
                        "INSERT OR REPLACE INTO reply_notes VALUES (?, ?)",
                        (key, json.dumps(list(reply.warnings), ensure_ascii=True)),
                    )
                else:  # notes an older nbeval left behind belong to a reply that is gone
                    conn.execute("DELETE FROM reply_notes WHERE key = ?", (key,))
                if reply.logprobs is not None:
                    conn.execute(
                        "INSERT OR REPLACE INTO reply_logprobs VALUES (?, ?, ?)",
                        (key, _text_sha(text), _pack_logprobs(reply.logprobs)),
                    )
                else:
                    conn.execute("DELETE FROM reply_logprobs WHERE key = ?", (key,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection().execute("SELECT COUNT(*) FROM replies").fetchone()[0])

    def clear(self, identity: str | None = None) -> int:
        """Delete every reply (or those of one model identity); returns how many were deleted."""
        with self._lock:
            conn = self._connection()
            if identity is None:
                cur = conn.execute("DELETE FROM replies")
                conn.execute("DELETE FROM reply_notes")
                conn.execute("DELETE FROM reply_logprobs")
            else:
                cur = conn.execute("DELETE FROM replies WHERE identity = ?", (identity,))
                conn.execute("DELETE FROM reply_notes WHERE key NOT IN (SELECT key FROM replies)")
                conn.execute("DELETE FROM reply_logprobs WHERE key NOT IN (SELECT key FROM replies)")
            return cur.rowcount

    def close(self) -> None:
        """Close this process's SQLite connection.

        A connection inherited from a parent process is only forgotten; the next use opens a new
        one.
        """
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None

    def __enter__(self) -> ChatCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
