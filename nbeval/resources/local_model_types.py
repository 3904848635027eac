"""What a local model is and what it answers.

The values shared by the local-model runners below (:mod:`nbeval.resources.classifier`,
:mod:`nbeval.resources.causal_lm`) and the request kinds above that ask them
(:mod:`nbeval.request_kinds.classify`, :mod:`nbeval.request_kinds.token_logprobs`, which re-export
them for scoring code).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["LabelScores", "LocalModel", "TokenScores"]


@dataclass(frozen=True)
class LocalModel:
    """A local model that answers classification or token log-probability requests.

    It answers :class:`~nbeval.request_kinds.Classify` or
    :class:`~nbeval.request_kinds.TokenLogProbs` requests, and is loaded once per process, kind,
    name and device (:func:`nbeval.resources.local_models.get_local_model`).
    """

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
class LabelScores:
    """A classifier's answer: a score per input and label.

    ``scores[i, j]`` is input ``i``'s score for ``labels[j]`` (a probability: softmax over the
    labels, or a sigmoid per label for a multi-label model).
    """

    labels: tuple[str, ...]
    scores: Any
    """``numpy.ndarray`` of shape (inputs, labels)."""


@dataclass(frozen=True)
class TokenScores:
    """The log-probabilities of one continuation's tokens."""

    tokens: tuple[str, ...]
    """The continuation's scored tokens, as text."""
    logprobs: Any
    """``numpy.ndarray`` of natural-log probabilities, one per token in ``tokens``."""
