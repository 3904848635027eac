"""Tolerant reading of judge replies.

Judges are asked for a precise format (``Verdict: yes``, a JSON object, a number), but real
models wrap answers in prose, Markdown, code fences or different capitalisation. Each parser here
tries, in order: a JSON object (bare or inside a fenced code block), a labelled line
(``Verdict: ...``, ``Score = ...``), the reply's first word or line, and finally a single
unambiguous mention anywhere. When none of these gives one clear answer the parser reports a
failure, never a guess; the caller keeps the raw reply as the row's rationale.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["REASON_KEYS", "Parsed", "find_json", "parse_choice", "parse_index_list", "parse_number"]

#: JSON keys and line labels that carry the judge's explanation.
REASON_KEYS = ("rationale", "reason", "reasoning", "explanation", "justification", "evaluation_summary",
               "feedback", "summary", "why")
_VERDICT_KEYS = ("verdict", "rating", "answer", "decision", "result", "label", "judgement", "judgment",
                 "classification", "final answer", "final verdict", "assessment", "output")
_SCORE_KEYS = ("score", "evaluation_score", "rating", "grade", "value", "result", "final score")
_FENCE = re.compile(r"```(?:json|JSON|javascript|js)?\s*\n?(.*?)```", re.DOTALL)
_MARKDOWN = re.compile(r"[*_`#>]+")
_NUMBER = r"[-+]?\d+(?:[.,]\d+)?"
_NEGATED = re.compile(r"\b(?:not|isn't|is not|aren't|never)\s+(?:the\s+|a\s+)?$")


@dataclass(frozen=True)
class Parsed:
    """What a parser made of a reply: a ``value`` (``None`` on failure) and why."""

    value: Any
    rationale: str
    """The judge's explanation where one could be separated, else the whole reply."""
    error: str | None = None
    """Why the reply could not be understood (``value`` is then ``None``)."""

    @property
    def ok(self) -> bool:
        return self.error is None


