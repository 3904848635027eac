"""Every built-in evaluator reports the metrics of the contract (shared/spec/evaluators.md).

The table below is written from the contract by hand, independently of the catalogue files and
of the code that resolves them: the five bool metrics are derived from ``kind = "bool"`` in code,
so a mistake there shows here. Where the contract gives no threshold the catalogue's default is
used (0.5 for a share of rows; none for an unbounded metric), and where it flags no primary metric
of several, the first listed is primary. Where the spec document is at hand (``shared/`` beside or
inside the checkout), the table's ids, bool marks, first and primary metrics are checked against it.

The table holds only what the contract says: an evaluator the contract does not name needs no row
here. Its declaration is read from the catalogue and held to the contract's general rules (every
metric described; a bool evaluator reports the bool metrics as defined; a rating one its share of
yes under its own id).

An evaluator may report metrics the contract does not name (:data:`ADDITIONS`), after the
contract's own and never as the primary metric, so that everything the contract promises stays
as it is.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import nbeval
from nbeval.evaluators import registry
from nbeval.evaluators.base import BOOL_METRIC_SPECS

ROOT = Path(nbeval.__file__).resolve().parents[1]
#: The spec document, where the checkout has it (it is not part of the package).
SPEC_DOCUMENT = next(
    (p for p in (ROOT / "shared/spec/evaluators.md", ROOT.parent / "shared/spec/evaluators.md") if p.is_file()), None
)

INF = math.inf

# name, direction, lo, hi, threshold, primary
Metric = tuple[str, str, float, float, float | None, bool]


def _m(
    name: str,
    direction: str = "higher",
    hi: float = 1.0,
    threshold: float | None = 0.75,
    primary: bool = False,
    lo: float = 0.0,
) -> Metric:
    return (name, direction, lo, hi, threshold, primary)


# "Boolean evaluators": fractions of rows in [0, 1], default threshold 0.5, pass is primary.
BOOL = [
    _m("pass", threshold=0.5, primary=True),
    _m("fail", "lower", threshold=0.5),
    _m("retrieval_failures", "lower", threshold=0.5),
    _m("generation_failures", "lower", threshold=0.5),
    _m("parse_failures", "lower", threshold=0.5),
]


def _rating(id: str) -> list[Metric]:
    """The contract's judge rating evaluators: the share of yes, named after the evaluator."""
    return [_m(id, threshold=0.5, primary=True)]


#: The GPTScore summarization aspects after the primary semantic_coverage, in the contract's order.
_SUMMARY_ASPECTS = ("factuality", "informativeness", "coherence", "relevance", "fluency")

