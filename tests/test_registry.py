"""The catalogue matches the spec's contract, every entry has an implementation, and plugins
register through the entry-point group."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import pytest

import nbeval
from nbeval.evaluators import registry

# The evaluator ids of the spec's tables (shared/spec/evaluators.md), by family.
SPEC_IDS = {
    "deterministic": ["exact_match", "regex_match", "text_matching", "pii_leakage", "sensitive_data_leakage",
                      "encoding_guardrail", "looping", "bleu", "rouge", "classification", "retriever_hit_rate",
                      "retriever_mrr", "document_recall"],
    "embedding": ["semantic_similarity", "answer_semantic_similarity", "answer_sentence_similarity",
                  "answer_relevancy_sentence", "groundedness_semantic", "context_relevancy_soft",
                  "retriever_similarity", "step_alignment", "summarization_completeness"],
    "judge": ["contact_information", "language_mismatch", "sexism", "stereotypes", "summarization_judge", "byop",
              "fact_check", "context_relevancy", "correctness", "relevance_to_query", "groundedness", "safety",
              "guideline_adherence", "chunk_relevance", "context_sufficiency", "custom_judge",
              "answer_relevancy_score", "pipeline"],
}
BOOL_METRICS = ["pass", "fail", "retrieval_failures", "generation_failures", "parse_failures"]


@pytest.mark.parametrize("family", sorted(SPEC_IDS))
def test_catalogue_has_every_spec_id(family: str) -> None:
    ids = {s.id for s in nbeval.list_evaluators(family)}
    assert set(SPEC_IDS[family]) <= ids


@pytest.mark.parametrize("spec", list(registry._builtin_specs().values()), ids=lambda s: s.id)
def test_every_entry_is_implemented_and_well_formed(spec) -> None:
    cls = registry.get_class(spec.id)
    assert cls.spec is spec
    assert sum(m.primary for m in spec.metrics) == 1, "exactly one primary metric"
    assert len({m.name for m in spec.metrics}) == len(spec.metrics)
    for m in spec.metrics:
        assert m.direction in ("higher", "lower") and m.lo < m.hi
        assert m.threshold is None or m.lo <= m.threshold <= (m.hi if math.isfinite(m.hi) else m.threshold)
    if spec.kind == "bool":
        assert [m.name for m in spec.metrics] == BOOL_METRICS[: len(spec.metrics)]
        assert spec.primary.name == "pass"
    assert spec.description, "a description for the catalogue"
    fields = {"input", "expected_output", "actual_output", "context", "expected_context", "output_condition",
              "guidelines", "categories"}
    assert set(spec.inputs) | set(spec.optional_inputs) <= fields


def test_plugin_registers_through_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nbeval_plugin_demo.py").write_text(textwrap.dedent('''
        from nbeval import Evaluator, EvaluatorSpec, MetricSpec, Score

        class Shouting(Evaluator):
            spec = EvaluatorSpec(id="shouting", family="plugin", kind="score", inputs=("actual_output",),
                                 metrics=(MetricSpec("upper_share", primary=True),), description="Upper-case share.")

            def score(self, row):
                letters = [c for c in row.actual_output if c.isalpha()]
                return Score({"upper_share": sum(c.isupper() for c in letters) / max(1, len(letters))})
    '''))
    dist = tmp_path / "nbeval_plugin_demo-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: nbeval-plugin-demo\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[nbeval.evaluators]\nshouting = nbeval_plugin_demo:Shouting\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry._load_entry_points.cache_clear()
    try:
        assert "shouting" in nbeval.catalogue()
        res = nbeval.evaluate([{"input": "q", "actual_output": "HEllo"}], ["shouting"], progress=False)
        assert res.scores["value"].tolist() == [0.4]  # H, E of H-E-l-l-o
    finally:
        registry._load_entry_points.cache_clear()
        sys.modules.pop("nbeval_plugin_demo", None)


def test_missing_dependency_names_the_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nbeval_family_with_missing_dep.py").write_text("import a_package_nobody_installed_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = nbeval.EvaluatorSpec(id="needs_missing_pkg", family="embedding", kind="score", inputs=("input",),
                                metrics=(nbeval.MetricSpec("x", primary=True),),
                                module="nbeval_family_with_missing_dep")
    monkeypatch.setitem(registry._EXTRA_SPECS, spec.id, spec)
    with pytest.raises(nbeval.MissingDependency, match=r'pip install "nbeval\[embed\]"'):
        nbeval.evaluator("needs_missing_pkg")
