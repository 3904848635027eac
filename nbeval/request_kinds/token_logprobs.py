"""The :class:`TokenLogProbs` request and its handler.

A causal language model's log-probabilities of continuations, every distinct item of a round per
model in one call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nbeval.request_kinds.local_model import LocalModelHandler
from nbeval.resources.local_model_types import LocalModel, TokenScores
from nbeval.runtime.handlers import Request, register_handler

__all__ = ["LocalModel", "TokenLogProbs", "TokenLogProbsHandler", "TokenScores"]


@dataclass(frozen=True)
class TokenLogProbs(Request):
    """Ask a causal language model how likely each continuation is after its prefix.

    Answer: a tuple of :class:`TokenScores`, one per item.
    """

    items: tuple[tuple[str, str], ...]
    """``(prefix, continuation)`` pairs. An empty prefix scores the continuation on its own: its
    first token has no prediction (as with ``labels=input_ids``) unless the tokenizer adds a BOS."""
    model: LocalModel


class TokenLogProbsHandler(LocalModelHandler):
    """Answers :class:`TokenLogProbs` through the model's ``logprobs(items) -> list[TokenScores]``."""

    kind = TokenLogProbs

    def inputs(self, request: Any) -> Sequence[Any]:
        """The ``(prefix, continuation)`` items to score."""
        return tuple(request.items)

    def run(self, runner: Any, distinct: list[Any]) -> Callable[[Sequence[Any]], Any]:
        """Score ``distinct`` at once; a request's answer is its own items' scores, in order."""
        found = dict(zip(distinct, runner.logprobs(distinct), strict=True))
        return lambda mine: tuple(found[x] for x in mine)


register_handler(TokenLogProbsHandler())
