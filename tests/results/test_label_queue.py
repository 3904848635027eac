"""The label queue (issue 32): the unlabelled rows, the ones the judge is least sure of first.

One small result of three test cases answered by three models, scored by a jury (three "models"
of one loopback server answering from a table), a scorer whose values sit at hand-picked distances
from its threshold, and a head-to-head judge whose verdicts flip with the order on some pairs.
Every expected order below is worked from those tables by hand.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.errors import NotFound
from nbeval.results.statistics.label_queue import QUEUE_COLUMNS, label_queue
from tests.support.fake_openai import FakeOpenAIServer, Recorded

CASES = ("c1", "c2", "c3")
MODELS = ("m1", "m2", "m3")
JURORS = ("alpha", "beta", "gamma")

#: Each juror's rating of a row: y = yes, n = no, ? = unreadable.
JURY = {
    ("c1", "m1"): "yyy",  # agree: 0
    ("c1", "m2"): "yyn",  # one of three outside the largest group: 1/3
    ("c1", "m3"): "ynn",  # 1/3
    ("c2", "m1"): "yn?",  # largest group 1 of 3: 2/3
    ("c2", "m2"): "nnn",  # 0
    ("c2", "m3"): "???",  # unrated: 1
    ("c3", "m1"): "yyy",  # 0
    ("c3", "m2"): "nny",  # 1/3, but labelled
    ("c3", "m3"): "yyy",  # 0
}

#: The scorer's value per row (threshold 0.5 on [0, 1]); closeness = 1 - |v - 0.5| / 0.5.
NEAR = {
    ("c1", "m1"): 0.875,  # 0.25
    ("c1", "m2"): 0.625,  # 0.75
    ("c1", "m3"): 0.125,  # 0.25
    ("c2", "m1"): 0.375,  # 0.75
    ("c2", "m2"): 0.5,  # 1.0
    ("c2", "m3"): 1.0,  # 0.0, but labelled
    ("c3", "m1"): 0.75,  # 0.5
    ("c3", "m2"): 0.25,  # 0.5
    ("c3", "m3"): None,  # the scorer raises: unrated
}

_ANSWER = re.compile(r"<(answer|answer_a|answer_b)>\nreply (c\d) (m\d)\n</\1>")


def _records() -> list[dict[str, Any]]:
    return [
        {
            "key": c,
            "model_key": m,
            "input": f"question {c}?",
            "expected_output": f"answer {c}",
            "actual_output": f"reply {c} {m}",
        }
        for c in CASES
        for m in MODELS
    ]


def _pairwise_winner(case: str, a: str, b: str) -> str | None:
    """The head-to-head judge: in c1 it always picks the first answer (every pair flips with the
    order); elsewhere it prefers the model with the smaller number either way, except in c3, where
    it picks the first answer between m1 and m3 and cannot decide m2 (shown first) against m3."""
    if case == "c1":
        return "A"
    if case == "c3" and {a, b} == {"m1", "m3"}:
        return "A"
    if case == "c3" and (a, b) == ("m2", "m3"):
        return None
    return "A" if a < b else "B"


def _reply(rec: Recorded) -> str:
    shown = {tag: (c, m) for tag, c, m in _ANSWER.findall(rec.last_content)}
    if rec.model == "referee":
        (case, a), (_, b) = shown["answer_a"], shown["answer_b"]
        winner = _pairwise_winner(case, a, b)
        return "I cannot decide." if winner is None else f'{{"rationale": "compared", "winner": "{winner}"}}'
    mark = JURY[shown["answer"]][JURORS.index(rec.model)]
    return {"y": "Rationale: right.\nRating: yes", "n": "Rationale: wrong.\nRating: no", "?": "Hmm."}[mark]


def _near(row: Any) -> float:
    value = NEAR[(row.key, row.model_key)]
    if value is None:
        raise ValueError("no value for this row")
    return value


@pytest.fixture
def result(openai_server: FakeOpenAIServer) -> Any:
    openai_server.reply = _reply

    def judge(name: str) -> dict[str, Any]:
        return {"model": name, "base_url": openai_server.url, "api_key": "sk-test-queue-000000"}

    near = nbeval.scorer(name="near")(_near)
    evaluators = [
        nbeval.evaluator("correctness", judge=[judge(j) for j in JURORS]),
        near.evaluator(),
        nbeval.evaluator("pairwise", judge=judge("referee")),
    ]
    res = nbeval.evaluate(_records(), evaluators, cache=False, progress=False, max_attempts=1)
    res.set_labels(
        [
            {"key": "c3", "model_key": "m2", "evaluator": "correctness", "label": "fail"},
            {"key": "c2", "model_key": "m3", "evaluator": "near", "label": "pass"},
            {"key": "c2", "model_key": "m1", "evaluator": "pairwise", "label": "better"},
        ]
    )
    return res


def _order(queue: pd.DataFrame) -> list[tuple[str, str]]:
    return list(zip(queue["key"], queue["model_key"], strict=True))


def test_a_jury_queue_puts_unrated_rows_then_juror_disagreement_first(result: Any) -> None:
    queue = result.label_queue("correctness")
    assert list(queue.columns) == QUEUE_COLUMNS
    assert _order(queue) == [
        ("c2", "m3"),  # no juror could be read
        ("c2", "m1"),  # y, n, ?: 2/3 outside the largest group
        ("c1", "m2"),  # 1/3, dataset order among equals
        ("c1", "m3"),
        ("c1", "m1"),  # the jurors agree: 0
        ("c2", "m2"),
        ("c3", "m1"),
        ("c3", "m3"),
    ]
    assert queue["uncertainty"].tolist() == pytest.approx([1, 2 / 3, 1 / 3, 1 / 3, 0, 0, 0, 0])
    why = dict(zip(_order(queue), queue["why"], strict=True))
    assert why[("c2", "m3")] == "the judge's reply could not be read"
    assert why[("c2", "m1")] == "the jurors disagree: 1 pass, 1 fail, 1 gave no verdict"
    assert why[("c1", "m2")] == "the jurors disagree: 2 pass, 1 fail"
    assert why[("c1", "m1")] == "the jurors agree: 3 pass"
    assert ("c3", "m2") not in why  # labelled already


def test_a_score_queue_puts_values_near_the_threshold_first(result: Any) -> None:
    queue = label_queue(result, "near")
    assert _order(queue) == [
        ("c3", "m3"),  # the scorer failed: unrated, first among the rows at 1
        ("c2", "m2"),  # on the threshold
        ("c1", "m2"),  # 0.125 from it: 0.75
        ("c2", "m1"),
        ("c3", "m1"),  # 0.25 from it: 0.5
        ("c3", "m2"),
        ("c1", "m1"),  # 0.375 from it: 0.25
        ("c1", "m3"),
    ]
    assert queue["uncertainty"].tolist() == [1.0, 1.0, 0.75, 0.75, 0.5, 0.5, 0.25, 0.25]
    why = dict(zip(_order(queue), queue["why"], strict=True))
    assert why[("c3", "m3")].startswith("no verdict: ") and "no value for this row" in why[("c3", "m3")]
    assert why[("c2", "m2")] == "value 0.5 is on the threshold 0.5"
    assert why[("c1", "m2")] == "value 0.625 is 0.125 above the threshold 0.5"
    assert why[("c2", "m1")] == "value 0.375 is 0.125 below the threshold 0.5"
    assert queue["value"].iloc[1] == 0.5


def test_a_head_to_head_queue_puts_order_flips_first(result: Any) -> None:
    # c1: every pair flips (1.0; each model wins one order of each pair: win rate 0.5, closeness 1).
    # c3: m3 flips against m1 and has an unreadable order against m2 (2 of 2 pairs: 1.0; it wins
    # (m3, m1) only of three readable verdicts: win rate 1/3, closeness 2/3); m2 has the unreadable
    # pair (1 of 2) and wins (m3, m2) only (1/3, closeness 2/3); m1 flips against m3 (1 of 2) and
    # wins three of four (closeness 1/2). c2 is consistent: 0, m2's win rate 0.5 first.
    queue = result.label_queue(nbeval.evaluator("pairwise"))
    assert _order(queue) == [
        ("c1", "m1"),
        ("c1", "m2"),
        ("c1", "m3"),
        ("c3", "m3"),
        ("c3", "m2"),
        ("c3", "m1"),
        ("c2", "m2"),
        ("c2", "m3"),
    ]
    assert queue["uncertainty"].tolist() == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.0, 0.0]
    why = dict(zip(_order(queue), queue["why"], strict=True))
    assert why[("c1", "m1")] == "the two orders disagree against m2, m3 (of 2 opponents)"
    assert why[("c3", "m1")] == "the two orders disagree against m3 (of 2 opponents)"
    assert why[("c3", "m2")] == "an order could not be read against m3 (of 2 opponents)"
    assert why[("c3", "m3")] == (
        "the two orders disagree against m1; an order could not be read against m2 (of 2 opponents)"
    )
    assert why[("c2", "m2")] == "both orders agree against every opponent (2)"


def test_an_unknown_evaluator_names_the_ones_there_are(result: Any) -> None:
    with pytest.raises(NotFound, match="correctness"):
        result.label_queue("nope")


def test_every_row_labelled_leaves_an_empty_queue(result: Any) -> None:
    result.set_labels([{"key": c, "model_key": m, "evaluator": "near", "label": "pass"} for c in CASES for m in MODELS])
    queue = result.label_queue("near")
    assert queue.empty and list(queue.columns) == QUEUE_COLUMNS


def test_a_saved_result_gives_the_same_queue(result: Any, tmp_path: Any) -> None:
    result.save(tmp_path / "run")
    loaded = nbeval.load_result(tmp_path / "run")
    for name in ("correctness", "near", "pairwise"):
        pd.testing.assert_frame_equal(loaded.label_queue(name), result.label_queue(name))
