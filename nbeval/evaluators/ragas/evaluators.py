"""The six RAGAS-family evaluators: a ragas metric per evaluator, driven by :mod:`.bridge`.

Every number is the value ragas's own ``ascore`` returns; nbeval supplies the model calls, keeps
what ragas saw for the rationale, and turns what ragas cannot score into an explicit missing value
with the reason (a reply that never fitted ragas's schema, a NaN), never a 0.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from nbeval.errors import EvaluatorError, MissingDependency, ResourceError
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Param, Request, Score
from nbeval.evaluators.judges.core import configure_judge, usage_details
from nbeval.evaluators.ragas.transcript import render
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Row
    from nbeval.evaluators.ragas.bridge import Session

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


def _ragas(id: str) -> tuple[ModuleType, ModuleType]:
    """ragas's metric classes and :mod:`.bridge`, imported when an evaluator is first built, so
    that importing this module (to list or index the evaluators) imports no ragas."""
    try:
        import ragas.metrics.collections as metrics

        from nbeval.evaluators.ragas import bridge
    except ImportError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        msg = (f"evaluator '{id}' needs the package '{missing}', which is not installed; "
               'install it with: pip install "nbeval[ragas]"')
        raise MissingDependency(msg) from exc
    return metrics, bridge


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
        bridge = _ragas(self.spec.id)[1]
        self._llm = bridge.RagasLLM()
        self._embeddings = bridge.RagasEmbeddings()

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
        bridge = _ragas(self.spec.id)[1]
        session: Session = bridge.Session(judge=self.params.get("judge"), judge_params=self.judge_params,
                                          embedder=self.params.get("embedder"), attempts=self.params["parse_attempts"])
        return session

    def run_metric(self, session: Session, name: str, metric: Any, inputs: Mapping[str, Any],
                   ) -> Generator[Request, Any, tuple[float | None, str | None, bool]]:
        """Run ragas's ``metric`` on ``inputs``: ``(value, why it has none, was it a parse failure)``."""
        bridge = _ragas(self.spec.id)[1]
        try:
            result = yield from session.drive(metric.ascore(**inputs))
        except bridge.ParseFailure as failure:
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
        self._metric = _ragas(self.spec.id)[1].render_schemas_once(self.build())

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


#: Every ragas evaluator's one parameter.
_PARSE_ATTEMPTS = Param("parse_attempts", int, 4,
    "judge calls per ragas prompt before a reply that never fits its schema counts as a parse failure")


@register
class FaithfulnessEvaluator(_SingleMetric):
    spec = EvaluatorSpec(
        id="faithfulness", family="ragas", kind="score", inputs=("context", "actual_output"),
        optional_inputs=("input",), resources=("judge",),
        description=("The judge breaks the answer into standalone statements, then decides for each whether the "
                     "retrieved context supports it; the score is the supported share. The rationale lists the "
                     "statements and the verdicts."),
        params=(
            _PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec("faithfulness", threshold=0.75, primary=True,
                       description="share of the answer's statements that the retrieved context supports"),
        ),
    )

    nonempty = ("actual_output",)

    def build(self) -> Any:
        return _ragas(self.spec.id)[0].Faithfulness(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": _question(row, notes), "response": row.actual_output,
                "retrieved_contexts": _chunks(row)}


@register
class AnswerRelevancyEvaluator(_SingleMetric):
    spec = EvaluatorSpec(
        id="answer_relevancy", family="ragas", kind="score", inputs=("input", "actual_output"),
        resources=("judge", "embedder"),
        description=("The judge writes `strictness` questions the answer would answer (and says whether the answer "
                     "is noncommittal); the score is the mean cosine similarity of their embeddings to the real "
                     "question's, 0 when every answer was noncommittal. The rationale lists the questions."),
        params=(
            Param("strictness", int, 3,
                  "how many questions the judge writes back from the answer (ragas's strictness)"),
            _PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec("answer_relevancy", threshold=0.75, primary=True,
                       description="mean cosine of the generated questions to the question (0 when noncommittal)"),
        ),
    )

    nonempty = ("actual_output",)

    def build(self) -> Any:
        return _ragas(self.spec.id)[0].AnswerRelevancy(llm=self._llm, embeddings=self._embeddings,
                                                       strictness=_strictness(self))

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": row.input, "response": row.actual_output}


