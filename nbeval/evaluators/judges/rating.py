"""Rating judge evaluators: a judge answers yes or no with a written rationale.

``correctness``, ``relevance_to_query``, ``groundedness``, ``safety``, ``context_sufficiency``,
``guideline_adherence`` (with ``global_guidelines``), ``chunk_relevance`` (one rating per
retrieved chunk, and precision) and ``custom_judge`` (your own assessment). Per row the metric is
1.0 for yes and 0.0 for no; a reply that cannot be read leaves no value, an error, and the raw reply
as the rationale. Per model the metric is the share of yes among the rows that got a rating.

Each takes ``score_mode="expected"``: the row's value is then the judge's probability of yes, read
from the log-probabilities of its rating token, and the model's the mean of those; a reply without
log-probabilities leaves its row unrated (``no_logprobs``), never valued by the written rating (see
:mod:`nbeval.evaluators.judges.expected`).

A conversation row is judged on its last turn (its last user message and the answer after it). All
but chunk_relevance and custom_judge also see the messages before that question, in a block before
it, so "and the other one?" reads as the user meant it
(:func:`~nbeval.evaluators.judges.core.with_earlier_turns`); a row without them is asked as before.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from nbeval.data.rows import field_missing
from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.judges.alignment import rating_reply
from nbeval.evaluators.judges.chunks import rate_chunks
from nbeval.evaluators.judges.core import (
    YES_NO_REPLY,
    JudgeEvaluator,
    JudgePrompt,
    rating_score,
    row_values,
    usage_details,
    with_earlier_turns,
)
from nbeval.evaluators.judges.expected import SCORE_MODE_PARAMS, YES_NO_SCALE, rate
from nbeval.evaluators.judges.parse import parse_choice
from nbeval.evaluators.judges.prompts import PROMPTS
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.chat.structured import VerdictSchema
    from nbeval.data.model import LlmDataset, Row

__all__ = [
    "GUIDELINE_METRIC_PREFIX",
    "RATING_JUDGES",
    "YES_NO",
    "ChunkRelevance",
    "ContextSufficiency",
    "Correctness",
    "CustomJudge",
    "Groundedness",
    "GuidelineAdherence",
    "RatingDeclaration",
    "RatingJudge",
    "RelevanceToQuery",
    "Safety",
    "rate_chunks",
    "rating_judge",
]

#: The two ratings a rating judge may write, and what each means (yes: the row passes).
YES_NO = {"yes": True, "no": False}
_TAGS = {
    "input": "question",
    "expected_output": "expected_answer",
    "actual_output": "answer",
    "context": "retrieved_context",
    "guidelines": "guidelines",
    "expected_context": "expected_context",
    "categories": "categories",
    "output_condition": "condition",
}


class RatingJudge(JudgeEvaluator):
    """One yes/no rating of the row; the metric is named after the evaluator id."""

    #: Whether a conversation's turns before the question are shown (see :func:`with_earlier_turns`).
    shows_earlier_turns: ClassVar[bool] = True

    def reply_shape(self) -> VerdictSchema | None:
        """``"rationale"``, then ``"rating": "yes" | "no"``."""
        return YES_NO_REPLY

    def example_reply(self, passed: bool) -> str | None:
        """``Rationale: ...`` and ``Rating: yes|no``."""
        return rating_reply(passed)

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask the judge for a yes or no on the row; the metric is 1.0 for yes, 0.0 for no, none if unreadable.

        With ``score_mode="expected"`` the value is the judge's probability of yes.
        """
        values = row_values(row)
        prompt = with_earlier_turns(self.prompt, values) if self.shows_earlier_turns else self.prompt
        reply = yield from self.ask(values, prompt)
        return rating_score(self.spec.id, parse_choice(reply.text, YES_NO), [reply], score_mode=self.score_mode)


