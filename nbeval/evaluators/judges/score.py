"""Judge evaluators that produce a number rather than a yes or no.

They are ``fact_check``, ``context_relevancy``, ``answer_relevancy_score`` and ``pipeline`` (your
own function or judge prompt per row).

Of these only ``answer_relevancy_score`` rates from a fixed set (a whole grade from 0 to 5), so only
it takes ``score_mode="expected"`` (the grade's expected value from the judge's log-probabilities;
see :mod:`nbeval.evaluators.judges.expected`): ``fact_check`` writes any number in [0, 1],
``context_relevancy`` a list of sentences and ``pipeline`` any number.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.judges.core import JudgeEvaluator, JudgePrompt, row_values, usage_details
from nbeval.evaluators.judges.expected import GRADES_0_5, NO_RATING_TOKEN, SCORE_MODE_PARAMS, Rated, rate
from nbeval.evaluators.judges.parse import find_json, parse_index_list, parse_number
from nbeval.evaluators.judges.prompts import PROMPTS
from nbeval.evaluators.registry import register
from nbeval.evaluators.row_fields import FUNCTION_FIELDS, field_value
from nbeval.evaluators.scorer import ScoringFunction, scoring_function

if TYPE_CHECKING:
    from nbeval.chat.structured import VerdictSchema
    from nbeval.data.model import LlmDataset, Row

__all__ = ["PIPELINE_FIELDS", "AnswerRelevancyScore", "ContextRelevancy", "FactCheck", "Pipeline", "field_value"]

#: Row fields a pipeline function may take by name (``row`` takes the whole row): those of every
#: scoring function (``field_value`` gives each its value; both live in ``row_fields``).
PIPELINE_FIELDS = FUNCTION_FIELDS


def _failed(metric: str, parsed: Any, replies: list[Any]) -> Score:
    return Score(
        {metric: None},
        rationale=parsed.rationale,
        label="parse_failure",
        error=parsed.error,
        details={"judge": usage_details(replies)},
    )


@register
class FactCheck(JudgeEvaluator):
    """The judge's evaluation_score (0-1) of how much of the answer is true."""

    spec = EvaluatorSpec(
        id="fact_check",
        family="judge",
        kind="score",
        inputs=("input", "actual_output"),
        resources=("judge",),
        description=(
            "A judge fact-checks the answer and returns JSON with an evaluation_score in [0, 1] (1: every "
            "claim true) and a summary, kept as the rationale."
        ),
        metrics=(
            MetricSpec(
                "fact_check", threshold=0.75, primary=True, description="the judge's share of the answer that is true"
            ),
        ),
    )

    default_prompt = PROMPTS["fact_check"]

    def reply_shape(self) -> VerdictSchema | None:
        """``"evaluation_summary"``, then ``"evaluation_score"``: a number from 0 to 1 (its prompt's keys)."""
        from nbeval.chat.structured import number_verdict

        return number_verdict("evaluation_score", 0, 1, reason_key="evaluation_summary")

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask the judge to fact-check the answer and read its evaluation_score in [0, 1]."""
        reply = yield from self.ask(row_values(row))
        parsed = parse_number(reply.text, 0.0, 1.0, keys=("evaluation_score", "score", "fact_check"))
        if not parsed.ok:
            return _failed("fact_check", parsed, [reply])
        obj = find_json(reply.text)
        verdict = obj.get("answer") if isinstance(obj, dict) and isinstance(obj.get("answer"), str) else None
        return Score(
            {"fact_check": parsed.value},
            rationale=parsed.rationale,
            label=verdict,
            details={"judge": usage_details([reply])},
        )


@register
class ContextRelevancy(JudgeEvaluator):
    """Share of the context's sentences the judge marks relevant to the question."""

    spec = EvaluatorSpec(
        id="context_relevancy",
        family="judge",
        kind="score",
        inputs=("input", "context"),
        resources=("judge",),
        description=(
            "The retrieved context is split into sentences; a judge marks those relevant to the question. "
            "The score is relevant sentences / all sentences."
        ),
        metrics=(
            MetricSpec(
                "context_relevancy",
                threshold=0.75,
                primary=True,
                description="share of context sentences relevant to the question",
            ),
        ),
    )

    default_prompt = PROMPTS["context_relevancy"]

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Number the context's sentences, ask the judge which are relevant, and score their share.

        A context without sentences has no value.
        """
        from nbeval.data.text import split_sentences

        sentences = [s for c in row.context for s in split_sentences(c.text) if s.strip()]
        if not sentences:
            return Score({"context_relevancy": None}, error="the retrieved context has no sentences")
        numbered = "\n".join(f"[{i}] {s}" for i, s in enumerate(sentences, 1))
        from nbeval.chat.structured import index_list_verdict

        shape = index_list_verdict("relevant", len(sentences))  # a reason, then the relevant sentences' numbers
        reply = yield from self.ask({**row_values(row), "sentences": numbered}, shape=shape)
        parsed = parse_index_list(reply.text, len(sentences))
        if not parsed.ok:
            return _failed("context_relevancy", parsed, [reply])
        relevant = parsed.value
        return Score(
            {"context_relevancy": len(relevant) / len(sentences)},
            rationale=parsed.rationale,
            label=f"{len(relevant)}/{len(sentences)} sentences relevant",
            details={"relevant_sentences": relevant, "sentences": len(sentences), "judge": usage_details([reply])},
        )


@register
class AnswerRelevancyScore(JudgeEvaluator):
    """A 0-5 grade with a line of feedback; a row passes at ``pass_score`` or above."""

    spec = EvaluatorSpec(
        id="answer_relevancy_score",
        family="judge",
        kind="score",
        inputs=("input", "context", "actual_output"),
        resources=("judge",),
        description=(
            "A judge grades the answer from 0 to 5 against the question and the retrieved context and "
            "adds a line of feedback, under a prompt you can replace. A row passes when the grade is at "
            "least pass_score. With score_mode=\"expected\" the row's value is the grade's expected value "
            "over 0-5, weighted by the judge's probability of each grade at the grade's token (rows whose "
            "reply has no log-probabilities are unrated)."
        ),
        params=(
            Param("pass_score", float, 3, "the least grade (0 to 5) that passes: the score metric's threshold"),
            *SCORE_MODE_PARAMS,
        ),
        metrics=(MetricSpec("score", lo=0.0, hi=5.0, threshold=3, primary=True, description="the judge's 0-5 grade"),),
    )

    default_prompt = PROMPTS["answer_relevancy_score"]

    @classmethod
    def spec_for(cls, params: Mapping[str, Any]) -> EvaluatorSpec:
        """Declare ``pass_score`` as the score metric's default threshold.

        Raises :class:`EvaluatorError` for a ``pass_score`` that is not a number from 0 to 5.
        """
        # The grade passes at pass_score: that is the score metric's default threshold.
        spec = super().spec_for(params)
        pass_score = params["pass_score"]
        if isinstance(pass_score, bool) or not isinstance(pass_score, (int, float)) or not 0 <= pass_score <= 5:
            msg = f"evaluator 'answer_relevancy_score': pass_score must be a number from 0 to 5, got {pass_score!r}"
            raise EvaluatorError(msg)
        metrics = tuple(replace(m, threshold=float(pass_score)) if m.name == "score" else m for m in spec.metrics)
        return replace(spec, metrics=metrics)

    def reply_shape(self) -> VerdictSchema | None:
        """A reason, then ``"score"``: a whole grade from 0 to 5."""
        from nbeval.chat.structured import number_verdict

        return number_verdict("score", 0, 5, whole=True)

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask the judge for a 0-5 grade; with ``score_mode="expected"``, score the grade's expected value."""
        reply = yield from self.ask(row_values(row))
        parsed = parse_number(reply.text, 0.0, 5.0, keys=("score", "grade", "rating"))
        if not parsed.ok:
            return _failed("score", parsed, [reply])
        details = {"judge": usage_details([reply])}
        if self.score_mode != "expected":
            return Score({"score": parsed.value}, rationale=parsed.rationale, details=details)
        grade = float(parsed.value)
        if grade.is_integer():
            rated = rate(reply, str(int(grade)), GRADES_0_5, "expected")
        else:  # 3.5 is no grade of the scale: its probability cannot be read from one token
            why = f"the judge's grade {grade:g} is not a whole grade from 0 to 5, so its probability cannot be read"
            rated = Rated(None, NO_RATING_TOKEN, why, {"score_mode": "expected", "sampled": f"{grade:g}"})
        return Score(
            {"score": rated.value},
            rationale=parsed.rationale,
            label=None if rated.value is not None else rated.label,
            error=rated.error,
            details={**details, **rated.details},
        )