def find_json(text: str) -> Any:
    """The first JSON (or Python-literal) object or list in ``text``, or ``None``."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        cand = cand.strip()
        for chunk in [cand, *_balanced(cand)]:
            value = _loads(chunk)
            if isinstance(value, (dict, list)):
                return value
    return None


def _loads(chunk: str) -> Any:
    try:
        return json.loads(chunk)
    except ValueError:
        pass
    try:  # models sometimes answer with single quotes or True/False
        return ast.literal_eval(chunk)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _balanced(text: str) -> list[str]:
    """Substrings from an opening ``{``/``[`` to its matching closer (strings respected)."""
    out: list[str] = []
    for start, ch in enumerate(text):
        if ch not in "{[" or len(out) >= 5:
            continue
        depth, in_str, esc = 0, False, False
        for end in range(start, len(text)):
            c = text[end]
            if in_str:
                esc = (c == "\\") and not esc
                if c == '"' and not esc:
                    in_str = False
                continue
            if c == '"':
                in_str = True
            elif c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    out.append(text[start:end + 1])
                    break
    return out


def _get(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    lower = {str(k).lower().strip(): v for k, v in obj.items()}
    for k in keys:
        if k in lower:
            return lower[k]
    return None


def _reason_from(text: str, obj: Any = None) -> str:
    if isinstance(obj, Mapping):
        reason = _get(obj, REASON_KEYS)
        if isinstance(reason, str) and reason.strip():
            return reason.strip()
    labelled = re.search(r"(?im)^\W*(?:" + "|".join(REASON_KEYS) + r")\W*\s*[:=-]\s*(.+(?:\n(?!\W*\w+\s*:).+)*)",
                         text)
    if labelled:
        return labelled.group(1).strip()
    return text.strip()


def _clean(text: str) -> str:
    return _MARKDOWN.sub("", text).strip()


# -- choices ---------------------------------------------------------------------------------


def parse_choice(text: str | None, choices: Mapping[str, Any]) -> Parsed:
    """One of ``choices`` (word -> value) from a reply; case, punctuation and prose tolerated."""
    raw = text or ""
    words = {w.lower(): v for w, v in choices.items()}
    expected = " or ".join(repr(w) for w in choices)
    if not raw.strip():
        return Parsed(None, raw, f"the judge's reply is empty; expected {expected}")
    obj = find_json(raw)
    if isinstance(obj, Mapping):
        got = _get(obj, _VERDICT_KEYS)
        if isinstance(got, bool):
            got = "true" if got else "false"
        if isinstance(got, str) and _clean(got).lower().strip(" .!\"'") in words:
            return Parsed(words[_clean(got).lower().strip(" .!\"'")], _reason_from(raw, obj))
    clean = _clean(raw)
    lower = clean.lower()
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    label = re.compile(r"\b(?:" + "|".join(_VERDICT_KEYS) + r")\b\s*(?:is)?\s*[:=\-]\s*[\"'(\[]*(" + alternatives
                       + r")\b")
    labelled = label.findall(lower)
    if labelled:
        return Parsed(words[labelled[-1]], _reason_from(clean))
    stripped = lower.strip(" \t\n.!?\"'()[]")
    if stripped in words:
        return Parsed(words[stripped], raw.strip())
    first = re.match(r"\W*(\w+)", lower)
    posed = first and re.match(r"\W*\w+\W+or\s+(" + alternatives + r")\b", lower)  # "yes or no? ..."
    if first and first.group(1) in words and not posed:
        rest = clean[first.end():].strip(" \t\n,.:;-")
        return Parsed(words[first.group(1)], rest or raw.strip())
    mentioned = set()
    for m in re.finditer(r"\b(" + alternatives + r")\b", lower):
        if not _NEGATED.search(lower[max(0, m.start() - 20):m.start()]):
            mentioned.add(m.group(1))
    values = {repr(words[w]) for w in mentioned}
    if len(values) == 1:
        return Parsed(words[mentioned.pop()], _reason_from(clean))
    why = "it names several" if values else "it names none"
    return Parsed(None, raw, f"could not read a verdict from the judge's reply ({why} of {expected})")


# -- numbers ---------------------------------------------------------------------------------


def _to_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(" + _NUMBER + r")\s*(%?)\s*(?:/\s*\d+(?:\.\d+)?)?\s*", value)
        if m:
            number = float(m.group(1).replace(",", "."))
            return number / 100 if m.group(2) else number
    return None


def parse_number(text: str | None, lo: float = float("-inf"), hi: float = float("inf"),
                 keys: Sequence[str] = _SCORE_KEYS) -> Parsed:
    """A number in ``[lo, hi]`` from a reply (JSON key, ``Score: 4``, ``4/5``, a lone number)."""
    raw = text or ""
    if not raw.strip():
        return Parsed(None, raw, "the judge's reply is empty; expected a number")
    obj = find_json(raw)
    number: float | None = None
    reason = None
    if isinstance(obj, Mapping):
        number = _to_float(_get(obj, keys))
        reason = _reason_from(raw, obj) if number is not None else None
    clean = _clean(raw)
    if number is None:
        label = re.compile(r"(?i)\b(?:" + "|".join(keys) + r")\b\s*(?:is|of)?\s*[:=]?\s*(" + _NUMBER + r")\s*(%?)")
        found = label.findall(clean)
        if found:
            value, pct = found[-1]
            number = float(value.replace(",", ".")) / (100 if pct else 1)
    if number is None:
        first_line = clean.splitlines()[0] if clean.splitlines() else ""
        number = _to_float(first_line.strip(" .:"))
        if number is not None:
            reason = "\n".join(clean.splitlines()[1:]).strip() or None
    if number is None:
        out_of = re.findall(r"(" + _NUMBER + r")\s*(?:/|out of)\s*(" + _NUMBER + r")", clean)
        plain = re.findall(r"(?<![\w.])(" + _NUMBER + r")(?![\w.])", clean)
        if len(out_of) == 1:
            number = float(out_of[0][0].replace(",", "."))
        elif len(plain) == 1:
            number = float(plain[0].replace(",", "."))
    if number is None:
        return Parsed(None, raw, "could not read a number from the judge's reply")
    if not lo <= number <= hi:
        return Parsed(None, raw, f"the judge's number {number:g} is outside [{lo:g}, {hi:g}]")
    return Parsed(number, reason or _reason_from(clean))


# -- lists of numbers ------------------------------------------------------------------------


def parse_index_list(text: str | None, n: int, key: str = "relevant") -> Parsed:
    """1-based item numbers from a reply (``Relevant: 1, 3``, ``none``, a JSON list); values
    outside ``1..n`` are dropped. The value is a sorted list of distinct numbers."""
    raw = text or ""
    if not raw.strip():
        return Parsed(None, raw, "the judge's reply is empty; expected a list of numbers")
    obj = find_json(raw)
    items: list[Any] | None = None
    if isinstance(obj, list):
        items = obj
    elif isinstance(obj, Mapping):
        got = _get(obj, (key, "relevant_sentences", "sentences", "indices", "numbers", "ids"))
        if isinstance(got, list):
            items = got
        elif isinstance(got, str):
            items = re.findall(r"\d+", got)
    clean = _clean(raw)
    if items is None:
        label = re.search(r"(?im)^\W*" + re.escape(key) + r"[\w ]*?\s*[:=]\s*(.*)$", clean)
        if label:
            line = label.group(1)
            says_none = re.match(r"\W*(none|nothing|no sentences?|-)\W*$", line, re.IGNORECASE)
            items = [] if says_none else (re.findall(r"\d+", line) or None)
    if items is None and re.fullmatch(r"[\s\d,;\[\]().and]+", clean) and re.search(r"\d", clean):
        items = re.findall(r"\d+", clean)
    if items is None and re.fullmatch(r"\W*(none|nothing)\W*", clean, re.IGNORECASE):
        items = []
    if items is None:
        return Parsed(None, raw, "could not read a list of numbers from the judge's reply")
    numbers = sorted({int(float(i)) for i in items if _to_float(i) is not None and 1 <= int(float(i)) <= n})
    return Parsed(numbers, _reason_from(clean, obj))
