"""Retrieval evaluators against the hand-computed table in golden/retrieval.json.

Every expected value there was worked out by hand from the match rule (equal doc_uri when both
chunks have one, else identical text); the per-model means are written out in the file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.data.model import Chunk, Row
from nbeval.errors import EvaluatorError

GOLDEN = json.loads((Path(__file__).parent / "golden" / "retrieval.json").read_text(encoding="utf-8"))
TOP_K = {"all": 0, "top1": 1, "top2": 2}


def _records(cases: list[dict]) -> list[dict]:
    return [{"key": c["key"], "input": f"question {c['key']}", "context": c["context"],
             "expected_context": c["expected_context"]} for c in cases]


@pytest.fixture(scope="module")
def ranked():
    evs = []
    for label, k in TOP_K.items():
        evs.append(nbeval.evaluator("retriever_hit_rate", top_k=k, name=f"hit_{label}"))
        evs.append(nbeval.evaluator("retriever_mrr", top_k=k, name=f"mrr_{label}"))
    return nbeval.evaluate(_records(GOLDEN["cases"]), evs, progress=False)


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: c["key"])
@pytest.mark.parametrize("label", list(TOP_K))
def test_per_row_values_end_to_end(ranked, case, label):
    s = ranked.scores
    for name, metric in ((f"hit_{label}", "hit_rate"), (f"mrr_{label}", "mrr")):
        row = s[(s["evaluator"] == name) & (s["key"] == case["key"])]
        assert len(row) == 1
        assert row["value"].iloc[0] == pytest.approx(case[label][metric], abs=1e-12), (name, case["note"])


@pytest.mark.parametrize("case", GOLDEN["cases"], ids=lambda c: c["key"])
def test_per_row_values_unit(case):
    row = Row(input="q", key=case["key"],
              context=[Chunk(**c) if isinstance(c, dict) else Chunk(content=c) for c in case["context"]],
              expected_context=[Chunk(**c) if isinstance(c, dict) else Chunk(content=c)
                                for c in case["expected_context"]])
    for label, k in TOP_K.items():
        hit = nbeval.evaluator("retriever_hit_rate", top_k=k).score(row)
        mrr = nbeval.evaluator("retriever_mrr", top_k=k).score(row)
        assert hit.values["hit_rate"] == pytest.approx(case[label]["hit_rate"])
        assert mrr.values["mrr"] == pytest.approx(case[label]["mrr"])
        assert mrr.rationale


@pytest.mark.parametrize("label", ["all", "top2"])
def test_means_and_leaderboard(ranked, label):
    agg = ranked.aggregates.set_index(["evaluator", "metric"])
    want = GOLDEN["means"][label]
    assert agg.loc[(f"hit_{label}", "hit_rate"), "value"] == pytest.approx(want["hit_rate"])
    assert agg.loc[(f"mrr_{label}", "mrr"), "value"] == pytest.approx(want["mrr"])
    board = ranked.leaderboard(f"mrr_{label}")
    assert board["mrr"].iloc[0] == pytest.approx(want["mrr"])
    assert board["mrr_n"].iloc[0] == len(GOLDEN["cases"])


def test_rationale_names_the_rank(ranked):
    s = ranked.scores
    why = s[(s["evaluator"] == "mrr_all") & (s["key"] == "uri-rank3")]["rationale"].iloc[0]
    assert "rank 3" in why and "d7" in why


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_bad_top_k_is_an_error(bad):
    with pytest.raises(EvaluatorError, match="top_k"):
        nbeval.evaluator("retriever_mrr", top_k=bad)


def test_rows_without_context_are_skipped():
    recs = [{"key": "a", "input": "q", "context": [], "expected_context": ["x"]},
            {"key": "b", "input": "q", "context": ["x"]},
            {"key": "c", "input": "q", "context": ["x"], "expected_context": ["x"]}]
    res = nbeval.evaluate(recs, ["retriever_hit_rate", "retriever_mrr"], progress=False)
    s = res.scores.set_index(["evaluator", "key"])
    assert s.loc[("retriever_hit_rate", "a"), "skipped"]
    assert "context" in s.loc[("retriever_hit_rate", "a"), "skip_reason"]
    assert "expected_context" in s.loc[("retriever_mrr", "b"), "skip_reason"]
    assert s.loc[("retriever_mrr", "c"), "value"] == 1.0
    agg = res.aggregates.set_index("evaluator")
    assert agg.loc["retriever_mrr", "n"] == 1 and agg.loc["retriever_mrr", "N"] == 3


def test_dbgpt_retrieval_records():
    # DB-GPT retrieval records: prediction = retrieved chunks, contexts = the relevant ones.
    recs = [{"query": "What is AWEL?", "prediction": ["intro", "AWEL is a workflow language", "other"],
             "contexts": ["AWEL is a workflow language"]},
            {"query": "What is DB-GPT?", "prediction": ["DB-GPT is a framework", "x"],
             "contexts": ["DB-GPT is a framework"]}]
    res = nbeval.evaluate(recs, ["retriever_mrr", "retriever_hit_rate"], progress=False)
    agg = res.aggregates.set_index("evaluator")
    assert agg.loc["retriever_mrr", "value"] == pytest.approx((1 / 2 + 1) / 2)
    assert agg.loc["retriever_hit_rate", "value"] == 1.0


# ---------------------------------------------------------------------------------------------
# document_recall


@pytest.fixture(scope="module")
def recall():
    cases = GOLDEN["document_recall"]
    return nbeval.evaluate(_records(cases), ["document_recall"], progress=False)


@pytest.mark.parametrize("case", GOLDEN["document_recall"], ids=lambda c: c["key"])
def test_document_recall_rows(recall, case):
    s = recall.scores.set_index("key")
    assert s.loc[case["key"], "value"] == pytest.approx(case["document_recall"]), case["note"]


def test_document_recall_mean(recall):
    agg = recall.aggregates.set_index("metric")
    assert agg.loc["document_recall", "value"] == pytest.approx(GOLDEN["document_recall_mean"]["value"])
    assert agg.loc["document_recall", "n"] == len(GOLDEN["document_recall"])


def test_document_recall_seed_example_agent_eval_columns():
    # Two documents are relevant and the retriever returns one of them: recall 0.5, whatever
    # else it returned (the agent-evaluation column style).
    recs = [{"request": "How do I reset my password?", "response": "Use the link.",
             "retrieved_context": [{"content": "Reset via link", "doc_uri": "docs/reset.md"},
                                   {"content": "Unrelated", "doc_uri": "docs/billing.md"},
                                   {"content": "More", "doc_uri": "docs/faq.md"}],
             "expected_retrieved_context": [{"doc_uri": "docs/reset.md"}, {"doc_uri": "docs/security.md"}]}]
    res = nbeval.evaluate(recs, ["document_recall"], progress=False)
    assert res.scores["value"].iloc[0] == pytest.approx(0.5)
    assert "docs/security.md" in res.scores["rationale"].iloc[0]


def test_document_recall_skips_rows_without_doc_uris():
    recs = [{"key": "no-expected-uri", "input": "q", "context": [{"content": "a", "doc_uri": "d1"}],
             "expected_context": ["just text"]},
            {"key": "no-retrieved-uri", "input": "q", "context": ["a", "b"],
             "expected_context": [{"doc_uri": "d1"}]},
            {"key": "mixed", "input": "q", "context": [{"content": "a", "doc_uri": "d1"}],
             "expected_context": [{"doc_uri": "d1"}, "loose text"]}]
    res = nbeval.evaluate(recs, ["document_recall"], progress=False)
    s = res.scores.set_index("key")
    assert s.loc["no-expected-uri", "skipped"] and "doc_uri" in s.loc["no-expected-uri", "skip_reason"]
    assert s.loc["no-retrieved-uri", "skipped"] and "doc_uri" in s.loc["no-retrieved-uri", "skip_reason"]
    assert not s.loc["mixed", "skipped"]
    assert s.loc["mixed", "value"] == 1.0
    assert "ignored" in s.loc["mixed", "rationale"]
