"""The catalogue matches the spec's contract, every entry has an implementation, and plugins
register through the entry-point group."""

from __future__ import annotations

import math
import sys
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.evaluators import registry
from nbeval.evaluators.base import BOOL_METRIC_SPECS, Evaluator, EvaluatorSpec, MetricSpec, Param, bool_metric_specs

# The evaluator ids of the spec's tables (shared/spec/evaluators.md), by family.
SPEC_IDS = {
    "deterministic": [
        "exact_match",
        "regex_match",
        "text_matching",
        "pii_leakage",
        "sensitive_data_leakage",
        "encoding_guardrail",
        "looping",
        "bleu",
        "rouge",
        "classification",
        "retriever_hit_rate",
        "retriever_mrr",
        "document_recall",
    ],
    "embedding": [
        "semantic_similarity",
        "answer_semantic_similarity",
        "answer_sentence_similarity",
        "answer_relevancy_sentence",
        "groundedness_semantic",
        "context_relevancy_soft",
        "retriever_similarity",
        "step_alignment",
        "summarization_completeness",
    ],
    "judge": [
        "contact_information",
        "language_mismatch",
        "sexism",
        "stereotypes",
        "summarization_judge",
        "byop",
        "fact_check",
        "context_relevancy",
        "correctness",
        "relevance_to_query",
        "groundedness",
        "safety",
        "guideline_adherence",
        "chunk_relevance",
        "context_sufficiency",
        "custom_judge",
        "answer_relevancy_score",
        "pipeline",
    ],
}
BOOL_METRICS = ["pass", "fail", "retrieval_failures", "generation_failures", "parse_failures"]


@pytest.mark.parametrize("family", sorted(SPEC_IDS))
def test_catalogue_has_every_spec_id(family: str) -> None:
    ids = {s.id for s in nbeval.list_evaluators(family)}
    assert set(SPEC_IDS[family]) <= ids


@pytest.mark.parametrize("spec", list(registry._builtin_specs().values()), ids=lambda s: s.id)
def test_every_entry_is_implemented_and_well_formed(spec) -> None:
    cls = registry.get_class(spec.id)
    assert cls.spec == spec and registry.get_spec(spec.id) is cls.spec
    assert sum(m.primary for m in spec.metrics) == 1, "exactly one primary metric"
    assert len({m.name for m in spec.metrics}) == len(spec.metrics)
    for m in spec.metrics:
        assert m.direction in ("higher", "lower") and m.lo < m.hi
        assert m.threshold is None or m.lo <= m.threshold <= (m.hi if math.isfinite(m.hi) else m.threshold)
    if spec.kind == "bool":
        assert [m.name for m in spec.metrics] == BOOL_METRICS[: len(spec.metrics)]
        assert spec.primary.name == "pass"
    assert spec.description, "a description for the catalogue"
    fields = {
        "input",
        "expected_output",
        "actual_output",
        "context",
        "expected_context",
        "output_condition",
        "guidelines",
        "categories",
        # a conversation (nbeval.data.conversation.CONVERSATION_FIELDS)
        "messages",
        "expected_tool_calls",
        "reference_topics",
    }
    assert set(spec.inputs) | set(spec.optional_inputs) <= fields


def test_plugin_registers_through_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "nbeval_plugin_demo.py").write_text(
        textwrap.dedent("""
        from nbeval import Evaluator, EvaluatorSpec, MetricSpec, Score

        class Shouting(Evaluator):
            spec = EvaluatorSpec(id="shouting", family="plugin", kind="score", inputs=("actual_output",),
                                 metrics=(MetricSpec("upper_share", primary=True),), description="Upper-case share.")

            def score(self, row):
                letters = [c for c in row.actual_output if c.isalpha()]
                return Score({"upper_share": sum(c.isupper() for c in letters) / max(1, len(letters))})
    """)
    )
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
    spec = nbeval.EvaluatorSpec(
        id="needs_missing_pkg",
        family="embedding",
        kind="score",
        inputs=("input",),
        metrics=(nbeval.MetricSpec("x", primary=True),),
        module="nbeval_family_with_missing_dep",
    )
    monkeypatch.setitem(registry._EXTRA_SPECS, spec.id, spec)
    with pytest.raises(nbeval.MissingDependency, match=r'pip install "nbeval\[embed\]"'):
        nbeval.evaluator("needs_missing_pkg")


