"""The batches a run sent to a provider's Batch API, on disk beside the reply cache.

A batch is recorded before it is created at the provider (under nbeval's own submission id, which
goes with it as metadata), its provider id the moment the provider gives one, and it stays *open*
until its replies are in the reply cache. A run that stops while it waits (Ctrl-C, a kernel
restart, a killed process) leaves its batch open; the next run asking any of the same requests
finds it here and polls it again instead of sending the requests a second time. A batch a run
cancelled is marked so (:data:`CANCELLED_HERE`): the next run takes the answers it gave and forgets
it, sending the rest anew; a batch that ended otherwise (completed, expired, cancelled at the
provider) is closed once its replies are read, so no run waits on it again.

The store is a SQLite file of its own beside the cache (``chat.sqlite`` ->
``chat-batches.sqlite``), in WAL mode like the cache, so the cache's schema is untouched. It holds
no request text and no secret: the requests' cache keys (hashes), the model's cache identity and
the provider's ids.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from nbeval.chat.cache import open_sqlite

__all__ = ["CANCELLED_HERE", "SUBMITTING", "BatchStore", "StoredBatch", "store_path"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS batches (
        submission TEXT PRIMARY KEY,
        batch_id TEXT,
        identity TEXT NOT NULL,
        input_file_id TEXT,
        status TEXT NOT NULL,
        open INTEGER NOT NULL,
        created REAL NOT NULL,
        updated REAL NOT NULL
    )""",
    "CREATE TABLE IF NOT EXISTS batch_requests (submission TEXT NOT NULL, key TEXT NOT NULL, "
    "PRIMARY KEY (submission, key))",
    "CREATE INDEX IF NOT EXISTS batch_requests_key ON batch_requests(key)",
)

#: The status of a batch recorded and not yet created at the provider.
SUBMITTING = "submitting"
#: The status of a batch a run cancelled (``cancel=``, the Cancel button) and the provider agreed
#: to cancel: the next run asking its requests keeps the answers it gave before it stopped, if the
#: provider has them ready, forgets it, and sends the rest in a new batch.
CANCELLED_HERE = "cancelled_here"


def store_path(cache_path: str | os.PathLike[str]) -> Path:
    """The store beside the reply cache at ``cache_path``: ``chat.sqlite`` -> ``chat-batches.sqlite``."""
    path = Path(cache_path)
    return path.with_name(f"{path.stem}-batches.sqlite")


@dataclass(frozen=True)
class StoredBatch:
    """One batch as the store has it."""

    submission: str
    """nbeval's id of the submission (sent to the provider as the batch's metadata)."""
    batch_id: str | None
    """The provider's id; ``None`` while the batch is being created."""
    identity: str
    """The chat model's cache identity (endpoint and model, no secret)."""
    status: str
    """The provider's last status, or ``"submitting"``."""
    keys: frozenset[str] = field(default_factory=frozenset)
    """The cache keys of its requests (each is also the request's ``custom_id``)."""


class BatchStore:
    """Batches on disk at ``path``; safe across threads and processes."""

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_s: float = 60.0) -> None:
        self.path = Path(path)
        self.busy_timeout_s = busy_timeout_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = -1

    def __repr__(self) -> str:
        return f"BatchStore({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        # Called with the lock held; a forked child opens its own.
        if self._conn is None or self._pid != os.getpid():
            # FULL, not the cache's NORMAL: a recorded batch survives a crash of the machine too.
            conn = open_sqlite(self.path, self.busy_timeout_s, "FULL")
            for statement in _SCHEMA:
                conn.execute(statement)
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def add(self, submission: str, identity: str, input_file_id: str, keys: Iterable[str]) -> None:
        """Record a batch about to be created (status ``"submitting"``), with its requests' keys."""
        now = time.time()
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO batches VALUES (?, NULL, ?, ?, ?, 1, ?, ?)",
                    (submission, identity, input_file_id, SUBMITTING, now, now),
                )
                conn.executemany("INSERT OR IGNORE INTO batch_requests VALUES (?, ?)", ((submission, k) for k in keys))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def created(self, submission: str, batch_id: str, status: str) -> None:
        """The provider created the batch: keep its id (before anything waits on it)."""
        self._set(submission, "batch_id = ?, status = ?", (batch_id, status))

    def update(self, submission: str, status: str) -> None:
        """The batch's status as last seen."""
        self._set(submission, "status = ?", (status,))

    def close(self, submission: str, status: str) -> None:
        """The batch is over and its replies are in the cache: no run waits on it again."""
        self._set(submission, "status = ?, open = 0", (status,))

    def forget(self, submission: str) -> None:
        """Drop the batch: it was never created (its submission failed), or it was cancelled here
        and its answers were taken."""
        with self._lock:
            conn = self._connection()
            conn.execute("DELETE FROM batch_requests WHERE submission = ?", (submission,))
            conn.execute("DELETE FROM batches WHERE submission = ?", (submission,))

    def _set(self, submission: str, assignments: str, values: tuple[object, ...]) -> None:
        with self._lock:
            self._connection().execute(
                f"UPDATE batches SET {assignments}, updated = ? WHERE submission = ?",
                (*values, time.time(), submission),
            )

    def open_for(self, identity: str, keys: Iterable[str]) -> list[StoredBatch]:
        """The open batches of ``identity`` holding any of ``keys``, oldest first, each with all its keys."""
        wanted = list(dict.fromkeys(keys))
        found: set[str] = set()
        with self._lock:
            conn = self._connection()
            for i in range(0, len(wanted), 500):  # stay under SQLite's bound-parameter limit
                chunk = wanted[i : i + 500]
                marks = ",".join("?" * len(chunk))
                found.update(
                    r[0] for r in conn.execute(f"SELECT submission FROM batch_requests WHERE key IN ({marks})", chunk)
                )
            rows = [
                r
                for s in sorted(found)
                for r in conn.execute(
                    "SELECT submission, batch_id, identity, status, created FROM batches "
                    "WHERE submission = ? AND open = 1 AND identity = ?",
                    (s, identity),
                )
            ]
            rows.sort(key=lambda r: r[4])
            return [
                StoredBatch(
                    r[0],
                    r[1],
                    r[2],
                    r[3],
                    frozenset(
                        k for (k,) in conn.execute("SELECT key FROM batch_requests WHERE submission = ?", (r[0],))
                    ),
                )
                for r in rows
            ]

    def batches(self) -> list[Mapping[str, object]]:
        """Every batch recorded, oldest first (for a look at what was sent and what is still open)."""
        with self._lock:
            cur = self._connection().execute(
                "SELECT b.submission, b.batch_id, b.identity, b.status, b.open, b.created, "
                "(SELECT COUNT(*) FROM batch_requests r WHERE r.submission = b.submission) "
                "FROM batches b ORDER BY b.created"
            )
            names = ("submission", "batch_id", "identity", "status", "open", "created", "requests")
            return [dict(zip(names, row, strict=True)) for row in cur]

    def shut(self) -> None:
        """Close the connection (it is opened again when needed)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None
