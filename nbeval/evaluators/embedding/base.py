"""The base of the embedding evaluators: the embedding request and the texts of a row's chunks.

The request is an :class:`~nbeval.evaluators.base.Embed` for an evaluator's embedder (its
``embedder=`` parameter).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbeval.evaluators.base import Embed, Evaluator

if TYPE_CHECKING:
    from collections.abc import Sequence

    from nbeval.data.model import Chunk

__all__ = ["EmbeddingEvaluator", "chunk_texts"]


def chunk_texts(chunks: Sequence[Chunk]) -> list[str]:
    """The chunks' texts, in order."""
    return [c.text for c in chunks]


class EmbeddingEvaluator(Evaluator):
    """Shared plumbing: the Embed request for this evaluator's embedder."""

    def embed(self, texts: Sequence[str]) -> Embed:
        """One request for the embeddings of ``texts``."""
        return Embed(tuple(texts), model=self.params.get("embedder"))
