r"""Text: reading it from files, repairing what cannot be encoded, and splitting it into sentences.

**Reading and repairing.** :func:`read_text_file` reads a file as UTF-8 the way Excel and Notepad
write it (a leading byte-order mark is dropped); bytes that are not UTF-8 raise
:class:`~nbeval.errors.DataError` naming the file, line and column. :func:`repair_text` makes any
text writable as UTF-8: a lone surrogate (``"\ud800"``, which a JSON ``\ud800`` escape, a
Python string or a UTF-16 source can carry) becomes U+FFFD and a split surrogate pair is joined
into its character; :func:`repair_data` does the same to every string (and key) inside nested
lists and dicts. The data model and the chat layer call them wherever text enters, so a reply or
a file can never break a run or a save half-way.

**Sentence splitting** is :mod:`nbeval.data.sentences`; :func:`split_sentences` and
:func:`is_list_marker_line` are importable from here too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nbeval.data.sentences import is_list_marker_line, split_sentences
from nbeval.errors import DataError

__all__ = [
    "REPAIR_NOTE",
    "is_list_marker_line",
    "needs_repair",
    "read_text_file",
    "repair_data",
    "repair_text",
    "split_sentences",
]

#: What a repaired text was told, for warnings: one phrase, so every layer says the same.
REPAIR_NOTE = (
    "text that cannot be encoded as UTF-8 (a lone surrogate such as '\\ud800') was repaired: replaced by U+FFFD"
)


def repair_text(s: str) -> tuple[str, bool]:
    """``s`` made writable as UTF-8, and whether anything had to change.

    A lone surrogate code point becomes U+FFFD (the replacement character) and a surrogate pair
    split into two code points is joined into the character it encodes. Text that is already
    valid is returned as it is (checked in constant time for ASCII text).
    """
    if s.isascii():
        return s, False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace"), True
    return s, False


def repair_data(value: Any) -> tuple[Any, list[str]]:
    """``value`` with :func:`repair_text` applied to every string and dict key inside it, and the places that changed.

    A place is ``""`` for ``value`` itself, else ``[0]``, ``.name``, ``.items[2]`` and so on.

    ``value`` itself is never modified: when something changes, a repaired copy is returned. The
    walk uses no recursion, so nesting depth is no concern.
    """
    if not isinstance(value, (str, list, tuple, dict)) or not needs_repair(value):
        return value, []
    places = _places_to_repair(value)
    return (_repaired_copy(value) if places else value), places


def needs_repair(value: Any) -> bool:
    """Whether any string (or dict key) inside the lists, tuples and dicts of ``value`` cannot be encoded.

    Fast when none does (an ASCII string is checked in constant time).
    """
    if isinstance(value, str):
        return not value.isascii() and repair_text(value)[1]
    if not isinstance(value, (list, tuple, dict)):
        return False
    stack = [value]
    seen = {id(value)}  # a container met twice (shared, or a cycle) is looked at once
    while stack:
        node = stack.pop()
        items: Iterable[Any] = node
        if isinstance(node, dict):
            if any(type(k) is str and not k.isascii() and repair_text(k)[1] for k in node):
                return True
            items = node.values()
        for v in items:
            if type(v) is str:
                if not v.isascii() and repair_text(v)[1]:
                    return True
            elif isinstance(v, (list, tuple, dict)) and id(v) not in seen:
                seen.add(id(v))
                stack.append(v)
            elif isinstance(v, str) and repair_text(v)[1]:  # a str subclass
                return True
    return False


def _places_to_repair(value: Any) -> list[str]:
    places: list[str] = []
    stack: list[tuple[Any, str]] = [(value, "")]
    seen: set[int] = set()  # a container met twice (shared, or a cycle) is walked once
    while stack:
        node, path = stack.pop()
        if isinstance(node, (list, tuple, dict)):
            if id(node) in seen:
                continue
            seen.add(id(node))
        if isinstance(node, str):
            if repair_text(node)[1]:
                places.append(path)
        elif isinstance(node, dict):
            for k, v in node.items():
                fixed, changed = repair_text(k) if isinstance(k, str) else (repr(k), False)
                where = f"{path}.{fixed}"
                if changed:
                    places.append(where)
                stack.append((v, where))
        elif isinstance(node, (list, tuple)):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(node))
    places.reverse()
    return places


def _repaired_copy(value: Any) -> Any:
    root: list[Any] = [None]
    copies: dict[int, Any] = {}  # a container met twice (shared, or a cycle) is copied once
    tuples: list[tuple[list[Any], list[tuple[Any, Any]]]] = []  # each tuple's items and where it goes
    placed: dict[int, list[tuple[Any, Any]]] = {}
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        node, target, key = stack.pop()
        if isinstance(node, (list, tuple, dict)) and id(node) in copies:
            target[key] = copies[id(node)]
            if id(node) in placed:
                placed[id(node)].append((target, key))
        elif isinstance(node, str):
            target[key] = repair_text(node)[0]
        elif isinstance(node, dict):
            new: dict[Any, Any] = {}
            target[key] = copies[id(node)] = new
            for k, v in node.items():
                k = repair_text(k)[0] if isinstance(k, str) else k
                new[k] = None
                stack.append((v, new, k))
        elif isinstance(node, (list, tuple)):
            items: list[Any] = [None] * len(node)
            target[key] = copies[id(node)] = items
            if isinstance(node, tuple):
                placed[id(node)] = [(target, key)]
                tuples.append((items, placed[id(node)]))
            stack.extend((v, items, i) for i, v in enumerate(node))
        else:
            target[key] = node
    for items, places in reversed(tuples):  # inner tuples first, so outer ones hold them
        frozen = tuple(items)
        for target, key in places:
            target[key] = frozen
    return root[0]


def read_text_file(path: str | os.PathLike[str]) -> str:
    """The text of the file at ``path``, decoded as UTF-8.

    A leading byte-order mark, as Excel writes, is dropped; surrogates encoded as bytes are kept
    for :func:`repair_text` to repair.

    Every problem is a :class:`~nbeval.errors.DataError` naming the file: missing, a folder,
    unreadable, not UTF-8 (with the line and column of the first bad byte) or empty.
    """
    name = str(path)
    try:
        p = Path(path)
        if not p.exists():
            raise DataError("file not found", source=name)
        if p.is_dir():
            raise DataError("is a folder, not a file; give the path of a JSON, JSONL or CSV file", source=name)
        raw = p.read_bytes()
    except (OSError, ValueError) as exc:  # permissions, a name too long, an embedded NUL...
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise DataError(f"cannot read the file: {reason}", source=name) from None
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise DataError("the file is UTF-16 text; save it as UTF-8 (in Excel: CSV UTF-8)", source=name)
    try:
        text = raw.decode("utf-8-sig", "surrogatepass")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        msg = (
            f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at line {line}, column {column} cannot be "
            "decoded; save the file as UTF-8"
        )
        raise DataError(msg, source=name) from None
    if not text.strip():
        raise DataError("the file is empty", source=name)
    return text
