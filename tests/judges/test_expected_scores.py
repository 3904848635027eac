"""score_mode="expected": scores from the judge's log-probabilities, worked out by hand here, and
rows left unrated (never valued by the written rating) when they cannot be read."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat import HFChat
from nbeval.engine import Plan
from nbeval.errors import EvaluatorError
from nbeval.evaluators.judges.expected import (
    NO_LOGPROBS,
    NO_RATING_TOKEN,
    normalise_token,
    rating_token_index,
    verdict_offset,
)
from tests.judges.helpers import cell, judge_evaluator, run
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Text, TokenLogprobs

ROW = {
    "key": "r1",
    "input": "When does the museum open?",
    "expected_output": "At 9:00 on weekdays.",
    "actual_output": "It opens at 9:00 on weekdays.",
    "context": ["The museum opens at 9:00 on weekdays.", "Entry costs 12 euros."],
}

#: The alternatives at the rating token: " yes" and " Yes" both count as yes; " maybe" is no rating.
TOP = [(" yes", -0.3), (" no", -2.0), (" Yes", -3.0), (" maybe", -4.0)]
P_YES = (math.exp(-0.3) + math.exp(-3.0)) / (math.exp(-0.3) + math.exp(-2.0) + math.exp(-3.0))
MASS = math.exp(-0.3) + math.exp(-2.0) + math.exp(-3.0)


def tokens(*pieces: str, rating: str = " yes", top: list[tuple[str, float]] = TOP) -> list[TokenLogprobs]:
    """The reply's tokens: each piece sure (logprob 0, alone in its top list), then the rating
    token with ``top``; a piece equal to ``rating`` gets an uninformative top list of its own."""
    out: list[TokenLogprobs] = [(p, 0.0, [(p, 0.0)]) for p in pieces]
    lp = dict(top).get(rating, -0.3)
    return [*out, (rating, lp, top)]


def reply_with_logprobs(*pieces: str, rating: str = " yes", top: list[tuple[str, float]] = TOP) -> Text:
    toks = tokens(*pieces, rating=rating, top=top)
    return Text("".join(t for t, _, _ in toks), logprobs=toks)


#: "Rationale: yes, it matches.\nRating: yes": the rationale's own "yes" is not the rating.
DECOY = reply_with_logprobs("Rationale", ":", " yes", ",", " it", " matches", ".\n", "Rating", ":")


def test_expected_score_is_the_probability_of_yes_worked_by_hand(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    openai_server.reply = DECOY
    res = run([ROW], [nbeval.evaluator("correctness", score_mode="expected")], judge)
    assert cell(res, "r1", "correctness") == pytest.approx(P_YES)
    assert cell(res, "r1", "correctness", "label") == "yes"  # the written verdict stays the label
    assert cell(res, "r1", "correctness", "rationale") == "yes, it matches."
    details = json.loads(cell(res, "r1", "correctness", "details"))
    assert details["distribution"] == pytest.approx({"yes": P_YES, "no": 1 - P_YES})
    assert details["mass"] == pytest.approx(MASS)
    assert details["rating_token"] == {"index": 9, "token": " yes"}
    assert details["sampled"] == "yes" and details["score_mode"] == "expected"


def test_the_request_asks_for_logprobs_and_top_logprobs(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = DECOY
    # only the two likeliest alternatives come back: " yes" and " no"
    res = run([ROW], [nbeval.evaluator("safety", score_mode="expected", top_logprobs=2)], judge)
    params = openai_server.requests[0].params
    assert params["logprobs"] is True and params["top_logprobs"] == 2
    p_yes, p_no = math.exp(-0.3), math.exp(-2.0)
    assert cell(res, "r1", "safety") == pytest.approx(p_yes / (p_yes + p_no))
    assert json.loads(cell(res, "r1", "safety", "details"))["mass"] == pytest.approx(p_yes + p_no)


def test_sampled_mode_asks_for_no_logprobs(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = DECOY
    res = run([ROW], ["safety"], judge)
    assert "logprobs" not in openai_server.requests[0].params
    assert "top_logprobs" not in openai_server.requests[0].params
    assert cell(res, "r1", "safety") == 1.0


def test_a_written_no_is_valued_by_its_probability_of_yes(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    top = [(" no", -0.15), (" yes", -2.5), ("No", -3.5)]  # 0.973 in all: probabilities add up to at most 1
    openai_server.reply = reply_with_logprobs("Rationale", ": wrong", ".\n", "Rating", ":", rating=" no", top=top)
    res = run([ROW], [nbeval.evaluator("groundedness", score_mode="expected")], judge)
    yes, no = math.exp(-2.5), math.exp(-0.15) + math.exp(-3.5)
    assert cell(res, "r1", "groundedness") == pytest.approx(yes / (yes + no))
    assert cell(res, "r1", "groundedness", "label") == "no"


def test_a_server_that_returns_no_logprobs_leaves_the_row_unrated(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    openai_server.reply = "Rationale: Matches the reference.\nRating: yes"  # logprobs: null
    res = run([ROW], [nbeval.evaluator("correctness", score_mode="expected")], judge)
    assert openai_server.requests[0].params["logprobs"] is True
    assert cell(res, "r1", "correctness") is None  # not 1.0, the written rating
    assert cell(res, "r1", "correctness", "label") == NO_LOGPROBS
    error = cell(res, "r1", "correctness", "error")
    assert "the judge returned no log-probabilities" in error and "score_mode='sampled'" in error
    assert json.loads(cell(res, "r1", "correctness", "details"))["sampled"] == "yes"
    agg = res.aggregates.set_index("metric").loc["correctness"]
    assert agg["n"] == 0 and agg["N"] == 1


def test_a_rating_split_over_tokens_is_no_rating_token(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    # "yes" written as "y" + "es": no one token carries the rating, so no probability is read
    toks = tokens("Rating", ":", " y", rating="es", top=[("es", -0.1)])
    openai_server.reply = Text("Rating: yes", logprobs=toks)
    res = run([ROW], [nbeval.evaluator("safety", score_mode="expected")], judge)
    assert cell(res, "r1", "safety") is None
    assert cell(res, "r1", "safety", "label") == NO_RATING_TOKEN
    assert "not one token" in cell(res, "r1", "safety", "error")


def test_no_allowed_rating_at_the_rating_token_is_no_rating_token(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    # the written token's probability is OpenAI's "very unlikely" and nothing allowed is in its top list
    toks = tokens("Rating", ":", rating=" yes", top=[(" maybe", -0.1)])
    toks[-1] = (" yes", -9999.0, [(" maybe", -0.1)])
    openai_server.reply = Text("Rating: yes", logprobs=toks)
    res = run([ROW], [nbeval.evaluator("safety", score_mode="expected")], judge)
    assert cell(res, "r1", "safety") is None
    assert cell(res, "r1", "safety", "label") == NO_RATING_TOKEN


def test_a_parse_failure_is_still_a_parse_failure(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = Text("Hmm, hard to say.", logprobs=[("Hmm", -0.1, [("Hmm", -0.1)])])
    res = run([ROW], [nbeval.evaluator("safety", score_mode="expected")], judge)
    assert cell(res, "r1", "safety") is None and cell(res, "r1", "safety", "label") == "parse_failure"


def test_the_cache_keeps_the_logprobs(openai_server: FakeOpenAIServer, judge: dict[str, Any], tmp_path: Path) -> None:
    openai_server.reply = DECOY
    ev = nbeval.evaluator("correctness", score_mode="expected")
    first = run([ROW], [ev], judge, cache=tmp_path / "c.sqlite")
    second = run([ROW], [ev], judge, cache=tmp_path / "c.sqlite")
    assert openai_server.request_count == 1  # the second run asked nothing
    assert second.meta["usage"]["cached_calls"] == 1
    assert cell(second, "r1", "correctness") == pytest.approx(P_YES) == cell(first, "r1", "correctness")
    # a sampled run of the same row is another request (no logprobs asked): not served from it
    run([ROW], ["correctness"], judge, cache=tmp_path / "c.sqlite")
    assert openai_server.request_count == 2


def test_answer_relevancy_score_expected_grade(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    top = [("4", -0.25), ("3", -2.0), ("5", -3.0), ("four", -4.0)]  # 0.982 in all
    toks = [("4", -0.25, top), ("\n", 0.0, [("\n", 0.0)]), ("Good", 0.0, [("Good", 0.0)]), (" answer 3.", 0.0, [])]
    openai_server.reply = Text("4\nGood answer 3.", logprobs=toks)
    res = run([ROW], [nbeval.evaluator("answer_relevancy_score", score_mode="expected")], judge)
    p4, p3, p5 = math.exp(-0.25), math.exp(-2.0), math.exp(-3.0)
    assert cell(res, "r1", "score") == pytest.approx((4 * p4 + 3 * p3 + 5 * p5) / (p4 + p3 + p5))
    details = json.loads(cell(res, "r1", "score", "details"))
    assert details["distribution"]["0"] == 0.0 and details["rating_token"]["index"] == 0
    # a grade that is not whole has no one token to read
    openai_server.reply = Text("3.5\nFine.", logprobs=[("3", -0.1, [("3", -0.1)]), (".5\nFine.", 0.0, [])])
    res = run([ROW], [nbeval.evaluator("answer_relevancy_score", score_mode="expected")], judge)
    assert cell(res, "r1", "score") is None and cell(res, "r1", "score", "label") == NO_RATING_TOKEN


def test_chunk_relevance_precision_is_the_mean_probability(
    openai_server: FakeOpenAIServer, judge: dict[str, Any]
) -> None:
    sure_no = [(" no", -0.05), (" yes", -3.0)]

    def reply(rec: Recorded) -> Text:
        if "Entry costs" in rec.last_content:
            return reply_with_logprobs("Rationale", ": no", ".\n", "Rating", ":", rating=" no", top=sure_no)
        return DECOY

    openai_server.reply = reply
    res = run([ROW], [nbeval.evaluator("chunk_relevance", score_mode="expected")], judge)
    p_second = math.exp(-3.0) / (math.exp(-3.0) + math.exp(-0.05))
    assert cell(res, "r1", "precision") == pytest.approx((P_YES + p_second) / 2)
    assert cell(res, "r1", "precision", "label") == "1/2 relevant"
    details = json.loads(cell(res, "r1", "precision", "details"))
    assert details["probabilities"] == pytest.approx([P_YES, p_second])


def test_chunk_relevance_without_logprobs_is_unrated(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "Rating: yes"
    res = run([ROW], [nbeval.evaluator("chunk_relevance", score_mode="expected")], judge)
    assert cell(res, "r1", "precision") is None
    assert cell(res, "r1", "precision", "label") == NO_LOGPROBS


def test_named_guidelines_multiply_their_probabilities(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = DECOY
    row = {**ROW, "guidelines": {"tone": ["Be polite."], "length": ["One sentence."]}}
    res = run([row], [nbeval.evaluator("guideline_adherence", score_mode="expected")], judge)
    assert cell(res, "r1", "guideline_adherence/tone") == pytest.approx(P_YES)
    assert cell(res, "r1", "guideline_adherence") == pytest.approx(P_YES * P_YES)
    assert cell(res, "r1", "guideline_adherence", "label") == "yes"


def test_custom_judge_and_a_function_judge_returning_logprobs() -> None:
    seen: list[dict[str, Any]] = []

    def my_judge(messages: Any, **params: Any) -> dict[str, Any]:
        seen.append(params)
        toks = tokens("Rating", ":")
        return {"text": "Rating: yes", "logprobs": [{"token": t, "logprob": lp, "top": top} for t, lp, top in toks]}

    ev = nbeval.evaluator("custom_judge", instructions="Is it polite?", score_mode="expected", top_logprobs=5)
    res = nbeval.evaluate([ROW], [ev], judge=my_judge, progress=False, cache=False)
    assert seen[0]["logprobs"] is True and seen[0]["top_logprobs"] == 5
    assert cell(res, "r1", "custom_judge") == pytest.approx(P_YES)


def test_a_function_judge_without_logprobs_is_unrated() -> None:
    res = nbeval.evaluate(
        [ROW],
        [nbeval.evaluator("relevance_to_query", score_mode="expected")],
        judge=lambda prompt: "Rating: yes",
        progress=False,
        cache=False,
    )
    assert cell(res, "r1", "relevance_to_query") is None
    assert cell(res, "r1", "relevance_to_query", "label") == NO_LOGPROBS


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"score_mode": "probable"}, "score_mode must be 'sampled' or 'expected'"),
        ({"score_mode": "expected", "top_logprobs": 0}, "top_logprobs must be a whole number from 1 to 20"),
        ({"score_mode": "expected", "top_logprobs": 21}, "top_logprobs"),
        ({"top_logprobs": True}, "top_logprobs"),
    ],
)
def test_bad_settings_are_refused(params: dict[str, Any], problem: str) -> None:
    with pytest.raises(EvaluatorError, match=problem):
        nbeval.evaluator("correctness", **params)


def test_which_judges_take_a_score_mode() -> None:
    takes = ["correctness", "relevance_to_query", "groundedness", "safety", "context_sufficiency"]
    takes += ["guideline_adherence", "chunk_relevance", "answer_relevancy_score"]
    for id in takes:
        assert judge_evaluator(id, score_mode="expected").judge_params["logprobs"] is True
    ev = judge_evaluator("custom_judge", instructions="x", score_mode="expected", judge_params={"top_logprobs": 3})
    assert ev.judge_params["top_logprobs"] == 20  # the evaluator's own setting wins
    for id in ("fact_check", "context_relevancy"):
        with pytest.raises(EvaluatorError, match="no parameter 'score_mode'"):
            nbeval.evaluator(id, score_mode="expected")


def test_dry_run_says_what_is_known_about_logprobs(
    openai_server: FakeOpenAIServer, judge: dict[str, Any], tmp_path: Path
) -> None:
    evs = [nbeval.evaluator("safety", score_mode="expected"), "correctness"]
    plan = nbeval.evaluate([ROW], evs, judge=judge, dry_run=True, cache=False)
    assert isinstance(plan, Plan) and openai_server.request_count == 0
    assert list(plan.logprobs) == ["safety"]  # correctness is sampled: nothing to say
    assert plan.logprobs["safety"].startswith("asked for:") and "no_logprobs" in plan.logprobs["safety"]
    assert "safety (score_mode='expected'): asked for" in str(plan)
    function = nbeval.evaluate(
        [ROW], evs[:1], judge=lambda prompt: "Rating: yes", dry_run=True, cache=False, progress=False
    )
    assert isinstance(function, Plan) and function.logprobs["safety"].startswith("unknown:")
    # a local model is not loaded to say so: the path need not even exist
    local = nbeval.evaluate([ROW], evs[:1], judge=HFChat(tmp_path / "no-model"), dry_run=True, cache=False)
    assert isinstance(local, Plan) and local.logprobs["safety"].startswith("yes:")
    assert "logits" in local.logprobs["safety"]


# -- finding the rating token ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "word", "offset"),
    [
        ("Rationale: yes, it matches.\nRating: yes", "yes", 36),
        ('{"rationale": "yes indeed", "rating": "no"}', "no", 39),
        ("**Rating:** no", "no", 12),
        ("Yes. The answer is right.", "yes", 0),
        ("I think the answer is no.", "no", 22),
        ("4\nAbout 4 minutes, fine.", "4", 0),
        ("Score: 4/5 since 4 is good", "4", 7),
        ("Rating: maybe", "yes", None),
    ],
)
def test_verdict_offset(text: str, word: str, offset: int | None) -> None:
    assert verdict_offset(text, word) == offset


def test_rating_token_index_when_token_texts_differ_from_the_text() -> None:
    # token texts with BPE markers: counted by occurrence instead of by character
    toks = ["Rationale", ":", "Ġyes", ",", "Ġfine", ".", "Ċ", "Rating", ":", "Ġyes"]
    text = "Rationale: yes, fine.\nRating: yes"
    assert rating_token_index(toks, text, "yes") == 9
    assert normalise_token("Ġyes") == normalise_token(" Yes.") == "yes"
