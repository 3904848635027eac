"""What scoring code may ask for: the requests an evaluator yields and the engine answers.

An evaluator's ``score(row)`` does no I/O. When it needs embeddings, a chat model's reply or a
pair model's scores, it yields one of these and receives the answer at the ``yield``, so the
engine can batch, deduplicate, cache and parallelise every row's and every evaluator's requests
(see :mod:`nbeval.runtime`). When a request finally fails, the engine throws a
:class:`~nbeval.errors.ResourceError` into the evaluator at the ``yield``; an evaluator that does
not catch it gets that row's error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = ["DRY_RUN_MODEL", "Chat", "Embed", "Request", "ScorePairs"]

#: The ``model`` of the placeholder replies a dry run answers chat requests with (nothing is
#: called): an evaluator whose later questions depend on the replies may recognise it and stand
#: in a plausible reply, so the dry run's count of later calls is closer to the real one.
DRY_RUN_MODEL = "dry-run"


@dataclass(frozen=True)
class Embed:
    """Ask for embeddings. Answer: ``numpy.ndarray`` of shape (len(texts), dim), rows L2-normalised."""

    texts: tuple[str, ...]
    """The texts to embed, in the order the answer's rows follow."""
    model: str | None = None
    """Embedder name or path (``None``: the run's embedder)."""


@dataclass(frozen=True)
class Chat:
    """Ask a chat model (the judge unless ``model`` names another). Answer: a ``ChatReply``."""

    messages: tuple[Mapping[str, str], ...]
    """The conversation, OpenAI style (``{"role": ..., "content": ...}``)."""
    params: Mapping[str, Any] = field(default_factory=dict)
    """Generation parameters (temperature, max_tokens, ...), part of the cache key."""
    model: Any = None
    """The chat model (``None``: the run's judge)."""
    sample: int = 0
    """Which independent sample of this same request it is: ``0`` for the first; a scorer that asks
    the same thing several times to collect different replies (ragas's answer_relevancy does) numbers
    the repeats 1, 2, ... so the cache and the deduplication of identical requests keep them apart.
    Not sent to the model."""


@dataclass(frozen=True)
class ScorePairs:
    """Ask a pair model (a cross-encoder) to score text pairs. Answer: ``numpy.ndarray`` of floats,
    one per pair, in order (a one-label model gives values in [0, 1])."""

    pairs: tuple[tuple[str, str], ...]
    """The ``(a, b)`` pairs to score, in the order the answer follows."""
    model: str
    """The cross-encoder's name or local path."""


Request = Union[Embed, Chat, ScorePairs]
