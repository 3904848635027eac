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
from typing import Any, Literal, Union

__all__ = [
    "DRY_RUN_MODEL",
    "Chat",
    "Classify",
    "Embed",
    "Gather",
    "LabelScores",
    "LocalModel",
    "Request",
    "ScorePairs",
    "TokenLogProbs",
    "TokenScores",
]

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


@dataclass(frozen=True)
class LocalModel:
    """A local model that answers :class:`Classify` or :class:`TokenLogProbs` requests. Loaded
    once per process, kind, name and device (:func:`nbeval.resources.local_models.get_local_model`)."""

    name: str
    """A hub name or a local path (for ``kind="detoxify"``: a detoxify checkpoint file, or one of
    detoxify's model names: ``original``, ``unbiased``, ``multilingual``)."""
    kind: Literal["classifier", "detoxify", "causal_lm"]
    """``classifier``: a transformers sequence classifier (one text or a pair of texts per input);
    ``detoxify``: a detoxify checkpoint; ``causal_lm``: a transformers causal language model."""
    device: str | None = None
    """``"cpu"``, ``"cuda"``, ``"cuda:1"``, ... (``None``: the run's device, else a GPU when there is one)."""
    batch_size: int | None = None
    """Inputs per forward pass (``None``: the resource's default for the device)."""


@dataclass(frozen=True)
class Classify:
    """Ask a local classifier for its label scores. Answer: :class:`LabelScores`, one row per input."""

    inputs: tuple[str | tuple[str, str], ...]
    """Texts, or ``(premise, hypothesis)`` pairs for a pair classifier, in the order the answer follows."""
    model: LocalModel


@dataclass(frozen=True)
class LabelScores:
    """A classifier's answer: ``scores[i, j]`` is input ``i``'s score for ``labels[j]`` (a
    probability: softmax over the labels, or a sigmoid per label for a multi-label model)."""

    labels: tuple[str, ...]
    scores: Any
    """``numpy.ndarray`` of shape (inputs, labels)."""


@dataclass(frozen=True)
class TokenLogProbs:
    """Ask a causal language model how likely each continuation is after its prefix. Answer: a
    tuple of :class:`TokenScores`, one per item."""

    items: tuple[tuple[str, str], ...]
    """``(prefix, continuation)`` pairs. An empty prefix scores the continuation on its own: its
    first token has no prediction (as with ``labels=input_ids``) unless the tokenizer adds a BOS."""
    model: LocalModel


@dataclass(frozen=True)
class TokenScores:
    """The log-probabilities of one continuation's tokens."""

    tokens: tuple[str, ...]
    """The continuation's scored tokens, as text."""
    logprobs: Any
    """``numpy.ndarray`` of natural-log probabilities, one per token in ``tokens``."""


Request = Union[Embed, Chat, ScorePairs, Classify, TokenLogProbs]


@dataclass(frozen=True)
class Gather:
    """Ask several requests at once, answered in the same round. Answer: a tuple with one item per
    request, in order: its answer, or the :class:`~nbeval.errors.ResourceError` that ended it,
    given rather than raised, so one failed call leaves the others' answers usable (a head-to-head
    case asks for every pair's verdicts together). An empty gather is answered ``()``."""

    requests: tuple[Request, ...]
