"""The faster text paths of issue 36 give exactly what the code before them gave.

Sentences (:func:`nbeval.data.text.split_sentences`) and step alignments are compared with the
code as it was (``before_36.py``) on thousands of generated texts and matrices built to hit every
rule: abbreviations, initials, acronyms, list markers, ellipses, quotes, CJK stops, colons, blank
and wrapped lines, odd white space, decoration lines. The cheap looks that let step extraction
skip a reading are checked against the reading itself, and the letter and white-space facts they
rest on are checked over every code point.
"""

from __future__ import annotations

import random
import re

import numpy as np
import pytest

from nbeval.data.text import split_sentences
from nbeval.evaluators.embedding import steps
from nbeval.resources import embedder as embedder_module

from . import before_36
from .conftest import FakeModel, fake_embedder, fake_vector

FRAGMENTS = [
    "The cat sat",
    "the dog ran",
    "Dr.",
    "Mr. Smith",
    "e.g.",
    "i.e.",
    "U.S.",
    "a.m.",
    "etc.",
    "Inc.",
    "et al.",
    "No. 5",
    "no. 5",
    "Fig. 2",
    "vs.",
    "J. K.",
    "180 C.",
    "3.14",
    "v1.2.3",
    "example.com",
    "ann@mail.org.",
    "...",
    "…",
    "?!",
    "!",
    "?",
    ".",
    "..",
    '"',
    "'",
    ")",
    "”",
    "»",
    "(",
    "“",
    "It",
    "The",
    "We",
    "however",
    "1.",
    "2)",
    "a.",
    "iv.",
    "-",
    "*",
    "•",
    ":",
    "Steps: 1. Open it. 2. Close it.",
    "これは本です。",
    "「はい。」と言った",
    "本当？",
    "你好！",
    "ما هذا؟",
    "यह है।",
    "---",
    "***",
    "===",
    "#",
    "## Title",
    "x",
    "Ünïcödé",
    "😀",
    "\ud800",
    "_",
]
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\n", "\n\n", " \n ", "\u00a0", "\u3000", "\r\n", "\u2028", "\x0c", ""]


def _text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 14)):
        parts.append(rng.choice(FRAGMENTS))
        parts.append(rng.choice(SPACES))
    return "".join(parts)


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [_text(rng) for _ in range(n)]


HAND_PICKED = [
    "",
    "   ",
    "One. Two.",
    "Heat it to 180 C. Then stir. Call Dr. Who at 5 p.m. Today.",
    "The U.S. The U.S. Senate. She moved to the U.S. It was hard.",
    "To service the unit:\n1. Open the panel.\n2. Check the fuse.\n\n3.\nClose it.",
    "a line that wraps\nonto the next one. And then\nEnds.",
    "Steps: 1. Do A. 2. Do B. Notes:  3) more",
    "He said 「はい。」と言った。次に行く。",
    "Wait... what? No… Yes. Well.. Okay.",
    "(a) first item\n(b) second item\n- bullet\n* star\n• dot",
    "---\n***\nReal text here.\n===",
]


@pytest.mark.parametrize("seed", range(4))
def test_sentences_as_before_on_generated_text(seed: int) -> None:
    for text in _texts(1500, seed) + HAND_PICKED:
        assert split_sentences(text) == before_36.split_sentences(text), repr(text)


def test_split_sentences_none_and_blank() -> None:
    assert split_sentences(None) == before_36.split_sentences(None) == []


def test_white_space_is_what_regex_calls_white_space() -> None:
    """``" ".join(s.split())`` stands for ``re.sub(r"\\s+", " ", s).strip()``: the same characters."""
    space = re.compile(r"\s")
    assert all(bool(space.match(chr(c))) == chr(c).isspace() for c in range(0x110000))


# -- steps ---------------------------------------------------------------------------------------

CUES = [
    "First",
    "first of all",
    "Firstly",
    "To begin with",
    "to start",
    "Initially",
    "Begin by",
    "start by",
    "Then",
    "Next",
    "after that",
    "Finally",
    "lastly",
    "Last of all",
    "last\n of\tall",
    "In the end",
    "in  the\nend",
    "To finish",
    "FİRST",
    "fırst",
    "ſtart by",
    "LAſTLY",
    "first-rate",
    "firsts",
    "startup",
    "weekend",
    "last spring",
]
STEP_BITS = [
    "open the panel",
    "check the fuse.",
    "close it",
    ", then",
    "; and then",
    ", finally",
    ",",
    ".",
    " ",
    "\n",
    "\n\n",
    "1.",
    "2.",
    "1)",
    "(2)",
    "Step 1:",
    "step 2 -",
    "step 1 -",
    "Step\n2 :",
    "STEP 3\t—",
    "١.",
    "٢.",
    "01.",
    "3.",
    "in 2023.",
    "- ",
    "**Step 1:**",
]


