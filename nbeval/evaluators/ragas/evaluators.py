"""The six RAGAS-family evaluators: a ragas metric per evaluator, driven by :mod:`.bridge`.

Every number is the value ragas's own ``ascore`` returns; nbeval supplies the model calls, keeps
what ragas saw for the rationale, and turns what ragas cannot score into an explicit missing value
with the reason (a reply that never fitted ragas's schema, a NaN), never a 0.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from ragas.metrics.collections import (
    AnswerCorrectness,
    AnswerRelevancy,
    ContextPrecision,
    ContextRecall,
    Faithfulness,
)

from nbeval.errors import EvaluatorError, ResourceError
from nbeval.evaluators.base import Evaluator, Request, Score
from nbeval.evaluators.judges.core import configure_judge, usage_details
from nbeval.evaluators.ragas.bridge import ParseFailure, RagasEmbeddings, RagasLLM, Session, render_schemas_once
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

#: What ragas's own client sends with every call (``ragas.llms.base.InstructorModelArgs``), so the
#: same judge gives the same replies through nbeval as through ragas.
RAGAS_JUDGE_PARAMS: Mapping[str, Any] = {"temperature": 0.01, "top_p": 0.1, "max_tokens": 1024}
#: Said to ragas in place of a question a row does not have (faithfulness and context_recall read
#: the question only as background).
NO_QUESTION = "(no question was given)"

_ScoreGen = Generator[Request, Any, Score]


class RagasEvaluator(Evaluator):
    """Base of the family: judge settings, the ragas metric objects, one row's run."""

    @classmethod
    def extra_params(cls) -> dict[str, Any]:
        return {**super().extra_params(), "judge_params": None}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.judge_params = configure_judge(self, RAGAS_JUDGE_PARAMS)
        attempts = self.params.get("parse_attempts")
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            msg = f"evaluator '{self.spec.id}': parse_attempts must be a whole number of at least 1, got {attempts!r}"
            raise EvaluatorError(msg)
        self._llm = RagasLLM()
        self._embeddings = RagasEmbeddings()

    #: How ``nbeval evaluator show`` heads :meth:`prompt_text`.
    prompt_heading: ClassVar[str] = "ragas's prompts (ragas writes them; each call adds the output's JSON schema):"

    @classmethod
    def prompt_text(cls) -> str:
        """The instruction of every prompt ragas sends for this evaluator, in the order it asks."""
        from ragas.prompt.metrics.base_prompt import BasePrompt

        parts = []
        for metric in cls().metrics():
            for prompt in vars(metric).values():
                if isinstance(prompt, BasePrompt):
                    parts.append(f"[{metric.name}: {type(prompt).__name__}]\n{prompt.instruction.strip()}")
        return "\n\n".join(parts)

    def metrics(self) -> list[Any]:
        """The ragas metric objects this evaluator runs."""
        raise NotImplementedError

    def session(self) -> Session:
        return Session(judge=self.params.get("judge"), judge_params=self.judge_params,
                       embedder=self.params.get("embedder"), attempts=self.params["parse_attempts"])

    def run_metric(self, session: Session, name: str, metric: Any, inputs: Mapping[str, Any],
                   ) -> Generator[Request, Any, tuple[float | None, str | None, bool]]:
        """Run ragas's ``metric`` on ``inputs``: ``(value, why it has none, was it a parse failure)``."""
        try:
            result = yield from session.drive(metric.ascore(**inputs))
        except ParseFailure as failure:
            return None, f"{name}: {failure}", True
        value = float(result.value)
        if math.isnan(value):
            return None, f"{name}: ragas found nothing to count ({_NAN_REASONS.get(name, 'no value')})", False
        return value, None, False

    #: Headings of particular steps in the rationale (see :func:`.transcript.render`).
    step_titles: ClassVar[Mapping[tuple[str, int], str]] = {}

    def finish(self, session: Session, values: dict[str, float | None], why: list[str], parse_failed: bool,
               notes: list[str]) -> Score:
        steps = [s.to_dict() for s in session.steps]
        details = {"judge": usage_details(session.replies), "ragas": steps}
        return Score(values, rationale=render(steps, notes=notes, titles=self.step_titles),
                     label="parse_failure" if parse_failed else None,
                     error="; ".join(why) or None, details=details)


def _question(row: Row, notes: list[str]) -> str:
    if row.input:
        return row.input
    notes.append(f"the row has no question; ragas was told {NO_QUESTION!r}")
    return NO_QUESTION


