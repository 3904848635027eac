"""Text placed inside a prompt's delimited block cannot close it: the one mechanism for every prompt.

A prompt shows data between delimiters: tags (``<answer>`` ... ``</answer>``, ``<passage>`` ...
``</passage>``) or runs of a character (a code fence `````, the LLM perturbators' ``<<<`` ...
``>>>``). :func:`neutralise` writes any occurrence of those delimiters inside the inserted text
with HTML character references (``</answer>`` becomes ``&lt;/answer&gt;``, ``>>>`` becomes
``&gt;&gt;&gt;``), so an answer, a document or a user's request holding a closing delimiter and new
instructions stays inside its block; a model still reads the text, and ``html.unescape`` gives it
back. Other text (``<b>``, ``a < b``, code) is left as it is.

It lives at the bottom of the layers (it imports nothing of nbeval) so the judge prompts
(:mod:`nbeval.evaluators.judges.core`), the generation prompts (:mod:`nbeval.generation.prompts`)
and the LLM perturbators (:mod:`nbeval.perturbation.llm`) share it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

__all__ = ["FENCE_ENTITIES", "neutralise"]

#: The characters a run of which may delimit a block, and each one's character reference.
FENCE_ENTITIES = {"<": "&lt;", ">": "&gt;", "`": "&#96;", "~": "&#126;", '"': "&quot;", "'": "&#39;"}


def neutralise(text: str, tags: Sequence[str], fences: str = "") -> str:
    """``text`` made unable to open or close a block of the prompt it is placed in.

    Every opening or closing tag named in ``tags`` (any case, with spaces or attributes:
    ``</answer>``, ``< /ANSWER >``, ``<answer id=1>``) and every run of three or more of the
    ``fences`` characters (each one of :data:`FENCE_ENTITIES`) is written with HTML character
    references. ``html.unescape`` gives the text back.
    """
    pattern = _delimiter_pattern(tuple(tags), fences)
    if pattern is None:
        return text
    return pattern.sub(_escape_delimiter, text)


@lru_cache(maxsize=256)
def _delimiter_pattern(tags: tuple[str, ...], fences: str) -> re.Pattern[str] | None:
    unknown = sorted(set(fences) - set(FENCE_ENTITIES))
    if unknown:
        msg = f"fences must be characters of {''.join(FENCE_ENTITIES)!r}; got {''.join(unknown)!r}"
        raise ValueError(msg)
    parts = []
    if tags:
        names = "|".join(re.escape(t) for t in sorted(set(tags), key=len, reverse=True))
        parts.append(r"<\s*/?\s*(?:" + names + r")(?![\w.:-])[^<>]*>?")
    parts.extend(re.escape(c) + "{3,}" for c in fences)
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def _escape_delimiter(m: re.Match[str]) -> str:
    found = m.group(0)
    if len(set(found)) == 1:  # a fence (``<<<`` too): every character; a tag always has a name
        return "".join(FENCE_ENTITIES[c] for c in found)
    return "&lt;" + found[1:].replace(">", "&gt;")