CONTRACT: dict[str, list[Metric]] = {
    # Deterministic evaluators
    "exact_match": [_m("score", threshold=0.5, primary=True)],
    "regex_match": [_m("score", threshold=0.5, primary=True)],
    "text_matching": BOOL,
    "pii_leakage": BOOL[:4],
    "sensitive_data_leakage": BOOL[:4],
    "encoding_guardrail": BOOL,
    "looping": [
        _m("unique_sentences", primary=True),
        _m("longest_repeated_substring", "lower"),
        _m("compression_ratio"),
    ],
    "bleu": [_m("bleu_1", primary=True), _m("bleu_2"), _m("bleu_3"), _m("bleu_4")],
    "rouge": [_m("rouge_1"), _m("rouge_2"), _m("rouge_l", primary=True)],
    "classification": [_m("accuracy", primary=True), _m("precision"), _m("recall"), _m("f1")],
    "retriever_hit_rate": [_m("hit_rate", threshold=0.5, primary=True)],
    "retriever_mrr": [_m("mrr", threshold=0.5, primary=True)],
    "document_recall": [_m("document_recall", threshold=0.5, primary=True)],
    # Embedding evaluators
    "semantic_similarity": [_m("score", threshold=0.5, primary=True)],
    "answer_semantic_similarity": [_m("answer_similarity", primary=True)],
    "answer_sentence_similarity": [_m("mean_answer_similarity", primary=True), _m("min_answer_similarity")],
    "answer_relevancy_sentence": [_m("answer_relevancy", primary=True)],
    "groundedness_semantic": [_m("groundedness", primary=True)],
    "context_relevancy_soft": [_m("recall_relevancy", primary=True), _m("precision_relevancy")],
    "retriever_similarity": [_m("similarity", threshold=0.5, primary=True)],
    "step_alignment": [
        _m("edits", "lower", INF, primary=True),
        _m("insertions", "lower", INF),
        _m("deletions", "lower", INF),
        _m("mismatches", "lower", INF),
        _m("context_steps", hi=INF, threshold=None),
        _m("answer_steps", hi=INF, threshold=None),
    ],
    "summarization_completeness": [_m("completeness", primary=True)],
    # Judge evaluators
    "contact_information": BOOL,
    "language_mismatch": BOOL,
    "sexism": BOOL,
    "stereotypes": BOOL,
    "summarization_judge": BOOL,
    "byop": BOOL,
    "fact_check": [_m("fact_check", primary=True)],
    "context_relevancy": [_m("context_relevancy", primary=True)],
    "correctness": _rating("correctness"),
    "relevance_to_query": _rating("relevance_to_query"),
    "groundedness": _rating("groundedness"),
    "safety": _rating("safety"),
    "guideline_adherence": [*_rating("guideline_adherence"), _m("global_guideline_adherence", threshold=0.5)],
    "chunk_relevance": [_m("precision", threshold=0.5, primary=True)],
    "context_sufficiency": _rating("context_sufficiency"),
    "custom_judge": [*_rating("custom_judge"), _m("precision", threshold=0.5)],
    "answer_relevancy_score": [_m("score", hi=5.0, threshold=3.0, primary=True)],
    "pipeline": [_m("score", lo=-INF, hi=INF, threshold=None, primary=True)],
    # RAGAS-family evaluators: all higher-is-better, [0, 1], threshold 0.75
    "faithfulness": [_m("faithfulness", primary=True)],
    "answer_relevancy": [_m("answer_relevancy", primary=True)],
    "context_precision": [_m("context_precision", primary=True)],
    "context_recall": [_m("context_recall", primary=True)],
    "answer_correctness": [_m("answer_correctness", primary=True)],
    "ragas": [
        _m("ragas", primary=True),
        _m("faithfulness"),
        _m("answer_relevancy"),
        _m("context_precision"),
        _m("context_recall"),
    ],
    # Model-based evaluators: [0, 1] ones with threshold 0.75; unbounded NLL-style ones without one
    "toxicity": [
        _m("toxicity", "lower", primary=True),
        _m("severe_toxicity", "lower"),
        _m("obscene", "lower"),
        _m("threat", "lower"),
        _m("insult", "lower"),
        _m("identity_attack", "lower"),
    ],
    "fairness_bias": [_m("fairness_bias", "lower", primary=True)],
    "hallucination": [_m("hallucination", primary=True)],
    "summac": [_m("summac_conv", primary=True), _m("summac_zs")],
    "perplexity": [_m("perplexity", "lower", INF, None, primary=True)],
    "gptscore_summarization_ref": [
        _m("semantic_coverage", "lower", INF, None, primary=True),
        *[_m(n, "lower", INF, None) for n in _SUMMARY_ASPECTS],
    ],
    "gptscore_summarization_noref": [
        _m("semantic_coverage", "lower", INF, None, primary=True),
        *[_m(n, "lower", INF, None) for n in (*_SUMMARY_ASPECTS, "consistency")],
    ],
    "gptscore_translation": [
        _m("accuracy", "lower", INF, None, primary=True),
        _m("fluency", "lower", INF, None),
        _m("mqm", "lower", INF, None),
    ],
    "gptscore_qa": [
        _m("interest", "lower", INF, None, primary=True),
        *[
            _m(n, "lower", INF, None)
            for n in (
                "engagement",
                "understandability",
                "relevance",
                "specific",
                "correctness",
                "semantically_appropriate",
                "fluency",
            )
        ],
    ],
}
#: Metrics reported beyond the contract, each with the reason; they come after the contract's.
ADDITIONS: dict[str, list[Metric]] = {
    # ROUGE-L over newline-split sentences (rouge-score's rougeLsum), what summarisation papers and
    # ROUGE-1.5.5 report as ROUGE-L; the contract's rouge_l (rougeL) stays the primary metric.
    "rouge": [_m("rouge_lsum")],
}
BOOL_IDS = {
    "text_matching",
    "pii_leakage",
    "sensitive_data_leakage",
    "encoding_guardrail",
    "contact_information",
    "language_mismatch",
    "sexism",
    "stereotypes",
    "summarization_judge",
    "byop",
}


