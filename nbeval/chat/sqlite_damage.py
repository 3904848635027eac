"""Recognise a damaged SQLite file of nbeval's own and move it aside.

A file torn by a crash, overwritten, or not a database at all is recognised (:func:`is_damaged`) and
moved aside (:func:`set_aside`) so a fresh one can start, the damaged bytes kept for a look, never
deleted.
"""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from nbeval.errors import DataError

__all__ = ["is_damaged", "set_aside"]

#: SQLite's result codes for a file that is damaged or not a database (extended codes such as
#: ``SQLITE_CORRUPT_INDEX`` start with these).
_DAMAGE = ("SQLITE_CORRUPT", "SQLITE_NOTADB")

#: What SQLite says where it gives no result code (an older library).
_DAMAGE_TEXT = ("malformed", "not a database", "corrupt")


def is_damaged(exc: BaseException) -> bool:
    """Whether ``exc`` says the database file is damaged (not that it is locked, read-only or full)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    name = getattr(exc, "sqlite_errorname", None)
    if isinstance(name, str):
        return name.startswith(_DAMAGE)
    return any(text in str(exc).lower() for text in _DAMAGE_TEXT)


def set_aside(path: Path, why: BaseException) -> Path | None:
    """Move the damaged database at ``path`` aside.

    The database (and its ``-wal`` and ``-shm`` files) is moved to ``<name>.damaged-<UTC time>``
    beside it; returns the new name, or ``None`` when another process moved it first. A
    :class:`DataError` saying what to do when it cannot be moved.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    try:
        os.replace(path, aside)
    except FileNotFoundError:  # another process set it aside first
        return None
    except OSError as err:
        msg = f"{path} is damaged ({why}) and could not be moved aside ({err}): move or delete it, then run again"
        raise DataError(msg) from why
    for suffix in ("-wal", "-shm"):  # they belong to the damaged file, not to the fresh one
        try:
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        except OSError:
            pass
    return aside
