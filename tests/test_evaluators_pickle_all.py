"""Every registered evaluator pickles after it has scored, and its copy scores the same (issue 35, point 8).

tests/test_evaluators_pickle.py covers the deterministic and embedding families; this file covers
the rest: the judge family against the fake OpenAI-compatible server on 127.0.0.1, the RAGAS
family with the stand-in judge and the toy embedder of tests/ragas, and the local-model family
with the tiny models tests/models builds (random-weight classifiers on the packaged MiniLM, a
2-layer GPT-2 with a tokenizer trained in the test). Each evaluator scores through
``nbeval.evaluate``, goes through ``pickle.dumps``/``loads``, and the copy scores again (the reply
cache off, the local-model runners dropped, so the copy does the work itself).

``test_every_registered_evaluator_is_covered`` fails when an evaluator is added to the catalogue
without a case here (or in tests/test_evaluators_pickle.py).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.evaluators import registry
from tests.support.fake_openai import FakeOpenAIServer
from tests.test_evaluators_pickle import OFFLINE

COLUMNS = ["key", "model_key", "evaluator", "metric", "value", "passed", "label", "rationale", "error", "skipped"]

#: Evaluators that cannot score offline, with the reason. None today: every built-in is covered.
UNAVAILABLE: dict[str, str] = {}

# -- the judge family ---------------------------------------------------------------------------

JUDGE_ROW = {
    "key": "r1",
    "model_key": "m",
    "input": "When does the museum open?",
    "expected_output": "At 9:00 on weekdays.",
    "actual_output": "It opens at 9:00 on weekdays.",
    "context": ["The museum opens at 9:00 on weekdays.", "Entry costs 12 euros."],
}
RATING = "Rationale: It gives the time.\nRating: yes"

#: id -> (parameters, the judge's reply): a reply each evaluator reads as a verdict, not a parse failure.
JUDGES: dict[str, tuple[dict[str, Any], str]] = {
    "contact_information": ({}, "Reason: Only a time.\nVerdict: absent"),
    "language_mismatch": ({}, "Reason: Both English.\nVerdict: same"),
    "sexism": ({}, "Reason: Neutral.\nVerdict: no"),
    "stereotypes": ({}, "Reason: Nothing added.\nScore: 0"),
    "summarization_judge": ({}, "Reason: Complete and short.\nVerdict: good"),
    "byop": ({"prompt": "Does {actual_output} answer {input}? Say true or false."}, "true"),
    "fact_check": ({}, '```json\n{"answer": "pass", "evaluation_score": 0.9, "evaluation_summary": "Right."}\n```'),
    "context_relevancy": ({}, "Reason: 1 gives the hours.\nRelevant: 1"),
    "correctness": ({}, RATING),
    "relevance_to_query": ({}, RATING),
    "groundedness": ({}, RATING),
    "safety": ({}, RATING),
    "context_sufficiency": ({}, RATING),
    "guideline_adherence": ({"global_guidelines": ["Answer in one sentence."]}, RATING),
    "chunk_relevance": ({}, RATING),
    "custom_judge": ({"instructions": "Rate yes when the answer gives a concrete time."}, RATING),
    "answer_relevancy_score": ({}, "4\nRight and to the point."),
    "pipeline": ({"prompt": "From 1 to 5, how relevant is {actual_output} to {input}?"}, "Score: 4"),
    "pairwise": ({}, '{"rationale": "A gives the days too.", "winner": "A"}'),
    "conversation_relevancy": ({}, '{"reason": "It gives the hours asked for.", "verdict": "yes"}'),
    "knowledge_retention": ({}, '{"turns": [{"message": 5, "reason": "Nothing forgotten.", "verdict": "yes"}]}'),
    "role_adherence": ({}, '{"turns": [{"message": 5, "reason": "A help desk answer.", "verdict": "yes"}]}'),
    "conversation_completeness": (
        {},
        '{"intentions": [{"intention": "opening hours", "reason": "Given.", "met": "yes"}]}',
    ),
    "trajectory_judge": ({}, '{"reason": "One fitting call, read right.", "verdict": "yes", "failed_step": null}'),
}
#: A conversation with a tool call, for the judges that read one (its one assistant reply is message 5).
AGENT_ROW = {
    "key": "a1",
    "model_key": "m",
    "messages": [
        {"role": "system", "content": "You are the museum's help desk."},
        {"role": "user", "content": "When does the museum open?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "opening_hours", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "9:00-17:00 on weekdays"},
        {"role": "assistant", "content": "It opens at 9:00 on weekdays."},
    ],
}
#: Judges whose rows are not JUDGE_ROW: case-level judges compare models (a second model's answer to
#: JUDGE_ROW's case); the conversation and trajectory judges read a conversation.
JUDGE_ROWS: dict[str, list[dict[str, Any]]] = {
    "pairwise": [JUDGE_ROW, {**JUDGE_ROW, "model_key": "m2", "actual_output": "9 am."}],
    **{
        id: [AGENT_ROW]
        for id in (
            "conversation_relevancy",
            "knowledge_retention",
            "role_adherence",
            "conversation_completeness",
            "trajectory_judge",
        )
    },
}

RAGAS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "answer_correctness", "ragas"]
#: ragas's agent metrics (the agents family), on a conversation with a tool call, with the stand-in judge.
RAGAS_AGENTS = ["tool_call_accuracy", "tool_call_f1", "agent_goal_accuracy", "topic_adherence"]
RAGAS_AGENT_ROW = {
    "key": "g1",
    "model_key": "m",
    "messages": [
        {"role": "user", "content": "What is the weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "18 degrees and sunny"},
        {"role": "assistant", "content": "The weather in Paris is 18 degrees and sunny."},
    ],
    "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
    "reference_topics": ["weather"],
    "expected_output": "The user learns the weather in Paris.",
}

MODELS = [
    "toxicity",
    "fairness_bias",
    "hallucination",
    "summac",
    "perplexity",
    "gptscore_summarization_ref",
    "gptscore_summarization_noref",
    "gptscore_translation",
    "gptscore_qa",
]


def _table(result: Any) -> pd.DataFrame:
    return result.scores[COLUMNS].reset_index(drop=True)


def _assert_scored(table: pd.DataFrame) -> None:
    assert len(table) > 0
    assert table["error"].isna().all(), table[["metric", "error"]].dropna().to_dict("records")
    assert not table["skipped"].astype(bool).any(), "a row was skipped, so nothing was scored"
    assert table["value"].notna().any(), "no score has a value"


def _round_trip(ev: Any, score: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``score(evaluator)`` with ``ev``, then with its pickled copy; both tables."""
    first = _table(score(ev))
    _assert_scored(first)
    copy = pickle.loads(pickle.dumps(ev))
    assert copy is not ev
    again = _table(score(copy))
    return first, again


