"""Embedding evaluators: cosine similarities between sentence embeddings.

Every evaluator here yields one :class:`~nbeval.evaluators.base.Embed` request per row with all
the texts it needs (whole answers, sentences, chunks, questions or steps) and then does
arithmetic on the unit vectors it gets back. The engine pools the requests of every evaluator
and row and encodes each distinct text once (see :mod:`nbeval.resources.embedder`), so two
evaluators asking for the same sentence cost one encoding. ``answer_semantic_similarity`` with
``cross_encoder=`` yields a :class:`~nbeval.request_kinds.ScorePairs` request instead, pooled the same
way (see :mod:`nbeval.resources.cross_encoder`).

``S(a, b)`` is the cosine similarity of two embeddings, reported as 0 when negative (and capped
at 1 against rounding) so that every similarity metric stays in [0, 1] as declared; only
``semantic_similarity`` maps the full cosine range with (cos + 1) / 2. Sentences come from
:func:`nbeval.data.text.split_sentences`; a text with no sentence (an empty answer) is embedded whole,
so it scores instead of failing. Each evaluator accepts ``embedder=`` to use another model.

The two evaluators of a text's structure (``step_alignment``, ``summarization_completeness``)
are :mod:`.structure`; they are handed out here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from nbeval.data.text import split_sentences
from nbeval.evaluators.base import Embed, EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.embedding.base import EmbeddingEvaluator, chunk_texts
from nbeval.evaluators.embedding.steps import clear_steps
from nbeval.evaluators.embedding.structure import StepAlignment, SummarizationCompleteness
from nbeval.evaluators.registry import register
from nbeval.request_kinds import ScorePairs

if TYPE_CHECKING:
    from collections.abc import Generator

    from nbeval.data.model import Row

__all__ = [
    "AnswerRelevancySentence",
    "AnswerSemanticSimilarity",
    "AnswerSentenceSimilarity",
    "ContextRelevancySoft",
    "GroundednessSemantic",
    "RetrieverSimilarity",
    "SemanticSimilarity",
    "StepAlignment",
    "SummarizationCompleteness",
    "clear_caches",
    "sentences",
    "similarity",
]

_SHOWN = 70  # characters of a sentence quoted in a rationale
_TEXTS_CACHED = 1 << 18  # distinct texts whose sentences are remembered (a 10,000-case run has ~100,000)
_SENTENCES: dict[str, tuple[str, ...]] = {}


def sentences(text: str | None) -> list[str]:
    """The sentences of ``text``; the whole text (possibly ``""``) when it has none."""
    return list(_sentences_of(text or ""))


def _sentences_of(text: str) -> tuple[str, ...]:
    # The scorers below hold these tuples while they wait for their vectors, never list copies:
    # a list a waiting scorer holds is tracked by the garbage collector and moved up a generation
    # at each collection, and enough of them in the oldest one set off a full collection of the
    # whole heap (lists were a third of what a 1,000-case run moved there); a tuple of strings is
    # untracked at its first collection.
    # Several evaluators split the same answer or chunk, evaluator after evaluator over every
    # row, so the memo must hold a whole run's texts, not just the last few thousand. A plain
    # dict (emptied when full) rather than lru_cache: no per-entry node for the garbage collector
    # to walk on every full collection.
    found = _SENTENCES.get(text)
    if found is None:
        if len(_SENTENCES) >= _TEXTS_CACHED:
            _SENTENCES.clear()
        found = _SENTENCES[text] = tuple(split_sentences(text) or [text])
    return found


def clear_caches() -> None:
    """Forget the sentences and steps remembered per text (benchmarks time cold runs with it)."""
    _SENTENCES.clear()
    clear_steps()


def similarity(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``S`` for every pair of rows of ``a`` and ``b`` (unit vectors): cosine clipped to [0, 1]."""
    s: np.ndarray = np.clip(a @ b.T, 0.0, 1.0)
    return s


