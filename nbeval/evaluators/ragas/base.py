"""The base of the RAGAS family: judge settings, ragas on first use, running a metric, one-metric evaluators.

That is the judge settings, ragas imported on first use, one ragas metric run on a row through
:mod:`.bridge`, and the evaluator that reports a single metric.

What ragas cannot score becomes an explicit missing value with the reason (a reply that never
fitted ragas's schema, a NaN), never a 0. The evaluators themselves are :mod:`.evaluators`.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, ClassVar

from nbeval.errors import EvaluatorError, MissingDependency
from nbeval.evaluators.base import Evaluator, Param, Request, Score
from nbeval.evaluators.judges.core import configure_judge, usage_details
from nbeval.evaluators.ragas.transcript import render

if TYPE_CHECKING:
    from nbeval.data.model import Row
    from nbeval.evaluators.ragas.bridge import Session

__all__ = [
    "NO_QUESTION",
    "PARSE_ATTEMPTS",
    "RAGAS_JUDGE_PARAMS",
    "RagasEvaluator",
    "ScoreGen",
    "SingleMetric",
    "chunk_texts",
    "question_or_note",
    "ragas_modules",
]

#: What ragas's own client sends with every call (``ragas.llms.base.InstructorModelArgs``), so the
#: same judge gives the same replies through nbeval as through ragas.
RAGAS_JUDGE_PARAMS: Mapping[str, Any] = {"temperature": 0.01, "top_p": 0.1, "max_tokens": 1024}
#: Said to ragas in place of a question a row does not have (faithfulness and context_recall read
#: the question only as background).
NO_QUESTION = "(no question was given)"

#: What a ragas evaluator's ``score`` yields and returns.
ScoreGen = Generator[Request, Any, Score]


def ragas_modules(id: str) -> tuple[ModuleType, ModuleType]:
    """Import ragas's metric classes and :mod:`.bridge` when an evaluator is first built.

    So importing this module (to list or index the evaluators) imports no ragas.
    """
    try:
        import ragas.metrics.collections as metrics

        from nbeval.evaluators.ragas import bridge
    except ImportError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        msg = (
            f"evaluator '{id}' needs the package '{missing}', which is not installed; "
            'install it with: pip install "nbeval[ragas]"'
        )
        raise MissingDependency(msg) from exc
    return metrics, bridge


class RagasEvaluator(Evaluator):
    """Base of the family: judge settings, the ragas metric objects, one row's run."""

    @classmethod
    def extra_params(cls) -> dict[str, Any]:
        """Add ``judge_params=`` to the parameters every ragas evaluator accepts."""
        return {**super().extra_params(), "judge_params": None}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.judge_params = configure_judge(self, RAGAS_JUDGE_PARAMS)
        attempts = self.params.get("parse_attempts")
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            msg = f"evaluator '{self.spec.id}': parse_attempts must be a whole number of at least 1, got {attempts!r}"
            raise EvaluatorError(msg)
        bridge = ragas_modules(self.spec.id)[1]
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
                if not isinstance(prompt, BasePrompt):
                    continue
                part = f"[{metric.name}: {type(prompt).__name__}]\n{prompt.instruction.strip()}"
                if part not in parts:  # two metrics of one evaluator may send the same prompts
                    parts.append(part)
        return "\n\n".join(parts)

    def metrics(self) -> list[Any]:
        """The ragas metric objects this evaluator runs."""
        raise NotImplementedError

    def session(self) -> Session:
        """Open a fresh bridge session for one row.

        The session has the judge and embedder this evaluator was given, and its parse attempts.
        """
        bridge = ragas_modules(self.spec.id)[1]
        session: Session = bridge.Session(
            judge=self.params.get("judge"),
            judge_params=self.judge_params,
            embedder=self.params.get("embedder"),
            attempts=self.params["parse_attempts"],
        )
        return session

    def run_metric(
        self,
        session: Session,
        name: str,
        metric: Any,
        inputs: Mapping[str, Any],
    ) -> Generator[Request, Any, tuple[float | None, str | None, bool]]:
        """Run ragas's ``metric`` on ``inputs``: ``(value, why it has none, was it a parse failure)``."""
        bridge = ragas_modules(self.spec.id)[1]
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

    def finish(
        self, session: Session, values: dict[str, float | None], why: list[str], parse_failed: bool, notes: list[str]
    ) -> Score:
        """Make the score of one row from ragas's ``values``.

        The steps of ``session`` are the rationale and details (with the judge's usage), ``why`` is
        the error, and the label is ``parse_failure`` when a judge reply could not be read.
        """
        steps = [s.to_dict() for s in session.steps]
        details = {"judge": usage_details(session.replies), "ragas": steps}
        return Score(
            values,
            rationale=render(steps, notes=notes, titles=self.step_titles),
            label="parse_failure" if parse_failed else None,
            error="; ".join(why) or None,
            details=details,
        )


def question_or_note(row: Row, notes: list[str]) -> str:
    """The row's question, or :data:`NO_QUESTION` (saying so in ``notes``) when it has none."""
    if row.input:
        return row.input
    notes.append(f"the row has no question; ragas was told {NO_QUESTION!r}")
    return NO_QUESTION


def chunk_texts(row: Row) -> list[str]:
    """The texts of the row's retrieved chunks, in rank order."""
    return [c.text for c in row.context]


_NAN_REASONS = {
    "faithfulness": "the judge found no statements in the answer",
    "context_recall": "the judge found no sentences in the expected answer",
    "context_precision": "no chunk verdicts",
    "topic_adherence": "the judge found no topics in the user's messages",
}


class SingleMetric(RagasEvaluator):
    """An evaluator reporting one ragas metric, named after the evaluator."""

    #: Inputs ragas refuses when empty (an empty answer is an answer, but ragas cannot score it).
    nonempty: ClassVar[tuple[str, ...]] = ()

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._metric = ragas_modules(self.spec.id)[1].render_schemas_once(self.build())

    def metrics(self) -> list[Any]:
        """Give the one ragas metric this evaluator runs."""
        return [self._metric]

    def build(self) -> Any:
        """The ragas metric object (built once per evaluator)."""
        raise NotImplementedError

    def inputs(self, row: Row, notes: list[str]) -> dict[str, Any]:
        """The keyword arguments of ragas's ``ascore`` for ``row``."""
        raise NotImplementedError

    def score(self, row: Row) -> ScoreGen:
        """Run the ragas metric on the row's inputs; an input ragas refuses when empty gives no value."""
        name = self.spec.primary.name
        empty = [f for f in self.nonempty if not getattr(row, f)]
        if empty:
            return Score({name: None}, error=f"ragas's {name} cannot score an empty {' or '.join(empty)}")
        notes: list[str] = []
        session = self.session()
        value, why, parse_failed = yield from self.run_metric(session, name, self._metric, self.inputs(row, notes))
        return self.finish(session, {name: value}, [why] if why else [], parse_failed, notes)


#: Every ragas evaluator's one parameter.
PARSE_ATTEMPTS = Param(
    "parse_attempts",
    int,
    4,
    "judge calls per ragas prompt before a reply that never fits its schema counts as a parse failure",
)