# ---------------------------------------------------------------------------------------------
# kind = "bool": the five metrics are defined once (BOOL_METRIC_SPECS), each evaluator narrows or rewords them


def test_a_bool_spec_gets_the_five_metrics_from_code() -> None:
    spec = EvaluatorSpec(
        id="t_bool", family="test", kind="bool", inputs=("actual_output",), metrics=bool_metric_specs()
    )
    assert spec.metrics == BOOL_METRIC_SPECS
    assert [m.name for m in spec.metrics] == BOOL_METRICS and spec.primary.name == "pass"


def test_a_bool_spec_narrows_and_rewords_them() -> None:
    metrics = bool_metric_specs(["generation_failures", "pass", "fail"], {"pass": "share of rows that were fine"})
    spec = EvaluatorSpec(id="t_bool", family="test", kind="bool", inputs=(), metrics=metrics)
    assert [m.name for m in spec.metrics] == ["pass", "fail", "generation_failures"]  # the standard order
    assert spec.metric("pass").description == "share of rows that were fine"
    assert spec.metric("fail") == BOOL_METRIC_SPECS[1]


@pytest.mark.parametrize(
    ("names", "descriptions", "message"),
    [
        (["fail"], None, "'pass' among them"),
        (["pass", "passes"], None, "must be some of"),
        (["pass"], {"fail": "x"}, "not reported"),
    ],
)
def test_malformed_bool_metrics_are_refused(names: list[str], descriptions: dict | None, message: str) -> None:
    with pytest.raises(nbeval.EvaluatorError, match=message):
        bool_metric_specs(names, descriptions)


def test_every_bool_built_in_reports_the_bool_metrics_of_code() -> None:
    for spec in registry._builtin_specs().values():
        if spec.kind == "bool":
            defined = {m.name: m for m in BOOL_METRIC_SPECS}
            assert all(
                m.name in defined
                and (m.direction, m.lo, m.hi, m.threshold, m.primary)
                == (defined[m.name].direction, 0.0, 1.0, 0.5, m.name == "pass")
                for m in spec.metrics
            ), spec.id


# ---------------------------------------------------------------------------------------------
# @register: the spec in the class body, typed parameters


def test_register_reads_the_spec_of_the_class_body() -> None:
    @registry.register
    class Declared(Evaluator):
        spec = EvaluatorSpec(
            id="t_declared",
            family="test",
            kind="score",
            inputs=("actual_output",),
            params=(Param("limit", int, 3, "the most words"),),
            metrics=(MetricSpec("ok", primary=True),),
        )

    assert registry.get_spec("t_declared") is Declared.spec
    assert Declared.spec.module == __name__  # filled in from the class
    assert dict(Declared.spec.params) == {"limit": 3}
    assert Declared.spec.params.param("limit") == Param("limit", int, 3, "the most words")
    assert nbeval.evaluator("t_declared", limit=5).params["limit"] == 5


def test_register_needs_a_spec_of_the_class_own() -> None:
    with pytest.raises(nbeval.EvaluatorError, match="declares no spec"):

        @registry.register
        class Bare(Evaluator):
            pass


def test_params_given_by_default_alone_take_the_default_type() -> None:
    spec = _spec("t_short")
    assert spec.params.param("only").type is Any
    assert (
        EvaluatorSpec(id="t", family="test", kind="score", inputs=(), metrics=(MetricSpec("a"),), params={"n": 2})
        .params.param("n")
        .type
        is int
    )


# ---------------------------------------------------------------------------------------------
# spec_for(params): the spec of one configured instance


def _spec(id: str, **changes: Any) -> EvaluatorSpec:
    base = EvaluatorSpec(
        id=id,
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("a", primary=True), MetricSpec("b")),
        params={"only": None},
    )
    return replace(base, **changes)


def test_an_instance_has_the_declared_spec_by_default() -> None:
    @registry.register(spec=_spec("t_plain"))
    class Plain(Evaluator):
        pass

    ev = nbeval.evaluator("t_plain")
    assert ev.spec is Plain.spec is registry.get_spec("t_plain")


