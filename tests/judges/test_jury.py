"""Juries (issue 32): several judges per row, their verdicts combined, each kept.

The jurors are three "models" of one loopback server, each answering by a table written here by
hand; every expected aggregate below is worked from that table, not from the code under test.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.engine import Plan
from nbeval.errors import EvaluatorError
from nbeval.evaluators.jury import Jury, aggregate_scores, jury
from nbeval.evaluators.registry import evaluator
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Status, Text

#: Per row key, each juror's reply: y = yes, n = no, ? = unreadable, ! = the call fails.
VERDICTS = {
    "r1": "yyy",
    "r2": "yyn",
    "r3": "ynn",
    "r4": "nn?",
    "r5": "yn?",
    "r6": "y!n",
}
JURORS = ("alpha", "beta", "gamma")
#: Worked by hand from VERDICTS: the voters are the jurors with y or n.
EXPECTED = {
    #        majority unanimous any  mean
    "r1": (1.0, 1.0, 1.0, 1.0),
    "r2": (1.0, 0.0, 1.0, 2 / 3),
    "r3": (0.0, 0.0, 1.0, 1 / 3),
    "r4": (0.0, 0.0, 0.0, 0.0),
    "r5": (0.0, 0.0, 1.0, 0.5),  # an even split goes to the worse side
    "r6": (0.0, 0.0, 1.0, 0.5),
}


def _rows() -> list[dict[str, Any]]:
    return [
        {"key": k, "input": f"question {k}?", "expected_output": f"answer {k}", "actual_output": f"reply {k}"}
        for k in VERDICTS
    ]


def _reply(rec: Recorded) -> Any:
    key = next(k for k in VERDICTS if f"question {k}?" in rec.last_content)
    mark = VERDICTS[key][JURORS.index(rec.model)]
    if mark == "!":
        return Status(500)
    text = {"y": "Rationale: right.\nRating: yes", "n": "Rationale: wrong.\nRating: no", "?": "Hmm, hard to say."}[mark]
    return Text(text, usage={"prompt_tokens": 10, "completion_tokens": 2})


def _panel(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    return [{"model": name, "base_url": server.url, "api_key": "sk-test-jury-000000"} for name in JURORS]


def _run(server: FakeOpenAIServer, judge: Any) -> pd.DataFrame:
    server.reply = _reply
    result = nbeval.evaluate(_rows(), ["correctness"], judge=judge, cache=False, progress=False, max_attempts=1)
    return _indexed(result.scores)


def _indexed(scores: pd.DataFrame) -> pd.DataFrame:
    """The scores by row key, each row's details parsed from their JSON text."""
    scores = scores.set_index("key")
    scores["details"] = [json.loads(d) if isinstance(d, str) else d for d in scores["details"]]
    return scores


@pytest.mark.parametrize(("how", "column"), [("majority", 0), ("unanimous", 1), ("any", 2), ("mean", 3)])
def test_each_aggregate_matches_the_hand_worked_table(openai_server: FakeOpenAIServer, how: str, column: int) -> None:
    scores = _run(openai_server, nbeval.jury(_panel(openai_server), aggregate=how))
    for key, expected in EXPECTED.items():
        assert scores.loc[key, "value"] == pytest.approx(expected[column]), (key, how)


def test_every_juror_is_kept_and_failures_are_counted(openai_server: FakeOpenAIServer) -> None:
    scores = _run(openai_server, _panel(openai_server))  # a plain list is a majority jury
    r4 = scores.loc["r4", "details"]
    assert [j["juror"] for j in r4["jury"]] == list(JURORS)
    assert [j["label"] for j in r4["jury"]] == ["no", "no", "parse_failure"]
    assert (r4["jury_votes"], r4["jury_parse_failures"], r4["jury_failed"]) == (2, 1, 0)
    r6 = scores.loc["r6", "details"]
    assert (r6["jury_votes"], r6["jury_parse_failures"], r6["jury_failed"]) == (2, 0, 1)
    assert r6["jury"][1]["error"] and "500" in r6["jury"][1]["error"]
    assert scores.loc["r6", "value"] == 0.0  # the failed juror is out of the vote; yes and no split
    assert "[alpha] yes: right." in scores.loc["r1", "rationale"]
    assert scores.loc["r2", "label"] == "yes"
    # accounting: each juror's own calls and tokens, and their sum on the row
    r1 = scores.loc["r1", "details"]
    assert [j["details"]["judge"]["calls"] for j in r1["jury"]] == [1, 1, 1]
    assert r1["judge"]["calls"] == 3 and r1["judge"]["prompt_tokens"] == 30


