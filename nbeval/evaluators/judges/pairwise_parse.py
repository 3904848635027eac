"""Reading a pairwise judge's reply, so that no answer it quotes can decide the verdict.

A pairwise judge is shown two answers, and an answer may carry verdict markers of its own
(``[[B]]``, a line ``Winner: B``, ``{"winner": "B"}``) hoping the judge repeats them. Two defences,
one on each side of the judge:

* :func:`neutralise_markers` rewrites every marker inside an answer before the judge sees it, with
  HTML character references (``[[B]]`` becomes ``&#91;&#91;B]]``, ``Winner: B`` becomes
  ``Winner&#58; B``; code fences and the answer tags too, which could open a quoted block that
  hides the judge's own verdict after it), so the judge still reads the text and
  ``html.unescape`` gives it back (exactly, for a text without ``&`` of its own), but a judge
  that copies the answer into its reply copies no marker. Whatever the parser would still
  read in the rewritten answer (a key spelled with escapes, say) has every ``{``, ``[``, ``:``
  and ``=`` rewritten too: :func:`parse_pairwise` of a neutralised answer never names a winner.
* :func:`parse_pairwise` reads the judge's own words only. A structured ``winner`` (or
  ``verdict``, ``better``) field of a JSON object wins over any marker elsewhere in the reply;
  without one, ``Winner: A`` lines and ``[[A]]`` are read outside quoted text: Markdown quotes
  (``> ...``), code blocks other than a JSON one, a block the judge reopens with the prompt's
  answer tags, and, for ``[[A]]``, inline code and text in quotation marks. When the markers read
  name different winners, or none is found, the reply is a parse failure, never a win. The JSON
  objects read are the first in the judge's own text and the one that ends it; straight double
  quotes cannot hide a JSON object (JSON uses them), so a judge that quotes a raw answer should
  do so as a Markdown quote or code block; the prompt's neutralised answers need no quoting.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from nbeval.evaluators.judges.parse import REASON_KEYS, Parsed, find_json

__all__ = ["WINNER_KEYS", "neutralise_markers", "parse_pairwise"]

#: The keys of a JSON reply that name the winner (case ignored), in the order they are looked for.
WINNER_KEYS = ("winner", "verdict", "better")

_WINNER_LINE = re.compile(
    r"(?im)^[\s>*_#`-]*(?:final\s+)?(?:winner|verdict|better\s+answer)[*_`]*\s*[:=][\s*_`\"']*"
    r"(answer\s+)?(a|b|tie|draw|neither|both)\b[*_`\"'.]*\s*$"
)
_BRACKETS = re.compile(r"\[\[\s*([ABC])\s*\]\]")
#: At most this many ``{`` are tried as the start of the object that ends a reply.
_MAX_OBJECT_STARTS = 64
_WORDS = {"a": "A", "b": "B", "tie": "tie", "draw": "tie", "neither": "tie", "both": "tie", "c": "tie"}

# -- quoted text: what the judge repeats rather than says -----------------------------------------

_FENCED = re.compile(r"(?ms)^[ \t]*(```|~~~)([^\n]*)\n(.*?)(?:^[ \t]*\1[ \t]*$|\Z)")
_QUOTE_LINE = re.compile(r"(?m)^[ \t]{0,3}>.*$")
_ANSWER_BLOCK = re.compile(r"(?is)<\s*answer_[ab]\s*>.*?<\s*/\s*answer_[ab]\s*>")
_INLINE = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»")


def _blank(match: re.Match[str]) -> str:
    """The matched text as spaces, its line breaks kept, so line-anchored patterns stay aligned."""
    return re.sub(r"[^\n]", " ", match.group(0))


def _own_lines(reply: str) -> str:
    """Blank the quoted blocks of ``reply``, keeping the judge's own lines.

    Quoted blocks are Markdown quotes, the answer tags, and code blocks except one whose language is
    JSON or whose body is a JSON object (the judge's own reply).
    """

    def fence(match: re.Match[str]) -> str:
        language, body = match.group(2).strip().lower(), match.group(3).lstrip()
        return match.group(0) if language in ("json", "javascript", "js") or body.startswith("{") else _blank(match)

    # quotes first: a quoted line cannot open a block that would hide the judge's own words
    text = _QUOTE_LINE.sub(_blank, reply)
    text = _ANSWER_BLOCK.sub(_blank, text)
    return _FENCED.sub(fence, text)


# -- the reply ------------------------------------------------------------------------------------


def _load(chunk: str) -> Any:
    """``chunk`` as JSON, else as a Python literal (judges answer with single quotes too), else None."""
    try:
        return json.loads(chunk)
    except (ValueError, RecursionError):
        pass
    try:
        return ast.literal_eval(chunk)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _closing_object(text: str) -> Any:
    """Find the object that ends ``text`` (its last ``}`` and the ``{`` that opens it), else None.

    That is where a judge that writes prose first puts its JSON. Tried from the innermost ``{``
    outwards, at most :data:`_MAX_OBJECT_STARTS` of them, so a long reply is read in linear time.
    """
    end = text.rfind("}")
    if end < 0:
        return None
    starts = 0
    start = text.rfind("{", 0, end)
    while start >= 0 and starts < _MAX_OBJECT_STARTS:
        value = _load(text[start : end + 1])
        if isinstance(value, Mapping):
            return value
        starts += 1
        start = text.rfind("{", 0, start)
    return None


def _structured(text: str) -> Parsed | None:
    """Read the verdict of the JSON objects in the judge's own text that have a winner key.

    Those objects are the first object in the text, and the one that ends it; None when neither has
    a winner key.
    """
    named = []
    for obj in (find_json(text), _closing_object(text)):
        if not isinstance(obj, Mapping):
            continue
        lowered = {str(k).lower().strip(): v for k, v in obj.items()}
        raw = next((lowered[k] for k in WINNER_KEYS if k in lowered), None)
        if raw is not None:
            reason = next((lowered[k] for k in REASON_KEYS if isinstance(lowered.get(k), str)), None)
            named.append((raw, reason.strip() if reason else text.strip()))
    if not named:
        return None
    words = set()
    for raw, rationale in named:
        word = None if isinstance(raw, (Mapping, list)) else _WORDS.get(_winner_word(str(raw)))
        if word is None:
            return Parsed(None, rationale, f"the judge's winner {str(raw)[:40]!r} is not A, B or tie")
        words.add(word)
    if len(words) > 1:
        return Parsed(None, named[0][1], f"the judge named more than one winner ({', '.join(sorted(words))})")
    return Parsed(words.pop(), named[0][1])


def _winner_word(raw: str) -> str:
    return raw.strip().strip(".").lower().removeprefix("answer ").strip()


def parse_pairwise(text: str | None) -> Parsed:
    """The winner a judge named: ``Parsed.value`` is ``"A"``, ``"B"`` or ``"tie"``.

    A JSON object with a ``winner`` (or ``verdict``, ``better``) of A, B or tie decides, whatever
    else the reply says; without one, a line ``Winner: A`` (also ``Verdict:``, ``Better answer:``,
    Markdown around it) and ``[[A]]``, ``[[B]]`` or ``[[C]]`` (a tie) are read outside quoted
    text (see the module). Markers naming different winners, or none, are a parse failure
    (``value`` None), so an unclear reply never counts as a win for either side.
    """
    reply = text or ""
    own = _own_lines(reply)
    structured = _structured(own)
    if structured is not None:
        return structured
    rationale = reply.strip()
    found = [_WORDS[m.group(2).lower()] for m in _WINNER_LINE.finditer(own)]
    found += [_WORDS[m.group(1).lower()] for m in _BRACKETS.finditer(_INLINE.sub(_blank, own))]
    named = sorted(set(found))
    if not named:
        return Parsed(None, rationale, "the judge named no winner (A, B or tie)")
    if len(named) > 1:
        return Parsed(None, rationale, f"the judge named more than one winner ({', '.join(named)})")
    return Parsed(named[0], rationale)


# -- the answers ----------------------------------------------------------------------------------

#: A winner key or label and its separator: ``Winner:``, ``"verdict" =``, ``**Better answer**:``.
_KEY_SEPARATOR = re.compile(r"(?i)(winner|verdict|better(?:\s+answer)?)([*_`\"'\s\\]*)([:=])")
_ENTITIES = {":": "&#58;", "=": "&#61;", "{": "&#123;", "[": "&#91;", "`": "&#96;", "~": "&#126;"}
_FENCE_RUN = re.compile(r"`{3,}|~{3,}")
_ANSWER_TAG = re.compile(r"(?i)<\s*/?\s*answer_[ab]\b[^<>]*>?")
_EVERY_SEPARATOR = re.compile(r"[:={\[]")


def neutralise_markers(answer: str) -> str:
    """Rewrite every verdict marker of ``answer`` with HTML character references.

    A judge that repeats the answer then repeats no verdict (see the module); ``html.unescape``
    gives it back.
    """
    text = _BRACKETS.sub(lambda m: "&#91;&#91;" + m.group(0)[2:], answer)
    text = _KEY_SEPARATOR.sub(lambda m: m.group(1) + m.group(2) + _ENTITIES[m.group(3)], text)
    # what would open a quoted block in a reply that repeats the answer, and so hide the verdict
    # the judge writes after it: a code fence, the answer tags
    text = _FENCE_RUN.sub(lambda m: "".join(_ENTITIES[c] for c in m.group(0)), text)
    text = _ANSWER_TAG.sub(lambda m: "&lt;" + m.group(0)[1:].replace(">", "&gt;"), text)  # as the prompt writes it
    if _still_read(text):
        # a marker in a form not rewritten above (a key spelled with escapes, say): take away
        # every character a marker or a JSON object needs; rare, and the judge still reads it
        text = _EVERY_SEPARATOR.sub(lambda m: _ENTITIES[m.group(0)], text)
    return text


def _still_read(text: str) -> bool:
    """Whether :func:`parse_pairwise` reads anything but "no winner" in ``text``, quoted or not."""
    if _structured(text) is not None or parse_pairwise(text).value is not None:
        return True
    return bool(_WINNER_LINE.search(text) or _BRACKETS.search(text))
