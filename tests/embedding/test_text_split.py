"""Sentence splitting on a table of tricky cases; every expected split is written by hand."""

from __future__ import annotations

import pytest

from nbeval.data.text import is_list_marker_line, split_sentences

CASES: list[tuple[str, str, list[str]]] = [
    ("empty", "", []),
    ("blank", "   \n\n  ", []),
    ("plain", "The cat sat. The dog ran.", ["The cat sat.", "The dog ran."]),
    ("title abbreviations", "Dr. Smith met Mr. Jones. They talked.", ["Dr. Smith met Mr. Jones.", "They talked."]),
    (
        "e.g. and i.e.",
        "Use a fruit, e.g. an apple, i.e. something sweet. Then eat it.",
        ["Use a fruit, e.g. an apple, i.e. something sweet.", "Then eat it."],
    ),
    (
        "e.g. before a capital",
        "Pick a city, e.g. Paris or Rome. Go there.",
        ["Pick a city, e.g. Paris or Rome.", "Go there."],
    ),
    ("U.S. mid-sentence", "The U.S. Senate voted today.", ["The U.S. Senate voted today."]),
    ("U.S. at the end", "She moved to the U.S. The move was hard.", ["She moved to the U.S.", "The move was hard."]),
    (
        "etc. mid and end",
        "Bring pens, paper, etc. to class. We need pens, paper, etc. The rest is provided.",
        ["Bring pens, paper, etc. to class.", "We need pens, paper, etc.", "The rest is provided."],
    ),
    ("Inc. at the end", "He works at Acme Inc. It makes anvils.", ["He works at Acme Inc.", "It makes anvils."]),
    ("vs.", "It was Spain vs. Italy. Spain won.", ["It was Spain vs. Italy.", "Spain won."]),
    (
        "decimals and money",
        "Pi is about 3.14. Revenue hit $1.5 million in 2023. Costs fell 2.5%.",
        ["Pi is about 3.14.", "Revenue hit $1.5 million in 2023.", "Costs fell 2.5%."],
    ),
    (
        "version numbers",
        "Install version 2.10.1 now. Python 3.11 is required.",
        ["Install version 2.10.1 now.", "Python 3.11 is required."],
    ),
    (
        "initials",
        "J. R. R. Tolkien wrote it. George R. R. Martin did not.",
        ["J. R. R. Tolkien wrote it.", "George R. R. Martin did not."],
    ),
    ("initial after a verb", "The book is by J. Smith. It sold well.", ["The book is by J. Smith.", "It sold well."]),
    ("unit letter after a number", "Heat it to 180 C. Then stir.", ["Heat it to 180 C.", "Then stir."]),
    ("ellipsis before lower case", "Well... maybe not. We will see.", ["Well... maybe not.", "We will see."]),
    ("ellipsis before capital", "He waited… Nobody came.", ["He waited…", "Nobody came."]),
    (
        "url and e-mail",
        "Write to ann.lee@mail.example.org. The site is https://docs.example.com/v1.2/index.html?q=a.b today.",
        ["Write to ann.lee@mail.example.org.", "The site is https://docs.example.com/v1.2/index.html?q=a.b today."],
    ),
    ("question and exclamation", "Is it safe? Yes! Go now?! Fine.", ["Is it safe?", "Yes!", "Go now?!", "Fine."]),
    (
        "quotes close the sentence",
        'She said "Run!" Then she ran. "Why?" he asked.',
        ['She said "Run!"', "Then she ran.", '"Why?" he asked.'],
    ),
    (
        "parenthesis closes the sentence",
        "It failed (see Fig. 2.) The fix came later.",
        ["It failed (see Fig. 2.)", "The fix came later."],
    ),
    (
        "numbered list lines",
        "1. Open the lid.\n2. Pour the water.\n10. Close it",
        ["1. Open the lid.", "2. Pour the water.", "10. Close it"],
    ),
    (
        "paren-numbered and lettered",
        "1) Boil water\n2) Add tea\na. Stir well\nb) Serve",
        ["1) Boil water", "2) Add tea", "a. Stir well", "b) Serve"],
    ),
    (
        "bullets",
        "- first item\n* second item\n• third item. It has two sentences.",
        ["- first item", "* second item", "• third item.", "It has two sentences."],
    ),
    (
        "marker alone on its line",
        "1.\nPreheat the oven.\n2.\nMix the flour.",
        ["1. Preheat the oven.", "2. Mix the flour."],
    ),
    (
        "inline numbered list after a colon",
        "To reset: 1. Unplug it. 2. Wait. 3. Plug it in.",
        ["To reset:", "1. Unplug it.", "2. Wait.", "3. Plug it in."],
    ),
    (
        "number at the end of a sentence",
        "He counted to 10. Then he stopped.",
        ["He counted to 10.", "Then he stopped."],
    ),
    ("blank line separates", "Heading without stop\n\nBody text here.", ["Heading without stop", "Body text here."]),
    ("newline separates", "Title Line\nAnother line", ["Title Line", "Another line"]),
    (
        "hard-wrapped prose rejoined",
        "The quick brown fox\njumps over the lazy dog.\nIt sleeps.",
        ["The quick brown fox jumps over the lazy dog.", "It sleeps."],
    ),
    ("chinese", "今天天气很好。我们去公园吧！你呢？", ["今天天气很好。", "我们去公园吧！", "你呢？"]),
    (
        "japanese with closing bracket",
        "彼は「はい。」と言った。それで終わり。",
        ["彼は「はい。」と言った。", "それで終わり。"],
    ),
    ("spanish", "¿Dónde está la estación? ¡Allí! Gracias.", ["¿Dónde está la estación?", "¡Allí!", "Gracias."]),
    ("german abbreviation-free", "Das ist gut. Wir gehen jetzt.", ["Das ist gut.", "Wir gehen jetzt."]),
    ("markdown rule dropped", "Intro.\n---\nOutro.", ["Intro.", "Outro."]),
    ("white space collapsed", "  Too   many    spaces.   Here.  ", ["Too many spaces.", "Here."]),
    ("no terminal punctuation", "just a fragment", ["just a fragment"]),
    ("No. before a number", "See No. 5 on the list. It is red.", ["See No. 5 on the list.", "It is red."]),
    (
        "et al.",
        "Smith et al. (2020) agree. So do Lee et al. Their data differ.",
        ["Smith et al. (2020) agree.", "So do Lee et al.", "Their data differ."],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in CASES], ids=[c[0] for c in CASES])
def test_split_table(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 25


def test_none_is_empty() -> None:
    assert split_sentences(None) == []


def test_list_marker_line() -> None:
    assert is_list_marker_line("3. Do it")
    assert is_list_marker_line("- item")
    assert not is_list_marker_line("3.14 is pi")
    assert not is_list_marker_line("Plain text")


def test_emoji_only_is_kept() -> None:
    assert split_sentences("👍") == ["👍"]


def test_no_punkt_download(monkeypatch: pytest.MonkeyPatch) -> None:
    """Splitting must not touch nltk (which would want punkt data)."""
    import sys

    monkeypatch.setitem(sys.modules, "nltk", None)  # importing it would now fail
    assert split_sentences("One. Two.") == ["One.", "Two."]
