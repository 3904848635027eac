"""One save at a time into a folder: an exclusive lock held while a save renames its files in.

Two processes saving into one folder at once used to interleave their renames and leave files of
both (see :mod:`nbeval.results.storage.save_id`, which tells on load). :func:`folder_lock` makes the
renames of one save follow those of the other: the last save to take the lock leaves its result
whole. The lock is ``flock`` on the folder itself (no lock file is left in the folder; the lock
goes with the process, so a save that is killed frees it). Where the system has no ``flock``
(Windows), or the file system refuses it, saves are not serialised, and the save id still refuses
a folder that mixes two saves when it is loaded.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from nbeval.errors import DataError
from nbeval.results.storage.files import shown_path

if sys.platform != "win32":
    import fcntl

__all__ = ["LOCK_WAIT_S", "folder_lock"]

#: How long a save waits for another save into the same folder to finish renaming its files in
#: (renames take milliseconds; a wait this long means the other process hangs while holding it).
LOCK_WAIT_S = 120.0
_POLL_S = 0.01


@contextlib.contextmanager
def folder_lock(folder: Path, *, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold the exclusive lock of ``folder`` (an existing folder) for the ``with`` block.

    Raise :class:`~nbeval.errors.DataError` when another process holds it for longer than
    ``wait_s``.
    """
    if sys.platform == "win32":  # no flock; the save id still tells a mixed folder on load
        yield
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # a folder that cannot be opened for reading (no permission): nothing to lock with
        yield
        return
    try:
        if not _acquire(fd, wait_s):
            msg = (
                f"another process has been saving into {shown_path(folder)} for more than {wait_s:.0f} s; "
                "wait for it to finish (or stop it) and save again"
            )
            raise DataError(msg)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _acquire(fd: int, wait_s: float) -> bool:
    """Whether the lock was taken within ``wait_s`` (a file system without locks counts as taken)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
        except OSError as exc:
            if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                return True  # locks are not supported here; the save id still checks on load
            raise