def test_spec_for_gives_each_instance_its_own_spec() -> None:
    @registry.register(spec=_spec("t_narrow"))
    class Narrow(Evaluator):
        @classmethod
        def spec_for(cls, params):
            spec = super().spec_for(params)
            if params["only"] is None:
                return spec
            return replace(
                spec,
                inputs=("input", "actual_output"),
                metrics=tuple(replace(m, primary=True) for m in spec.metrics if m.name == params["only"]),
            )

    ev = nbeval.evaluator("t_narrow", only="b", threshold=0.25)
    assert [m.name for m in ev.spec.metrics] == ["b"] and ev.spec.inputs == ("input", "actual_output")
    assert ev.thresholds == {"b": 0.25}  # resolved against the instance's metrics
    assert [m.name for m in Narrow.spec.metrics] == ["a", "b"]  # the class keeps its declaration
    assert nbeval.evaluator("t_narrow").spec is Narrow.spec
    with pytest.raises(nbeval.EvaluatorError, match="no metric 'a'"):
        nbeval.evaluator("t_narrow", only="b", threshold={"a": 0.5})


def test_spec_for_must_keep_the_id() -> None:
    @registry.register(spec=_spec("t_renamed"))
    class Renamed(Evaluator):
        @classmethod
        def spec_for(cls, params):
            return replace(cls.spec, id="something_else")

    with pytest.raises(nbeval.EvaluatorError, match="must keep the id"):
        Renamed()


def test_judges_configure_instances_through_spec_for() -> None:
    custom = nbeval.evaluator("custom_judge", instructions="x", assessment_type="retrieval")
    assert [m.name for m in custom.spec.metrics] == ["precision"] and custom.spec.primary.name == "precision"
    assert [m.name for m in registry.get_class("custom_judge").spec.metrics] == ["custom_judge", "precision"]
    graded = nbeval.evaluator("answer_relevancy_score", pass_score=4)
    assert graded.spec.metric("score").threshold == 4.0 and graded.thresholds == {"score": 4.0}
    assert nbeval.evaluator("answer_relevancy_score", pass_score=4, threshold=2).thresholds == {"score": 2.0}
    assert registry.get_spec("answer_relevancy_score").metric("score").threshold == 3.0
    pipeline = nbeval.evaluator("pipeline", fn=lambda input, context: 1.0)
    assert pipeline.spec.inputs == ("input", "context") and pipeline.spec.resources == ()
    assert registry.get_class("pipeline").spec.inputs == ()


# ---------------------------------------------------------------------------------------------
# unregister(id), and the fixture that unregisters what a test registered


def test_unregister_removes_an_evaluator_declared_by_register() -> None:
    @registry.register(spec=_spec("t_gone"))
    class Gone(Evaluator):
        pass

    assert "t_gone" in nbeval.catalogue()
    assert registry.unregister("t_gone") is Gone
    assert "t_gone" not in nbeval.catalogue()
    with pytest.raises(nbeval.UnknownEvaluator):
        nbeval.evaluator("t_gone")
    with pytest.raises(nbeval.UnknownEvaluator, match="no evaluator 't_gone' is registered"):
        registry.unregister("t_gone")


def test_unregister_brings_back_what_was_replaced() -> None:
    original = registry.get_class("exact_match")

    @registry.register("exact_match")
    class Stricter(Evaluator):
        pass

    @registry.register(spec=_spec("exact_match"))
    class Other(Evaluator):
        pass

    assert registry.get_class("exact_match") is Other and registry.get_spec("exact_match").family == "test"
    assert registry.unregister("exact_match") is Other
    assert registry.get_class("exact_match") is Stricter and registry.get_spec("exact_match").family == "deterministic"
    assert registry.unregister("exact_match") is Stricter
    assert registry.get_class("exact_match") is original and original.spec is registry.get_spec("exact_match")


def test_a_built_in_evaluator_cannot_be_unregistered() -> None:
    registry.get_class("rouge")
    with pytest.raises(nbeval.EvaluatorError, match="built in"):
        registry.unregister("rouge")
    assert nbeval.evaluator("rouge").id == "rouge"


def test_a_test_registers_an_evaluator() -> None:
    # The next test checks that the autouse fixture of tests/conftest.py removed it.
    @registry.register(spec=_spec("t_left_behind"))
    class LeftBehind(Evaluator):
        pass

    @registry.register("bleu")
    class NotBleu(Evaluator):
        pass

    assert "t_left_behind" in nbeval.catalogue() and registry.get_class("bleu") is NotBleu


def test_the_fixture_unregistered_it() -> None:
    assert "t_left_behind" not in nbeval.catalogue()
    assert registry.get_class("bleu").__name__ == "Bleu"
