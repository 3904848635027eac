"""score_mode="expected" on log-probabilities that cannot be probabilities (issue 43, point 5).

A server that writes a positive log-probability, or alternatives whose probabilities add up to
more than 1, has not sent probabilities: the row is left unrated (``bad_logprobs``) with the
reason, never valued from those numbers. The worked values below are computed by hand from the
numbers the fake server sends."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

import nbeval
from nbeval.evaluators.judges.expected import BAD_LOGPROBS
from tests.judges.helpers import cell, run
from tests.support.fake_openai import FakeOpenAIServer, Text, TokenLogprobs

ROW = {
    "key": "r1",
    "input": "When does the museum open?",
    "expected_output": "At 9:00 on weekdays.",
    "actual_output": "It opens at 9:00 on weekdays.",
    "context": ["The museum opens at 9:00 on weekdays."],
}
#: Ten spellings of yes at 0.9975 each and " no" at 0.525: probabilities adding up to 10.5, none above 1.
TEN_YESES = [
    (y, math.log(0.9975)) for y in (" yes", "yes", " Yes", "Yes", " YES", "YES", "yes.", " yes.", "Yes.", " Yes.")
]


def written_no(top: list[tuple[str, float]], lp: float = math.log(0.5)) -> Text:
    """ "Rating: no", the rating token " no" written with log-probability ``lp`` and ``top`` there."""
    toks: list[TokenLogprobs] = [("Rating", 0.0, [("Rating", 0.0)]), (":", 0.0, [(":", 0.0)]), (" no", lp, top)]
    return Text("Rating: no", logprobs=toks)


def expected_row(server: FakeOpenAIServer, judge: dict[str, Any], reply: Text) -> tuple[Any, Any, Any]:
    server.reply = reply
    res = run([ROW], [nbeval.evaluator("correctness", score_mode="expected")], judge)
    return cell(res, "r1", "correctness"), cell(res, "r1", "correctness", "label"), res


def test_alternatives_adding_up_to_10_5_leave_a_written_no_unrated(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    # the old reading: P(yes) = 9.975 / 10.5 = 0.95, a pass, from a written "no"
    top = [*TEN_YESES, (" no", math.log(0.525))]
    value, label, res = expected_row(openai_server, judge, written_no(top, lp=math.log(0.525)))
    assert value is None and label == BAD_LOGPROBS
    error = cell(res, "r1", "correctness", "error")
    assert "10.5" in error and "score_mode='sampled'" in error


def test_a_positive_logprob_leaves_the_row_unrated(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    value, label, res = expected_row(openai_server, judge, written_no([(" yes", 0.7), (" no", -3.0)], lp=-3.0))
    assert value is None and label == BAD_LOGPROBS
    assert "0.7" in cell(res, "r1", "correctness", "error")


def test_a_logprob_of_plus_1000_is_unrated_not_an_overflow(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    value, label, res = expected_row(openai_server, judge, written_no([(" yes", 1000.0), (" no", -1.0)]))
    assert value is None and label == BAD_LOGPROBS
    error = cell(res, "r1", "correctness", "error")
    assert "1000" in error and "Overflow" not in error


def test_infinity_is_unrated(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    value, label, _ = expected_row(openai_server, judge, written_no([(" yes", math.inf), (" no", -1.0)]))
    assert value is None and label == BAD_LOGPROBS


def test_a_written_token_listed_at_another_probability_is_unrated(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    # " no" written at 0.6 and listed at 0.1: one token, two probabilities (each list adds up to
    # less than 1); read from the list, the written "no" was a 0.6 / 0.7 = 0.86 pass
    top = [(" yes", math.log(0.6)), (" no", math.log(0.1))]
    value, label, res = expected_row(openai_server, judge, written_no(top, lp=math.log(0.6)))
    assert value is None and label == BAD_LOGPROBS
    assert "0.6" in cell(res, "r1", "correctness", "error")


def test_float_rounding_is_tolerated(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    # a logprob of 1e-9 above 0 (the sure token), and two alternatives adding up to 1.004: a server
    # that rounds its logprobs to two decimals writes such numbers
    top = [(" no", 1e-9), (" yes", math.log(0.004))]
    value, label, res = expected_row(openai_server, judge, written_no(top, lp=1e-9))
    p_no, p_yes = math.exp(1e-9), 0.004
    assert label == "no" and value == pytest.approx(p_yes / (p_no + p_yes))
    assert json.loads(cell(res, "r1", "correctness", "details"))["mass"] == pytest.approx(1.004)


def test_minus_infinity_is_probability_zero(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    value, label, _ = expected_row(openai_server, judge, written_no([(" no", -0.1), (" yes", -math.inf)], lp=-0.1))
    assert (value, label) == (0.0, "no")


def test_a_grade_with_impossible_alternatives_is_unrated(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    top = [("5", math.log(3.0)), ("1", math.log(0.9))]  # 3.9 in all
    openai_server.reply = Text("1", logprobs=[("1", math.log(0.9), top)])
    res = run([ROW], [nbeval.evaluator("answer_relevancy_score", score_mode="expected")], judge)
    assert cell(res, "r1", "score") is None and cell(res, "r1", "score", "label") == BAD_LOGPROBS