def test_each_juror_is_asked_what_a_single_judge_is_asked(openai_server: FakeOpenAIServer) -> None:
    panel = _panel(openai_server)
    _run(openai_server, panel)
    asked = {(r.model, r.last_content) for r in openai_server.requests}
    openai_server.reset()
    _run(openai_server, panel[0])
    alone = [(r.messages, r.params) for r in openai_server.requests]
    assert len(asked) == 3 * len(VERDICTS)
    for name in JURORS:  # the same messages and parameters, juror by juror
        assert {c for m, c in asked if m == name} == {m[-1]["content"] for m, _ in alone}


def test_the_dry_run_counts_every_juror(openai_server: FakeOpenAIServer) -> None:
    plan = nbeval.evaluate(_rows(), ["correctness"], judge=_panel(openai_server), dry_run=True)
    assert isinstance(plan, Plan)
    assert plan.judge_calls == 3 * len(VERDICTS)
    assert openai_server.request_count == 0


def test_an_evaluator_takes_its_own_jury(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = _reply
    ev = evaluator("correctness", judge=jury(_panel(openai_server), "any", names=["a", "b", "c"]))
    result = nbeval.evaluate(_rows(), [ev], cache=False, progress=False, max_attempts=1)
    scores = _indexed(result.scores)
    assert scores.loc["r3", "value"] == 1.0
    assert [j["juror"] for j in scores.loc["r3", "details"]["jury"]] == ["a", "b", "c"]
    assert "sk-test-jury" not in repr(ev.params) and "sk-test-jury" not in str(result.meta)


def test_a_jury_needs_two_distinct_jurors_and_a_known_aggregate() -> None:
    with pytest.raises(EvaluatorError, match="at least two"):
        jury(["one"])
    with pytest.raises(EvaluatorError, match="unknown jury aggregate"):
        jury(["a", "b"], aggregate="vote")
    with pytest.raises(EvaluatorError, match="distinct name"):
        jury(["a", "b"], names=["x", "x"])
    assert jury(["m", "m"]).names == ("m", "m#2")


def test_a_case_level_judge_refuses_a_jury(openai_server: FakeOpenAIServer) -> None:
    rows = [{**r, "model_key": m} for r in _rows()[:1] for m in ("a", "b")]
    with pytest.raises(EvaluatorError, match="takes one judge, not a jury"):
        nbeval.evaluate(rows, ["pairwise"], judge=_panel(openai_server), progress=False)


def test_scores_combine_by_median_mean_and_direction() -> None:
    ev = evaluator("answer_relevancy_score", judge="unused")
    metric = ev.spec.primary.name
    scores = [nbeval.Score({metric: v}) for v in (0.2, 0.9, 0.5, 0.4)]
    panel = Jury(("a", "b", "c", "d"))
    assert aggregate_scores(ev, scores, panel).values[metric] == pytest.approx(0.45)  # median
    assert aggregate_scores(ev, scores, Jury(panel.jurors, "mean")).values[metric] == pytest.approx(0.5)
    assert aggregate_scores(ev, scores, Jury(panel.jurors, "unanimous")).values[metric] == 0.2
    assert aggregate_scores(ev, scores, Jury(panel.jurors, "any")).values[metric] == 0.9


def test_agreement_between_jurors_is_measured_on_their_verdicts(openai_server: FakeOpenAIServer) -> None:
    import krippendorff
    import numpy as np

    openai_server.reply = _reply
    result = nbeval.evaluate(
        _rows(), ["correctness"], judge=_panel(openai_server), cache=False, progress=False, max_attempts=1
    )
    table = result.jury_values("correctness").set_index("key")
    by_hand = np.array([[{"y": 1.0, "n": 0.0}.get(m, np.nan) for m in VERDICTS[k]] for k in VERDICTS])
    np.testing.assert_array_equal(table.loc[list(VERDICTS), list(JURORS)].to_numpy(), by_hand)
    # r2: one pair of three agrees (alpha, beta), two differ
    assert table.loc["r2", "disagreement"] == pytest.approx(2 / 3)
    found = result.jury_agreement("correctness", n_boot=200)
    assert found.level == "nominal"
    assert found.alpha == pytest.approx(krippendorff.alpha(reliability_data=by_hand.T, level_of_measurement="nominal"))
    assert found.jurors == JURORS
    with pytest.raises(EvaluatorError, match="not run with a jury"):
        nbeval.evaluate(_rows(), ["exact_match"], progress=False).jury_agreement("exact_match")
