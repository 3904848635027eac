r"""Scores from a causal language model's token probabilities: ``perplexity`` and GPTScore.

Every evaluator here yields ONE :class:`~nbeval.request_kinds.TokenLogProbs` request per row holding
every ``(prefix, continuation)`` item it needs (all aspects, both directions), so the engine pools
them with the other rows' and the runner (:mod:`nbeval.resources.causal_lm`) batches them.

``perplexity`` is ``exp`` of the mean negative log-likelihood of the answer's tokens scored on
their own (the first token has no prediction, as with transformers' ``labels=input_ids``).

GPTScore (Fu et al. 2023, "GPTScore: Evaluate as You Desire", arXiv 2302.04166) is the mean
negative log-likelihood of a text's tokens after an instruction naming the aspect: lower means the
model finds the text a more natural answer to the instruction. The instruction templates are the
paper's and must stay word for word: other words give other numbers. The prefix holds the
template up to the scored text; the continuation is the scored text, with the space or line break
that separates it from the prefix at its start, so a byte-level BPE sees the tokens it would in
running text.

- with a reference (summaries, translations): ``"{instruction} {a} In other words,"`` then
  ``" {b}"``, once with the reference as ``a`` and the answer as ``b`` and once the other way
  round; the aspect's value is the mean of the two.
- without a reference: ``"{instruction} {source}\nTl;dr\n"`` then the summary (the answer).
- question answering: a yes/no question about the exchange ``"human: {input}\nAI: {answer}"``
  ending in ``"\nAnswer:"``, then ``" Yes"``: the value is the NLL of the "Yes" token(s) only
  (the words "Answer:" are the same for every answer and are context, not verdict).

An empty (or blank) text that would be scored has no tokens, so it has no value: the row gets
``None`` and an error that says why, never 0. That is the answer for ``perplexity`` and the
summary families, and either text for the reference families (each is scored in one direction).
For ``gptscore_qa`` the scored text is "Yes", so an empty answer is judged like any other.
A one-token answer has no perplexity either (nothing predicts its only token).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from nbeval.evaluators.base import EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.models.base import ModelEvaluator
from nbeval.evaluators.registry import register
from nbeval.request_kinds import TokenLogProbs, TokenScores

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = [
    "QA_QUESTIONS",
    "REF_INSTRUCTIONS",
    "SUMMARY_INSTRUCTIONS",
    "TRANSLATION_INSTRUCTIONS",
    "GPTScoreQA",
    "GPTScoreSummarizationNoRef",
    "GPTScoreSummarizationRef",
    "GPTScoreTranslation",
    "Perplexity",
]

#: Summarisation with a reference: ``"{instruction} {a} In other words, {b}"``.
REF_INSTRUCTIONS: Mapping[str, str] = {
    "semantic_coverage": "Rewrite the following text with the same semantics.",
    "factuality": "Rewrite the following text with consistent facts.",
    "informativeness": "Rewrite the following text with its core information.",
    "coherence": "Rewrite the following text into a coherent text.",
    "relevance": "Rewrite the following text with consistent details.",
    "fluency": "Rewrite the following text into a fluent and grammatical text.",
}

#: Machine translation: ``"{instruction} {a} In other words, {b}"``.
TRANSLATION_INSTRUCTIONS: Mapping[str, str] = {
    "accuracy": "Rewrite the following text with its core information and consistent facts:",
    "fluency": "Rewrite the following text to make it more grammatical and well-written:",
    "mqm": "Rewrite the following text into high-quality text with its core information:",
}

#: Summarisation without a reference: ``"{instruction} {source}\nTl;dr\n{summary}"``.
SUMMARY_INSTRUCTIONS: Mapping[str, str] = {
    "semantic_coverage": "Generate a summary with as much semantic coverage as possible for the following text:",
    "factuality": "Generate a summary with consistent facts for the following text:",
    "informativeness": "Generate an informative summary that captures the key points of the following text:",
    "coherence": "Generate a coherent summary for the following text:",
    "relevance": "Generate a relevant summary with consistent details for the following text:",
    "fluency": "Generate a fluent and grammatical summary for the following text:",
    "consistency": "Generate factually consistent summary for the following text:",
}

#: Question answering: the yes/no question asked about the exchange, per aspect.
QA_QUESTIONS: Mapping[str, str] = {
    "interest": "Are the responses of AI interesting?",
    "engagement": "Are the responses of AI engaging?",
    "understandability": "Are the responses of AI understandable?",
    "relevance": "Are the responses of AI relevant to the conversation?",
    "specific": "Are the responses of AI generic or specific to the conversation?",
    "correctness": "Are the responses of AI correct to conversations?",
    "semantically_appropriate": "Are the responses of AI semantically appropriate?",
    "fluency": "Are the responses of AI fluently written?",
}

_QA_HEAD = "Answer the question based on the conversation between a human and AI."
_SHOWN = 5  # least likely tokens named in a perplexity rationale

_Generated = Generator[TokenLogProbs, Any, Score]


def _nll(scores: TokenScores) -> float | None:
    lp = np.asarray(scores.logprobs, dtype=np.float64)
    return float(-lp.mean()) if lp.size else None


def _blank(text: Any) -> bool:
    return text is None or not str(text).strip()


class _LMScore(ModelEvaluator):
    """Shared plumbing: the request for this evaluator's causal language model."""

    model_kind = "causal_lm"

    def ask(self, items: list[tuple[str, str]]) -> TokenLogProbs:
        return TokenLogProbs(tuple(items), self.local_model)

    def none(self, error: str) -> Score:
        return Score(dict.fromkeys((m.name for m in self.spec.metrics), None), error=error)


#: The six aspects both summarisation GPTScores report (the reference-free one adds consistency).
_SUMMARY_ASPECT_METRICS = (
    MetricSpec(
        "semantic_coverage",
        "lower",
        lo=0.0,
        hi=math.inf,
        primary=True,
        description=("how well the answer covers the reference's key content (mean token NLL; lower is better)"),
    ),
    MetricSpec(
        "factuality",
        "lower",
        lo=0.0,
        hi=math.inf,
        description="how consistent the answer's facts are with the reference (mean token NLL)",
    ),
    MetricSpec(
        "informativeness",
        "lower",
        lo=0.0,
        hi=math.inf,
        description="how well the answer captures the key ideas (mean token NLL)",
    ),
    MetricSpec(
        "coherence",
        "lower",
        lo=0.0,
        hi=math.inf,
        description="how well the answer holds together as a whole (mean token NLL)",
    ),
    MetricSpec(
        "relevance",
        "lower",
        lo=0.0,
        hi=math.inf,
        description="how well the answer sticks to the reference's content (mean token NLL)",
    ),
    MetricSpec(
        "fluency",
        "lower",
        lo=0.0,
        hi=math.inf,
        description="how well-written and grammatical the answer is (mean token NLL)",
    ),
)


#: The causal language model every GPTScore evaluator scores with by default.
_GPTSCORE_MODEL = Param("model", str, "gpt2-medium", "the model: a Hugging Face hub name or a local path")


@register
class Perplexity(_LMScore):
    """exp of the mean token cross-entropy of the answer; the rationale names its least likely tokens."""

    spec = EvaluatorSpec(
        id="perplexity",
        family="model",
        kind="score",
        inputs=("actual_output",),
        resources=("local_model",),
        description=(
            "The exponential of the mean cross-entropy of the answer's tokens under a causal language "
            "model (transformers' loss with labels = input_ids); texts longer than the model's context "
            "are scored in overlapping windows. Lower means the text is more predictable (more fluent, or "
            "more generic)."
        ),
        params=(Param("model", str, "distilgpt2", "the model: a Hugging Face hub name or a local path"),),
        metrics=(
            MetricSpec(
                "perplexity",
                "lower",
                lo=0.0,
                hi=math.inf,
                primary=True,
                description="exp of the mean token cross-entropy of the answer",
            ),
        ),
    )

    def score(self, row: Row) -> _Generated:
        """Score the perplexity of the answer's tokens, naming the least likely ones.

        An empty or single-token answer has no value, with an error that says why.
        """
        text = str(row.actual_output) if row.actual_output is not None else ""
        if _blank(text):
            return self.none("the answer is empty: it has no tokens, so it has no perplexity")
        (scores,) = yield self.ask([("", text)])
        lp = np.asarray(scores.logprobs, dtype=np.float64)
        if not lp.size:
            return self.none("the answer is a single token: nothing predicts it, so it has no perplexity")
        nll = float(-lp.mean())
        ppl = math.exp(nll) if nll < 700 else math.inf
        worst = np.argsort(lp, kind="stable")[:_SHOWN]
        shown = ", ".join(f"{scores.tokens[i]!r} (p={math.exp(lp[i]):.2g})" for i in worst)
        rationale = f"perplexity {ppl:.4g} over {lp.size} predicted tokens; least likely: {shown}"
        details = {
            "tokens": int(lp.size),
            "mean_nll": nll,
            "least_likely": [{"token": scores.tokens[i], "logprob": float(lp[i])} for i in worst],
        }
        return Score({"perplexity": ppl}, rationale=rationale, details=details)