@dataclass(frozen=True)
class RatingDeclaration:
    """One rating judge, declared as data: :func:`rating_judge` makes its class.

    Its prompt is ``PROMPTS[id]`` (:mod:`nbeval.evaluators.judges.prompts`) unless one is given,
    its one metric is named after it, and it takes ``score_mode=``.
    """

    id: str
    """The evaluator id, which is also its metric's name and its prompt's key."""
    question: str
    """What the judge answers yes or no to, in one line (the class docstring)."""
    inputs: tuple[str, ...]
    """The dataset fields a row needs."""
    criteria: str
    """When the judge rates yes, in the catalogue's words (the start of the description)."""
    metric: str
    """What the metric measures, in one line."""
    prompt: JudgePrompt | None = None
    """The default prompt (``None``: the built-in ``PROMPTS[id]``)."""


#: The end of every rating judge's description: what a row holds, and what score_mode="expected" does.
_RATED = (
    " Per row: the rating (yes/no) and the judge's rationale."
    " With score_mode=\"expected\" a row's value is the judge's probability of yes, from its "
    "log-probabilities (rows whose reply has none are unrated)."
)

#: The rating judges that differ only in what they ask: adding one is a row here and its prompt
#: in ``PROMPTS``.
RATING_JUDGES: tuple[RatingDeclaration, ...] = (
    RatingDeclaration(
        "correctness",
        "Is the answer accurate and does it mean the same as the expected answer?",
        ("input", "expected_output", "actual_output"),
        "A judge rates yes when the answer is accurate and means the same as the expected answer "
        "(small omissions are fine).",
        "share of rows rated correct",
    ),
    RatingDeclaration(
        "relevance_to_query",
        "Is the answer relevant to the request?",
        ("input", "actual_output"),
        "A judge rates yes when the answer is relevant to the request.",
        "share of rows rated relevant",
    ),
    RatingDeclaration(
        "groundedness",
        "Does the retrieved context support all or nearly all of the answer?",
        ("input", "context", "actual_output"),
        "A judge rates yes when the retrieved context supports all or nearly all of the answer.",
        "share of rows rated grounded",
    ),
    RatingDeclaration(
        "safety",
        "Is the answer free of harmful or toxic content?",
        ("input", "actual_output"),
        "A judge rates yes when the answer is free of harmful or toxic content.",
        "share of rows rated safe",
    ),
    RatingDeclaration(
        "context_sufficiency",
        "Is the retrieved context enough to produce the expected answer?",
        ("input", "expected_output", "context"),
        "A judge rates yes when the retrieved context is enough to produce the expected answer; the "
        "rationale says what is missing.",
        "share of rows whose context was rated sufficient",
    ),
)


def rating_judge(declared: RatingDeclaration) -> type[RatingJudge]:
    """Make and register the :class:`RatingJudge` class of ``declared``.

    The class is named after its id in CamelCase, in this module, so it pickles by name like a class
    written out.
    """
    name = "".join(part.title() for part in declared.id.split("_"))
    spec = EvaluatorSpec(
        id=declared.id,
        family="judge",
        kind="rating",
        inputs=declared.inputs,
        resources=("judge",),
        params=SCORE_MODE_PARAMS,
        description=declared.criteria + _RATED,
        metrics=(MetricSpec(declared.id, primary=True, description=declared.metric),),
    )
    body = {
        "__doc__": declared.question,
        "__module__": __name__,
        "__qualname__": name,
        "spec": spec,
        "default_prompt": declared.prompt or PROMPTS[declared.id],
    }
    return register(type(name, (RatingJudge,), body))


Correctness, RelevanceToQuery, Groundedness, Safety, ContextSufficiency = (rating_judge(d) for d in RATING_JUDGES)


#: How a per-name metric of ``guideline_adherence`` is named: ``guideline_adherence/<name>``.
GUIDELINE_METRIC_PREFIX = "guideline_adherence/"


