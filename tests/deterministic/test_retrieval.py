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
from tests.support.scoring import scored

GOLDEN = json.loads((Path(__file__).parent / "golden" / "retrieval.json").read_text(encoding="utf-8"))
TOP_K = {"all": 0, "top1": 1, "top2": 2}


def _records(cases: list[dict]) -> list[dict]:
    return [
        {
            "key": c["key"],
            "input": f"question {c['key']}",
            "context": c["context"],
            "expected_context": c["expected_context"],
        }
        for c in cases
    ]


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
    row = Row(
        input="q",
        key=case["key"],
        context=[Chunk(**c) if isinstance(c, dict) else Chunk(content=c) for c in case["context"]],
        expected_context=[Chunk(**c) if isinstance(c, dict) else Chunk(content=c) for c in case["expected_context"]],
    )
    for label, k in TOP_K.items():
        hit = scored(nbeval.evaluator("retriever_hit_rate", top_k=k), row)
        mrr = scored(nbeval.evaluator("retriever_mrr", top_k=k), row)
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
    recs = [
        {"key": "a", "input": "q", "context": [], "expected_context": ["x"]},
        {"key": "b", "input": "q", "context": ["x"]},
        {"key": "c", "input": "q", "context": ["x"], "expected_context": ["x"]},
    ]
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
    recs = [
        {
            "query": "What is AWEL?",
            "prediction": ["intro", "AWEL is a workflow language", "other"],
            "contexts": ["AWEL is a workflow language"],
        },
        {
            "query": "What is DB-GPT?",
            "prediction": ["DB-GPT is a framework", "x"],
            "contexts": ["DB-GPT is a framework"],
        },
    ]
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
    recs = [
        {
            "request": "How do I reset my password?",
            "response": "Use the link.",
            "retrieved_context": [
                {"content": "Reset via link", "doc_uri": "docs/reset.md"},
                {"content": "Unrelated", "doc_uri": "docs/billing.md"},
                {"content": "More", "doc_uri": "docs/faq.md"},
            ],
            "expected_retrieved_context": [{"doc_uri": "docs/reset.md"}, {"doc_uri": "docs/security.md"}],
        }
    ]
    res = nbeval.evaluate(recs, ["document_recall"], progress=False)
    assert res.scores["value"].iloc[0] == pytest.approx(0.5)
    assert "docs/security.md" in res.scores["rationale"].iloc[0]


def test_document_recall_skips_rows_without_doc_uris():
    recs = [
        {
            "key": "no-expected-uri",
            "input": "q",
            "context": [{"content": "a", "doc_uri": "d1"}],
            "expected_context": ["just text"],
        },
        {"key": "no-retrieved-uri", "input": "q", "context": ["a", "b"], "expected_context": [{"doc_uri": "d1"}]},
        {
            "key": "mixed",
            "input": "q",
            "context": [{"content": "a", "doc_uri": "d1"}],
            "expected_context": [{"doc_uri": "d1"}, "loose text"],
        },
    ]
    res = nbeval.evaluate(recs, ["document_recall"], progress=False)
    s = res.scores.set_index("key")
    assert s.loc["no-expected-uri", "skipped"] and "doc_uri" in s.loc["no-expected-uri", "skip_reason"]
    assert s.loc["no-retrieved-uri", "skipped"] and "doc_uri" in s.loc["no-retrieved-uri", "skip_reason"]
    assert not s.loc["mixed", "skipped"]
    assert s.loc["mixed", "value"] == 1.0
    assert "ignored" in s.loc["mixed", "rationale"]


# ---------------------------------------------------------------------------------------------
# unit="document": documents ranked as TREC tools rank them, checked against trec_eval itself

# Each row: retrieved chunks as (doc_uri, text), best first, and the relevant documents. The same
# document often comes back as several chunks, which is where ranking chunks and ranking
# documents part ways.
TREC_ROWS = {
    "first": ([("d1", "a"), ("d1", "b"), ("d2", "c")], ["d1"]),
    "after-repeats": ([("d1", "a"), ("d1", "b"), ("d1", "c"), ("d2", "d")], ["d2"]),  # chunk rank 4, doc rank 2
    "repeats-between": (
        [("d3", "a"), ("d4", "b"), ("d3", "c"), ("d4", "d"), ("d5", "e"), ("d6", "f")],
        ["d6", "d9"],
    ),  # chunk rank 6, document rank 4
    "second-chunk-relevant-doc": ([("d2", "a"), ("d7", "b"), ("d7", "c"), ("d8", "d")], ["d8"]),
    "none": ([("d1", "a"), ("d2", "b"), ("d1", "c")], ["d5"]),
    "deep": ([(f"d{i // 3}", f"t{i}") for i in range(30)], ["d7"]),  # three chunks per document
}