@register
class Pipeline(JudgeEvaluator):
    """Your function (``fn=``) or judge prompt (``prompt=``) turns each row into a number.

    ``fn=`` is a spelling of the one function route, ``@nbeval.scorer``
    (:mod:`nbeval.evaluators.scorer`): the function is read and its return value understood the
    same way, with the one metric ``score``. Its parameter names choose what it receives: row
    fields by name (``context`` and ``expected_context`` as lists of chunk texts) or ``row`` for
    the whole :class:`Row`. It returns a number or a bool, a ``(number, rationale)`` pair, or a dict
    with ``score`` and optionally ``rationale`` (``value`` is read as ``score``, as it always was).
    Parameters with defaults are optional inputs; unlike a scorer's, parameters that are no row
    field but have a default, and ``*args`` / ``**kwargs``, are left to the function.
    """

    spec = EvaluatorSpec(
        id="pipeline",
        family="judge",
        kind="score",
        inputs=(),
        description=(
            "Runs your function (fn=...) on each row and uses the number it returns as the metric; the "
            "function's parameter names say which fields it reads (input, expected_output, context, "
            'actual_output, ...; or row for the whole row). Or give prompt="..." with placeholders: the '
            "judge's reply is read as the number. A function needing a field the dataset lacks is an "
            "error before the run."
        ),
        metrics=(
            MetricSpec(
                "score", lo=-math.inf, hi=math.inf, primary=True, description="the number the pipeline returned"
            ),
        ),
    )

    @classmethod
    def extra_params(cls) -> dict[str, Any]:
        """Add ``fn=`` and ``judge=`` to the judge family's parameters."""
        return {**super().extra_params(), "fn": None, "judge": None}

    @classmethod
    def spec_for(cls, params: Mapping[str, Any]) -> EvaluatorSpec:
        """Declare the fields the function or prompt reads, and the judge only a prompt needs.

        Raises :class:`EvaluatorError` when neither ``fn=`` nor ``prompt=`` is given, or ``fn`` is not
        callable.
        """
        # This instance reads the fields its function or prompt uses (and needs a judge only for a prompt).
        spec = super().spec_for(params)
        fn = params["fn"]
        if fn is None and params["prompt"] is None:
            msg = "evaluator 'pipeline' needs fn=<a function of the row's fields> or prompt='...{input}...'"
            raise EvaluatorError(msg)
        if fn is not None:
            if not callable(fn):
                msg = f"evaluator 'pipeline': fn must be callable, got {type(fn).__name__}"
                raise EvaluatorError(msg)
            return replace(spec, inputs=_route(fn).spec.inputs, resources=())
        fields = cls._resolve_prompt(params["prompt"]).fields
        return replace(spec, inputs=tuple(f for f in fields if f in PIPELINE_FIELDS), resources=("judge",))

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        fn = self.params["fn"]
        self._route: ScoringFunction | None = None if fn is None else _route(fn)

    @classmethod
    def _resolve_prompt(cls, given: Any) -> JudgePrompt:
        if given is None:
            return JudgePrompt("")
        if isinstance(given, str):
            prompt = JudgePrompt("Reply with the number only.", template=given)
            if not prompt.fields:
                msg = "evaluator 'pipeline': the prompt uses no placeholder such as {input} or {actual_output}"
                raise EvaluatorError(msg)
            return prompt
        return super()._resolve_prompt(given)

    def check_dataset(self, dataset: LlmDataset) -> None:
        """Raise :class:`EvaluatorError` when the function or prompt needs a field no row of ``dataset`` has."""
        absent = [f for f in self.spec.inputs if not dataset.has_field(f)]
        if absent:
            what = "function" if self.params.get("fn") is not None else "prompt"
            msg = (
                f"evaluator 'pipeline': your {what} needs {', '.join(absent)}, which no row of the dataset "
                f"has; the dataset has {', '.join(f for f in PIPELINE_FIELDS if dataset.has_field(f))}"
            )
            raise EvaluatorError(msg)

    def reply_shape(self) -> VerdictSchema | None:
        """A reason, then ``"score"``: a number."""
        from nbeval.chat.structured import number_verdict

        return number_verdict("score")

    def score(self, row: Row) -> Score | Generator[Any, Any, Score]:
        """Call the function on the row's fields and read its return, or ask the judge for a number."""
        if self._route is None:
            return self._judge_score(row)
        out = self._route.call(row)
        if isinstance(out, Mapping) and "value" in out and "score" not in out:  # the older name of its metric
            out = {("score" if k == "value" else k): v for k, v in out.items()}
        return self._route.to_score(out)

    def _judge_score(self, row: Row) -> Generator[Any, Any, Score]:
        reply = yield from self.ask(row_values(row))
        parsed = parse_number(reply.text)
        if not parsed.ok:
            return _failed("score", parsed, [reply])
        return Score({"score": parsed.value}, rationale=parsed.rationale, details={"judge": usage_details([reply])})


def _route(fn: Any) -> ScoringFunction:
    """``fn`` read as the scoring function of a ``pipeline``: its one metric is ``score``."""
    return scoring_function(
        fn, name="pipeline", metrics=Pipeline.spec.metrics, lenient=True, label="evaluator 'pipeline'"
    )
