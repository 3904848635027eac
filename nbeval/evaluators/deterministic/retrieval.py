"""Retrieval evaluators that compare retrieved chunks with the expected ones: hit rate, MRR and
document recall. No model is involved.

A retrieved chunk *matches* an expected one when both carry a ``doc_uri`` and the two are
equal; otherwise when their texts (:attr:`Chunk.text`: the content, else the document name) are
identical. ``top_k=0`` (the default) looks at every retrieved chunk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Evaluator, Score
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Chunk, Row

__all__ = ["DocumentRecall", "RetrieverHitRate", "RetrieverMRR", "chunks_match", "first_match_rank"]


def chunks_match(retrieved: Chunk, expected: Chunk) -> bool:
    """Whether ``retrieved`` is the ``expected`` chunk (see the module docstring)."""
    if retrieved.doc_uri is not None and expected.doc_uri is not None:
        return retrieved.doc_uri == expected.doc_uri
    return retrieved.text == expected.text


def first_match_rank(retrieved: Sequence[Chunk], expected: Sequence[Chunk], top_k: int = 0) -> int | None:
    """The 1-based rank of the first of the first ``top_k`` retrieved chunks (all when 0) that
    matches an expected chunk, or ``None``."""
    window = retrieved[:top_k] if top_k else retrieved
    # Fast paths for the usual shapes: all chunks with documents, or all without.
    uris = {e.doc_uri for e in expected if e.doc_uri is not None}
    texts = {e.text for e in expected if e.doc_uri is None}
    for rank, chunk in enumerate(window, 1):
        if chunk.doc_uri is not None:
            if chunk.doc_uri in uris or (texts and chunk.text in texts):
                return rank
        elif any(chunk.text == e.text for e in expected):
            return rank
    return None


def _describe(chunk: Chunk) -> str:
    if chunk.doc_uri is not None:
        return f"document {chunk.doc_uri!r}"
    text = chunk.text
    return f"chunk {(text if len(text) <= 50 else text[:47] + '...')!r}"


class _RankedRetrieval(Evaluator):
    """Shared ``top_k`` handling of hit rate and MRR."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        top_k = self.params.get("top_k")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            msg = f"{self.spec.id}: top_k must be a whole number >= 0 (0 = every retrieved chunk), got {top_k!r}"
            raise EvaluatorError(msg)
        self.top_k: int = top_k

    def _rank(self, row: Row) -> tuple[int | None, str]:
        rank = first_match_rank(row.context, row.expected_context, self.top_k)
        scope = f"the first {self.top_k}" if self.top_k else f"all {len(row.context)}"
        if rank is None:
            return None, f"no expected chunk among {scope} retrieved"
        return rank, f"first match at rank {rank} ({_describe(row.context[rank - 1])}) of {scope} retrieved"


@register("retriever_hit_rate")
class RetrieverHitRate(_RankedRetrieval):
    """1 when an expected chunk is among the first ``top_k`` retrieved, else 0."""

    def score(self, row: Row) -> Score:
        rank, why = self._rank(row)
        return Score({"hit_rate": 0.0 if rank is None else 1.0}, rationale=why)


@register("retriever_mrr")
class RetrieverMRR(_RankedRetrieval):
    """1 / rank of the first retrieved chunk (within ``top_k``) matching an expected one; 0 if none."""

    def score(self, row: Row) -> Score:
        rank, why = self._rank(row)
        return Score({"mrr": 0.0 if rank is None else 1.0 / rank}, rationale=why)


@register("document_recall")
class DocumentRecall(Evaluator):
    """Share of the expected documents (distinct ``doc_uri``) found among the retrieved chunks'
    documents. How many chunks were retrieved does not matter.

    It compares documents, so a row is skipped (with the reason) when its expected context names
    no document, or when no retrieved chunk names one: scoring such a row 0 would blame the
    retriever for what the dataset does not say. Expected chunks without a ``doc_uri`` next to
    ones with one are ignored and the rationale says so.
    """

    def missing_input(self, row: Row) -> str | None:
        reason = super().missing_input(row)
        if reason is not None:
            return reason
        if all(c.doc_uri is None for c in row.expected_context):
            return "expected_context has no doc_uri (document_recall compares documents)"
        if all(c.doc_uri is None for c in row.context):
            return "no retrieved chunk has a doc_uri (document_recall compares documents)"
        return None

    def score(self, row: Row) -> Score:
        expected = list(dict.fromkeys(c.doc_uri for c in row.expected_context if c.doc_uri is not None))
        retrieved = {c.doc_uri for c in row.context if c.doc_uri is not None}
        found = [u for u in expected if u in retrieved]
        missed = [u for u in expected if u not in retrieved]
        why = f"{len(found)} of {len(expected)} expected documents retrieved"
        if missed:
            shown = ", ".join(map(repr, missed[:5])) + (", ..." if len(missed) > 5 else "")
            why += f"; missing {shown}"
        unnamed = sum(c.doc_uri is None for c in row.expected_context)
        if unnamed:
            why += f"; {unnamed} expected chunk(s) without a doc_uri ignored"
        return Score({"document_recall": len(found) / len(expected)}, rationale=why,
                     details={"found": found, "missing": missed})
