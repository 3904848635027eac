"""Hand-worked cases: the judge's replies are scripted, the expected values counted by hand from
the replies (statements, verdicts, chunk order), as ragas's documentation defines each metric."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Any

import pandas as pd
import pytest

import nbeval
from tests.ragas.conftest import ToyEmbedder, judge_for, toy_vector
from tests.support.fake_openai import FakeOpenAIServer, Recorded

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROW: dict[str, Any] = {
    "key": "k",
    "model_key": "m",
    "input": "Tell me about Marie Curie.",
    "expected_output": "Marie Curie won two Nobel Prizes. She was born in Warsaw. She discovered polonium.",
    "actual_output": ("Marie Curie won two Nobel Prizes. She was born in Paris. She discovered radium. She liked tea."),
    "context": [
        "Curie was born in Warsaw.",
        "Curie won Nobel Prizes in physics and chemistry.",
        "Curie discovered polonium and radium.",
    ],
}


def scripted(**replies: Any) -> Any:
    """A server reply function: the n-th request for ragas's output model ``title`` gets the n-th
    item of ``replies[title]`` (a dict, sent as JSON, or a raw string)."""
    seen: dict[str, int] = defaultdict(int)

    def reply(rec: Recorded) -> str:
        title = re.findall(r'"title":\s*"(\w+)"', rec.messages[0]["content"])[-1]
        item = replies[title][seen[title]]
        seen[title] += 1
        return item if isinstance(item, str) else json.dumps(item)

    return reply


def _run(server: FakeOpenAIServer, evaluator: Any, row: dict[str, Any] = ROW) -> Any:
    result = nbeval.evaluate(
        [row], [evaluator], judge=judge_for(server), embedder=ToyEmbedder(), cache=False, progress=False
    )
    return result.scores.set_index("metric")


STATEMENTS = {
    "statements": [
        "Marie Curie won two Nobel Prizes.",
        "Marie Curie was born in Paris.",
        "Marie Curie discovered radium.",
        "Marie Curie liked tea.",
    ]
}


def test_faithfulness_is_the_supported_share_of_statements() -> None:
    verdicts = {
        "statements": [
            {"statement": s, "reason": r, "verdict": v}
            for s, r, v in [
                ("Marie Curie won two Nobel Prizes.", "chunk 2", 1),
                ("Marie Curie was born in Paris.", "Warsaw", 0),
                ("Marie Curie discovered radium.", "chunk 3", 1),
                ("Marie Curie liked tea.", "not said", 0),
            ]
        ]
    }
    with FakeOpenAIServer(scripted(StatementGeneratorOutput=[STATEMENTS], NLIStatementOutput=[verdicts])) as server:
        row = _run(server, "faithfulness").loc["faithfulness"]
        assert server.request_count == 2
    assert row["value"] == pytest.approx(2 / 4)  # 2 supported of 4 statements
    # the rationale shows what ragas saw: the statements and each verdict with its reason
    assert (
        "Marie Curie liked tea." in row["rationale"]
        and "✗ Marie Curie was born in Paris. (reason: Warsaw)" in row["rationale"]
    )
    assert json.loads(row["details"])["judge"]["calls"] == 2


def test_context_precision_is_the_average_precision_of_the_chunk_verdicts() -> None:
    # verdicts by rank: not useful, useful, useful. Precision@2 = 1/2, precision@3 = 2/3;
    # average over the useful ranks: (1/2 + 2/3) / 2 = 7/12
    chunks = [{"reason": "no", "verdict": 0}, {"reason": "yes", "verdict": 1}, {"reason": "yes", "verdict": 1}]
    with FakeOpenAIServer(scripted(ContextPrecisionOutput=chunks)) as server:
        row = _run(server, "context_precision").loc["context_precision"]
        assert server.request_count == 3  # one call per chunk
    assert row["value"] == pytest.approx(7 / 12, abs=1e-9)
    assert "chunk verdict" in row["rationale"] and "(3 of 3)" in row["rationale"]


def test_context_recall_is_the_attributed_share_of_expected_sentences() -> None:
    classified = {
        "classifications": [
            {"statement": "Marie Curie won two Nobel Prizes.", "reason": "chunk 2", "attributed": 1},
            {"statement": "She was born in Warsaw.", "reason": "chunk 1", "attributed": 1},
            {"statement": "She discovered polonium.", "reason": "not there", "attributed": 0},
        ]
    }
    with FakeOpenAIServer(scripted(ContextRecallOutput=[classified])) as server:
        row = _run(server, "context_recall").loc["context_recall"]
    assert row["value"] == pytest.approx(2 / 3)


def test_answer_correctness_weighs_factuality_f1_and_similarity() -> None:
    reference = {
        "statements": [
            "Marie Curie won two Nobel Prizes.",
            "Marie Curie was born in Warsaw.",
            "Marie Curie discovered polonium.",
        ]
    }
    sorted_ = {
        "TP": [{"statement": "Marie Curie won two Nobel Prizes.", "reason": "same"}],
        "FP": [
            {"statement": "Marie Curie was born in Paris.", "reason": "wrong"},
            {"statement": "Marie Curie liked tea.", "reason": "extra"},
        ],
        "FN": [{"statement": "Marie Curie discovered polonium.", "reason": "missing"}],
    }
    # TP=1, FP=2, FN=1: F1 = TP / (TP + (FP + FN) / 2) = 1 / 2.5 = 0.4
    f1 = 1 / (1 + (2 + 1) / 2)
    cosine = float(toy_vector(ROW["actual_output"]) @ toy_vector(ROW["expected_output"]))
    for weights, expected in (
        ([1.0, 0.0], f1),
        ([0.75, 0.25], 0.75 * f1 + 0.25 * cosine),
        ([0.5, 0.5], 0.5 * f1 + 0.5 * cosine),
    ):
        replies = scripted(StatementGeneratorOutput=[STATEMENTS, reference], ClassificationWithReason=[sorted_])
        with FakeOpenAIServer(replies) as server:
            row = _run(server, nbeval.evaluator("answer_correctness", weights=weights)).loc["answer_correctness"]
        assert row["value"] == pytest.approx(expected, abs=1e-9), weights
    assert "statements in the expected answer" in row["rationale"]
    assert "false negatives (only in the expected answer): 1" in row["rationale"]


def test_answer_relevancy_is_the_mean_cosine_of_the_generated_questions() -> None:
    questions = ["Who was Marie Curie?", "What did Marie Curie win?", "Where was Marie Curie born?"]
    replies = scripted(AnswerRelevanceOutput=[{"question": q, "noncommittal": 0} for q in questions])
    with FakeOpenAIServer(replies) as server:
        row = _run(server, "answer_relevancy").loc["answer_relevancy"]
        assert server.request_count == 3  # strictness 3: three separate samples of the same request
    q = toy_vector(ROW["input"])
    expected = sum(float(toy_vector(g) @ q) for g in questions) / 3
    assert row["value"] == pytest.approx(expected, abs=1e-9)
    for g in questions:
        assert g in row["rationale"]


def test_answer_relevancy_is_zero_when_every_answer_is_noncommittal() -> None:
    replies = scripted(AnswerRelevanceOutput=[{"question": "Who was she?", "noncommittal": 1}] * 2)
    with FakeOpenAIServer(replies) as server:
        row = _run(server, nbeval.evaluator("answer_relevancy", strictness=2)).loc["answer_relevancy"]
        assert server.request_count == 2
    assert row["value"] == 0.0 and "noncommittal: yes" in row["rationale"]


def test_ragas_is_the_harmonic_mean_and_names_a_missing_component() -> None:
    verdicts = {
        "statements": [
            {"statement": s, "reason": "", "verdict": v}
            for s, v in zip(STATEMENTS["statements"], [1, 1, 1, 0], strict=True)
        ]
    }
    questions = [{"question": "Tell me about Marie Curie.", "noncommittal": 0}] * 3
    chunks = [{"reason": "", "verdict": 1}, {"reason": "", "verdict": 0}, {"reason": "", "verdict": 1}]
    recall = {
        "classifications": [
            {"statement": "a", "reason": "", "attributed": 1},
            {"statement": "b", "reason": "", "attributed": 0},
        ]
    }
    replies = scripted(
        StatementGeneratorOutput=[STATEMENTS],
        NLIStatementOutput=[verdicts],
        AnswerRelevanceOutput=questions,
        ContextPrecisionOutput=chunks,
        ContextRecallOutput=[recall],
    )
    with FakeOpenAIServer(replies) as server:
        table = _run(server, "ragas")
    # faithfulness 3/4; relevancy: the generated question is the question itself, cosine 1;
    # precision: useful at ranks 1 and 3: (1/1 + 2/3) / 2 = 5/6; recall 1/2
    parts = {"faithfulness": 0.75, "answer_relevancy": 1.0, "context_precision": 5 / 6, "context_recall": 0.5}
    for name, v in parts.items():
        assert table.loc[name, "value"] == pytest.approx(v, abs=1e-9), name
    assert table.loc["ragas", "value"] == pytest.approx(4 / sum(1 / v for v in parts.values()), abs=1e-9)

    replies = scripted(
        StatementGeneratorOutput=[STATEMENTS],
        NLIStatementOutput=[verdicts],
        AnswerRelevanceOutput=questions,
        ContextPrecisionOutput=chunks,
        ContextRecallOutput=["no idea"] * 4,
    )
    with FakeOpenAIServer(replies) as server:
        table = _run(server, "ragas")
    assert pd.isna(table.loc["context_recall", "value"])  # missing, not 0
    assert table.loc["faithfulness", "value"] == pytest.approx(0.75)
    ragas = table.loc["ragas"]
    assert pd.isna(ragas["value"])
    assert "no ragas score: context_recall lacked a value" in ragas["error"]
    assert ragas["label"] == "parse_failure" and "no idea" in ragas["rationale"]


def test_answer_correctness_beta_weighs_recall_over_precision() -> None:
    reference = {"statements": ["a", "b"]}
    sorted_ = {
        "TP": [{"statement": "a", "reason": ""}],
        "FP": [{"statement": "x", "reason": ""}, {"statement": "y", "reason": ""}],
        "FN": [{"statement": "b", "reason": ""}],
    }
    # precision 1/3, recall 1/2; F-beta with beta = 2: 5 P R / (4 P + R) = (5/6) / (11/6) = 5/11
    replies = scripted(StatementGeneratorOutput=[STATEMENTS, reference], ClassificationWithReason=[sorted_])
    with FakeOpenAIServer(replies) as server:
        ev = nbeval.evaluator("answer_correctness", weights=[1.0, 0.0], beta=2.0)
        row = _run(server, ev).loc["answer_correctness"]
    assert row["value"] == pytest.approx(5 / 11, abs=1e-9)
