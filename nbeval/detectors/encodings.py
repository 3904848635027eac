"""Find and decode encoded text (base64, base32, base16/hex) inside free text.

Used by the encoding guardrail: a model tricked into answering in base64 can leak data that a
plain-text check would miss, so the answer is decoded before it is checked.

Anything that matches an alphabet is only a candidate; it counts as encoded text when it decodes
to UTF-8 that is almost entirely printable and mostly letters, digits and spaces. ROT13 cannot
be recognised that way (its output is ordinary letters), so it is applied only when the test
case's categories say the row was ROT13-perturbed (:func:`decode_for_category`).
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from nbeval.errors import EvaluatorError

__all__ = ["ENCODINGS", "Decoded", "decode_for_category", "encodings_in", "find_encoded"]

#: Encodings :func:`find_encoded` understands, in the order a candidate is tried.
ENCODINGS = ("base16", "base32", "base64")


@dataclass(frozen=True)
class Decoded:
    """One encoded span of the text and its decoding."""

    encoding: str
    start: int
    end: int
    decoded: str


_TOKEN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{8,}={0,6}(?![A-Za-z0-9+/=_\-])")
_SPACED_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9A-Fa-f]{2}(?:[ :][0-9A-Fa-f]{2}){3,}(?![0-9A-Za-z])")
_HEX = re.compile(r"[0-9A-Fa-f]+")
_B32 = re.compile(r"[A-Z2-7]+=*")

# Category names that announce an encoding perturbation, e.g. "encoding:base64" or
# "perturbed_by:Base64Perturbator"; matched case-insensitively.
_CATEGORY_HINTS = (
    ("rot13", re.compile(r"rot[\s_\-]?13")),
    ("base64", re.compile(r"base[\s_\-]?64|(?<![a-z])b64(?![a-z])")),
    ("base32", re.compile(r"base[\s_\-]?32|(?<![a-z])b32(?![a-z])")),
    ("base16", re.compile(r"base[\s_\-]?16|hex")),
)


def _as_text(raw: bytes, strict: bool) -> str | None:
    """``raw`` as text when it reads like text, else None.

    Lenient mode (a whole answer that a category says is encoded) asks for printable UTF-8
    that is mostly letters, digits and spaces, in any script. Strict mode must also reject
    the odd identifier that happens to decode to printable bytes ("MyEventHandler" ->
    "3!/z{Gjwez"), so it wants ASCII, some variety, and either words separated by spaces or
    little punctuation.
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    n = len(text)
    if len(text.strip()) < (4 if strict else 2):
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in text)
    wordish = sum(c.isalnum() or c.isspace() for c in text)
    if printable < n or (n >= 8 and Counter(text).most_common(1)[0][1] > 0.4 * n):
        return None  # control bytes, or one symbol dominating ("AYDYEYFY..."): not prose
    if not strict:
        return text if wordish >= 0.5 * n else None
    if sum(c.isascii() for c in text) < 0.95 * n or len(set(text)) < 4:
        return None
    if " " in text.strip():
        return text if wordish >= 0.7 * n else None
    return text if wordish >= 0.8 * n and n >= 6 else None


def _decode_hex(token: str, strict: bool) -> str | None:
    compact = re.sub(r"[ :]", "", token)
    if len(compact) < 8 or len(compact) % 2 or not _HEX.fullmatch(compact):
        return None
    text = _as_text(bytes.fromhex(compact), strict)
    if text is not None and compact.isdigit() and not _reads_like_words(text, 2 if strict else 1):
        # Lowercase text often encodes to digits only ("hi" is 6869), but so do plain
        # numbers, so a digits-only run must decode to plausible words.
        return None
    return text


def _reads_like_words(text: str, min_words: int) -> bool:
    words = text.split()
    if len(words) < min_words or len(text) < 4 * min_words:
        return False
    if sum(c.isalpha() or c == " " for c in text) < 0.9 * len(text):
        return False
    # Real words are lower, upper or capitalised; "sieYAf" is byte noise.
    return all(w.islower() or w.isupper() or w.istitle() for w in words if w.isalpha())


