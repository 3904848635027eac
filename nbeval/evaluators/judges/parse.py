"""Tolerant reading of judge replies.

Judges are asked for a precise format (``Verdict: yes``, a JSON object, a number), but real
models wrap answers in prose, Markdown, code fences or different capitalisation. Each parser here
tries, in order: a JSON object (bare or inside a fenced code block), a labelled line
(``Verdict: ...``, ``Score = ...``), the reply's first word or line, and finally a single
unambiguous mention anywhere. When none of these gives one clear answer the parser reports a
failure, never a guess; the caller keeps the raw reply as the row's rationale.

Failures, not guesses:

* a reply that gives *conflicting* answers (``Verdict: yes`` then ``Verdict: no``; a JSON object
  whose ``verdict`` and ``rating`` differ; a JSON verdict that a labelled line contradicts);
* a reply that is JSON of the wrong shape (a list where an object is expected, an object with no
  verdict or score key) or whose verdict or score is itself a list, an object or a nested value;
* a number that is not finite (JSON's ``Infinity``, ``1e999``, a 400-digit integer), and a
  labelled number that runs into letters (``Score: 4e-1`` is not 4; as a lone number it is read
  whole, 0.4);
* a reply nested too deeply to read. Parsing never raises on any reply text, and its time grows
  about linearly with the reply's length.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["REASON_KEYS", "Parsed", "find_json", "parse_choice", "parse_index_list", "parse_number"]

#: JSON keys and line labels that carry the judge's explanation.
REASON_KEYS = (
    "rationale",
    "reason",
    "reasoning",
    "explanation",
    "justification",
    "evaluation_summary",
    "feedback",
    "summary",
    "why",
)
_VERDICT_KEYS = (
    "verdict",
    "rating",
    "answer",
    "decision",
    "result",
    "label",
    "judgement",
    "judgment",
    "classification",
    "final answer",
    "final verdict",
    "assessment",
    "output",
)
_SCORE_KEYS = ("score", "evaluation_score", "rating", "grade", "value", "result", "final score")
_FENCE = re.compile(r"```(?:json|JSON|javascript|js)?\s*\n?(.*?)```", re.DOTALL)
_MARKDOWN = re.compile(r"[*_`#>]+")
_NUMBER = r"[-+]?\d+(?:[.,]\d+)?"
_NEGATED = re.compile(r"\b(?:not|isn't|is not|aren't|never)\s+(?:the\s+|a\s+)?$")
#: At most this many opening brackets are tried as the start of an embedded JSON value, so a
#: long reply full of unmatched brackets is read in linear time.
_MAX_JSON_STARTS = 32


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
        """Whether the reply was understood (no :attr:`error`)."""
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


def _whole_json(text: str) -> Any:
    """The JSON object or list that *is* the reply (bare, or alone in one code fence), else ``None``."""
    body = text.strip()
    fenced = _FENCE.fullmatch(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body or body[0] not in "{[":
        return None
    value = _loads(body)
    return value if isinstance(value, (dict, list)) else None


def _loads(chunk: str) -> Any:
    try:
        return json.loads(chunk)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to read
        pass
    try:  # models sometimes answer with single quotes or True/False
        return ast.literal_eval(chunk)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _balanced(text: str) -> list[str]:
    """Substrings from an opening ``{``/``[`` to its matching closer (strings respected)."""
    out: list[str] = []
    tried = 0
    for start, ch in enumerate(text):
        if ch not in "{[":
            continue
        if len(out) >= 5 or tried >= _MAX_JSON_STARTS:
            break
        tried += 1
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
                    out.append(text[start : end + 1])
                    break
    return out


def _shape(value: Any) -> str:
    """How a JSON value that is not what was expected looks, for messages."""
    return {dict: "an object", list: "a list", str: "a string", bool: "true/false", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else "a value"
    )


def _keyed(obj: Mapping[Any, Any], keys: Sequence[str]) -> list[tuple[str, Any]]:
    """``(key, value)`` of every key of ``obj`` that is one of ``keys`` (case and spaces ignored)."""
    return [(str(k).strip(), v) for k, v in obj.items() if str(k).lower().strip() in keys]


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
    labelled = re.search(
        r"(?im)^[^\w\n]*(?:" + "|".join(REASON_KEYS) + r")[^\w\n:=-]*[:=-]\s*"
        r"(.+(?:\n(?![^\w\n]*\w+[^\S\n]*:).+)*)",
        text,
    )
    if labelled:
        return labelled.group(1).strip()
    return text.strip()


def _clean(text: str) -> str:
    return _MARKDOWN.sub("", text).strip()


# -- choices ---------------------------------------------------------------------------------


def _json_verdicts(obj: Mapping[Any, Any], words: Mapping[str, Any], expected: str) -> tuple[list[str], str | None]:
    """Collect the verdict words given under the verdict keys of ``obj``, and the first problem found.

    A problem is a verdict that is not one of the words, or that is a list, an object or a number.
    """
    found: list[str] = []
    for key, got in _keyed(obj, _VERDICT_KEYS):
        if isinstance(got, bool):
            got = "true" if got else "false"
        if not isinstance(got, str):
            return found, f"the judge's {key!r} is {_shape(got)}, not one of {expected}"
        word = _clean(got).lower().strip(" .!\"'")
        if word not in words:
            return found, f"the judge's {key!r} is {got[:80]!r}, not one of {expected}"
        found.append(word)
    return found, None


def _one(words: Mapping[str, Any], found: Sequence[str]) -> str | None:
    """The single verdict ``found`` agrees on (words with the same value agree), or ``None``."""
    return found[0] if found and len({repr(words[w]) for w in found}) == 1 else None


def parse_choice(text: str | None, choices: Mapping[str, Any]) -> Parsed:
    """One of ``choices`` (word -> value) from a reply; case, punctuation and prose tolerated.

    Conflicting verdicts, JSON of the wrong shape and verdicts that are lists or objects are
    failures (see the module's docstring).
    """
    raw = text or ""
    words = {w.lower(): v for w, v in choices.items()}
    expected = " or ".join(repr(w) for w in choices)
    if not raw.strip():
        return Parsed(None, raw, f"the judge's reply is empty; expected {expected}")

    def conflict(found: Sequence[str]) -> Parsed:
        given = ", ".join(repr(w) for w in dict.fromkeys(found))
        return Parsed(None, raw, f"the judge's reply gives conflicting verdicts ({given}); expected one of {expected}")

    whole = _whole_json(raw)
    obj = whole if whole is not None else find_json(raw)
    json_found: list[str] = []
    if isinstance(obj, Mapping):
        json_found, problem = _json_verdicts(obj, words, expected)
        if problem:
            return Parsed(None, raw, problem)
    if whole is not None and not json_found:
        return Parsed(
            None,
            raw,
            f"the judge replied with JSON of another shape ({_shape(whole)} with no verdict); "
            f"expected a verdict of {expected}",
        )
    clean = _clean(raw)
    lower = clean.lower()
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    labels = "|".join(_VERDICT_KEYS)
    # Linear on any text: the parts around the separator cannot match the same characters.
    tail = r"\b[^\w\n:=\-]*(?:is[^\w\n:=\-]*)?[:=\-][^\S\n]*[\"'(\[]*(" + alternatives + r")\b"
    lines = re.findall(r"(?im)^[^\w\n]*(?:" + labels + r")" + tail, lower)
    explicit = json_found + lines
    if explicit:
        word = _one(words, explicit)
        if word is None:
            return conflict(explicit)
        return Parsed(words[word], _reason_from(raw, obj) if json_found else _reason_from(clean))
    labelled = re.findall(r"\b(?:" + labels + r")" + tail, lower)
    if labelled:
        word = _one(words, labelled)
        if word is None:
            return conflict(labelled)
        return Parsed(words[word], _reason_from(clean))
    stripped = lower.strip(" \t\n.!?\"'()[]")
    if stripped in words:
        return Parsed(words[stripped], raw.strip())
    first = re.match(r"\W*(\w+)", lower)
    posed = first and re.match(r"\W*\w+(?:\W+or\s+|\s*[/|]\s*)(" + alternatives + r")\b", lower)  # "yes or no?"
    if first and first.group(1) in words and not posed:
        rest = clean[first.end() :].strip(" \t\n,.:;-")
        return Parsed(words[first.group(1)], rest or raw.strip())
    mentioned = set()
    for m in re.finditer(r"\b(" + alternatives + r")\b", lower):
        if not _NEGATED.search(lower[max(0, m.start() - 20) : m.start()]):
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
        try:
            return float(value)
        except OverflowError:  # an integer too large for a float: out of any range
            return math.inf if value > 0 else -math.inf
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(" + _NUMBER + r")\s*(%?)\s*(?:/\s*\d+(?:\.\d+)?)?\s*", value)
        if m:
            number = float(m.group(1).replace(",", "."))
            return number / 100 if m.group(2) else number
    return None


def _labelled_numbers(pattern: str, text: str) -> list[float]:
    return [float(v.replace(",", ".")) / (100 if pct else 1) for v, pct in re.findall(pattern, text)]


def parse_number(
    text: str | None, lo: float = float("-inf"), hi: float = float("inf"), keys: Sequence[str] = _SCORE_KEYS
) -> Parsed:
    """A number in ``[lo, hi]`` from a reply (JSON key, ``Score: 4``, ``4/5``, a lone number).

    Conflicting numbers (two labelled lines, or two score keys, that differ), JSON of the wrong
    shape and scores that are lists or objects are failures (see the module's docstring).
    """
    raw = text or ""
    if not raw.strip():
        return Parsed(None, raw, "the judge's reply is empty; expected a number")

    def conflict(found: Sequence[float]) -> Parsed:
        given = ", ".join(f"{v:g}" for v in dict.fromkeys(found))
        return Parsed(None, raw, f"the judge's reply gives conflicting numbers ({given}); expected one")

    whole = _whole_json(raw)
    obj = whole if whole is not None else find_json(raw)
    number: float | None = None
    reason = None
    if isinstance(obj, Mapping) and _keyed(obj, keys):
        found = []
        for key, got in _keyed(obj, keys):
            value = _to_float(got)
            if value is None:
                return Parsed(None, raw, f"the judge's {key!r} is {_shape(got)}, not a number")
            found.append(value)
        if len(set(found)) > 1:
            return conflict(found)
        number, reason = found[0], _reason_from(raw, obj)
    elif whole is not None:
        return Parsed(
            None,
            raw,
            f"the judge replied with JSON of another shape ({_shape(whole)} with no "
            f"{' or '.join(repr(k) for k in keys[:3])}); expected a number",
        )
    clean = _clean(raw)
    lines = clean.splitlines()
    labels = "|".join(re.escape(k) for k in keys)
    # (?!\w): "Score: 4e-1" or "Score: 1e999" is no number read as 4 or 1
    tail = r")\b[^\S\n]*(?:(?:is|of)[^\S\n]*)?(?:[:=][^\S\n]*)?(" + _NUMBER + r")(?!\w)[^\S\n]*(%?)"
    if number is None:
        labelled = _labelled_numbers(r"(?im)^[^\w\n]*(?:" + labels + tail, clean)
        first = _to_float(lines[0].strip(" .:")) if lines else None
        if labelled:
            if len(set(labelled + ([first] if first is not None else []))) > 1:
                return conflict(labelled if first is None else [first, *labelled])
            number = labelled[0]
        elif first is not None:
            number = first
            reason = "\n".join(lines[1:]).strip() or None
    if number is None:
        anywhere = _labelled_numbers(r"(?i)\b(?:" + labels + tail, clean)
        if len(set(anywhere)) > 1:
            return conflict(anywhere)
        number = anywhere[0] if anywhere else None
    if number is None:
        out_of = re.findall(r"(?<![\w.])(" + _NUMBER + r")\s*(?:/|out of)\s*(" + _NUMBER + r")", clean)
        # a lone number may be written 4e-1: read whole, so its "-1" is not taken for the number
        plain = re.findall(r"(?<![\w.])(" + _NUMBER + r"(?:[eE][-+]?\d+)?)(?![\w.])", clean)
        if len(out_of) == 1:
            number = float(out_of[0][0].replace(",", "."))
        elif len(plain) == 1:
            number = float(plain[0].replace(",", "."))
    if number is None:
        return Parsed(None, raw, "could not read a number from the judge's reply")
    if not math.isfinite(number):  # Infinity, 1e999 or a 400-digit integer in JSON: no score
        return Parsed(None, raw, f"the judge's number {number:g} is not a finite number")
    if not lo <= number <= hi:
        return Parsed(None, raw, f"the judge's number {number:g} is outside [{lo:g}, {hi:g}]")
    return Parsed(number, reason or _reason_from(clean))


# -- lists of numbers ------------------------------------------------------------------------


def parse_index_list(text: str | None, n: int, key: str = "relevant") -> Parsed:
    """Read 1-based item numbers from a reply (``Relevant: 1, 3``, ``none``, a JSON list).

    Values outside ``1..n`` are dropped. The value is a sorted list of distinct numbers.

    A list holding anything but whole numbers, or JSON of another shape, is a failure.
    """
    raw = text or ""
    if not raw.strip():
        return Parsed(None, raw, "the judge's reply is empty; expected a list of numbers")
    none_word = re.compile(r"\W*(none|nothing|no sentences?|-)\W*", re.IGNORECASE)
    whole = _whole_json(raw)
    obj = whole if whole is not None else find_json(raw)
    items: list[Any] | None = None
    clean = _clean(raw)
    label = re.search(r"(?im)^[^\w\n]*" + re.escape(key) + r"[\w \t]*?[:=][^\S\n]*(.*)$", clean)
    if whole is not None or label is None:
        if isinstance(obj, list):
            items = obj
        elif isinstance(obj, Mapping):
            got = _get(obj, (key, "relevant_sentences", "sentences", "indices", "numbers", "ids"))
            if isinstance(got, list):
                items = got
            elif isinstance(got, str) and none_word.fullmatch(got):
                items = []
            elif isinstance(got, str) and re.fullmatch(r"[\s\d,;\[\]().and]+", got) and re.search(r"\d", got):
                items = re.findall(r"\d+", got)
            elif got is not None:
                return Parsed(None, raw, f"the judge's {key!r} is {_shape(got)}, not a list of numbers")
        if whole is not None and items is None:
            return Parsed(
                None,
                raw,
                f"the judge replied with JSON of another shape ({_shape(whole)} with no "
                f"{key!r} list); expected a list of numbers",
            )
    if items is None and label:
        line = label.group(1)
        items = [] if none_word.fullmatch(line) else (re.findall(r"\d+", line) or None)
    if items is None and re.fullmatch(r"[\s\d,;\[\]().and]+", clean) and re.search(r"\d", clean):
        items = re.findall(r"\d+", clean)
    if items is None and re.fullmatch(r"\W*(none|nothing)\W*", clean, re.IGNORECASE):
        items = []
    if items is None:
        return Parsed(None, raw, "could not read a list of numbers from the judge's reply")
    numbers = [_to_float(i) for i in items]
    if any(v is None or not math.isfinite(v) or v != int(v) for v in numbers):
        bad = next(i for i, v in zip(items, numbers, strict=True) if v is None or not math.isfinite(v) or v != int(v))
        return Parsed(None, raw, f"the judge's list holds {str(bad)[:40]!r}, not a whole item number")
    chosen = sorted({int(v) for v in numbers if v is not None and 1 <= v <= n})
    return Parsed(chosen, _reason_from(clean, obj))