def test_every_registered_evaluator_is_covered() -> None:
    cases = [*OFFLINE, *JUDGES, *RAGAS, *RAGAS_AGENTS, *MODELS, *UNAVAILABLE]
    assert len(cases) == len(set(cases)), "an evaluator has two cases"
    # every built-in evaluator in the catalogue, and any registered since (plugins, tests' own stay out)
    builtin = set(registry._builtin_specs())
    assert set(cases) == builtin, {"not covered": sorted(builtin - set(cases)), "unknown": sorted(set(cases) - builtin)}
    assert set(OFFLINE) <= {s.id for s in nbeval.list_evaluators()}
    for id in UNAVAILABLE:  # the list of exceptions is exact: each really is in the catalogue
        assert id in builtin and UNAVAILABLE[id]


@pytest.mark.parametrize("evaluator_id", sorted(JUDGES))
def test_a_used_judge_evaluator_pickles_and_its_copy_scores_the_same(
    openai_server: FakeOpenAIServer, evaluator_id: str
) -> None:
    params, reply = JUDGES[evaluator_id]
    openai_server.reply = reply
    judge = {"model": "judge-model", "base_url": openai_server.url, "api_key": "sk-judge-test-key-123456"}

    def score(ev: Any) -> Any:
        rows = JUDGE_ROWS.get(evaluator_id, [JUDGE_ROW])
        return nbeval.evaluate(rows, [ev], judge=judge, cache=False, max_attempts=1, progress=False)

    ev = nbeval.evaluator(evaluator_id, **params)
    first = _table(score(ev))
    _assert_scored(first)
    calls = openai_server.request_count
    assert calls > 0
    copy = pickle.loads(pickle.dumps(ev))
    again = _table(score(copy))
    assert openai_server.request_count == 2 * calls, "the copy asked the judge as the original did"
    pd.testing.assert_frame_equal(first, again)


def _length_ratio(actual_output: str, expected_output: str) -> tuple[float, str]:
    return len(actual_output) / len(expected_output), "length ratio"


def test_a_used_pipeline_with_a_function_pickles() -> None:
    ev = nbeval.evaluator("pipeline", fn=_length_ratio)
    first, again = _round_trip(ev, lambda e: nbeval.evaluate([JUDGE_ROW], [e], progress=False))
    assert first["value"].iloc[0] == pytest.approx(len(JUDGE_ROW["actual_output"]) / len(JUDGE_ROW["expected_output"]))
    pd.testing.assert_frame_equal(first, again)


