"""The built-in perturbators, one by one, with expectations written by hand."""

from __future__ import annotations

import base64
import difflib
import random
import re
from statistics import mean

import pytest

from nbeval.perturbation import INTENSITIES, get_perturbator, list_perturbators
from nbeval.perturbation.base import WORD, how_many, id_from_name

CORPUS = [
    "What is the capital of France, and why is Paris such a popular place for tourists to visit?",
    "Please explain how a bank loan works and what interest rate I should expect for a new car.",
    "It is late and I do not know where we are going; can you help me find the nearest train station?",
    "Summarize the safety policy: every employee must complete training once a year and report incidents.",
    "I'm sure it's fine, but don't forget to check the total price before you buy the tickets online.",
    "Describe the main difference between a virus and a bacterium in simple words for a young student.",
    "Which platform does the 8:15 train to Lyon leave from, and how long does the journey usually take?",
    "Give me three quick ideas for a healthy dinner that a child would enjoy and that is easy to make.",
]

BUILTIN_IDS = [
    "typos",
    "case",
    "whitespace",
    "punctuation",
    "word_order",
    "synonyms",
    "contractions",
    "base64",
    "base16",
    "leetspeak",
    "injection",
]
#: The perturbators whose amount of change grows with the intensity (the encoders encode the whole
#: prompt at every intensity; the injection's suffix is a different one, not a longer one).
GRADED = ["typos", "case", "whitespace", "punctuation", "word_order", "synonyms", "contractions", "leetspeak"]


def _apply(pid: str, text: str, intensity: str, seed: int = 0) -> str:
    return get_perturbator(pid).apply(text, intensity, random.Random(seed))


def _distance(a: str, b: str) -> float:
    """Share of characters changed (1 - difflib's similarity ratio)."""
    return 1 - difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def test_every_builtin_is_listed_with_its_id_name_and_meaning_flag() -> None:
    classes = {c.id: c for c in list_perturbators()}
    assert list(classes)[: len(BUILTIN_IDS)] == BUILTIN_IDS
    assert classes["typos"].name == "TyposPerturbator" and classes["word_order"].name == "WordOrderPerturbator"
    assert {i for i, c in classes.items() if c.changes_meaning} >= {"word_order", "injection"}
    assert not any(classes[i].changes_meaning for i in ("typos", "case", "synonyms", "contractions", "base64"))
    assert all(c.description for c in classes.values())


def test_names_and_ids_both_find_a_perturbator_in_any_case() -> None:
    assert type(get_perturbator("TyposPerturbator")) is type(get_perturbator("typos"))
    assert get_perturbator(" WORD_ORDER ").name == "WordOrderPerturbator"
    assert id_from_name("WordOrderPerturbator") == "word_order" and id_from_name("Base64Perturbator") == "base64"


def test_how_many_is_the_share_of_candidates_at_least_one() -> None:
    # 5% / 15% / 30% of 40 words, rounded; a short prompt still gets one change; none without candidates.
    assert [how_many(40, i) for i in INTENSITIES] == [2, 6, 12]
    assert [how_many(3, i) for i in INTENSITIES] == [1, 1, 1]
    assert how_many(0, "high") == 0


@pytest.mark.parametrize("pid", BUILTIN_IDS)
def test_same_seed_same_output_other_seeds_differ(pid: str) -> None:
    for text in CORPUS:
        assert _apply(pid, text, "medium", 7) == _apply(pid, text, "medium", 7)
    if pid in ("base64", "base16", "leetspeak"):  # encodings draw nothing
        return
    outputs = {tuple(_apply(pid, t, "low", seed) for t in CORPUS) for seed in range(5)}
    assert len(outputs) > 1


@pytest.mark.parametrize("pid", GRADED)
def test_higher_intensity_changes_more(pid: str) -> None:
    dist = {i: mean(_distance(t, _apply(pid, t, i, seed)) for t in CORPUS for seed in range(4)) for i in INTENSITIES}
    assert 0 < dist["low"] <= dist["medium"] <= dist["high"]
    assert dist["low"] < dist["high"]


def test_typos_are_keyboard_neighbours_swaps_or_drops() -> None:
    from nbeval.perturbation.builtin import QWERTY_NEIGHBOURS

    # by hand, from a QWERTY keyboard
    assert set(QWERTY_NEIGHBOURS["a"]) == set("qwsz")
    assert set(QWERTY_NEIGHBOURS["g"]) == set("fhtyvb")
    assert set(QWERTY_NEIGHBOURS["m"]) == set("njk")
    for seed in range(20):
        text = CORPUS[seed % len(CORPUS)]
        out = _apply("typos", text, "high", seed)
        old, new = WORD.findall(text), WORD.findall(out)
        assert len(old) == len(new)
        for a, b in zip(old, new, strict=True):
            if a == b:
                continue
            if len(b) == len(a) - 1:  # a drop
                assert any(a[:i] + a[i + 1 :] == b for i in range(len(a)))
                continue
            diff = [i for i in range(len(a)) if a[i] != b[i]]
            if len(diff) == 1:  # a neighbour
                assert b[diff[0]].lower() in QWERTY_NEIGHBOURS[a[diff[0]].lower()]
            else:  # a swap of two adjacent letters
                i = diff[0]
                assert diff == [i, i + 1] and a[i] == b[i + 1] and a[i + 1] == b[i]