@register
class GuidelineAdherence(JudgeEvaluator):
    """Does the answer follow its row's guidelines (and, separately, the global ones)?

    Guidelines given by name (``{"tone": [...], "safety": [...]}``, as MLflow 3 takes them) are
    rated one name at a time: each name is one judge call and one metric,
    ``guideline_adherence/<name>`` (yes 1.0, no 0.0; no value on rows without that name), and
    ``guideline_adherence`` is yes when every name is, no when any is not (no value when one
    could not be rated and none is a no). The per-name metrics are added to this instance's spec
    when it is checked against the dataset (:meth:`check_dataset`, before the run), one per name
    found in it, in order of appearance; each takes ``guideline_adherence``'s threshold. Rows with
    a plain list of guidelines get one call, as before.

    With ``score_mode="expected"`` each metric is the judge's probability of yes, and
    ``guideline_adherence`` over named guidelines is the product of the names' probabilities (the
    chance that every name is followed, the judge's calls taken as independent); it has no value
    when any name has none.
    """

    spec = EvaluatorSpec(
        id="guideline_adherence",
        family="judge",
        kind="rating",
        inputs=("input", "actual_output", "guidelines"),
        resources=("judge",),
        description=(
            "A judge rates yes when the answer follows every guideline of its row. Guidelines given as "
            "global_guidelines=[...] apply to every row and are rated separately "
            "(global_guideline_adherence); with them, rows without their own guidelines are still scored."
            " With score_mode=\"expected\" a row's value is the judge's probability of yes, from its "
            "log-probabilities (rows whose reply has none are unrated)."
        ),
        params=(
            Param(
                "global_guidelines",
                list[str],
                [],
                "guidelines every answer must follow, rated apart from each row's own",
            ),
            *SCORE_MODE_PARAMS,
        ),
        metrics=(
            MetricSpec(
                "guideline_adherence", primary=True, description="share of rows rated as following their guidelines"
            ),
            MetricSpec(
                "global_guideline_adherence", description="share of rows rated as following the global guidelines"
            ),
        ),
    )

    default_prompt = PROMPTS["guideline_adherence"]

    def reply_shape(self) -> VerdictSchema | None:
        """``"rationale"``, then ``"rating": "yes" | "no"``."""
        return YES_NO_REPLY

    def example_reply(self, passed: bool) -> str | None:
        """``Rationale: ...`` and ``Rating: yes|no``."""
        return rating_reply(passed)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        g = self.params.get("global_guidelines") or []
        if isinstance(g, str):
            g = [g]
        if not isinstance(g, (list, tuple)) or not all(isinstance(x, str) and x.strip() for x in g):
            msg = "evaluator 'guideline_adherence': global_guidelines must be a list of non-empty strings"
            raise EvaluatorError(msg)
        self.global_guidelines = [x.strip() for x in g]

    def check_dataset(self, dataset: LlmDataset) -> None:
        """Add a metric ``guideline_adherence/<name>`` for every guideline name in ``dataset``."""
        base = type(self).spec_for(MappingProxyType(self.params))
        names = list(dict.fromkeys(name for row in dataset.rows for name in row.named_guidelines))
        overall = base.metric("guideline_adherence")
        threshold = self.thresholds.get("guideline_adherence", overall.threshold)
        named = tuple(
            replace(
                overall,
                name=GUIDELINE_METRIC_PREFIX + n,
                primary=False,
                description=f"share of rows rated as following their '{n}' guidelines",
            )
            for n in names
        )
        self.spec = replace(base, metrics=base.metrics + named)
        self.thresholds = {
            **{k: v for k, v in self.thresholds.items() if not k.startswith(GUIDELINE_METRIC_PREFIX)},
            **{m.name: threshold for m in named},
        }

    def missing_input(self, row: Row) -> str | None:
        """Skip a row lacking a required input; with global guidelines a row needs no guidelines of its own."""
        # With global guidelines a row needs none of its own.
        needed = [f for f in self.spec.inputs if f != "guidelines" or not self.global_guidelines]
        missing = [f for f in needed if field_missing(f, getattr(row, f))]
        return "missing " + ", ".join(missing) if missing else None

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Ask the judge once per guideline name (or once for a plain list), and once for the global guidelines.

        See the class docstring for how the per-name ratings make ``guideline_adherence``.
        """
        values = row_values(row)
        prompt = with_earlier_turns(self.prompt, values)
        asked: dict[str, Any] = {}  # metric -> the reply, in the order asked
        groups = {name: items for name, items in row.named_guidelines.items() if items}
        if groups:
            for name, items in groups.items():
                asked[GUIDELINE_METRIC_PREFIX + name] = yield from self.ask(
                    {**values, "guidelines": _bullets(items)}, prompt
                )
        elif row.guidelines:
            asked["guideline_adherence"] = yield from self.ask(values, prompt)
        if self.global_guidelines:
            asked["global_guideline_adherence"] = yield from self.ask(
                {**values, "guidelines": _bullets(self.global_guidelines)}, prompt
            )
        replies = list(asked.values())
        metrics: dict[str, float | None] = {"guideline_adherence": None, "global_guideline_adherence": None}
        labels: dict[str, str] = {}
        rationales, errors, details = [], [], {"judge": usage_details(replies)}
        for name, reply in asked.items():
            what = _what(name)
            p = parse_choice(reply.text, YES_NO)
            rated = rate(
                reply, None if not p.ok else ("yes" if p.value else "no"), YES_NO_SCALE, self.score_mode, p.error
            )
            metrics[name], labels[name] = rated.value, rated.label
            rationales.append(f"{what}: {p.rationale}" if len(asked) > 1 else p.rationale)
            if rated.error:
                errors.append(f"{what}: {rated.error}")
            details[name] = {"rating": rated.label, "rationale": p.rationale, **rated.details}
        if groups:
            names = [GUIDELINE_METRIC_PREFIX + n for n in groups]
            words = [labels[m] for m in names]
            if self.score_mode == "expected":  # every name followed, the calls taken as independent
                unrated = next((w for w in words if w not in ("yes", "no")), None)
                word = unrated or ("no" if "no" in words else "yes")
                metrics["guideline_adherence"] = None if unrated else math.prod(metrics[m] or 0.0 for m in names)
            else:
                word = "no" if "no" in words else ("parse_failure" if "parse_failure" in words else "yes")
                metrics["guideline_adherence"] = {"yes": 1.0, "no": 0.0}.get(word)
            labels = {"guideline_adherence": word, **labels}
            details["guideline_adherence"] = {"rating": word, "names": dict(zip(groups, words, strict=True))}
        return Score(
            metrics,
            rationale=" | ".join(rationales),
            label=next(iter(labels.values())),
            error="; ".join(errors) or None,
            details=details,
        )


def _bullets(items: list[str]) -> str:
    return "\n".join(f"- {g}" for g in items)


def _what(metric: str) -> str:
    """How a rationale names what ``metric`` rated."""
    if metric.startswith(GUIDELINE_METRIC_PREFIX):
        return f"guidelines '{metric[len(GUIDELINE_METRIC_PREFIX) :]}'"
    return "guidelines" if metric == "guideline_adherence" else "global guidelines"


@register
class ChunkRelevance(JudgeEvaluator):
    """A yes/no and a rationale for every retrieved chunk; precision per row."""

    spec = EvaluatorSpec(
        id="chunk_relevance",
        family="judge",
        kind="rating",
        inputs=("input", "context"),
        resources=("judge",),
        params=SCORE_MODE_PARAMS,
        description=(
            "A judge rates every retrieved chunk yes (relevant to the request) or no, with a rationale. "
            "Per row: precision = relevant chunks / rated chunks; per model its mean."
            ' With score_mode="expected" each chunk counts with the judge\'s probability of yes, from its '
            "log-probabilities."
        ),
        metrics=(MetricSpec("precision", primary=True, description="share of retrieved chunks rated relevant"),),
    )

    default_prompt = PROMPTS["chunk_relevance"]

    def reply_shape(self) -> VerdictSchema | None:
        """``"rationale"``, then ``"rating": "yes" | "no"``."""
        return YES_NO_REPLY

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Rate every retrieved chunk yes or no and score the row's precision."""
        return (yield from rate_chunks(self, row, self.prompt))


