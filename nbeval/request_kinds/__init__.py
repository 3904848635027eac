"""What scoring code may ask for: the requests an evaluator yields and the engine answers.

An evaluator's ``score(row)`` does no I/O. When it needs embeddings, a chat model's reply or a
pair model's scores, it yields one of these and receives the answer at the ``yield``, so the
engine can batch, deduplicate, cache and parallelise every row's and every evaluator's requests
(see :mod:`nbeval.runtime`). When a request finally fails, the engine throws a
:class:`~nbeval.errors.ResourceError` into the evaluator at the ``yield``; an evaluator that does
not catch it gets that row's error.

Each kind is one module holding its request class and the handler that answers it, registered on
import (:func:`~nbeval.runtime.register_handler`): :mod:`~nbeval.request_kinds.embed`,
:mod:`~nbeval.request_kinds.chat`, :mod:`~nbeval.request_kinds.score_pairs`,
:mod:`~nbeval.request_kinds.classify`, :mod:`~nbeval.request_kinds.token_logprobs`, and
:mod:`~nbeval.request_kinds.gather` (several at once, spread by the engine). A new kind is one
more such module, here or in any package.
"""

from __future__ import annotations

from nbeval.request_kinds.chat import DRY_RUN_MODEL, Chat
from nbeval.request_kinds.classify import Classify, LabelScores, LocalModel
from nbeval.request_kinds.embed import Embed
from nbeval.request_kinds.gather import Gather
from nbeval.request_kinds.score_pairs import ScorePairs
from nbeval.request_kinds.token_logprobs import TokenLogProbs, TokenScores
from nbeval.runtime.handlers import Request

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
