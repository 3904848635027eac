"""The sentence splitter and the step alignment as they were before issue 36, kept word for word as
the reference the faster code is compared with (``test_same_as_before_36.py``). The word lists
and the list-marker patterns are data, not algorithm, and are shared with the module under test."""

from __future__ import annotations

import re
import unicodedata

import numpy as np

from nbeval.data.sentences import (
    _BARE_MARKER,
    _BEFORE_NUMBER,
    _BREAK_BEFORE_CAPITAL,
    _DOTTED_ACRONYM,
    _LINE_END,
    _MARKER_ONLY,
    _NEVER_BREAK,
    _OPENERS,
    _OPENING,
    is_list_marker_line,
)
from nbeval.evaluators.embedding.steps import TIE_TOLERANCE, Alignment

_CANDIDATE = re.compile(r"(?P<p>[.!?…؟।۔]+|[。！？｡．]+)(?P<q>[\"'”’»)\]」』）]*)(?P<ws>\s*)")
_CJK_STOP = re.compile(r"[。！？｡．]")
_COLON_LIST = re.compile(r"(?<=:)\s+(?=\d{1,3}[.)]\s+\S)")
_WS = re.compile(r"\s+")


def split_sentences(text: str | None) -> list[str]:
    if not text or not text.strip():
        return []
    out: list[str] = []
    for segment in _segments(text):
        for part in _COLON_LIST.split(segment):
            for sentence in _split_segment(part):
                sentence = _WS.sub(" ", sentence).strip()
                if sentence and not _is_decoration(sentence):
                    out.append(sentence)
    return out


def _segments(text: str) -> list[str]:
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
        return True
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
            ok = not (m.group("q") and not m.group("ws"))
        elif not m.group("ws"):
            continue
        else:
            ok = _breaks(seg, start, m)
        if ok:
            parts.append(seg[start:end])
            start = rest
    parts.append(seg[start:])
    return parts


def _breaks(seg: str, start: int, m: re.Match[str]) -> bool:
    nxt = seg[m.end()]
    if nxt.islower():
        return False
    punct = m.group("p")
    if punct in ("...", "…") or (len(punct) > 1 and set(punct) == {"."}):
        return nxt.isupper()
    if punct != ".":
        return True
    before = seg[start : m.start()]
    words = before.split()
    if not words:
        return True
    token = words[-1].lstrip(_OPENING)
    low = token.lower()
    if len(words) == 1 and _BARE_MARKER.fullmatch(words[0]):
        return False
    if low in _NEVER_BREAK:
        return False
    if low in _BEFORE_NUMBER and nxt.isdigit() and (low not in ("no", "nos") or token[0].isupper()):
        return False
    if low in _BREAK_BEFORE_CAPITAL:
        return nxt.isupper()
    if _DOTTED_ACRONYM.fullmatch(token):
        next_word = re.match(r"[\w']+", seg[m.end() :])
        return next_word is not None and next_word.group(0).lower() in _OPENERS
    if len(token) == 1 and token.isupper():
        prev = words[-2] if len(words) > 1 else ""
        return bool(re.fullmatch(r"[\d.,]*\d", prev))
    return True


def _is_decoration(sentence: str) -> bool:
    return all(ch.isspace() or unicodedata.category(ch).startswith("P") or ch in "=*~_#|+<>-^`" for ch in sentence)


_TIE_ORDER = {"insertion": 0, "deletion": 1, "match": 2, "mismatch": 2}


def align_steps(sim: np.ndarray, cutoff: float) -> Alignment:
    sim = np.asarray(sim, dtype=float)
    n, m = sim.shape
    inf = (float("inf"), 0, 0.0)
    cost = [[inf] * (m + 1) for _ in range(n + 1)]
    back: list[list[str | None]] = [[None] * (m + 1) for _ in range(n + 1)]
    cost[0][0] = (0, 0, 0.0)
    for i in range(n + 1):
        for j in range(m + 1):
            if i == 0 and j == 0:
                continue
            options: list[tuple[tuple[float, int, float], str]] = []
            if i > 0 and j > 0:
                e, k, s = cost[i - 1][j - 1]
                v = float(sim[i - 1, j - 1])
                if v >= cutoff:
                    options.append(((e, k - 1, s - v), "match"))
                else:
                    options.append(((e + 1, k, s), "mismatch"))
            if i > 0:
                e, k, s = cost[i - 1][j]
                options.append(((e + 1, k, s), "insertion"))
            if j > 0:
                e, k, s = cost[i][j - 1]
                options.append(((e + 1, k, s), "deletion"))
            cost[i][j], back[i][j] = _best(options)
    ops: list[tuple[str, int | None, int | None, float | None]] = []
    i, j = n, m
    while i > 0 or j > 0:
        op = back[i][j]
        if op in ("match", "mismatch"):
            ops.append((op, i - 1, j - 1, float(sim[i - 1, j - 1])))
            i, j = i - 1, j - 1
        elif op == "insertion":
            ops.append((op, i - 1, None, None))
            i -= 1
        else:
            ops.append(("deletion", None, j - 1, None))
            j -= 1
    ops.reverse()
    return Alignment(ops=ops, cutoff=float(cutoff))


def _best(options: list[tuple[tuple[float, int, float], str]]) -> tuple[tuple[float, int, float], str]:
    low = min(options, key=lambda o: o[0])
    tied = [o for o in options if o[0][:2] == low[0][:2] and abs(o[0][2] - low[0][2]) <= TIE_TOLERANCE]
    return min(tied, key=lambda o: _TIE_ORDER[o[1]])
