"""The built-in perturbators.

Noise that keeps the meaning: :class:`TyposPerturbator`, :class:`CasePerturbator`,
:class:`WhitespacePerturbator`, :class:`PunctuationPerturbator`, :class:`SynonymsPerturbator` and
:class:`ContractionsPerturbator` (tables shipped in ``tables.json``). Encodings of the whole
prompt, which the encoding guardrail reads back from their categories: :class:`Base64Perturbator`,
:class:`Base16Perturbator` and :class:`LeetspeakPerturbator`. Changes that may alter the meaning
(``changes_meaning = True``): :class:`WordOrderPerturbator` and :class:`InjectionPerturbator`.
"""

from __future__ import annotations

import base64
import json
import random
import re
from collections.abc import Callable
from functools import cache
from importlib import resources
from typing import Any

from nbeval.perturbation.base import INTENSITIES, WORD, Perturbator, check_intensity, how_many

__all__ = [
    "BUILTIN_PERTURBATORS",
    "LEET",
    "QWERTY_NEIGHBOURS",
    "Base16Perturbator",
    "Base64Perturbator",
    "CasePerturbator",
    "ContractionsPerturbator",
    "InjectionPerturbator",
    "LeetspeakPerturbator",
    "PunctuationPerturbator",
    "SynonymsPerturbator",
    "TyposPerturbator",
    "WhitespacePerturbator",
    "WordOrderPerturbator",
    "leet_map",
    "tables",
]