def test_every_evaluator_of_the_contract_is_built_in() -> None:
    assert set(CONTRACT) <= set(registry._builtin_specs())


@pytest.mark.parametrize("id", sorted(registry._builtin_specs()))
def test_every_built_in_keeps_the_general_rules(id: str) -> None:
    # Read from the declarations: an evaluator outside the contract is held to these with no row above.
    spec = registry.get_spec(id)
    assert all(m.description for m in spec.metrics), "every metric says what it measures"
    assert [m.name for m in spec.metrics if m.primary] == [spec.primary.name], "one primary metric"
    if spec.kind == "bool":
        defined = {m.name: m for m in BOOL_METRIC_SPECS}
        got = [(m.name, m.direction, m.lo, m.hi, m.threshold, m.primary) for m in spec.metrics]
        assert got == [row for row in BOOL if row[0] in defined][: len(got)]
    if spec.kind == "rating" and id not in CONTRACT:  # the contract's per-chunk rating reports precision
        assert (spec.primary.name, spec.primary.direction, spec.primary.lo, spec.primary.hi) == (id, "higher", 0, 1)
        assert spec.primary.threshold == 0.5


def _spec_document_rows() -> dict[str, tuple[str, str | None]]:
    """Each evaluator row of the spec document's tables: its id, to its kind column (or the first
    cell after the inputs) and its metrics cell (``None`` where the table has no metrics column)."""
    assert SPEC_DOCUMENT is not None
    rows: dict[str, tuple[str, str | None]] = {}
    header: list[str] = []
    for line in SPEC_DOCUMENT.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = cells
            continue
        found = re.fullmatch(r"`(\w+)`(.*)", cells[0])
        if header[0] != "id" or found is None:
            continue
        kind = cells[header.index("kind")] if "kind" in header else found.group(2)
        rows[found.group(1)] = (kind, cells[header.index("metrics")] if "metrics" in header else None)
    return rows


@pytest.mark.skipif(SPEC_DOCUMENT is None, reason="the spec document (shared/spec/evaluators.md) is not here")
def test_the_table_is_the_spec_documents() -> None:
    rows = _spec_document_rows()
    assert set(rows) == set(CONTRACT)
    assert {id for id, (kind, _) in rows.items() if "**bool**" in kind} == BOOL_IDS
    for id, (_, metrics) in rows.items():
        if metrics is None or not metrics.startswith("`"):  # "the five bool metrics", "the same plus ..."
            continue
        names = [name for name, *_ in CONTRACT[id]]
        assert re.match(r"`(\w+)`", metrics).group(1) == names[0], id  # type: ignore[union-attr]
        primary = re.search(r"`(\w+)` \([^)`]*primary", metrics)
        if primary:
            assert primary.group(1) == next(name for name, *_, p in CONTRACT[id] if p), id


@pytest.mark.parametrize("id", sorted(CONTRACT))
def test_metrics_match_the_contract(id: str) -> None:
    spec = registry.get_spec(id)
    got = [(m.name, m.direction, m.lo, m.hi, m.threshold, m.primary) for m in spec.metrics]
    assert got == CONTRACT[id] + ADDITIONS.get(id, [])
    assert spec.primary.name == next(name for name, *_, primary in CONTRACT[id] if primary)
    assert all(m.description for m in spec.metrics), "every metric says what it measures"
    assert (spec.kind == "bool") == (id in BOOL_IDS)


@pytest.mark.parametrize("id", sorted(BOOL_IDS))
def test_bool_evaluators_report_what_bool_score_fills(id: str) -> None:
    # bool_score() fills all five; an evaluator declares the first four when it never fails to parse.
    from nbeval.evaluators.base import bool_score

    reported = [m.name for m in registry.get_spec(id).metrics]
    assert reported == list(bool_score(True, True).values)[: len(reported)]


@pytest.mark.parametrize("id", sorted(ADDITIONS))
def test_additions_extend_the_contract_without_changing_it(id: str) -> None:
    contract_names = {name for name, *_ in CONTRACT[id]}
    assert all(not primary and name not in contract_names for name, *_, primary in ADDITIONS[id])