def _step_text(rng: random.Random) -> str:
    return " ".join(rng.choice(CUES if rng.random() < 0.3 else STEP_BITS) for _ in range(rng.randint(0, 12)))


def test_cheap_looks_never_skip_a_reading_that_finds_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(36)
    texts = [_step_text(rng) for _ in range(4000)] + _texts(1000, 7)
    fast = [steps.extract_steps(t) for t in texts]
    monkeypatch.setattr(steps, "_may_hold_strong_cue", lambda text: True)
    monkeypatch.setattr(steps, "_INLINE_HINT", re.compile(""))
    assert [steps.extract_steps(t) for t in texts] == fast
    assert sum(1 for s in fast if s) > 500  # the texts do hold procedures


def test_the_cue_look_folds_case_as_the_cue_pattern_does() -> None:
    """Every character IGNORECASE equates with an ASCII letter becomes that letter, and lower-casing
    makes no other character a word character (so a cue's word edges are where they were)."""
    letter = re.compile("[a-z]", re.IGNORECASE)
    any_literal = re.compile("|".join("abcdefghijklmnopqrstuvwxyz"), re.IGNORECASE)  # as _CUE's letters
    word = re.compile(r"\w")
    for c in map(chr, range(0x110000)):
        assert not any_literal.fullmatch(c) or letter.fullmatch(c), repr(c)
        if letter.fullmatch(c):
            folded = c.translate(steps._FOLD).lower()
            assert re.fullmatch(folded, c, re.IGNORECASE) and re.fullmatch("[a-z]", folded), repr(c)
        elif not word.match(c):
            assert not any(word.match(x) for x in c.lower()), repr(c)
        assert steps._is_word_char(c) == bool(word.match(c))


# -- alignment -----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_alignment_as_before(seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _ in range(300):
        n, m = int(rng.integers(0, 7)), int(rng.integers(0, 7))
        # few distinct values, some a hair apart, so that ties and the tolerance are exercised
        levels = np.array([0.2, 0.5, 0.5 + 4e-6, 0.5 + 2e-5, 0.7, 0.9, 0.9 - 3e-6, np.nan])
        sim = rng.choice(levels, size=(n, m))
        for cutoff in (0.5, 0.6):
            got, want = steps.align_steps(sim, cutoff), before_36.align_steps(sim, cutoff)
            assert str(got.ops) == str(want.ops) and got.cutoff == want.cutoff  # str: NaN == NaN


# -- the embedder's memory -----------------------------------------------------------------------


class _StampedModel(FakeModel):
    """A text encoded again gets another vector (as a text in another batch may): each call's own."""

    def encode(self, texts, *args, **kwargs):
        self.calls.append(list(texts))
        return np.stack([fake_vector(f"{t}#{len(self.calls)}", self.dim) for t in texts])


def test_memory_keeps_what_evicting_text_by_text_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The texts kept in memory, their order of use and their vectors are those of the per-text
    eviction it replaced (an evicted text is encoded again, in another batch: its last bits could
    differ, so which vector a text keeps matters)."""
    monkeypatch.setattr(embedder_module, "_MEMORY_ITEMS", 5)
    rng = random.Random(3)
    model = _StampedModel()
    emb = fake_embedder(model)
    kept: dict[str, np.ndarray] = {}
    seen: set[str] = set()
    encoded_again = 0
    for _ in range(300):
        texts = [rng.choice("abcdefghij") for _ in range(rng.randint(0, 8))]
        calls = len(model.calls)
        got = dict(zip(texts, emb.encode(texts), strict=True))
        fresh = set(model.calls[-1]) if len(model.calls) > calls else set()
        assert fresh == {t for t in texts if t not in kept}  # what memory held was not encoded again
        encoded_again += len(fresh & seen)  # evicted earlier, encoded again now
        seen |= fresh
        looked_up = dict(kept)
        for t in dict.fromkeys(texts):  # what the old code did, text by text, after the lookup
            kept.pop(t, None)
            kept[t] = looked_up[t] if t in looked_up else got[t]
            while len(kept) > 5:
                del kept[next(iter(kept))]
        assert list(emb._memory) == list(kept)
        assert all(np.array_equal(emb._memory[t], v) for t, v in kept.items())
        assert all(np.array_equal(got[t], v) for t, v in looked_up.items() if t in got)
    assert encoded_again > 100  # the cap was met often
