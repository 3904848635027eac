"""The batches a run sent to a provider's Batch API, on disk beside the reply cache.

A batch is recorded before it is created at the provider (under nbeval's own submission id, which
goes with it as metadata), its provider id the moment the provider gives one, and it stays *open*
until its replies are in the reply cache. A run that stops while it waits (Ctrl-C, a kernel
restart, a killed process) leaves its batch open; the next run asking any of the same requests
finds it here and polls it again instead of sending the requests a second time. A batch a run
cancelled is marked so (:data:`CANCELLED_HERE`): the next run takes the answers it gave and forgets
it, sending the rest anew; a batch that ended otherwise (completed, expired, cancelled at the
provider) is closed once its replies are read, so no run waits on it again.

Several runs may share the store (two notebooks, a notebook and the command line). A batch being
created has no provider id yet, and a run that finds such a record cannot tell from the provider
whether it is about to exist: so the record carries a *lease* (the creating process's id and host
and a time), and a record whose lease may still be held (:meth:`BatchStore.may_be_live`) is waited
for, never forgotten (:meth:`BatchStore.forget_unsent`). Its creator writes the provider's id with
:meth:`BatchStore.created`, which puts the record back if it is gone, so a created batch is never
left unrecorded (billed, orphaned, and sent again).

The store is a SQLite file of its own beside the cache (``chat.sqlite`` ->
``chat-batches.sqlite``), in WAL mode like the cache, so the cache's schema is untouched. It holds
no request text and no secret: the requests' cache keys (hashes), the model's cache identity and
the provider's ids. A damaged file (torn by a crash, overwritten, tables without their columns) is
set aside with a warning and a fresh one started: the batches it recorded can no longer be
resumed, and the warning says so.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from nbeval.chat.cache import open_sqlite
from nbeval.chat.secrets import redact
from nbeval.chat.sqlite_damage import is_damaged, set_aside

__all__ = ["CANCELLED_HERE", "LEASE_S", "SUBMITTING", "BatchStore", "StoredBatch", "creating", "store_path"]

_T = TypeVar("_T")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS batches (
        submission TEXT PRIMARY KEY,
        batch_id TEXT,
        identity TEXT NOT NULL,
        input_file_id TEXT,
        status TEXT NOT NULL,
        open INTEGER NOT NULL,
        created REAL NOT NULL,
        updated REAL NOT NULL,
        owner_pid INTEGER,
        owner_host TEXT,
        lease_until REAL
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

#: Seconds a run holds the lease of a batch it is creating (renewed at each try): longer than one
#: call to the provider takes, short enough that a record left by a run on another machine that
#: died is taken over soon.
LEASE_S = 120.0

#: The lease columns, added to a store an older nbeval made.
_LEASE_COLUMNS = (("owner_pid", "INTEGER"), ("owner_host", "TEXT"), ("lease_until", "REAL"))

_HOST = socket.gethostname()
_CREATING: set[str] = set()
_CREATING_LOCK = threading.Lock()


@contextmanager
def creating(submission: str) -> Iterator[None]:
    """Mark the batch ``submission`` as being created by this process, while the block runs.

    This is its own lease: a record this process left behind, say after Ctrl-C, is not waited on.
    """
    with _CREATING_LOCK:
        _CREATING.add(submission)
    try:
        yield
    finally:
        with _CREATING_LOCK:
            _CREATING.discard(submission)


def _creating_here() -> set[str]:
    with _CREATING_LOCK:
        return set(_CREATING)


def _alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine runs (one we may not signal runs too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:  # no such check here (a pid out of range, another platform): assume it runs
        return True
    return True


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
        self._inode: tuple[int, int] | None = None

    def __repr__(self) -> str:
        return f"BatchStore({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        # Called with the lock held; a forked child opens its own.
        if self._conn is None or self._pid != os.getpid():
            # FULL, not the cache's NORMAL: a recorded batch survives a crash of the machine too.
            conn = open_sqlite(self.path, self.busy_timeout_s, "FULL")
            try:
                _check_columns(conn)
                for statement in _SCHEMA:
                    conn.execute(statement)
                _add_lease_columns(conn)
            except BaseException:
                conn.close()
                raise
            self._conn, self._pid = conn, os.getpid()
            self._inode = _inode(self.path)
        return self._conn

    def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        """``fn(connection)`` under the lock; a damaged file is set aside and ``fn`` run on a fresh one."""
        with self._lock:
            try:
                return fn(self._connection())
            except sqlite3.DatabaseError as exc:
                if not is_damaged(exc):
                    raise
                self._set_aside(exc)
                return fn(self._connection())

    def _set_aside(self, exc: sqlite3.DatabaseError) -> None:
        # Called with the lock held.
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn = None
        if self._inode is not None and _inode(self.path) != self._inode:
            return  # another process set it aside already: the file there now is a fresh one
        aside = set_aside(self.path, exc)
        if aside is None:
            return
        msg = (
            f"nbeval: the batch store {self.path} is damaged ({exc}); it was set aside as {aside} and a new one "
            "started. The batches it recorded can no longer be resumed: any still running at the provider is "
            "billed, so look them up there (GET .../batches) and cancel the ones no run waits for"
        )
        warnings.warn(redact(msg), RuntimeWarning, stacklevel=4)

    def add(
        self, submission: str, identity: str, input_file_id: str, keys: Iterable[str], *, lease_s: float = LEASE_S
    ) -> None:
        """Record a batch about to be created.

        Its status is ``"submitting"``; it is kept with its requests' keys, leased to this process
        for ``lease_s`` seconds.
        """
        now = time.time()
        wanted = list(keys)

        def add(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.execute(
                    "INSERT INTO batches (submission, batch_id, identity, input_file_id, status, open, created, "
                    "updated, owner_pid, owner_host, lease_until) VALUES (?, NULL, ?, ?, ?, 1, ?, ?, ?, ?, ?)",
                    (submission, identity, input_file_id, SUBMITTING, now, now, os.getpid(), _HOST, now + lease_s),
                )
                conn.executemany(
                    "INSERT OR IGNORE INTO batch_requests VALUES (?, ?)", ((submission, k) for k in wanted)
                )

        self._run(add)

    def renew(self, submission: str, lease_s: float = LEASE_S) -> None:
        """Hold the lease of a batch this process is creating ``lease_s`` seconds more."""
        self._set(submission, "lease_until = ?", (time.time() + lease_s,))

    def created(
        self,
        submission: str,
        batch_id: str,
        status: str,
        *,
        identity: str,
        keys: Iterable[str],
        input_file_id: str | None = None,
    ) -> None:
        """The provider created the batch: keep its id (before anything waits on it).

        A record that is gone (another run forgot it) is put back, with ``identity`` and ``keys``.
        """
        now = time.time()
        wanted = list(keys)

        def created(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                cur = conn.execute(
                    "UPDATE batches SET batch_id = ?, status = ?, updated = ? WHERE submission = ?",
                    (batch_id, status, now, submission),
                )
                if cur.rowcount:
                    return
                conn.execute(
                    "INSERT INTO batches (submission, batch_id, identity, input_file_id, status, open, created, "
                    "updated) VALUES (?, ?, ?, ?, ?, 1, ?, ?)",
                    (submission, batch_id, identity, input_file_id, status, now, now),
                )
                conn.executemany(
                    "INSERT OR IGNORE INTO batch_requests VALUES (?, ?)", ((submission, k) for k in wanted)
                )

        self._run(created)

    def update(self, submission: str, status: str) -> None:
        """The batch's status as last seen."""
        self._set(submission, "status = ?", (status,))

    def close(self, submission: str, status: str) -> None:
        """The batch is over and its replies are in the cache: no run waits on it again."""
        self._set(submission, "status = ?, open = 0", (status,))

    def forget(self, submission: str) -> None:
        """Drop the record of the batch ``submission``.

        Either this run's submission failed before the batch was created, or it was cancelled here
        and its answers were taken.
        """

        def forget(conn: sqlite3.Connection) -> None:
            with _transaction(conn):
                conn.execute("DELETE FROM batch_requests WHERE submission = ?", (submission,))
                conn.execute("DELETE FROM batches WHERE submission = ?", (submission,))

        self._run(forget)

    def forget_unsent(self, submission: str, *, creating: Collection[str] | None = None) -> bool:
        """Drop an unsent batch's record that no live process may still be creating.

        A record that has no provider id and whose lease no live process may hold (its run died
        before the batch was created, or the provider has no such batch); returns whether it is
        gone. ``creating``: the submissions this process is creating (default: those of
        :func:`creating`).
        """
        mine = _creating_here() if creating is None else creating

        def forget(conn: sqlite3.Connection) -> bool:
            with _transaction(conn):
                row = conn.execute(
                    "SELECT batch_id, owner_pid, owner_host, lease_until FROM batches WHERE submission = ?",
                    (submission,),
                ).fetchone()
                if row is None:
                    return True
                if row[0] is not None or _leased(submission, row[1], row[2], row[3], mine):
                    return False
                conn.execute("DELETE FROM batch_requests WHERE submission = ?", (submission,))
                conn.execute("DELETE FROM batches WHERE submission = ?", (submission,))
                return True

        return self._run(forget)

    def may_be_live(self, submission: str) -> bool:
        """Whether a live process may be creating the batch ``submission``.

        It has no provider id and its lease may be held.
        """
        mine = _creating_here()
        row = self._run(
            lambda conn: conn.execute(
                "SELECT batch_id, owner_pid, owner_host, lease_until FROM batches WHERE submission = ?",
                (submission,),
            ).fetchone()
        )
        return row is not None and row[0] is None and _leased(submission, row[1], row[2], row[3], mine)

    def get(self, submission: str) -> StoredBatch | None:
        """The batch ``submission`` if it is recorded and open."""

        def get(conn: sqlite3.Connection) -> StoredBatch | None:
            row = conn.execute(
                "SELECT submission, batch_id, identity, status FROM batches WHERE submission = ? AND open = 1",
                (submission,),
            ).fetchone()
            return None if row is None else _stored(conn, row)

        return self._run(get)

    def _set(self, submission: str, assignments: str, values: tuple[object, ...]) -> None:
        self._run(
            lambda conn: conn.execute(
                f"UPDATE batches SET {assignments}, updated = ? WHERE submission = ?",
                (*values, time.time(), submission),
            )
        )

    def open_for(self, identity: str, keys: Iterable[str]) -> list[StoredBatch]:
        """The open batches of ``identity`` holding any of ``keys``, oldest first, each with all its keys."""
        wanted = list(dict.fromkeys(keys))

        def open_for(conn: sqlite3.Connection) -> list[StoredBatch]:
            found: set[str] = set()
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
            return [_stored(conn, r) for r in rows]

        return self._run(open_for)

    def batches(self) -> list[Mapping[str, object]]:
        """Every batch recorded, oldest first (for a look at what was sent and what is still open)."""
        names = ("submission", "batch_id", "identity", "status", "open", "created", "requests")

        def batches(conn: sqlite3.Connection) -> list[Mapping[str, object]]:
            cur = conn.execute(
                "SELECT b.submission, b.batch_id, b.identity, b.status, b.open, b.created, "
                "(SELECT COUNT(*) FROM batch_requests r WHERE r.submission = b.submission) "
                "FROM batches b ORDER BY b.created"
            )
            return [dict(zip(names, row, strict=True)) for row in cur]

        return self._run(batches)

    def shut(self) -> None:
        """Close the connection (it is opened again when needed)."""
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


