"""Retrieval evaluators that compare retrieved chunks with the expected ones: hit rate, MRR and document recall.

No model is involved.

A retrieved chunk *matches* an expected one when both carry a ``doc_uri`` and the two are
equal; otherwise when their texts (:attr:`Chunk.text`: the content, else the document name) are
identical. ``top_k=0`` (the default) looks at every retrieved chunk.

Hit rate and MRR rank what was retrieved in one of two units (``unit=``):

* ``"chunk"`` (the default; DB-GPT's definition): every retrieved chunk is a rank, so a document
  retrieved as three chunks takes three ranks.
* ``"document"`` (what TREC tools such as ``trec_eval`` rank): the list is read as a ranking of
  documents. A document's rank is that of its first chunk; its later chunks take no rank and are
  skipped, and ``top_k`` counts documents. A document matches when one of its retrieved chunks
  matches an expected one. Chunks are grouped by ``doc_uri``; a chunk without one is a document
  of its own. ``retriever_mrr`` is then trec_eval's ``recip_rank`` and ``retriever_hit_rate`` its
  ``success`` at ``top_k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Param, Score
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Chunk, Row

__all__ = [
    "UNITS",
    "DocumentRecall",
    "RetrieverHitRate",
    "RetrieverMRR",
    "chunks_match",
    "first_match_rank",
    "rank_documents",
]

#: What hit rate and MRR rank (see the module docstring).
UNITS = ("chunk", "document")


def chunks_match(retrieved: Chunk, expected: Chunk) -> bool:
    """Whether ``retrieved`` is the ``expected`` chunk (see the module docstring)."""
    if retrieved.doc_uri is not None and expected.doc_uri is not None:
        return retrieved.doc_uri == expected.doc_uri
    return retrieved.text == expected.text


def first_match_rank(retrieved: Sequence[Chunk], expected: Sequence[Chunk], top_k: int = 0) -> int | None:
    """Find the 1-based rank of the first retrieved chunk that matches an expected chunk.

    Only the first ``top_k`` retrieved chunks count (all when 0); ``None`` when none of them matches.
    """
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


def rank_documents(retrieved: Sequence[Chunk]) -> list[list[Chunk]]:
    """Group ``retrieved`` into documents in the order each first appears.

    There is one list of chunks per document (chunks with the same ``doc_uri``; a chunk without one
    is a document of its own).
    """
    groups: dict[object, list[Chunk]] = {}
    for i, chunk in enumerate(retrieved):
        groups.setdefault(chunk.doc_uri if chunk.doc_uri is not None else i, []).append(chunk)
    return list(groups.values())


def _describe(chunk: Chunk) -> str:
    if chunk.doc_uri is not None:
        return f"document {chunk.doc_uri!r}"
    text = chunk.text
    return f"chunk {(text if len(text) <= 50 else text[:47] + '...')!r}"


class _RankedRetrieval(Evaluator):
    """Shared ``top_k`` and ``unit`` handling of hit rate and MRR."""

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        top_k = self.params.get("top_k")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 0:
            msg = f"{self.spec.id}: top_k must be a whole number >= 0 (0 = every retrieved chunk), got {top_k!r}"
            raise EvaluatorError(msg)
        self.top_k: int = top_k
        unit = self.params.get("unit")
        if unit not in UNITS:
            msg = (
                f"{self.spec.id}: unit must be 'chunk' (every retrieved chunk is a rank) or 'document' "
                f"(a document ranks once, at its first chunk), got {unit!r}"
            )
            raise EvaluatorError(msg)
        self.unit: str = unit

    def _rank(self, row: Row) -> tuple[int | None, str]:
        if self.unit == "document":
            return self._document_rank(row)
        rank = first_match_rank(row.context, row.expected_context, self.top_k)
        scope = f"the first {self.top_k}" if self.top_k else f"all {len(row.context)}"
        if rank is None:
            return None, f"no expected chunk among {scope} retrieved"
        return rank, f"first match at rank {rank} ({_describe(row.context[rank - 1])}) of {scope} retrieved"

    def _document_rank(self, row: Row) -> tuple[int | None, str]:
        documents = rank_documents(row.context)
        window = documents[: self.top_k] if self.top_k else documents
        scope = (
            f"the first {self.top_k} documents" if self.top_k else f"all {len(documents)} documents"
        ) + f" ({len(row.context)} chunks)"
        for rank, chunks in enumerate(window, 1):
            if first_match_rank(chunks, row.expected_context) is not None:
                return rank, f"first match at document rank {rank} ({_describe(chunks[0])}) of {scope} retrieved"
        return None, f"no expected document among {scope} retrieved"


#: What a rank is, for the ranking metrics.
_UNIT = Param(
    "unit",
    Literal["chunk", "document"],
    "chunk",
    "what a rank is: every retrieved chunk, or a document (ranked once, at its first chunk)",
)


#: How many retrieved chunks count.
_TOP_K = Param("top_k", int, 0, "only the first top_k retrieved chunks count (0: all of them)")


@register
class RetrieverHitRate(_RankedRetrieval):
    """Score whether an expected chunk is among the first ``top_k`` retrieved.

    1 when one is among them (chunks, or documents with ``unit="document"``), else 0.
    """

    spec = EvaluatorSpec(
        id="retriever_hit_rate",
        family="deterministic",
        kind="score",
        inputs=("context", "expected_context"),
        description=(
            "1 when any expected chunk is among the first top_k retrieved (0 = all). Chunks match on "
            'equal doc_uri when both have one, else on identical text. unit="chunk" (DB-GPT\'s '
            'definition) ranks every retrieved chunk; unit="document" ranks documents as TREC tools do '
            "(a document ranks once, at its first chunk; top_k counts documents), which is trec_eval's "
            "success at top_k."
        ),
        params=(
            _TOP_K,
            _UNIT,
        ),
        metrics=(MetricSpec("hit_rate", primary=True, description="share of rows with a hit"),),
    )

    def score(self, row: Row) -> Score:
        """Score 1 when an expected chunk (or document) ranks within ``top_k``, else 0; the rationale gives the rank."""
        rank, why = self._rank(row)
        return Score({"hit_rate": 0.0 if rank is None else 1.0}, rationale=why)


@register
class RetrieverMRR(_RankedRetrieval):
    """1 / rank of the first retrieved chunk (within ``top_k``) matching an expected one; 0 if none.

    With ``unit="document"`` ranks count documents (see the module docstring).
    """

    spec = EvaluatorSpec(
        id="retriever_mrr",
        family="deterministic",
        kind="score",
        inputs=("context", "expected_context"),
        description=(
            "1 / rank of the first retrieved chunk that matches an expected one (0 when none does within "
            'top_k). unit="chunk" (DB-GPT\'s definition) ranks every retrieved chunk; unit="document" '
            "ranks documents as TREC tools do (a document ranks once, at its first chunk), which is "
            "trec_eval's recip_rank."
        ),
        params=(
            _TOP_K,
            _UNIT,
        ),
        metrics=(MetricSpec("mrr", primary=True, description="mean reciprocal rank"),),
    )

    def score(self, row: Row) -> Score:
        """Score 1 / the rank of the first match within ``top_k`` (0 when none); the rationale names it."""
        rank, why = self._rank(row)
        return Score({"mrr": 0.0 if rank is None else 1.0 / rank}, rationale=why)


@register
class DocumentRecall(Evaluator):
    """Share of the expected documents (distinct ``doc_uri``) found among the retrieved chunks' documents.

    How many chunks were retrieved does not matter.

    It compares documents, so a row is skipped (with the reason) when its expected context names
    no document, or when no retrieved chunk names one: scoring such a row 0 would blame the
    retriever for what the dataset does not say. Expected chunks without a ``doc_uri`` next to
    ones with one are ignored and the rationale says so.
    """

    spec = EvaluatorSpec(
        id="document_recall",
        family="deterministic",
        kind="score",
        inputs=("context", "expected_context"),
        description=(
            "Share of the expected documents (doc_uri) found among the retrieved chunks' documents. Rows "
            "whose expected or retrieved chunks name no document are skipped."
        ),
        metrics=(
            MetricSpec(
                "document_recall", primary=True, description="expected documents retrieved / expected documents"
            ),
        ),
    )

    def missing_input(self, row: Row) -> str | None:
        """Skip a row with an input missing, or whose expected or retrieved chunks name no document."""
        reason = super().missing_input(row)
        if reason is not None:
            return reason
        if all(c.doc_uri is None for c in row.expected_context):
            return "expected_context has no doc_uri (document_recall compares documents)"
        if all(c.doc_uri is None for c in row.context):
            return "no retrieved chunk has a doc_uri (document_recall compares documents)"
        return None

    def score(self, row: Row) -> Score:
        """Score the share of the expected documents retrieved; the rationale names those missing."""
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
        return Score(
            {"document_recall": len(found) / len(expected)}, rationale=why, details={"found": found, "missing": missed}
        )