def _chunks(row: Row) -> list[str]:
    return [c.text for c in row.context]


_NAN_REASONS = {
    "faithfulness": "the judge found no statements in the answer",
    "context_recall": "the judge found no sentences in the expected answer",
    "context_precision": "no chunk verdicts",
}


class _SingleMetric(RagasEvaluator):
    """An evaluator reporting one ragas metric, named after the evaluator."""

    #: Inputs ragas refuses when empty (an empty answer is an answer, but ragas cannot score it).
    nonempty: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._metric = render_schemas_once(self.build())

    def metrics(self) -> list[Any]:
        return [self._metric]

    def build(self) -> Any:
        """The ragas metric object (built once per evaluator)."""
        raise NotImplementedError

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        """The keyword arguments of ragas's ``ascore`` for ``row``."""
        raise NotImplementedError

    def score(self, row: Row) -> _ScoreGen:
        name = self.spec.primary.name
        empty = [f for f in self.nonempty if not getattr(row, f)]
        if empty:
            return Score({name: None}, error=f"ragas's {name} cannot score an empty {' or '.join(empty)}")
        notes: list[str] = []
        session = self.session()
        value, why, parse_failed = yield from self.run_metric(session, name, self._metric, self.inputs(row, notes))
        return self.finish(session, {name: value}, [why] if why else [], parse_failed, notes)


@register("faithfulness")
class FaithfulnessEvaluator(_SingleMetric):
    nonempty = ("actual_output",)

    def build(self) -> Any:
        return Faithfulness(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": _question(row, notes), "response": row.actual_output,
                "retrieved_contexts": _chunks(row)}


@register("answer_relevancy")
class AnswerRelevancyEvaluator(_SingleMetric):
    nonempty = ("actual_output",)

    def build(self) -> Any:
        return AnswerRelevancy(llm=self._llm, embeddings=self._embeddings, strictness=_strictness(self))

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": row.input, "response": row.actual_output}


@register("context_precision")
class ContextPrecisionEvaluator(_SingleMetric):
    def build(self) -> Any:
        return ContextPrecision(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": row.input, "reference": row.expected_output, "retrieved_contexts": _chunks(row)}


@register("context_recall")
class ContextRecallEvaluator(_SingleMetric):
    def build(self) -> Any:
        return ContextRecall(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": _question(row, notes), "retrieved_contexts": _chunks(row),
                "reference": row.expected_output}


@register("answer_correctness")
class AnswerCorrectnessEvaluator(_SingleMetric):
    step_titles: ClassVar[Mapping[tuple[str, int], str]] = {
        ("StatementGeneratorOutput", 1): "statements in the answer",
        ("StatementGeneratorOutput", 2): "statements in the expected answer"}

    def build(self) -> Any:
        weights, beta = self.params.get("weights"), self.params["beta"]
        try:  # ragas checks the weights (two, non-negative, not both 0) and the beta
            return AnswerCorrectness(llm=self._llm, embeddings=self._embeddings, weights=list(weights or ()),
                                     beta=beta)
        except (ValueError, TypeError) as exc:
            msg = f"evaluator '{self.spec.id}': {exc} (weights={weights!r}, beta={beta!r})"
            raise EvaluatorError(msg) from None

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": row.input, "response": row.actual_output, "reference": row.expected_output}


@register("ragas")
class RagasScore(RagasEvaluator):
    """faithfulness, answer_relevancy, context_precision and context_recall, and their harmonic mean."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        parts = {
            "faithfulness": Faithfulness(llm=self._llm),
            "answer_relevancy": AnswerRelevancy(llm=self._llm, embeddings=self._embeddings,
                                                strictness=_strictness(self)),
            "context_precision": ContextPrecision(llm=self._llm),
            "context_recall": ContextRecall(llm=self._llm),
        }
        self._parts = {name: render_schemas_once(metric) for name, metric in parts.items()}

    def metrics(self) -> list[Any]:
        return list(self._parts.values())

    def score(self, row: Row) -> _ScoreGen:
        session = self.session()
        chunks = _chunks(row)
        inputs: dict[str, dict[str, Any]] = {
            "faithfulness": {"user_input": row.input, "response": row.actual_output, "retrieved_contexts": chunks},
            "answer_relevancy": {"user_input": row.input, "response": row.actual_output},
            "context_precision": {"user_input": row.input, "reference": row.expected_output,
                                  "retrieved_contexts": chunks},
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