def _stored(conn: sqlite3.Connection, row: tuple[object, ...]) -> StoredBatch:
    """A batch from its ``(submission, batch_id, identity, status, ...)`` row, with its keys."""
    submission = str(row[0])
    keys = frozenset(k for (k,) in conn.execute("SELECT key FROM batch_requests WHERE submission = ?", (submission,)))
    batch_id = row[1]
    return StoredBatch(submission, None if batch_id is None else str(batch_id), str(row[2]), str(row[3]), keys)


def _leased(submission: str, pid: object, host: object, until: object, creating: Collection[str]) -> bool:
    """Whether a live process may hold the lease of a record without a provider id.

    Its time is not up and, on this machine, its process runs (this process: it is creating that
    batch now).
    """
    if not isinstance(until, int | float) or time.time() >= until:
        return False  # no lease (an older nbeval wrote it), or it ran out
    if host != _HOST or not isinstance(pid, int):
        return True  # another machine's process: only the time tells
    if pid == os.getpid():
        return submission in creating
    return _alive(pid)


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction (the connection is in autocommit mode)."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        try:
            conn.execute("ROLLBACK")
        except sqlite3.Error:  # a damaged file may refuse the rollback too: the first error says more
            pass
        raise
    conn.execute("COMMIT")


#: The columns each table of the store has had since it was first written (the lease columns are
#: added where missing).
_COLUMNS = {
    "batches": ("submission", "batch_id", "identity", "input_file_id", "status", "open", "created", "updated"),
    "batch_requests": ("submission", "key"),
}


def _check_columns(conn: sqlite3.Connection) -> None:
    """Refuse a store whose tables lack one of their columns, as a damaged store.

    Such a table is another program's database at the store's path: it is raised as a damaged store,
    so it is set aside like a torn file.
    """
    for table, columns in _COLUMNS.items():
        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        missing = [c for c in columns if c not in have]
        if have and missing:
            msg = f"malformed store: its table {table} has no column {missing[0]!r}"
            raise sqlite3.DatabaseError(msg)


def _add_lease_columns(conn: sqlite3.Connection) -> None:
    """Add the lease columns to a store an older nbeval made (once, whoever opens it first)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(batches)")}
    if all(name in have for name, _ in _LEASE_COLUMNS):
        return
    with _transaction(conn):
        have = {row[1] for row in conn.execute("PRAGMA table_info(batches)")}
        for name, kind in _LEASE_COLUMNS:
            if name not in have:
                conn.execute(f"ALTER TABLE batches ADD COLUMN {name} {kind}")


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino
