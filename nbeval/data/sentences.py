"""Splitting text into sentences, without any data download.

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

**Cost.** A text is read once per candidate boundary with compiled patterns; a candidate looks
back at two words at most, and a colon list is looked for only where there is a colon. The last
16,384 texts split are remembered (the embedding evaluators keep a whole run's sentences too).
The splitter as it was before these shortcuts is kept in ``tests/embedding/before_36.py``, which
the tests compare it with.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["is_list_marker_line", "split_sentences"]

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
_CJK_STOPS = "。！？｡．"
_COLON_LIST = re.compile(r"(?<=:)\s+(?=\d{1,3}[.)]\s+\S)")
_NEXT_WORD = re.compile(r"[\w']+")
_NUMBER = re.compile(r"[\d.,]*\d")


def is_list_marker_line(line: str) -> bool:
    """Whether ``line`` starts with a list marker followed by text (``- item``, or ``1.`` before the text)."""
    return bool(_MARKER_LINE.match(line.strip()))


def split_sentences(text: str | None) -> list[str]:
    """Split ``text`` into sentences (see the module docstring for the rules).

    Args:
        text: The text to split; ``None`` is taken as empty.

    Returns:
        The sentences, stripped, with inner white space collapsed to single spaces; an empty or
        blank text gives ``[]``. Lines made only of punctuation (``---``, ``***``) are dropped.
    """
    if not text or not text.strip():
        return []
    return list(_split_cached(text))


@lru_cache(maxsize=16384)
def _split_cached(text: str) -> tuple[str, ...]:
    # Several evaluators split the same answer or chunk; remember the last few thousand texts.
    # White space is collapsed with str.split, which splits at the characters \s matches.
    out: list[str] = []
    for segment in _segments(text):
        for part in _COLON_LIST.split(segment) if ":" in segment else (segment,):
            for sentence in _split_segment(part):
                sentence = " ".join(sentence.split())
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
        if m.group("p")[0] in _CJK_STOPS:
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
    words = seg[start : m.start()].rsplit(None, 2)  # the last two words are all that is read
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
        next_word = _NEXT_WORD.match(seg, m.end())
        return next_word is not None and next_word.group(0).lower() in _OPENERS
    if len(token) == 1 and token.isupper():
        # an initial ("J. K. Rowling", "by J. Smith"), unless a number precedes it: "180 C."
        prev = words[-2] if len(words) > 1 else ""
        return bool(_NUMBER.fullmatch(prev))
    return True


def _is_decoration(sentence: str) -> bool:
    """A line of punctuation or rule characters only (``---``, ``***``, ``===``)."""
    if sentence[0].isalnum():  # a letter or digit (most sentences open with one) is no decoration
        return False
    return all(ch.isspace() or unicodedata.category(ch).startswith("P") or ch in "=*~_#|+<>-^`" for ch in sentence)
