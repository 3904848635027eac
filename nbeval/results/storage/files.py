"""Writing results to disk so that a write that fails half-way leaves the previous file whole.

Every file is first written aside (a hidden sibling in the same folder, so the final rename stays
on one file system) and then renamed over its target with :func:`os.replace`, which is atomic:
a reader sees the old file or the new one, never a half-written one. A failed write removes what
it wrote aside.

A path the file system cannot take (a name past its limit of 255 bytes, a path of thousands of
characters: ENAMETOOLONG) is a :class:`~nbeval.errors.DataError` saying so before anything is
written, with the path cut to its beginning (:func:`shown_path`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from nbeval.errors import DataError

__all__ = [
    "SHOWN_PATH_CHARS",
    "check_folder",
    "check_path",
    "path_problem",
    "shown_path",
    "staging_folder",
    "write_aside",
]

#: A path longer than this is shown cut, with its length: an error line stays one line.
SHOWN_PATH_CHARS = 60
#: The longest name of one file or folder where the file system does not say (most allow 255 bytes).
_NAME_MAX = 255


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` for a message: as it is, or cut to :data:`SHOWN_PATH_CHARS` with its length when longer."""
    text = os.fspath(path)
    if len(text) <= SHOWN_PATH_CHARS:
        return text
    return f"{text[:SHOWN_PATH_CHARS]}… ({len(text):,} characters)"


def path_problem(exc: OSError, path: str | os.PathLike[str] | None = None) -> str:
    """A one-line message for an :class:`OSError` about ``path`` (default: the error's own file name)."""
    target = path if path is not None else exc.filename
    if exc.errno == errno.ENAMETOOLONG:
        reason = "the path, or a file or folder name in it, is too long for the file system"
    else:
        reason = exc.strerror or str(exc)
    return f"cannot use {shown_path(target)}: {reason}" if target is not None else reason


def _aside(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")


def write_aside(path: str | os.PathLike[str], write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` to write a hidden sibling of ``path``, then rename it over ``path``.

    If ``write`` raises (or is interrupted), ``path`` is left as it was and ``tmp`` is removed.
    """
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
    """Check that ``folder`` can hold the files ``names``.

    Raise :class:`~nbeval.errors.DataError` unless it can: neither it nor a folder above it may be a
    file, none of ``names`` in it may be a folder, and no name to be made (of ``folder``'s parts not
    there yet, and ``names``) may be longer than the file system allows.
    """
    folder = Path(folder)
    try:
        for p in (folder, *folder.parents):
            if p.exists() and not p.is_dir():
                where = "" if p == folder else f" (in {shown_path(folder)})"
                msg = f"{shown_path(p)} is a file, not a folder{where}; choose a folder for the output"
                raise DataError(msg)
        for name in names:
            if (folder / name).is_dir():
                msg = (
                    f"{shown_path(folder / name)} is a folder, where the output's file {name} goes; move it or "
                    "choose another folder"
                )
                raise DataError(msg)
        _check_name_lengths(folder, names)
    except OSError as exc:
        raise DataError(path_problem(exc, folder)) from None


def check_path(path: str | os.PathLike[str]) -> None:
    """Check that the file system can take ``path`` at all.

    Raise :class:`~nbeval.errors.DataError` when it cannot: a file or folder name in it longer than
    allowed, or the whole too long to look up.
    """
    path = Path(path)
    try:
        path.exists()
        _check_name_lengths(path.parent, (path.name,))
    except OSError as exc:
        raise DataError(path_problem(exc, path)) from None


def _check_name_lengths(folder: Path, names: Iterable[str]) -> None:
    base = next((p for p in (folder, *folder.parents) if p.exists()), Path("."))
    try:
        name_max = os.pathconf(base, "PC_NAME_MAX") if hasattr(os, "pathconf") else _NAME_MAX
    except (OSError, ValueError):
        name_max = _NAME_MAX
    new_parts = folder.parts[len(base.parts) :] if folder.parts[: len(base.parts)] == base.parts else folder.parts
    for part in (*new_parts, *names):
        if len(os.fsencode(part)) > name_max:
            raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), str(folder))


@contextlib.contextmanager
def staging_folder(folder: Path) -> Iterator[Path]:
    """Provide a hidden folder inside ``folder`` to write files into before they are renamed into ``folder``.

    The hidden folder is removed on the way out, whatever happened.
    """
    stage = folder / f".nbeval-saving-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    stage.mkdir()
    try:
        yield stage
    finally:
        shutil.rmtree(stage, ignore_errors=True)