class _GPTScore(_LMScore):
    """Asks every aspect's items at once and reports one mean NLL per aspect."""

    def items(self, row: Row) -> dict[str, list[tuple[str, str]]] | str:
        """Per aspect, the ``(prefix, continuation)`` items whose NLLs are averaged; or why the row cannot be scored."""
        raise NotImplementedError

    def score(self, row: Row) -> _Generated:
        plan = self.items(row)
        if isinstance(plan, str):
            return self.none(plan)
        flat = [item for items in plan.values() for item in items]
        answers = yield self.ask(flat)
        found = dict(zip(flat, answers, strict=True))
        values: dict[str, float | None] = {}
        per_item: dict[str, list[float | None]] = {}
        for aspect, items in plan.items():
            nlls = [_nll(found[item]) for item in items]
            per_item[aspect] = nlls
            known = [x for x in nlls if x is not None]
            values[aspect] = float(np.mean(known)) if len(known) == len(nlls) else None
        if any(v is None for v in values.values()):
            return self.none("a scored text came out with no tokens, so no likelihood could be measured")
        ranked = sorted(values, key=lambda a: (values[a], a))
        best, worst = ranked[0], ranked[-1]
        if math.isclose(values[best] or 0.0, values[worst] or 0.0, rel_tol=1e-9, abs_tol=1e-12):
            rationale = f"mean token NLL {values[best]:.3f} for every aspect (the instructions made no difference)"
        else:
            rationale = (
                f"mean token NLL (lower is better): best {best} {values[best]:.3f}, worst {worst} {values[worst]:.3f}"
            )
        return Score(values, rationale=rationale, details={"nll_per_item": per_item})


def _both_ways(instructions: Mapping[str, str], ref: str, hyp: str) -> dict[str, list[tuple[str, str]]]:
    """``{ref} In other words, {hyp}`` and ``{hyp} In other words, {ref}`` for every aspect."""
    return {
        aspect: [(f"{ins} {ref} In other words,", f" {hyp}"), (f"{ins} {hyp} In other words,", f" {ref}")]
        for aspect, ins in instructions.items()
    }


class _WithReference(_GPTScore):
    instructions: ClassVar[Mapping[str, str]] = {}

    def items(self, row: Row) -> dict[str, list[tuple[str, str]]] | str:
        if _blank(row.actual_output):
            return "the answer is empty: it has no tokens to score"
        if _blank(row.expected_output):
            return "the expected answer is empty: it has no tokens to score in the reverse direction"
        return _both_ways(self.instructions, str(row.expected_output), str(row.actual_output))


@register
class GPTScoreSummarizationRef(_WithReference):
    """GPTScore of a summary against its reference, both directions averaged, per aspect."""

    spec = EvaluatorSpec(
        id="gptscore_summarization_ref",
        family="model",
        kind="score",
        inputs=("expected_output", "actual_output"),
        resources=("local_model",),
        description=(
            "GPTScore with a reference: for each aspect, the mean negative log-likelihood a causal "
            'language model gives the text after "In other words," under an instruction naming the '
            "aspect, with the expected answer before it and the answer after, then the other way round; "
            "the two are averaged. Lower is better."
        ),
        params=(_GPTSCORE_MODEL,),
        metrics=(*_SUMMARY_ASPECT_METRICS,),
    )

    instructions: ClassVar[Mapping[str, str]] = REF_INSTRUCTIONS


