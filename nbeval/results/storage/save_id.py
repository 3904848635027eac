"""The save id: which save wrote each file of a result folder, checked on load.

A save renames its files into the folder one by one (:mod:`nbeval.results.storage.saving`). Two saves into
one folder at once, a save killed between two renames, or a file copied in from another folder
would leave files of two saves side by side, and every file on its own is well formed: such a
folder used to load as one result (one run's label and answers with the other's scores). So each
save writes into ``result.json`` (last, when every other file is in place) a ``"save"`` entry:

``{"id": "<32 hex digits>", "files": {"scores.parquet": "sha256:<hex>", ..., "labels.csv": null}}``

the id of this save and the SHA-256 of every file it wrote (``null``: the save has no such file,
so one found there was left by another). :func:`check_save` compares the folder's files with it
and names the first file of another save (or changed since) in a
:class:`~nbeval.errors.DataError`. A folder saved before the id existed has no ``"save"`` entry
and is not checked. Hashing reads each file once more (about 1.7 GB/s on one core), a small part
of what reading it into a result costs.

The id and the hashes are read from the ``result.json`` the loader read first, and the files are
hashed after they were read, so a file replaced by a save that started meanwhile does not match.
Last, ``result.json`` is read again: a save that replaced every file while the loader read them,
and then another save of the same result that put the same bytes back, leave each hash as it
was, but not the id (each save has its own), so that is a DataError too.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nbeval.errors import DataError

__all__ = ["SAVE_FIELD", "check_save", "file_digest", "new_save"]

#: The key of ``result.json`` that holds the save id and the hashes of its files.
SAVE_FIELD = "save"
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_ID = re.compile(r"[0-9a-f]{32}")
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]*")
_CHANGED = "the file was changed after it was saved"


def file_digest(path: Path) -> str | None:
    """``"sha256:<hex>"`` of the file at ``path``; ``None`` when there is no file."""
    try:
        with open(path, "rb") as fh:
            return "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()
    except (FileNotFoundError, IsADirectoryError):
        return None


def new_save(stage: Path, names: Iterable[str]) -> dict[str, Any]:
    """Make the ``"save"`` entry of a save whose files ``names`` are written in ``stage``.

    The entry holds a new id and each file's hash (``None`` for a name the save did not write).
    """
    return {"id": uuid.uuid4().hex, "files": {name: file_digest(stage / name) for name in names}}


def _entry(info: Mapping[str, Any], source: str) -> tuple[str, dict[str, str | None]] | None:
    """The save id and the hashes of ``result.json``'s ``"save"`` entry, checked; ``None`` without one."""
    save = info.get(SAVE_FIELD)
    if save is None:
        return None
    files = save.get("files") if isinstance(save, dict) else None
    save_id = save.get("id") if isinstance(save, dict) else None
    ok = (
        isinstance(save_id, str)
        and _ID.fullmatch(save_id) is not None
        and isinstance(files, dict)
        and all(
            isinstance(k, str)
            and _NAME.fullmatch(k) is not None  # a file of the folder, never a path out of it
            and (v is None or (isinstance(v, str) and _DIGEST.fullmatch(v)))
            for k, v in files.items()
        )
    )
    if not ok:
        shape = '{"id": 32 hex digits, "files": {name: "sha256:..." or null}}'
        msg = f"must be {shape}; {_CHANGED}; save the result again"
        raise DataError(msg, source=source, field=SAVE_FIELD)
    return str(save_id), dict(files)  # type: ignore[arg-type]


def check_save(folder: Path, info: Mapping[str, Any], names: Iterable[str] | None = None) -> None:
    """Check that each file of ``folder`` is the one its save wrote.

    Raise :class:`~nbeval.errors.DataError` naming the first file of ``folder`` (of ``names``; all
    that ``info``, the folder's ``result.json`` as read, lists) that is not. Nothing is checked for
    a folder saved without a save id.
    """
    entry = _entry(info, str(folder / "result.json"))
    if entry is None:
        return
    save_id, files = entry
    for name in files if names is None else names:
        if name not in files:
            continue
        found = file_digest(folder / name)
        if found == files[name]:
            continue
        if files[name] is None:
            what = f"is not of the save that wrote result.json (save {save_id[:8]}, which wrote no {name})"
        elif found is None:
            what = f"is missing: the save that wrote result.json (save {save_id[:8]}) wrote one"
        else:
            what = f"is not the file that the save of result.json (save {save_id[:8]}) wrote"
        msg = (
            f"{what}: another save wrote into the folder at the same time, or {_CHANGED}; "
            "save the result again (or load it again once the other save is done)"
        )
        if name == "labels.csv":  # the one file a person may think of editing by hand
            msg += "; labels written by hand go in with result.set_labels(path), then result.save(folder)"
        raise DataError(msg, source=str(folder / name))
    if _current_id(folder / "result.json") != save_id:
        msg = "was replaced by another save while the result was read; load it again once the other save is done"
        raise DataError(msg, source=str(folder / "result.json"))


def _current_id(path: Path) -> str | None:
    """The save id of the ``result.json`` at ``path`` now (``None`` when it cannot be read)."""
    try:
        info = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    save = info.get(SAVE_FIELD) if isinstance(info, dict) else None
    save_id = save.get("id") if isinstance(save, dict) else None
    return save_id if isinstance(save_id, str) else None