@register
class ContextPrecisionEvaluator(_SingleMetric):
    spec = EvaluatorSpec(
        id="context_precision", family="ragas", kind="score", inputs=("input", "expected_output", "context"),
        resources=("judge",),
        description=("The judge decides for each retrieved chunk, in rank order, whether it was useful for the "
                     "expected answer; the score is the average precision of those verdicts, high when the useful "
                     "chunks come first. The rationale gives each chunk's verdict and reason."),
        params=(
            _PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec("context_precision", threshold=0.75, primary=True,
                       description="average precision of the useful chunks over the ranking"),
        ),
    )

    def build(self) -> Any:
        return _ragas(self.spec.id)[0].ContextPrecision(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": row.input, "reference": row.expected_output, "retrieved_contexts": _chunks(row)}


@register
class ContextRecallEvaluator(_SingleMetric):
    spec = EvaluatorSpec(
        id="context_recall", family="ragas", kind="score", inputs=("expected_output", "context"),
        optional_inputs=("input",), resources=("judge",),
        description=("The judge splits the expected answer into sentences and decides for each whether the "
                     "retrieved context supports it; the score is the supported share. The rationale gives each "
                     "sentence's verdict."),
        params=(
            _PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec("context_recall", threshold=0.75, primary=True,
                       description="share of the expected answer's sentences attributable to the retrieved context"),
        ),
    )

    def build(self) -> Any:
        return _ragas(self.spec.id)[0].ContextRecall(llm=self._llm)

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": _question(row, notes), "retrieved_contexts": _chunks(row),
                "reference": row.expected_output}


@register
class AnswerCorrectnessEvaluator(_SingleMetric):
    spec = EvaluatorSpec(
        id="answer_correctness", family="ragas", kind="score", inputs=("input", "expected_output", "actual_output"),
        resources=("judge", "embedder"),
        description=("The judge breaks the answer and the expected answer into statements and sorts them into true "
                     "positives, false positives and false negatives; the score is weights[0] × the F-score of "
                     "that sorting (beta = 1: TP / (TP + (FP + FN) / 2)) + weights[1] × the cosine similarity of "
                     "the two texts' embeddings, over the sum of the weights. The rationale lists the sorted "
                     "statements."),
        params=(
            Param("weights", list[float], [0.75, 0.25],
                  "the weights of the factual part and the semantic similarity part"),
            Param("beta", float, 1.0, "the F-beta of the factual part (above 1 favours recall)"),
            _PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec("answer_correctness", threshold=0.75, primary=True,
                       description="weighted factuality F-score and semantic similarity against the expected answer"),
        ),
    )

    step_titles: ClassVar[Mapping[tuple[str, int], str]] = {
        ("StatementGeneratorOutput", 1): "statements in the answer",
        ("StatementGeneratorOutput", 2): "statements in the expected answer"}

    def build(self) -> Any:
        weights, beta = self.params.get("weights"), self.params["beta"]
        try:  # ragas checks the weights (two, non-negative, not both 0) and the beta
            return _ragas(self.spec.id)[0].AnswerCorrectness(llm=self._llm, embeddings=self._embeddings,
                                                             weights=list(weights or ()), beta=beta)
        except (ValueError, TypeError) as exc:
            msg = f"evaluator '{self.spec.id}': {exc} (weights={weights!r}, beta={beta!r})"
            raise EvaluatorError(msg) from None

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        return {"user_input": row.input, "response": row.actual_output, "reference": row.expected_output}


@register
class RagasScore(RagasEvaluator):
    """faithfulness, answer_relevancy, context_precision and context_recall, and their harmonic mean."""

    spec = EvaluatorSpec(
        id="ragas", family="ragas", kind="score", inputs=("input", "expected_output", "context", "actual_output"),
        resources=("judge", "embedder"),
        description=("Runs faithfulness, answer_relevancy, context_precision and context_recall on the row and "
                     "reports each, and their harmonic mean as `ragas`. A row whose component lacks a value (a "
                     "reply that could not be parsed, nothing to count) has no `ragas` value, and its error names "
                     "the component."),
        params=(
            Param("strictness", int, 3,
                  "how many questions the judge writes back from the answer (ragas's strictness)"),
            _PARSE_ATTEMPTS,
        ),
        metrics=(
            MetricSpec("ragas", threshold=0.75, primary=True,
                       description=("harmonic mean of faithfulness, answer_relevancy, context_precision and "
                                    "context_recall")),
            MetricSpec("faithfulness", threshold=0.75,
                       description="share of the answer's statements that the retrieved context supports"),
            MetricSpec("answer_relevancy", threshold=0.75,
                       description="mean cosine of the generated questions to the question (0 when noncommittal)"),
            MetricSpec("context_precision", threshold=0.75,
                       description="average precision of the useful chunks over the ranking"),
            MetricSpec("context_recall", threshold=0.75,
                       description="share of the expected answer's sentences attributable to the retrieved context"),
        ),
    )

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        metrics, bridge = _ragas(self.spec.id)
        parts = {
            "faithfulness": metrics.Faithfulness(llm=self._llm),
            "answer_relevancy": metrics.AnswerRelevancy(llm=self._llm, embeddings=self._embeddings,
                                                        strictness=_strictness(self)),
            "context_precision": metrics.ContextPrecision(llm=self._llm),
            "context_recall": metrics.ContextRecall(llm=self._llm),
        }
        self._parts = {name: bridge.render_schemas_once(metric) for name, metric in parts.items()}

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
