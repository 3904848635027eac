"""Shared, expensive resources, loaded lazily and once per process.

Importing this package is cheap: torch and sentence-transformers load only when a model does.
"""

from __future__ import annotations

from nbeval.resources.cross_encoder import CrossEncoderScorer, get_cross_encoder
from nbeval.resources.embedder import DEFAULT_MODEL, Embedder, get_embedder

__all__ = [
    "DEFAULT_MODEL",
    "CrossEncoderScorer",
    "Embedder",
    "get_cross_encoder",
    "get_embedder",
]
