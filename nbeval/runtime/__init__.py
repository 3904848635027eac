"""Answers the requests evaluators yield, in batches: the bridge from the engine to resources.

One :class:`Resources` lives for one run. It receives every request of a round from every
evaluator and row and hands each kind to the handler registered for it
(:mod:`nbeval.runtime.handlers`), which groups them by model and answers each group with one
batched call: all texts to embed go to the embedder at once (deduplicated), all text pairs to
score go to the cross-encoder at once (deduplicated), all chat calls to the chat client (which
bounds concurrency, retries and caches). The kinds and their handlers, nbeval's own included, live
above this package (:mod:`nbeval.request_kinds`), one module each; this package knows none of
them. Heavy packages load on first use.

Answers are handed on as they come (``answer(on_answer=...)``): the engine advances a row as soon
as its answer is in, so progress moves with every judge reply rather than with every round. A
round can be cancelled (``answer(cancel=...)``): no new judge call starts, and the requests never
sent are answered with :class:`RequestCancelled`.
"""

from __future__ import annotations

from nbeval.runtime.handlers import (
    REFUSED_STATUSES,
    Answer,
    Request,
    RequestCancelled,
    RequestHandler,
    Round,
    handler_for,
    model_key,
    refused,
    register_handler,
)
from nbeval.runtime.resources import Resources

__all__ = [
    "REFUSED_STATUSES",
    "Answer",
    "Request",
    "RequestCancelled",
    "RequestHandler",
    "Resources",
    "Round",
    "handler_for",
    "model_key",
    "refused",
    "register_handler",
]