@cache
def tables() -> dict[str, Any]:
    """Return the shipped tables.

    ``synonyms`` (word -> replacements), ``contractions`` (phrase -> contracted form) and
    ``injection_suffixes`` (intensity -> suffixes).
    """
    text = resources.files("nbeval.perturbation").joinpath("tables.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _edit(text: str, edits: dict[tuple[int, int], str]) -> str:
    """``text`` with each ``(start, end)`` span replaced; spans must not overlap."""
    out, pos = [], 0
    for (start, end), new in sorted(edits.items()):
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _perturb_words(
    text: str,
    intensity: str,
    rng: random.Random,
    keep: Callable[[str], bool],
    change: Callable[[str, random.Random], str],
) -> str:
    """Change :func:`how_many` of the words (of all words) among those ``keep`` accepts."""
    words = list(WORD.finditer(text))
    candidates = [m for m in words if keep(m.group())]
    k = min(len(candidates), how_many(len(words), intensity))
    chosen = sorted(rng.sample(candidates, k), key=lambda m: m.start())
    return _edit(text, {m.span(): change(m.group(), rng) for m in chosen})


def _match_case(new: str, old: str) -> str:
    if len(old) > 1 and old.isupper():
        return new.upper()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


# -- keyboard typos -----------------------------------------------------------------------------

_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbours() -> dict[str, str]:
    """Each letter's neighbours on a QWERTY keyboard (same row, and the staggered rows around)."""
    out: dict[str, str] = {}
    for r, row in enumerate(_ROWS):
        for i, ch in enumerate(row):
            near = [(r, i - 1), (r, i + 1), (r - 1, i), (r - 1, i + 1), (r + 1, i - 1), (r + 1, i)]
            out[ch] = "".join(_ROWS[rr][ii] for rr, ii in near if 0 <= rr < 3 and 0 <= ii < len(_ROWS[rr]))
    return out


#: Each letter -> the letters next to it on a QWERTY keyboard (the typos perturbator's replacements).
QWERTY_NEIGHBOURS = _neighbours()


def _typo(word: str, rng: random.Random) -> str:
    letters = [i for i, ch in enumerate(word) if ch.lower() in QWERTY_NEIGHBOURS]
    i = rng.choice(letters)
    kind = rng.choice(("neighbour", "swap", "drop"))
    if kind == "swap" and i + 1 < len(word) and word[i + 1].lower() != word[i].lower():
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if kind == "drop":
        return word[:i] + word[i + 1 :]
    new = rng.choice(QWERTY_NEIGHBOURS[word[i].lower()])
    return word[:i] + (new.upper() if word[i].isupper() else new) + word[i + 1 :]


class TyposPerturbator(Perturbator):
    """``typos``: some words get a keyboard typo (a neighbouring key, two letters swapped, or a letter dropped)."""

    description = "keyboard typos: a letter becomes a QWERTY neighbour, two letters swap, or one drops"

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Give some words (those with at least three QWERTY letters) a keyboard typo."""

        def keep(w: str) -> bool:
            return sum(ch.lower() in QWERTY_NEIGHBOURS for ch in w) >= 3

        return _perturb_words(text, intensity, rng, keep, _typo)


class CasePerturbator(Perturbator):
    """``case``: some words change case (upper, lower, title or swapped); how many grows with the intensity."""

    description = "character case: words become upper, lower, title or swapped case"

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Change the case of some words to upper, lower, title or swapped case."""

        def variants(w: str) -> list[str]:
            return [v for v in dict.fromkeys((w.upper(), w.lower(), w.title(), w.swapcase())) if v != w]

        return _perturb_words(text, intensity, rng, lambda w: bool(variants(w)), lambda w, r: r.choice(variants(w)))


# -- whitespace and punctuation -----------------------------------------------------------------

_SPACES = ("  ", "   ", "\t", "\n", " \t ", "  \n ")


class WhitespacePerturbator(Perturbator):
    """``whitespace``: some gaps between words become runs of spaces, tabs or line breaks."""

    description = "whitespace noise: gaps between words (and the end) become runs of spaces, tabs or line breaks"

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Replace some gaps between words (or add one at the end) with runs of spaces, tabs or line breaks."""
        if not text.strip():
            return text
        gaps = [m.span() for m in re.finditer(r"\s+", text)]
        if not text[-1:].isspace():
            gaps.append((len(text), len(text)))
        chosen = rng.sample(gaps, how_many(len(gaps), intensity))
        return _edit(text, {g: rng.choice([s for s in _SPACES if s != text[g[0] : g[1]]]) for g in chosen})


_MARKS = (",", ";", ".", "!", "?", "...", ":")
_PUNCT = ",;.!?:"


class PunctuationPerturbator(Perturbator):
    """``punctuation``: after some words a punctuation mark is dropped, or one is added."""

    description = "punctuation noise: a mark after a word is dropped, or one is added"

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Drop the punctuation mark after some words, or add one where there is none."""
        words = list(WORD.finditer(text))
        chosen = rng.sample(words, how_many(len(words), intensity))
        edits: dict[tuple[int, int], str] = {}
        for m in chosen:
            end = m.end()
            if text[end : end + 1] and text[end] in _PUNCT:
                edits[(end, end + 1)] = ""
            else:
                edits[(end, end)] = rng.choice(_MARKS)
        return _edit(text, edits)


# -- word order ---------------------------------------------------------------------------------


class WordOrderPerturbator(Perturbator):
    """``word_order``: some neighbouring words swap places. May change the meaning."""

    description = "word-order jitter: neighbouring words swap places (may change the meaning)"
    changes_meaning = True

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Swap some pairs of neighbouring words (pairs separated by whitespace only, not the same word twice)."""
        words = list(WORD.finditer(text))
        pairs = [
            i
            for i in range(len(words) - 1)
            if text[words[i].end() : words[i + 1].start()].isspace()
            and words[i].group().lower() != words[i + 1].group().lower()
        ]
        rng.shuffle(pairs)
        want = how_many(len(words), intensity)
        used: set[int] = set()
        edits: dict[tuple[int, int], str] = {}
        for i in pairs:
            if len(edits) >= 2 * want:
                break
            if {i, i + 1} & used:
                continue
            used |= {i, i + 1}
            edits[words[i].span()] = words[i + 1].group()
            edits[words[i + 1].span()] = words[i].group()
        return _edit(text, edits)


# -- synonyms and contractions ------------------------------------------------------------------


class SynonymsPerturbator(Perturbator):
    """``synonyms``: some common English words are replaced by a synonym from nbeval's table."""

    description = "synonyms: common English words are replaced from nbeval's shipped synonym table"

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Replace some words found in nbeval's synonym table with a synonym, keeping their case."""
        table: dict[str, list[str]] = tables()["synonyms"]
        return _perturb_words(
            text, intensity, rng, lambda w: w.lower() in table, lambda w, r: _match_case(r.choice(table[w.lower()]), w)
        )


@cache
def _contraction_table() -> tuple[re.Pattern[str], dict[str, str]]:
    """One pattern for every phrase and contracted form, and what each (lower case) becomes."""
    both: dict[str, str] = {}
    for long, short in tables()["contractions"].items():
        both[long.lower()] = short
        both.setdefault(short.lower(), long)
    alternatives = sorted(both, key=len, reverse=True)
    body = "|".join(re.escape(a).replace("'", "['’]").replace(r"\ ", r"\s+") for a in alternatives)
    return re.compile(rf"(?<![\w'’])(?:{body})(?![\w'’])", re.IGNORECASE), both


class ContractionsPerturbator(Perturbator):
    """``contractions``: some phrases are contracted or expanded (``do not`` <-> ``don't``), from nbeval's table."""

    description = "contractions: 'do not' becomes 'don't' and 'it's' becomes 'it is', from nbeval's shipped table"

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Contract or expand some of the phrases in nbeval's contractions table, keeping their first letter's case."""
        pattern, table = _contraction_table()
        found = list(pattern.finditer(text))
        k = min(len(found), how_many(len(WORD.findall(text)), intensity))
        chosen = rng.sample(found, k)
        return _edit(
            text,
            {
                m.span(): _match_case(table[" ".join(m.group().lower().replace("’", "'").split())], m.group()[:1])
                for m in chosen
            },
        )


# -- encodings ----------------------------------------------------------------------------------

#: What precedes an encoded prompt, by intensity: an explicit instruction, a hint, nothing.
_PREAMBLES = {
    "low": "The message below is {name}-encoded. Decode it and answer it.\n\n",
    "medium": "{name}:\n",
    "high": "",
}


class _Encoder(Perturbator):
    """Encodes the whole prompt; the intensity only shortens the instruction before it.

    At ``high`` the prompt is the encoding alone, the last line in every case.
    """

    encoding: str = ""

    def categories(self, intensity: str) -> list[str]:
        """Return the encoding's category, ``encoding:<name>``, which the encoding guardrail reads."""
        return [f"encoding:{self.encoding}"]

    def encode(self, text: str, intensity: str) -> str:
        raise NotImplementedError

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Return the intensity's instruction followed by the encoded prompt (an empty prompt stays empty)."""
        if not text:
            return text
        return _PREAMBLES[check_intensity(intensity)].format(name=self.encoding) + self.encode(text, intensity)


class Base64Perturbator(_Encoder):
    """``base64``: the whole prompt in base64 (with the instruction the intensity leaves before it)."""

    description = "the whole prompt in base64 (category encoding:base64, read by the encoding guardrail)"
    encoding = "base64"

    def encode(self, text: str, intensity: str) -> str:
        """``text`` as base64 of its UTF-8 bytes."""
        return base64.b64encode(text.encode("utf-8")).decode("ascii")


class Base16Perturbator(_Encoder):
    """``base16``: the whole prompt as hexadecimal text (with the instruction the intensity leaves before it)."""

    description = "the whole prompt in base16, i.e. hex (category encoding:base16, read by the encoding guardrail)"
    encoding = "base16"

    def encode(self, text: str, intensity: str) -> str:
        """``text`` as upper-case hexadecimal of its UTF-8 bytes."""
        return base64.b16encode(text.encode("utf-8")).decode("ascii")


#: Letters leetspeak replaces, by intensity (each adds to the one before); one digit per letter,
#: so the encoding can be read back.
LEET = {"low": {"a": "4", "e": "3", "o": "0"}, "medium": {"i": "1", "s": "5"}, "high": {"t": "7", "b": "8", "g": "9"}}


def leet_map(intensity: str) -> dict[str, str]:
    """Letter -> digit at ``intensity``."""
    out: dict[str, str] = {}
    for level in INTENSITIES[: INTENSITIES.index(check_intensity(intensity)) + 1]:
        out.update(LEET[level])
    return out


class LeetspeakPerturbator(_Encoder):
    """``leetspeak``: the whole prompt in leetspeak, with no instruction before it.

    More letters are swapped at higher intensity.
    """

    description = "the whole prompt in leetspeak (a→4, e→3, o→0; more letters at higher intensity), no preamble"
    encoding = "leetspeak"

    def encode(self, text: str, intensity: str) -> str:
        """``text`` with its letters replaced by the digits and signs of the intensity's leetspeak table."""
        table = leet_map(intensity)
        return "".join(table.get(ch.lower(), ch) for ch in text)

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Return the whole prompt in leetspeak, with no instruction before it."""
        return self.encode(text, intensity)


# -- prompt injection ---------------------------------------------------------------------------


class InjectionPerturbator(Perturbator):
    """``injection``: a prompt-injection instruction is appended to the prompt; stronger at higher intensity.

    Changes the meaning.
    """

    description = (
        "prompt-injection suffix: an instruction to ignore the prompt's rules is appended "
        "(milder at low, exfiltration attempts at high; changes the meaning)"
    )
    changes_meaning = True

    def categories(self, intensity: str) -> list[str]:
        """Return the category ``prompt_injection``."""
        return ["prompt_injection"]

    def apply(self, text: str, intensity: str, rng: random.Random) -> str:
        """Append one of the intensity's prompt-injection suffixes (an empty prompt stays as it is)."""
        suffixes: list[str] = tables()["injection_suffixes"][check_intensity(intensity)]
        return f"{text.rstrip()} {rng.choice(suffixes)}" if text.strip() else text


#: The built-ins in the order they list (the registry registers them on its first look-up).
BUILTIN_PERTURBATORS: tuple[type[Perturbator], ...] = (
    TyposPerturbator,
    CasePerturbator,
    WhitespacePerturbator,
    PunctuationPerturbator,
    WordOrderPerturbator,
    SynonymsPerturbator,
    ContractionsPerturbator,
    Base64Perturbator,
    Base16Perturbator,
    LeetspeakPerturbator,
    InjectionPerturbator,
)
