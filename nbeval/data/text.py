"""Text: reading it from files, repairing what cannot be encoded, and splitting it into sentences.

**Reading and repairing.** :func:`read_text_file` reads a file as UTF-8 the way Excel and Notepad
write it (a leading byte-order mark is dropped); bytes that are not UTF-8 raise
:class:`~nbeval.errors.DataError` naming the file, line and column. :func:`repair_text` makes any
text writable as UTF-8: a lone surrogate (``"\\ud800"``, which a JSON ``\\ud800`` escape, a
Python string or a UTF-16 source can carry) becomes U+FFFD and a split surrogate pair is joined
into its character; :func:`repair_data` does the same to every string (and key) inside nested
lists and dicts. The data model and the chat layer call them wherever text enters, so a reply or
a file can never break a run or a save half-way.

**Sentence splitting** without any data download.

:func:`split_sentences` is the one splitter every evaluator uses (embedding, judge and model
evaluators alike), so that "a sentence" means the same thing everywhere. It is a rule-based
splitter: no NLTK punkt data, no model. The rules, in order:

1. **Lines.** Blank lines always separate. A single newline separates too, except when the next
   line plainly continues the previous one (the previous line does not end with sentence
   punctuation or a colon and the next starts with a lower-case letter), which re-joins
   hard-wrapped prose. A line holding only a list marker (``1.``) is joined to the next line.
2. **List items.** A line that starts with a marker (``1.``, ``2)``, ``a.``, ``-``, ``*``, ``•``)
   starts a new sentence; the marker stays with its text. Inside a line, ``Steps: 1. Do A.``
   splits after the colon so each numbered item stands alone.
3. **Terminal punctuation.** ``.``, ``!``, ``?``, ``…`` (and ``؟``, ``।``, ``۔``) end a sentence
   when followed by white space and then something that is not a lower-case letter; closing
   quotes and brackets stay with the sentence they close. CJK full stops ``。！？`` end a sentence
   with or without white space, unless they close a quotation the sentence continues after.
4. **Exceptions for a period.** No break after titles and common abbreviations (``Dr.``,
   ``Mr.``, ``vs.``, ``e.g.``, ``i.e.``, ``Fig. 2``), after a single capital initial (``J. K.``;
   but a unit after a number, ``180 C.``, does end), after a bare list marker at the start of a
   sentence (``1.``), or after an ellipsis unless a capital follows. ``etc.``, ``Inc.``,
   ``Ltd.``, ``Jr.``, ``et al.`` break only before a capital; dotted acronyms (``U.S.``,
   ``a.m.``) only before a common sentence opener (``The``, ``It``, ``We`` ...), because
   "U.S. President" is far more common than a sentence ending in "U.S.".

Decimals, versions, URLs and e-mail addresses never break because their periods are not
followed by white space. The splitter is deliberately conservative: when in doubt it keeps text
together, since a sentence cut in half embeds worse than two sentences kept together.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

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
    """``value`` with :func:`repair_text` applied to every string and dict key inside it, and the
    places that changed (``""`` for ``value`` itself, else ``[0]``, ``.name``, ``.items[2]``...).

    ``value`` itself is never modified: when something changes, a repaired copy is returned. The
    walk uses no recursion, so nesting depth is no concern.
    """
    if not isinstance(value, (str, list, tuple, dict)) or not needs_repair(value):
        return value, []
    places = _places_to_repair(value)
    return (_repaired_copy(value) if places else value), places


def needs_repair(value: Any) -> bool:
    """Whether any string (or dict key) inside the lists, tuples and dicts of ``value`` cannot be
    encoded; fast when none does (an ASCII string is checked in constant time)."""
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
    """The text of the file at ``path``, decoded as UTF-8 (a leading byte-order mark, as Excel
    writes, is dropped; surrogates encoded as bytes are kept for :func:`repair_text` to repair).

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


# Abbreviations after which a period never ends a sentence (compared lower-case, without the dot).
_NEVER_BREAK = frozenset(
    [
        "mr",
        "mrs",
        "ms",
        "mx",
        "dr",
        "prof",
        "rev",
        "hon",
        "gen",
        "col",
        "capt",
        "cpt",
        "lt",
        "sgt",
        "st",
        "mt",
        "messrs",
        "mme",
        "mlle",
        "sen",
        "rep",
        "gov",
        "pres",
        "supt",
        "vs",
        "v",
        "cf",
        "viz",
        "approx",
        "ca",
        "incl",
        "dept",
        "est",
        "univ",
        "assn",
        "ave",
        "blvd",
        "e.g",
        "i.e",
        "eg",
        "ie",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
    ]
)
# Abbreviations that also commonly end a sentence: break only when a capital follows.
_BREAK_BEFORE_CAPITAL = frozenset(["etc", "inc", "ltd", "co", "corp", "llc", "plc", "bros", "jr", "sr", "al"])
# Abbreviations that introduce a number: no break when a digit follows.
_BEFORE_NUMBER = frozenset(
    [
        "no",
        "nos",
        "fig",
        "figs",
        "vol",
        "vols",
        "p",
        "pp",
        "ch",
        "chap",
        "sec",
        "sect",
        "art",
        "eq",
        "eqs",
        "ref",
        "para",
        "op",
    ]
)
# Words that typically open a sentence; used to decide whether "U.S." ended one.
_OPENERS = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "he",
        "she",
        "they",
        "we",
        "i",
        "you",
        "there",
        "here",
        "his",
        "her",
        "their",
        "our",
        "my",
        "in",
        "on",
        "at",
        "for",
        "but",
        "and",
        "or",
        "so",
        "yet",
        "however",
        "then",
        "also",
        "after",
        "before",
        "when",
        "while",
        "if",
        "although",
        "because",
        "as",
        "since",
        "thus",
        "therefore",
        "meanwhile",
        "moreover",
        "furthermore",
        "finally",
        "first",
        "next",
        "today",
    ]
)

_DOTTED_ACRONYM = re.compile(r"(?:[A-Za-z]{1,2}\.)+[A-Za-z]{1,2}")
_MARKER = r"(?:\(?\d{1,3}[.)]|\(?[A-Za-z][.)]|\(?[ivxlcIVXLC]{1,5}[.)]|[-*•·▪‣◦–])"
_MARKER_LINE = re.compile(rf"^{_MARKER}\s+\S")
_MARKER_ONLY = re.compile(rf"^{_MARKER}$")
_BARE_MARKER = re.compile(r"\(?(?:\d{1,3}|[A-Za-z]|[ivxlc]{1,5}|[IVXLC]{1,5})\)?")
_LINE_END = tuple(".!?:;…。！？؟।۔")
_OPENING = "\"'“‘«([{¿¡"

# A candidate boundary: terminal punctuation, closing quotes/brackets, then white space.
_CANDIDATE = re.compile(r"(?P<p>[.!?…؟।۔]+|[。！？｡．]+)(?P<q>[\"'”’»)\]」』）]*)(?P<ws>\s*)")
_CJK_STOP = re.compile(r"[。！？｡．]")
_COLON_LIST = re.compile(r"(?<=:)\s+(?=\d{1,3}[.)]\s+\S)")
_WS = re.compile(r"\s+")


def is_list_marker_line(line: str) -> bool:
    """Whether ``line`` starts with a list marker followed by text (``1. Open``, ``- item``)."""
    return bool(_MARKER_LINE.match(line.strip()))


def split_sentences(text: str | None) -> list[str]:
    """Split ``text`` into sentences (see the module docstring for the rules).

    Returns stripped sentences with inner white space collapsed to single spaces; an empty or
    blank text gives ``[]``. Lines made only of punctuation (``---``, ``***``) are dropped.
    """
    if not text or not text.strip():
        return []
    return list(_split_cached(text))


@lru_cache(maxsize=16384)
def _split_cached(text: str) -> tuple[str, ...]:
    # Several evaluators split the same answer or chunk; remember the last few thousand texts.
    out: list[str] = []
    for segment in _segments(text):
        for part in _COLON_LIST.split(segment):
            for sentence in _split_segment(part):
                sentence = _WS.sub(" ", sentence).strip()
                if sentence and not _is_decoration(sentence):
                    out.append(sentence)
    return tuple(out)


def _segments(text: str) -> list[str]:
    """Group lines into segments: blank lines and most newlines separate (rule 1 and 2)."""
    segments: list[str] = []
    current: list[str] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if current:
                segments.append(" ".join(current))
                current = []
            continue
        if current and _continues(current[-1], line):
            current.append(line)
            continue
        if current:
            segments.append(" ".join(current))
        current = [line]
    if current:
        segments.append(" ".join(current))
    return segments


def _continues(prev: str, line: str) -> bool:
    if _MARKER_ONLY.match(prev):
        return True  # "1." alone on its line belongs to the text below it
    if is_list_marker_line(line) or prev.startswith("#"):
        return False
    return not prev.endswith(_LINE_END) and line[0].islower()


def _split_segment(seg: str) -> list[str]:
    parts: list[str] = []
    start = 0
    for m in _CANDIDATE.finditer(seg):
        end = m.end("q")
        rest = m.end()
        if rest >= len(seg):
            break
        if _CJK_STOP.match(m.group("p")):
            # 「はい。」と言った: a stop inside a quotation that the sentence goes on after
            ok = not (m.group("q") and not m.group("ws"))
        elif not m.group("ws"):
            continue  # 3.14, v1.2, example.com, a?b: no white space, no break
        else:
            ok = _breaks(seg, start, m)
        if ok:
            parts.append(seg[start:end])
            start = rest
    parts.append(seg[start:])
    return parts


def _breaks(seg: str, start: int, m: re.Match[str]) -> bool:
    """Whether the Latin-script candidate ``m`` really ends a sentence (rules 3 and 4)."""
    nxt = seg[m.end()]
    if nxt.islower():
        return False
    punct = m.group("p")
    if punct in ("...", "…") or (len(punct) > 1 and set(punct) == {"."}):
        return nxt.isupper()
    if punct != ".":
        return True  # ! ? ?! and the like
    before = seg[start : m.start()]
    words = before.split()
    if not words:
        return True
    token = words[-1].lstrip(_OPENING)
    low = token.lower()
    if len(words) == 1 and _BARE_MARKER.fullmatch(words[0]):
        return False  # "1." / "a." / "iv." at the start of a sentence is a list marker
    if low in _NEVER_BREAK:
        return False
    if low in _BEFORE_NUMBER and nxt.isdigit() and (low not in ("no", "nos") or token[0].isupper()):
        return False  # "Fig. 2", "No. 5"; but "he said no. 5 people came" breaks
    if low in _BREAK_BEFORE_CAPITAL:
        return nxt.isupper()
    if _DOTTED_ACRONYM.fullmatch(token):
        next_word = re.match(r"[\w']+", seg[m.end() :])
        return next_word is not None and next_word.group(0).lower() in _OPENERS
    if len(token) == 1 and token.isupper():
        # an initial ("J. K. Rowling", "by J. Smith"), unless a number precedes it: "180 C."
        prev = words[-2] if len(words) > 1 else ""
        return bool(re.fullmatch(r"[\d.,]*\d", prev))
    return True


def _is_decoration(sentence: str) -> bool:
    """A line of punctuation or rule characters only (``---``, ``***``, ``===``)."""
    return all(ch.isspace() or unicodedata.category(ch).startswith("P") or ch in "=*~_#|+<>-^`" for ch in sentence)