@register
class CustomJudge(RatingJudge):
    """Your own yes/no assessment of the answer, or of every retrieved chunk.

    Rating the answer, it is a rating judge declared by its parameters rather than by a row of
    :data:`RATING_JUDGES`: ``instructions=`` are its criteria, ``inputs=`` the fields shown, and it
    asks and scores as every rating judge does (without a conversation's earlier turns, which its
    own instructions did not ask for).
    """

    shows_earlier_turns: ClassVar[bool] = False

    spec = EvaluatorSpec(
        id="custom_judge",
        family="judge",
        kind="rating",
        inputs=(),
        resources=("judge",),
        description=(
            'Your own yes/no assessment: instructions="..." tell the judge what to rate. With '
            'assessment_type="answer" the answer is rated (metric custom_judge); with "retrieval" '
            "every retrieved chunk is rated and precision is reported. inputs=[...] names the fields "
            "shown (default: input and actual_output, or input and context)."
            ' With score_mode="expected" a value is the judge\'s probability of yes, from its '
            "log-probabilities."
        ),
        params=(
            Param("assessment_name", str, "custom", "the name results are labelled with (unless name= is given)"),
            Param("instructions", str, "", "what the judge rates yes or no (required unless prompt= is given)"),
            Param(
                "assessment_type",
                Literal["answer", "retrieval"],
                "answer",
                "rate the answer (metric custom_judge), or every retrieved chunk (metric precision)",
            ),
            Param(
                "inputs",
                list[str],
                [],
                "the row fields shown to the judge (default: input and actual_output, or input and context)",
            ),
            *SCORE_MODE_PARAMS,
        ),
        metrics=(
            MetricSpec("custom_judge", primary=True, description="share of rows rated yes"),
            MetricSpec("precision", description="share of retrieved chunks rated yes (retrieval assessments)"),
        ),
    )

    default_prompt = PROMPTS["custom_judge"]

    @classmethod
    def prompt_text(cls) -> str:
        """Give the default prompt, readable, with a stand-in where your ``instructions=`` go."""
        return PROMPTS["custom_judge"].replace(instruction="<your instructions=...>").text()

    @classmethod
    def spec_for(cls, params: Mapping[str, Any]) -> EvaluatorSpec:
        """Declare the inputs chosen and the one metric the assessment type reports.

        Raises :class:`EvaluatorError` for an unknown assessment type or input.
        """
        # This instance reads the inputs chosen and reports the one metric its assessment type produces.
        spec = super().spec_for(params)
        kind = params["assessment_type"]
        if kind not in ("answer", "retrieval"):
            msg = f"evaluator 'custom_judge': assessment_type must be 'answer' or 'retrieval', got {kind!r}"
            raise EvaluatorError(msg)
        fields = list(params["inputs"] or (["input", "actual_output"] if kind == "answer" else ["input", "context"]))
        unknown = [f for f in fields if f not in _TAGS]
        if unknown:
            msg = f"evaluator 'custom_judge': unknown inputs {unknown}; choose from {sorted(_TAGS)}"
            raise EvaluatorError(msg)
        if kind == "retrieval" and "context" not in fields:
            fields.append("context")
        metric = "custom_judge" if kind == "answer" else "precision"
        metrics = tuple(replace(m, primary=True) for m in spec.metrics if m.name == metric)
        return replace(spec, inputs=tuple(fields), metrics=metrics)

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        kind = self.params["assessment_type"]
        instructions = (self.params.get("instructions") or "").strip()
        if not instructions and self.params.get("prompt") is None:
            msg = "evaluator 'custom_judge' needs instructions='...' saying what the judge should rate yes or no"
            raise EvaluatorError(msg)
        if self.params.get("prompt") is None:
            shown = [(f, _TAGS[f]) for f in self.spec.inputs if not (kind == "retrieval" and f == "context")]
            if kind == "retrieval":
                shown.append(("chunk", "passage"))
            self.prompt = self.prompt.replace(instruction=instructions, inputs=tuple(shown))
        # Results are labelled with the assessment's name unless name= says otherwise.
        name = self.params["assessment_name"]
        if not self.params.get("name") and name and name != self.spec.params["assessment_name"]:
            self.params["name"] = name

    def example_reply(self, passed: bool) -> str | None:
        """Write ``Rationale: ...`` and ``Rating: yes|no`` for an answer assessment.

        ``None`` for a retrieval one (one rating per chunk, no verdict per row).
        """
        return None if self.params.get("assessment_type") == "retrieval" else super().example_reply(passed)

    def score(self, row: Row) -> Generator[Any, Any, Score]:
        """Rate the answer as a rating judge does, or every retrieved chunk for a retrieval assessment."""
        if self.params.get("assessment_type") == "retrieval":
            return (yield from rate_chunks(self, row, self.prompt))
        return (yield from super().score(row))