def _q(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…")


def _rounded(values: np.ndarray | list[float]) -> list[float]:
    """Each value rounded to 4 places, for details (one ``tolist`` rather than a float() per value)."""
    return [round(float(x), 4) for x in (values.tolist() if isinstance(values, np.ndarray) else values)]


@register
class SemanticSimilarity(EmbeddingEvaluator):
    """(cos + 1) / 2 of the expected and actual answers' embeddings."""

    spec = EvaluatorSpec(
        id="semantic_similarity",
        family="embedding",
        kind="score",
        inputs=("expected_output", "actual_output"),
        resources=("embedder",),
        description=(
            "Similarity of the whole answer to the expected answer, as (cos + 1) / 2 of their embeddings, "
            "so unrelated texts sit near 0.5 and opposite ones near 0."
        ),
        metrics=(MetricSpec("score", primary=True, description="(cosine + 1) / 2 of the two embeddings"),),
    )

    def score(self, row: Row) -> Generator[Embed, Any, Score]:
        """Embed both answers and score (cos + 1) / 2; the rationale gives the cosine."""
        v = yield self.embed((row.expected_output or "", row.actual_output or ""))
        cos = float(np.clip(v[0] @ v[1], -1.0, 1.0))
        return Score({"score": (cos + 1.0) / 2.0}, rationale=f"cosine {cos:.3f}")


@register
class AnswerSemanticSimilarity(EmbeddingEvaluator):
    """Cosine of the two answers' embeddings, or a cross-encoder's score of the pair."""

    spec = EvaluatorSpec(
        id="answer_semantic_similarity",
        family="embedding",
        kind="score",
        inputs=("expected_output", "actual_output"),
        resources=("embedder",),
        description=(
            "Cosine similarity of the answer's and the expected answer's embeddings. With "
            "`cross_encoder=` (a cross-encoder name or local path) a cross-encoder reads both texts "
            "together and its score is used instead: slower, usually closer to human judgement."
        ),
        params=(
            Param(
                "cross_encoder",
                str,
                "",
                "a cross-encoder model that scores the pair instead of the cosine (empty: the cosine)",
            ),
        ),
        metrics=(
            MetricSpec(
                "answer_similarity",
                threshold=0.75,
                primary=True,
                description="cosine similarity (or cross-encoder score) of answer and expected answer",
            ),
        ),
    )

    def score(self, row: Row) -> Generator[Embed | ScorePairs, Any, Score]:
        """Score the cosine of both answers' embeddings, or the cross-encoder's score when one is set.

        The value is clipped to [0, 1]; the rationale gives the raw cosine or score.
        """
        expected, actual = row.expected_output or "", row.actual_output or ""
        cross = self.params.get("cross_encoder") or None
        if cross:
            return self._cross(str(cross), expected, actual)
        return self._cosine(expected, actual)

    def _cross(self, model: str, expected: str, actual: str) -> Generator[ScorePairs, Any, Score]:
        (value,) = yield ScorePairs(((expected, actual),), model=model)
        value = float(value)
        return Score(
            {"answer_similarity": float(np.clip(value, 0.0, 1.0))}, rationale=f"cross-encoder {model} score {value:.3f}"
        )

    def _cosine(self, expected: str, actual: str) -> Generator[Embed, Any, Score]:
        v = yield self.embed((expected, actual))
        cos = float(v[0] @ v[1])
        return Score({"answer_similarity": float(np.clip(cos, 0.0, 1.0))}, rationale=f"cosine {cos:.3f}")


@register
class AnswerSentenceSimilarity(EmbeddingEvaluator):
    """Per answer sentence the best S to an expected sentence; the mean and the minimum."""

    spec = EvaluatorSpec(
        id="answer_sentence_similarity",
        family="embedding",
        kind="score",
        inputs=("expected_output", "actual_output"),
        resources=("embedder",),
        description=(
            "Each answer sentence is scored by its best match among the expected answer's sentences; the "
            "row reports the mean and the minimum of those scores."
        ),
        metrics=(
            MetricSpec(
                "mean_answer_similarity",
                threshold=0.75,
                primary=True,
                description="mean over answer sentences of the best similarity to an expected sentence",
            ),
            MetricSpec(
                "min_answer_similarity",
                threshold=0.75,
                description="the least similar answer sentence's best similarity to an expected sentence",
            ),
        ),
    )

    def score(self, row: Row) -> Generator[Embed, Any, Score]:
        """Match each answer sentence to its most similar expected sentence; report the mean and the minimum."""
        exp, act = _sentences_of(row.expected_output or ""), _sentences_of(row.actual_output or "")
        v = yield self.embed(exp + act)
        best = similarity(v[len(exp) :], v[: len(exp)]).max(axis=1)
        worst = int(best.argmin())
        return Score(
            {"mean_answer_similarity": float(best.mean()), "min_answer_similarity": float(best[worst])},
            rationale=f"{len(act)} answer sentence(s); least similar ({best[worst]:.3f}): {_q(act[worst])}",
            details={"sentence_similarity": _rounded(best)},
        )


@register
class AnswerRelevancySentence(EmbeddingEvaluator):
    """The highest S between the question and an answer sentence."""

    spec = EvaluatorSpec(
        id="answer_relevancy_sentence",
        family="embedding",
        kind="score",
        inputs=("input", "actual_output"),
        resources=("embedder",),
        description=(
            "How relevant the answer is to the question: the highest similarity between the question and "
            "any one answer sentence."
        ),
        metrics=(
            MetricSpec(
                "answer_relevancy",
                threshold=0.75,
                primary=True,
                description="max over answer sentences of S(question, sentence)",
            ),
        ),
    )

    def score(self, row: Row) -> Generator[Embed, Any, Score]:
        """Score the highest similarity between the question and an answer sentence, quoting that sentence."""
        act = _sentences_of(row.actual_output or "")
        v = yield self.embed((row.input or "", *act))
        sims = similarity(v[:1], v[1:])[0]
        top = int(sims.argmax())
        return Score(
            {"answer_relevancy": float(sims[top])},
            rationale=f"most relevant answer sentence ({sims[top]:.3f}): {_q(act[top])}",
            details={"sentence_relevancy": _rounded(sims)},
        )


@register
class GroundednessSemantic(EmbeddingEvaluator):
    """The weakest answer sentence's best S to any context sentence."""

    spec = EvaluatorSpec(
        id="groundedness_semantic",
        family="embedding",
        kind="score",
        inputs=("context", "actual_output"),
        resources=("embedder",),
        description=(
            "Whether every answer sentence is supported by the retrieved context: each answer sentence "
            "takes its best similarity to any context sentence, and the row reports the weakest one, so a "
            "single unsupported sentence pulls the score down."
        ),
        metrics=(
            MetricSpec(
                "groundedness",
                threshold=0.75,
                primary=True,
                description="min over answer sentences of the max similarity to a context sentence",
            ),
        ),
    )

    def score(self, row: Row) -> Generator[Embed, Any, Score]:
        """Score the least grounded answer sentence's best similarity to a context sentence, quoting both."""
        ctx = tuple([s for c in row.context for s in _sentences_of(c.text or "")])
        act = _sentences_of(row.actual_output or "")
        v = yield self.embed(ctx + act)
        sims = similarity(v[len(ctx) :], v[: len(ctx)])
        best = sims.max(axis=1)
        worst = int(best.argmin())
        support = ctx[int(sims[worst].argmax())]
        return Score(
            {"groundedness": float(best[worst])},
            rationale=f"least grounded answer sentence ({best[worst]:.3f}): {_q(act[worst])}; "
            f"closest context sentence: {_q(support)}",
            details={"sentence_groundedness": _rounded(best)},
        )


@register
class ContextRelevancySoft(EmbeddingEvaluator):
    """Per chunk the best S between the question and a chunk sentence; max and mean over chunks."""

    spec = EvaluatorSpec(
        id="context_relevancy_soft",
        family="embedding",
        kind="score",
        inputs=("input", "context"),
        resources=("embedder",),
        description=(
            "Relevance of the retrieved chunks to the question without a judge: a chunk's relevancy is "
            "the highest similarity between the question and one of its sentences; recall takes the best "
            "chunk, precision the average chunk."
        ),
        metrics=(
            MetricSpec(
                "recall_relevancy", threshold=0.75, primary=True, description="max over chunks of the chunk's relevancy"
            ),
            MetricSpec("precision_relevancy", threshold=0.75, description="mean over chunks of the chunk's relevancy"),
        ),
    )

    def score(self, row: Row) -> Generator[Embed, Any, Score]:
        """Rate each chunk by its sentence most similar to the question; report the best chunk and the mean."""
        per_chunk = tuple([_sentences_of(c.text or "") for c in row.context])
        v = yield self.embed((row.input or "", *(s for chunk in per_chunk for s in chunk)))
        sims = similarity(v[:1], v[1:])[0]
        chunk_scores, at = [], 0
        for chunk in per_chunk:
            chunk_scores.append(float(sims[at : at + len(chunk)].max()))
            at += len(chunk)
        best = int(np.argmax(chunk_scores))
        return Score(
            {"recall_relevancy": chunk_scores[best], "precision_relevancy": float(np.mean(chunk_scores))},
            rationale=f"{len(chunk_scores)} chunk(s); most relevant is chunk {best + 1} ({chunk_scores[best]:.3f})",
            details={"chunk_relevancy": _rounded(chunk_scores)},
        )


@register
class RetrieverSimilarity(EmbeddingEvaluator):
    """Mean over retrieved chunks of the best S to an expected chunk."""

    spec = EvaluatorSpec(
        id="retriever_similarity",
        family="embedding",
        kind="score",
        inputs=("context", "expected_context"),
        resources=("embedder",),
        description=(
            "How close the retrieved chunks are to the expected ones: each retrieved chunk takes its best "
            "similarity to an expected chunk, averaged over the retrieved chunks."
        ),
        metrics=(
            MetricSpec(
                "similarity",
                primary=True,
                description="mean over retrieved chunks of the max similarity to an expected chunk",
            ),
        ),
    )

    def score(self, row: Row) -> Generator[Embed, Any, Score]:
        """Average each retrieved chunk's best similarity to an expected chunk, naming the least similar chunk."""
        got, want = tuple(chunk_texts(row.context)), tuple(chunk_texts(row.expected_context))
        v = yield self.embed(got + want)
        best = similarity(v[: len(got)], v[len(got) :]).max(axis=1)
        worst = int(best.argmin())
        return Score(
            {"similarity": float(best.mean())},
            rationale=f"{len(got)} retrieved chunk(s); least like an expected chunk: "
            f"chunk {worst + 1} ({best[worst]:.3f})",
            details={"chunk_similarity": _rounded(best)},
        )
