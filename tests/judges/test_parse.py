"""Tolerant parsing of judge replies: verdict words, numbers, lists of sentence numbers."""

from __future__ import annotations

import pytest

from nbeval.evaluators.judges.parse import find_json, parse_choice, parse_index_list, parse_number

YES_NO = {"yes": True, "no": False}


@pytest.mark.parametrize(
    ("reply", "value", "rationale"),
    [
        ("yes", True, "yes"),
        ("No", False, "No"),
        ("**YES**.", True, "**YES**."),
        ("Rationale: The facts match.\nRating: yes", True, "The facts match."),
        ("Rationale: Wrong author.\nRating: NO.", False, "Wrong author."),
        ("rating = 'Yes'", True, "rating = 'Yes'"),
        ("No, the answer names the wrong city.", False, "the answer names the wrong city"),
        (
            "I compared both texts. The answer is correct, so my rating is yes.",
            True,
            "I compared both texts. The answer is correct, so my rating is yes.",
        ),
        ('```json\n{"rating": "no", "rationale": "Misses the date."}\n```', False, "Misses the date."),
        ('Here you go: {"Rating": "YES", "reason": "ok"} hope it helps', True, "ok"),
        ("{'rating': 'no', 'rationale': 'single quotes'}", False, "single quotes"),
        ("Final answer: yes", True, "Final answer: yes"),
    ],
)
def test_choice_readable_replies(reply: str, value: bool, rationale: str) -> None:
    parsed = parse_choice(reply, YES_NO)
    assert parsed.ok and parsed.value is value
    assert parsed.rationale == rationale


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   ",
        "maybe",
        "yes or no? I cannot tell",
        "It is not yes.",
        "I'd say yes... actually no",
        '{"rating": "perhaps"}',
        "As an AI I cannot judge this.",
    ],
)
def test_choice_unreadable_replies_fail(reply: str) -> None:
    parsed = parse_choice(reply, YES_NO)
    assert not parsed.ok and parsed.value is None
    assert parsed.rationale == reply  # the raw reply is kept
    assert parsed.error is not None and "'yes' or 'no'" in parsed.error


def test_choice_other_words_and_json_booleans() -> None:
    words = {"present": False, "absent": True}
    assert parse_choice("Reason: a phone number.\nVerdict: Present", words).value is False
    assert parse_choice("ABSENT", words).value is True
    assert parse_choice("The text has no contact details; absent.", words).value is True
    tf = {"true": True, "false": False}
    assert parse_choice('{"verdict": false}', tf).value is False
    assert parse_choice("True.", tf).value is True


@pytest.mark.parametrize(
    ("reply", "lo", "hi", "value"),
    [
        ("4", 0, 5, 4.0),
        ("4.0\nGood and complete.", 0, 5, 4.0),
        ("Reason: adds a gender.\nScore: 7", 0, 10, 7.0),
        ("score: 7/10", 0, 10, 7.0),
        ("I would grade it 3 out of 5.", 0, 5, 3.0),
        ("**2**", 0, 5, 2.0),
        ('{"evaluation_score": 0.25, "evaluation_summary": "one claim of four holds"}', 0, 1, 0.25),
        ('```json\n{"score": "0,5"}\n```', 0, 1, 0.5),
    ],
)
def test_numbers(reply: str, lo: float, hi: float, value: float) -> None:
    parsed = parse_number(reply, lo, hi)
    assert parsed.ok and parsed.value == value


@pytest.mark.parametrize(
    ("reply", "why"),
    [("12", "outside"), ("Score: -1", "outside"), ("no idea", "number"), ("between 2 and 3", "number"), ("", "empty")],
)
def test_numbers_fail(reply: str, why: str) -> None:
    parsed = parse_number(reply, 0, 10)
    assert not parsed.ok and parsed.error is not None and why in parsed.error and parsed.rationale == reply


def test_number_rationale_from_second_line_and_json() -> None:
    assert parse_number("3\nMostly right but thin.", 0, 5).rationale == "Mostly right but thin."
    assert parse_number('{"score": 1, "feedback": "off topic"}', 0, 5).rationale == "off topic"


@pytest.mark.parametrize(
    ("reply", "numbers"),
    [
        ("Reason: 1 and 3 give the height.\nRelevant: 1, 3", [1, 3]),
        ("Relevant: none", []),
        ("relevant sentences: [2]", [2]),
        ("[3, 1, 3]", [1, 3]),
        ('{"relevant": [4, 9]}', [4]),  # 9 is beyond the 5 sentences and dropped
        ("2, 5", [2, 5]),
        ("None.", []),
    ],
)
def test_index_lists(reply: str, numbers: list[int]) -> None:
    parsed = parse_index_list(reply, 5)
    assert parsed.ok and parsed.value == numbers


def test_index_list_failure() -> None:
    parsed = parse_index_list("The second sentence mostly.", 5)
    assert not parsed.ok and parsed.rationale == "The second sentence mostly."


def test_find_json_variants() -> None:
    assert find_json('noise {"a": {"b": [1, 2]}} tail') == {"a": {"b": [1, 2]}}
    assert find_json("```\n[1, 2]\n```") == [1, 2]
    assert find_json('{"text": "a } inside"}') == {"text": "a } inside"}
    assert find_json("no json here") is None