def _trec_records() -> list[dict]:
    return [
        {
            "key": key,
            "input": f"q {key}",
            "context": [{"content": text, "doc_uri": doc} for doc, text in chunks],
            "expected_context": [{"doc_uri": d} for d in relevant],
        }
        for key, (chunks, relevant) in TREC_ROWS.items()
    ]


def _trec_eval(measures: set[str]) -> dict[str, dict[str, float]]:
    """trec_eval's measures per query (pytrec_eval), the run made as a TREC user makes it from
    the chunk list: one entry per document, scored by its best (first) chunk."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {key: {doc: 1 for doc in relevant} for key, (_, relevant) in TREC_ROWS.items()}
    run: dict[str, dict[str, float]] = {}
    for key, (chunks, _) in TREC_ROWS.items():
        docs = run.setdefault(key, {})
        for rank, (doc, _) in enumerate(chunks):
            docs.setdefault(doc, float(len(chunks) - rank))  # later chunks of a document are not scored again
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def test_document_unit_mrr_is_trec_evals_recip_rank():
    trec = _trec_eval({"recip_rank"})
    res = nbeval.evaluate(_trec_records(), [("retriever_mrr", {"unit": "document"})], progress=False)
    got = res.scores.set_index("key")["value"].to_dict()
    assert got == pytest.approx({key: trec[key]["recip_rank"] for key in TREC_ROWS}, abs=1e-12)
    assert res.aggregates["value"].iloc[0] == pytest.approx(
        sum(trec[k]["recip_rank"] for k in TREC_ROWS) / len(TREC_ROWS)
    )
    # the default still ranks chunks (DB-GPT's definition): here the two differ
    chunks = nbeval.evaluate(_trec_records(), ["retriever_mrr"], progress=False).scores.set_index("key")["value"]
    assert chunks["after-repeats"] == pytest.approx(1 / 4) and got["after-repeats"] == pytest.approx(1 / 2)


@pytest.mark.parametrize("k", [1, 2, 3, 5, 10])
def test_document_unit_hit_rate_is_trec_evals_success_at_k(k):
    trec = _trec_eval({f"success.{k}"})
    res = nbeval.evaluate(_trec_records(), [("retriever_hit_rate", {"unit": "document", "top_k": k})], progress=False)
    got = res.scores.set_index("key")["value"].to_dict()
    assert got == pytest.approx({key: trec[key][f"success_{k}"] for key in TREC_ROWS}, abs=1e-12)


def test_document_unit_top_k_counts_documents_and_the_rationale_says_so():
    row = Row(
        input="q",
        key="k",
        context=[Chunk("a", "d1"), Chunk("b", "d1"), Chunk("c", "d2")],
        expected_context=[Chunk(doc_uri="d2")],
    )
    assert scored(nbeval.evaluator("retriever_hit_rate", top_k=2), row).values["hit_rate"] == 0.0  # chunks
    doc = scored(nbeval.evaluator("retriever_mrr", top_k=2, unit="document"), row)
    assert doc.values["mrr"] == 0.5
    assert doc.rationale is not None
    assert "document rank 2" in doc.rationale and "'d2'" in doc.rationale and "3 chunks" in doc.rationale
    # a document matches through any of its chunks; chunks without a doc_uri are documents of their own
    texts = Row(
        input="q",
        key="t",
        context=[Chunk("x", "d1"), Chunk("y", "d1"), Chunk("z"), Chunk("z")],
        expected_context=[Chunk("y")],
    )
    assert scored(nbeval.evaluator("retriever_mrr", unit="document"), texts).values["mrr"] == 1.0
    loose = Row(input="q", key="l", context=[Chunk("z"), Chunk("z"), Chunk("w")], expected_context=[Chunk("w")])
    assert scored(nbeval.evaluator("retriever_mrr", unit="document"), loose).values["mrr"] == pytest.approx(1 / 3)


@pytest.mark.parametrize("bad", ["documents", "Chunk", None, 1])
def test_bad_unit_is_an_error(bad):
    with pytest.raises(EvaluatorError, match="unit"):
        nbeval.evaluator("retriever_hit_rate", unit=bad)
