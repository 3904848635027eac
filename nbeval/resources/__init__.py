"""Shared, expensive resources, loaded lazily and once per process.

Importing this package is cheap: numpy, torch and sentence-transformers load only when a model
does. The names below come from their modules on first use, so a module that needs only a light
one (:mod:`nbeval.resources.local_model_types`) does not load the embedder's.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbeval.resources.cross_encoder import CrossEncoderScorer, get_cross_encoder
    from nbeval.resources.embedder import DEFAULT_MODEL, Embedder, get_embedder

__all__ = [
    "DEFAULT_MODEL",
    "CrossEncoderScorer",
    "Embedder",
    "get_cross_encoder",
    "get_embedder",
]

#: Where each public name lives (imported when first asked for).
_HOMES = {
    "DEFAULT_MODEL": "nbeval.resources.embedder",
    "Embedder": "nbeval.resources.embedder",
    "get_embedder": "nbeval.resources.embedder",
    "CrossEncoderScorer": "nbeval.resources.cross_encoder",
    "get_cross_encoder": "nbeval.resources.cross_encoder",
}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'nbeval.resources' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value  # looked up once
    return value