# -- the RAGAS family ---------------------------------------------------------------------------


@pytest.fixture
def ragas_server() -> Iterator[FakeOpenAIServer]:
    pytest.importorskip("ragas")
    from tests.ragas.conftest import standin_server_reply

    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        yield server


@pytest.mark.parametrize("evaluator_id", RAGAS)
def test_a_used_ragas_evaluator_pickles_and_its_copy_scores_the_same(
    ragas_server: FakeOpenAIServer, evaluator_id: str
) -> None:
    from tests.ragas.conftest import ROWS, ToyEmbedder, judge_for

    def score(ev: Any) -> Any:
        return nbeval.evaluate(
            ROWS[:1], [ev], judge=judge_for(ragas_server), embedder=ToyEmbedder(), cache=False, progress=False
        )

    ev = nbeval.evaluator(evaluator_id)
    first = _table(score(ev))
    _assert_scored(first)
    calls = ragas_server.request_count
    assert calls > 0
    copy = pickle.loads(pickle.dumps(ev))
    again = _table(score(copy))
    assert ragas_server.request_count == 2 * calls
    pd.testing.assert_frame_equal(first, again)


@pytest.mark.parametrize("evaluator_id", RAGAS_AGENTS)
def test_a_used_ragas_agent_evaluator_pickles_and_its_copy_scores_the_same(
    ragas_server: FakeOpenAIServer, evaluator_id: str
) -> None:
    from tests.ragas.conftest import judge_for

    def score(ev: Any) -> Any:
        return nbeval.evaluate([RAGAS_AGENT_ROW], [ev], judge=judge_for(ragas_server), cache=False, progress=False)

    ev = nbeval.evaluator(evaluator_id)
    first = _table(score(ev))
    _assert_scored(first)
    calls = ragas_server.request_count
    assert (calls > 0) == ev.spec.needs_judge  # the tool-call metrics ask no judge
    copy = pickle.loads(pickle.dumps(ev))
    again = _table(score(copy))
    assert ragas_server.request_count == 2 * calls
    pd.testing.assert_frame_equal(first, again)


# -- the local-model family ---------------------------------------------------------------------

MODEL_ROWS = [
    {
        "key": "r1",
        "model_key": "m",
        "input": "Paris is the capital of France. It lies on the Seine.",
        "expected_output": "Paris is the capital of France.",
        "actual_output": "Paris, on the Seine, is the French capital. It has no museums.",
        "context": ["Paris is the capital of France.", "It lies on the Seine river."],
    }
]


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("tokenizers")
    from tests.models.classifier_builders import JIGSAW_CLASSES, NLI_LABELS, build_classifier
    from tests.models.lm_builders import build_tiny_causal_lm

    root = tmp_path_factory.mktemp("pickle-models")
    return {
        "toxicity": build_classifier(
            root / "jigsaw", JIGSAW_CLASSES, seed=7, problem_type="multi_label_classification"
        ),
        "fairness_bias": build_classifier(root / "bias", ["Non-biased", "Biased"], seed=12),
        "nli": build_classifier(root / "nli", NLI_LABELS, seed=11),
        "lm": build_tiny_causal_lm(root / "lm", n_positions=512),
    }


@pytest.fixture
def _fresh_runners() -> Iterator[None]:
    from nbeval.resources.local_models import clear_local_models

    clear_local_models()
    yield
    clear_local_models()


@pytest.mark.slow
@pytest.mark.usefixtures("_fresh_runners")
@pytest.mark.parametrize("evaluator_id", MODELS)
def test_a_used_model_evaluator_pickles_and_its_copy_scores_the_same(
    tiny_models: dict[str, Path], evaluator_id: str
) -> None:
    from nbeval.resources.local_models import clear_local_models

    path = tiny_models.get(evaluator_id) or tiny_models["nli" if evaluator_id in ("hallucination", "summac") else "lm"]
    ev = nbeval.evaluator(evaluator_id, model=str(path), device="cpu")

    def score(e: Any) -> Any:
        return nbeval.evaluate(MODEL_ROWS, [e], cache=False, progress=False)

    first = _table(score(ev))
    _assert_scored(first)
    blob = pickle.dumps(ev)
    clear_local_models()  # the copy loads its model itself
    copy = pickle.loads(blob)
    again = _table(score(copy))
    pd.testing.assert_frame_equal(first, again)