@register
class GPTScoreTranslation(_WithReference):
    """GPTScore of a translation against its reference, both directions averaged, per aspect."""

    spec = EvaluatorSpec(
        id="gptscore_translation",
        family="model",
        kind="score",
        inputs=("expected_output", "actual_output"),
        resources=("local_model",),
        description=(
            "GPTScore for translation: as gptscore_summarization_ref (both directions averaged) with "
            "instructions for accuracy, fluency and multidimensional quality (MQM). Lower is better."
        ),
        params=(_GPTSCORE_MODEL,),
        metrics=(
            MetricSpec(
                "accuracy",
                "lower",
                lo=0.0,
                hi=math.inf,
                primary=True,
                description="inaccurate, missing or unfactual content against the reference (mean token NLL)",
            ),
            MetricSpec(
                "fluency",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="how well-written and grammatical the translation is (mean token NLL)",
            ),
            MetricSpec(
                "mqm",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="overall translation quality, multidimensional quality metrics (mean token NLL)",
            ),
        ),
    )

    instructions: ClassVar[Mapping[str, str]] = TRANSLATION_INSTRUCTIONS


@register
class GPTScoreSummarizationNoRef(_GPTScore):
    """GPTScore of a summary (the answer) after its source (the input) and "Tl;dr"."""

    spec = EvaluatorSpec(
        id="gptscore_summarization_noref",
        family="model",
        kind="score",
        inputs=("input", "actual_output"),
        resources=("local_model",),
        description=(
            "GPTScore without a reference: for each aspect, the mean negative log-likelihood a causal "
            "language model gives the answer (a summary) after an instruction naming the aspect, the "
            'source document (the input) and "Tl;dr". Lower is better.'
        ),
        params=(_GPTSCORE_MODEL,),
        metrics=(
            *_SUMMARY_ASPECT_METRICS,
            MetricSpec(
                "consistency",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="how consistent the summary's facts are with the source (mean token NLL)",
            ),
        ),
    )

    def items(self, row: Row) -> dict[str, list[tuple[str, str]]] | str:
        """Give per aspect the summary after the paper's instruction, the source and "Tl;dr".

        An empty summary gives why it cannot be scored instead.
        """
        if _blank(row.actual_output):
            return "the answer (the summary) is empty: it has no tokens to score"
        src, summary = str(row.input), str(row.actual_output)
        return {aspect: [(f"{ins} {src}\nTl;dr\n", summary)] for aspect, ins in SUMMARY_INSTRUCTIONS.items()}


@register
class GPTScoreQA(_GPTScore):
    """GPTScore of an exchange: how likely "Yes" is to each aspect's yes/no question about it."""

    spec = EvaluatorSpec(
        id="gptscore_qa",
        family="model",
        kind="score",
        inputs=("input", "actual_output"),
        resources=("local_model",),
        description=(
            "GPTScore for question answering: for each aspect, the mean negative log-likelihood of "
            '"Yes" after a yes/no question about the exchange (human: the input, AI: the answer) under '
            "a causal language model. Lower is better."
        ),
        params=(_GPTSCORE_MODEL,),
        metrics=(
            MetricSpec(
                "interest",
                "lower",
                lo=0.0,
                hi=math.inf,
                primary=True,
                description="is the answer interesting? (mean NLL of the 'Yes' answer)",
            ),
            MetricSpec(
                "engagement", "lower", lo=0.0, hi=math.inf, description="is the answer engaging? (mean NLL of 'Yes')"
            ),
            MetricSpec(
                "understandability",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="is the answer understandable? (mean NLL of 'Yes')",
            ),
            MetricSpec(
                "relevance",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="is the answer relevant to the conversation? (mean NLL of 'Yes')",
            ),
            MetricSpec(
                "specific",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="is the answer specific to the conversation? (mean NLL of 'Yes')",
            ),
            MetricSpec(
                "correctness",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="is the answer correct for the conversation? (mean NLL of 'Yes')",
            ),
            MetricSpec(
                "semantically_appropriate",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="is the answer semantically appropriate? (mean NLL of 'Yes')",
            ),
            MetricSpec(
                "fluency",
                "lower",
                lo=0.0,
                hi=math.inf,
                description="is the answer fluently written? (mean NLL of 'Yes')",
            ),
        ),
    )

    def items(self, row: Row) -> dict[str, list[tuple[str, str]]] | str:
        """Give per aspect the " Yes" after the aspect's yes/no question about the exchange (an empty answer too)."""
        history = f"human: {row.input}\nAI: {'' if row.actual_output is None else row.actual_output}"
        return {
            aspect: [(f"{_QA_HEAD}\nQuestion: {q} (a) Yes. (b) No.\nConversation: {history}\nAnswer:", " Yes")]
            for aspect, q in QA_QUESTIONS.items()
        }