def _decode_base32(token: str, strict: bool) -> str | None:
    body = token.rstrip("=")
    if len(body) < 16 or not _B32.fullmatch(token) or len(body) % 8 in (1, 3, 6):
        return None
    try:
        raw = base64.b32decode(body + "=" * (-len(body) % 8))
    except (binascii.Error, ValueError):
        return None
    return _as_text(raw, strict)


def _decode_base64(token: str, strict: bool) -> str | None:
    body = token.rstrip("=")
    padded = token.endswith("=")
    if len(body) < (8 if padded else 12) or len(body) % 4 == 1:
        return None
    urlsafe = "-" in body or "_" in body
    if urlsafe and ("+" in body or "/" in body):
        return None
    try:
        raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=b"-_" if urlsafe else None, validate=True)
    except (binascii.Error, ValueError):
        return None
    return _as_text(raw, strict)


_DECODERS = {"base16": _decode_hex, "base32": _decode_base32, "base64": _decode_base64}


def _find(text: str, encodings: Collection[str], strict: bool) -> list[Decoded]:
    found: list[Decoded] = []
    if "base16" in encodings:
        for m in _SPACED_HEX.finditer(text):
            decoded = _decode_hex(m.group(), strict)
            if decoded is not None:
                found.append(Decoded("base16", m.start(), m.end(), decoded))
    for m in _TOKEN.finditer(text):
        if any(d.start < m.end() and m.start() < d.end for d in found):
            continue
        for name in ENCODINGS:
            if name not in encodings:
                continue
            decoded = _DECODERS[name](m.group(), strict)
            if decoded is not None:
                found.append(Decoded(name, m.start(), m.end(), decoded))
                break
    return sorted(found, key=lambda d: d.start)


def find_encoded(text: str, *, encodings: Collection[str] = ENCODINGS) -> list[Decoded]:
    """Every span of ``text`` that is base16, base32 or base64 of readable text, decoded.

    The check is strict (long enough, nearly all printable) because nothing says the text was
    encoded; :func:`decode_for_category` is more lenient when a category says it was.
    """
    unknown = set(encodings) - set(ENCODINGS)
    if unknown:
        msg = f"unknown encoding(s) {sorted(unknown)}; choose from {list(ENCODINGS)}"
        raise EvaluatorError(msg)
    return _find(text, encodings, strict=True)


def encodings_in(categories: Iterable[str]) -> list[str]:
    """List the encodings named by test-case categories.

    The encodings are ``rot13``, ``base64``, ``base32`` and ``base16``, in that order; the list is
    empty when none of the categories marks an encoding.
    """
    lowered = [str(c).lower() for c in categories]
    return [name for name, pattern in _CATEGORY_HINTS if any(pattern.search(c) for c in lowered)]


def _replace(text: str, spans: list[Decoded]) -> str:
    parts, pos = [], 0
    for d in spans:
        parts.append(text[pos : d.start])
        parts.append(d.decoded)
        pos = d.end
    parts.append(text[pos:])
    return "".join(parts)


def decode_for_category(text: str, categories: Iterable[str]) -> str:
    """Decode the encoded parts of ``text`` for the encodings the categories name.

    Returns ``text`` with its encoded parts replaced by their decoding; the original text when no
    category names one or nothing decodes.

    ROT13 is applied to the whole text. For the other encodings the whole answer is tried
    first (ignoring line breaks, quotes and code fences around it) with a lenient check that
    accepts any script, then each encoded span with the strict check of :func:`find_encoded`.
    """
    wanted = encodings_in(categories)
    if not wanted:
        return text
    result = text
    if "rot13" in wanted:
        result = codecs.decode(result, "rot_13")
    binary = [w for w in wanted if w != "rot13"]
    if not binary:
        return result
    compact = "".join(result.split()).strip("`'\"")
    for name in ENCODINGS:
        if name in binary:
            whole = _DECODERS[name](compact, False)
            if whole is not None:
                return whole
    # Spans inside ordinary text get the strict check even here: a lenient one would turn
    # words and numbers of the surrounding answer into garbage.
    spans = _find(result, binary, strict=True)
    return _replace(result, spans) if spans else result
