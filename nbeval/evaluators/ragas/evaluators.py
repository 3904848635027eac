"""The six RAGAS-family evaluators: a ragas metric per evaluator, driven by :mod:`.bridge`.

Every number is the value ragas's own ``ascore`` returns; nbeval supplies the model calls, keeps
what ragas saw for the rationale, and turns what ragas cannot score into an explicit missing value
with the reason (a reply that never fitted ragas's schema, a NaN), never a 0. What the six share
(judge settings, running one ragas metric on a row) is :mod:`.base`; its public names are handed
out here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from nbeval.errors import EvaluatorError, ResourceError
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Param
from nbeval.evaluators.ragas.base import (
    NO_QUESTION,
    PARSE_ATTEMPTS,
    RAGAS_JUDGE_PARAMS,
    RagasEvaluator,
    ScoreGen,
    SingleMetric,
    chunk_texts,
    question_or_note,
    ragas_modules,
)
from nbeval.evaluators.ragas.transcript import render
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = [
    "NO_QUESTION",
    "RAGAS_JUDGE_PARAMS",
    "AnswerCorrectnessEvaluator",
    "AnswerRelevancyEvaluator",
    "ContextPrecisionEvaluator",
    "ContextRecallEvaluator",
    "FaithfulnessEvaluator",
    "RagasEvaluator",
    "RagasScore",
    "harmonic_mean",
]


@register
class FaithfulnessEvaluator(SingleMetric):
    """``faithfulness``: how much of the answer the retrieved context supports (ragas's metric)."""

    spec = EvaluatorSpec(
        id="faithfulness",
        family="ragas",
        kind="score",
        inputs=("context", "actual_output"),
        optional_inputs=("input",),
        resources=("judge",),
        description=(
            "The judge breaks the answer into standalone statements, then decides for each whether the "
            "retrieved context supports it; the score is the supported share. The rationale lists the "
            "statements and the verdicts."
        ),
        params=(PARSE_ATTEMPTS,),
        metrics=(
            MetricSpec(
                "faithfulness",
                threshold=0.75,
                primary=True,
                description="share of the answer's statements that the retrieved context supports",
            ),
        ),
    )

    nonempty = ("actual_output",)

    def build(self) -> Any:
        """Build ragas's ``Faithfulness``, asking the judge."""
        return ragas_modules(self.spec.id)[0].Faithfulness(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        """Give ragas the question (or a note that there is none), the answer and the retrieved chunks' texts."""
        return {
            "user_input": question_or_note(row, notes),
            "response": row.actual_output,
            "retrieved_contexts": chunk_texts(row),
        }


@register
class AnswerRelevancyEvaluator(SingleMetric):
    """``answer_relevancy``: how well the answer addresses the question asked (ragas's metric)."""

    spec = EvaluatorSpec(
        id="answer_relevancy",
        family="ragas",
        kind="score",
        inputs=("input", "actual_output"),
        resources=("judge", "embedder"),
        description=(
            "The judge writes `strictness` questions the answer would answer (and says whether the answer "
            "is noncommittal); the score is the mean cosine similarity of their embeddings to the real "
            "question's, 0 when every answer was noncommittal. The rationale lists the questions."
        ),
        params=(
            Param(
                "strictness", int, 3, "how many questions the judge writes back from the answer (ragas's strictness)"
            ),
            PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec(
                "answer_relevancy",
                threshold=0.75,
                primary=True,
                description="mean cosine of the generated questions to the question (0 when noncommittal)",
            ),
        ),
    )

    nonempty = ("actual_output",)

    def build(self) -> Any:
        """Build ragas's ``AnswerRelevancy`` with the judge, the embedder and the ``strictness`` given."""
        return ragas_modules(self.spec.id)[0].AnswerRelevancy(
            llm=self._llm, embeddings=self._embeddings, strictness=_strictness(self)
        )

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        """Give ragas the question and the answer."""
        return {"user_input": row.input, "response": row.actual_output}


@register
class ContextPrecisionEvaluator(SingleMetric):
    """``context_precision``: whether the useful retrieved chunks are ranked first (ragas's metric)."""

    spec = EvaluatorSpec(
        id="context_precision",
        family="ragas",
        kind="score",
        inputs=("input", "expected_output", "context"),
        resources=("judge",),
        description=(
            "The judge decides for each retrieved chunk, in rank order, whether it was useful for the "
            "expected answer; the score is the average precision of those verdicts, high when the useful "
            "chunks come first. The rationale gives each chunk's verdict and reason."
        ),
        params=(PARSE_ATTEMPTS,),
        metrics=(
            MetricSpec(
                "context_precision",
                threshold=0.75,
                primary=True,
                description="average precision of the useful chunks over the ranking",
            ),
        ),
    )

    def build(self) -> Any:
        """Build ragas's ``ContextPrecision``, asking the judge."""
        return ragas_modules(self.spec.id)[0].ContextPrecision(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        """Give ragas the question, the expected answer and the retrieved chunks' texts, in rank order."""
        return {"user_input": row.input, "reference": row.expected_output, "retrieved_contexts": chunk_texts(row)}


@register
class ContextRecallEvaluator(SingleMetric):
    """``context_recall``: how much of the expected answer the retrieved context supports (ragas's metric)."""

    spec = EvaluatorSpec(
        id="context_recall",
        family="ragas",
        kind="score",
        inputs=("expected_output", "context"),
        optional_inputs=("input",),
        resources=("judge",),
        description=(
            "The judge splits the expected answer into sentences and decides for each whether the "
            "retrieved context supports it; the score is the supported share. The rationale gives each "
            "sentence's verdict."
        ),
        params=(PARSE_ATTEMPTS,),
        metrics=(
            MetricSpec(
                "context_recall",
                threshold=0.75,
                primary=True,
                description="share of the expected answer's sentences attributable to the retrieved context",
            ),
        ),
    )

    def build(self) -> Any:
        """Build ragas's ``ContextRecall``, asking the judge."""
        return ragas_modules(self.spec.id)[0].ContextRecall(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        """Give ragas the question (or a note saying it has none), the chunks' texts and the expected answer."""
        return {
            "user_input": question_or_note(row, notes),
            "retrieved_contexts": chunk_texts(row),
            "reference": row.expected_output,
        }


@register
class AnswerCorrectnessEvaluator(SingleMetric):
    """``answer_correctness``: how far the answer agrees with the expected one, in statements and in meaning.

    This is ragas's metric.
    """

    spec = EvaluatorSpec(
        id="answer_correctness",
        family="ragas",
        kind="score",
        inputs=("input", "expected_output", "actual_output"),
        resources=("judge", "embedder"),
        description=(
            "The judge breaks the answer and the expected answer into statements and sorts them into true "
            "positives, false positives and false negatives; the score is weights[0] × the F-score of "
            "that sorting (beta = 1: TP / (TP + (FP + FN) / 2)) + weights[1] × the cosine similarity of "
            "the two texts' embeddings, over the sum of the weights. The rationale lists the sorted "
            "statements."
        ),
        params=(
            Param(
                "weights", list[float], [0.75, 0.25], "the weights of the factual part and the semantic similarity part"
            ),
            Param("beta", float, 1.0, "the F-beta of the factual part (above 1 favours recall)"),
            PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec(
                "answer_correctness",
                threshold=0.75,
                primary=True,
                description="weighted factuality F-score and semantic similarity against the expected answer",
            ),
        ),
    )

    step_titles: ClassVar[Mapping[tuple[str, int], str]] = {
        ("StatementGeneratorOutput", 1): "statements in the answer",
        ("StatementGeneratorOutput", 2): "statements in the expected answer",
    }

    def build(self) -> Any:
        """Build ragas's ``AnswerCorrectness`` with the ``weights`` and ``beta`` given; ragas's refusal is an error."""
        weights, beta = self.params.get("weights"), self.params["beta"]
        try:  # ragas checks the weights (two, non-negative, not both 0) and the beta
            return ragas_modules(self.spec.id)[0].AnswerCorrectness(
                llm=self._llm, embeddings=self._embeddings, weights=list(weights or ()), beta=beta
            )
        except (ValueError, TypeError) as exc:
            msg = f"evaluator '{self.spec.id}': {exc} (weights={weights!r}, beta={beta!r})"
            raise EvaluatorError(msg) from None

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        """Give ragas the question, the answer and the expected answer."""
        return {"user_input": row.input, "response": row.actual_output, "reference": row.expected_output}


@register
class RagasScore(RagasEvaluator):
    """faithfulness, answer_relevancy, context_precision and context_recall, and their harmonic mean."""

    spec = EvaluatorSpec(
        id="ragas",
        family="ragas",
        kind="score",
        inputs=("input", "expected_output", "context", "actual_output"),
        resources=("judge", "embedder"),
        description=(
            "Runs faithfulness, answer_relevancy, context_precision and context_recall on the row and "
            "reports each, and their harmonic mean as `ragas`. A row whose component lacks a value (a "
            "reply that could not be parsed, nothing to count) has no `ragas` value, and its error names "
            "the component."
        ),
        params=(
            Param(
                "strictness", int, 3, "how many questions the judge writes back from the answer (ragas's strictness)"
            ),
            PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec(
                "ragas",
                threshold=0.75,
                primary=True,
                description=("harmonic mean of faithfulness, answer_relevancy, context_precision and context_recall"),
            ),
            MetricSpec(
                "faithfulness",
                threshold=0.75,
                description="share of the answer's statements that the retrieved context supports",
            ),
            MetricSpec(
                "answer_relevancy",
                threshold=0.75,
                description="mean cosine of the generated questions to the question (0 when noncommittal)",
            ),
            MetricSpec(
                "context_precision",
                threshold=0.75,
                description="average precision of the useful chunks over the ranking",
            ),
            MetricSpec(
                "context_recall",
                threshold=0.75,
                description="share of the expected answer's sentences attributable to the retrieved context",
            ),
        ),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        metrics, bridge = ragas_modules(self.spec.id)
        parts = {
            "faithfulness": metrics.Faithfulness(llm=self._llm),
            "answer_relevancy": metrics.AnswerRelevancy(
                llm=self._llm, embeddings=self._embeddings, strictness=_strictness(self)
            ),
            "context_precision": metrics.ContextPrecision(llm=self._llm),
            "context_recall": metrics.ContextRecall(llm=self._llm),
        }
        self._parts = {name: bridge.render_schemas_once(metric) for name, metric in parts.items()}

    def metrics(self) -> list[Any]:
        """Give the four ragas metrics this evaluator runs."""
        return list(self._parts.values())

    def score(self, row: Row) -> ScoreGen:
        """Run the four ragas metrics on the row and score each, and their harmonic mean as ``ragas``.

        A component without a value leaves ``ragas`` without one, the error naming the component.
        """
        session = self.session()
        chunks = chunk_texts(row)
        inputs: dict[str, dict[str, Any]] = {
            "faithfulness": {"user_input": row.input, "response": row.actual_output, "retrieved_contexts": chunks},
            "answer_relevancy": {"user_input": row.input, "response": row.actual_output},
            "context_precision": {
                "user_input": row.input,
                "reference": row.expected_output,
                "retrieved_contexts": chunks,
            },
            "context_recall": {"user_input": row.input, "retrieved_contexts": chunks, "reference": row.expected_output},
        }
        values: dict[str, float | None] = {"ragas": None}
        why: list[str] = []
        parse_failed = False
        sections: list[str] = []
        for name, metric in self._parts.items():
            first_step = len(session.steps)
            reason: str | None
            if name in ("faithfulness", "answer_relevancy") and not row.actual_output:
                values[name], reason, failed = None, f"{name}: ragas cannot score an empty actual_output", False
            else:
                try:
                    values[name], reason, failed = yield from self.run_metric(session, name, metric, inputs[name])
                except ResourceError as exc:  # one component's failed call: the others still count
                    values[name], reason, failed = None, f"{name}: {exc}", False
            parse_failed = parse_failed or failed
            if reason:
                why.append(reason)
            shown = "no value" if values[name] is None else f"{values[name]:.3f}"
            steps = [s.to_dict() for s in session.steps[first_step:]]
            sections.append(f"== {name}: {shown} ==\n" + render(steps))
        components = [values[n] for n in self._parts]
        if all(v is not None for v in components):
            values["ragas"] = harmonic_mean([v for v in components if v is not None])
        else:
            lacking = [n for n in self._parts if values[n] is None]
            why.insert(0, f"no ragas score: {', '.join(lacking)} lacked a value")
        score = self.finish(session, values, why, parse_failed, [])
        score.rationale = "\n\n".join(sections)
        return score


def _strictness(ev: Evaluator) -> int:
    strictness = ev.params.get("strictness")
    if isinstance(strictness, bool) or not isinstance(strictness, int) or strictness < 1:
        msg = f"evaluator '{ev.spec.id}': strictness must be a whole number of at least 1, got {strictness!r}"
        raise EvaluatorError(msg)
    return strictness


def harmonic_mean(values: list[float]) -> float:
    """The harmonic mean of non-negative ``values``; 0 when any is 0 (the limit as it goes to 0)."""
    if any(v <= 0 for v in values):
        return 0.0
    return len(values) / sum(1.0 / v for v in values)
