"""Writing results to disk so that a write that fails half-way leaves the previous file whole.

Every file is first written aside (a hidden sibling in the same folder, so the final rename stays
on one file system) and then renamed over its target with :func:`os.replace`, which is atomic:
a reader sees the old file or the new one, never a half-written one. A failed write removes what
it wrote aside.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from nbeval.errors import DataError

__all__ = ["check_folder", "staging_folder", "write_aside"]


def _aside(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def write_aside(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to write a hidden sibling of ``path``, then rename it over ``path``.
    If ``write`` raises (or is interrupted), ``path`` is left as it was and ``tmp`` is removed."""
    path = Path(path)
    check_folder(path.parent)
    if path.is_dir():
        msg = f"{path} is a folder; give the path of a file to write"
        raise DataError(msg)
    tmp = _aside(path)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def check_folder(folder: str | os.PathLike[str], names: Iterable[str] = ()) -> None:
    """Raise :class:`~nbeval.errors.DataError` unless ``folder`` can hold the files ``names``:
    neither it nor a folder above it may be a file, and none of ``names`` in it may be a folder."""
    folder = Path(folder)
    for p in (folder, *folder.parents):
        if p.exists() and not p.is_dir():
            where = "" if p == folder else f" (in {folder})"
            msg = f"{p} is a file, not a folder{where}; choose a folder for the output"
            raise DataError(msg)
    for name in names:
        if (folder / name).is_dir():
            msg = f"{folder / name} is a folder, where the output's file {name} goes; move it or choose another folder"
            raise DataError(msg)


@contextlib.contextmanager
def staging_folder(folder: Path) -> Iterator[Path]:
    """A hidden folder inside ``folder`` to write files into before they are renamed into
    ``folder``; removed on the way out, whatever happened."""
    stage = folder / f".nbeval-saving-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    stage.mkdir()
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)