def test_case_whitespace_and_punctuation_keep_the_words() -> None:
    for text in CORPUS:
        words = WORD.findall(text)
        assert [w.lower() for w in WORD.findall(_apply("case", text, "high"))] == [w.lower() for w in words]
        assert WORD.findall(_apply("whitespace", text, "high")) == words
        assert WORD.findall(_apply("punctuation", text, "high")) == words
        assert sorted(WORD.findall(_apply("word_order", text, "high"))) == sorted(words)
        assert re.sub(r"\s+", " ", _apply("whitespace", text, "high")).strip() == text


def test_synonyms_from_the_shipped_table_golden() -> None:
    # Checked by hand: each word replaced has a single synonym in tables.json (car -> automobile,
    # quickly -> rapidly, big -> large, correct -> right); low changes one word, high 30% of 8 = 2.
    assert (
        _apply("synonyms", "Please help me buy a big car quickly.", "low")
        == "Please help me buy a big automobile quickly."
    )
    assert (
        _apply("synonyms", "Please help me buy a big car quickly.", "high")
        == "Please help me buy a big automobile rapidly."
    )
    assert _apply("synonyms", "The answer is correct.", "high") == "The answer is right."
    # capitals are kept; a word the table does not know is left alone
    assert _apply("synonyms", "BIG", "high") == "LARGE"
    assert _apply("synonyms", "Big", "high") == "Large"
    assert _apply("synonyms", "Zebra", "high") == "Zebra"


def test_contractions_both_ways_golden() -> None:
    # 12 words -> high touches 4, more than the 3 phrases: every seed gives the same text.
    text = "It is late and I do not know where we are going."
    for seed in range(5):
        assert _apply("contractions", text, "high", seed) == "It's late and I don't know where we're going."
    assert _apply("contractions", "I'm sure it's fine, don't worry.", "high") == "I'm sure it is fine, do not worry."
    assert _apply("contractions", "You can’t be serious.", "high") == "You cannot be serious."
    assert _apply("contractions", "Hello there.", "high") == "Hello there."


@pytest.mark.parametrize("intensity", INTENSITIES)
def test_base64_and_base16_decode_back_to_the_prompt(intensity: str) -> None:
    for text in [*CORPUS, "Ünïcödé – 東京はどこ?"]:
        b64 = _apply("base64", text, intensity).splitlines()[-1]
        b16 = _apply("base16", text, intensity).splitlines()[-1]
        assert base64.b64decode(b64, validate=True).decode("utf-8") == text
        assert base64.b16decode(b16).decode("utf-8") == text
    assert _apply("base64", "hi", "high") == "aGk="  # by hand: 'h' 'i' = 0x68 0x69


def test_leetspeak_maps_back_to_the_prompt() -> None:
    back = {"4": "a", "3": "e", "0": "o", "1": "i", "5": "s", "7": "t", "8": "b", "9": "g"}
    for text in CORPUS:
        if any(ch.isdigit() for ch in text):
            continue
        for intensity in INTENSITIES:
            out = _apply("leetspeak", text, intensity)
            assert "".join(back.get(ch, ch) for ch in out).lower() == text.lower()
    assert _apply("leetspeak", "Leet speak", "low") == "L33t sp34k"
    assert _apply("leetspeak", "Leet speak", "high") == "L337 5p34k"


def test_injection_appends_a_shipped_suffix() -> None:
    from nbeval.perturbation.builtin import tables

    text = "What is the capital of France?"
    for intensity in INTENSITIES:
        out = _apply("injection", text, intensity)
        assert out.startswith(text + " ")
        assert out[len(text) + 1 :] in tables()["injection_suffixes"][intensity]
    assert "Ignore all previous instructions" in " ".join(tables()["injection_suffixes"]["medium"])
    assert get_perturbator("injection").categories("low") == ["prompt_injection"]


def test_tables_are_a_few_hundred_lower_case_entries() -> None:
    from nbeval.perturbation.builtin import tables

    t = tables()
    assert len(t["synonyms"]) >= 300 and len(t["contractions"]) >= 50
    assert all(k == k.lower() and v and all(isinstance(s, str) and s for s in v) for k, v in t["synonyms"].items())
