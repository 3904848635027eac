"""Resources: one run's shared settings and handler state, and the dispatch of its requests.

The state is what the run's request handlers keep; a round's requests go to the handler of each
kind (:mod:`nbeval.runtime.handlers`).

Resources know no request kind: each kind's handler makes what it needs (a chat client, an
embedder, a loaded model) from the settings here and keeps it in :meth:`Resources.state`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Self

from nbeval.errors import ResourceError
from nbeval.runtime.handlers import Answer, Round, handler_for, registered_handlers

if TYPE_CHECKING:
    from nbeval.options import RunOptions

__all__ = ["Resources"]


class Resources:
    """One run's settings and its request handlers' state.

    The settings for the things its requests need, and the per-kind state its handlers keep
    (clients, models, memos), made lazily.

    ``chat_slots(concurrency, model)``, when given, makes the context manager each chat client takes
    a slot from before a call, ``model`` being the client's model identity (a Dask worker passes a
    cluster-wide semaphore per model, so the limit means there what it means locally: ``concurrency``
    calls at once to each model); by default each client allows ``concurrency`` calls at once.
    """

    def __init__(
        self,
        *,
        embedder: Any = None,
        judge: Any = None,
        device: str | None = None,
        cache: Any = True,
        concurrency: int = 8,
        timeout: float | None = None,
        max_attempts: int | None = None,
        prices: dict[str, Any] | None = None,
        chat_slots: Callable[[int, str], AbstractContextManager[Any]] | None = None,
        batch: Any = None,
    ) -> None:
        self.embedder_spec = embedder
        self.judge_spec = judge
        self.device = device
        self.cache = cache
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.prices = prices
        self.chat_slots = chat_slots
        self.batch = batch
        """The run's :class:`~nbeval.chat.batch_options.BatchOptions` when its judge calls go through
        the endpoints' Batch APIs (one batch per model and round), else ``None``."""
        self.lock = threading.RLock()
        """Held by a handler while it makes a shared thing, so threads answering rounds of the same
        run (a Dask worker's, a server's) make it once (two chat clients made at once would lose
        one's usage totals)."""
        self._state: dict[Any, dict[Any, Any]] = {}

    @classmethod
    def from_options(cls, options: RunOptions, **extra: Any) -> Self:
        """The resources a run configured by ``options`` shares.

        ``options`` is a :class:`~nbeval.options.RunOptions`; the resources hold its embedder,
        judge, device, cache, concurrency, timeout, attempts and prices. ``extra`` adds or replaces
        constructor keywords (``batch=``, ``chat_slots=``, a subclass's own).
        """
        from nbeval.options import RESOURCE_OPTIONS

        keywords: dict[str, Any] = {name: getattr(options, name) for name in RESOURCE_OPTIONS}
        keywords["prices"] = dict(options.prices) if options.prices is not None else None
        return cls(**{**keywords, **extra})

    def with_batch(self, batch: Any, *, fresh: Sequence[Any] = ()) -> Self:
        """These resources with ``batch`` as their batch options, sharing what they made.

        Every request kind's store is shared (a model loaded by one is there for the other), but
        those of the kinds in ``fresh``, which start empty (a partitioned run's batched round gives
        its chat clients their own usage, counted only for the parts it writes).
        """
        other = copy.copy(self)
        other.batch = batch
        with self.lock:
            for handler in registered_handlers():  # every kind's store made now, so that both fill the same
                self._state.setdefault(handler.kind, {})
            other._state = {kind: store for kind, store in self._state.items() if kind not in fresh}
        return other

    def state(self, kind: Any) -> dict[Any, Any]:
        """The run's store for request kind ``kind``.

        ``kind`` is the request's class; the store is a dict its handler keeps what it made in
        (clients by model, vectors by text), empty at first and kept for the run.
        """
        with self.lock:
            return self._state.setdefault(kind, {})

    # -- dispatch --------------------------------------------------------------------------

    def answer(
        self,
        requests: Sequence[Any],
        *,
        on_answer: Callable[[int, Answer], None] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> list[Answer]:
        """One :class:`Answer` per request, in order; a failed request's value is a ResourceError.

        ``on_answer(index, answer)`` is called once per request as its answer is ready (a batch of
        embeddings, pair scores or local-model outputs at once, each judge reply as it arrives).
        ``cancel``: once it says so, no new judge call starts; the requests not sent are answered
        with :class:`~nbeval.runtime.handlers.RequestCancelled`.
        """
        answers: list[Any] = [None] * len(requests)
        warnings: list[list[str]] = [[] for _ in requests]

        def deliver(i: int) -> None:
            if on_answer is not None:
                on_answer(i, Answer(answers[i], tuple(warnings[i])))

        rnd = Round(answers, warnings, deliver, cancel)
        groups: dict[int, tuple[Any, list[tuple[int, Any]]]] = {}
        unanswerable: list[int] = []
        for i, r in enumerate(requests):
            handler = handler_for(r)
            if handler is None:
                answers[i] = ResourceError(f"no resource answers a {type(r).__name__} request")
                unanswerable.append(i)
            else:
                groups.setdefault(id(handler), (handler, []))[1].append((i, r))
        batch = [(h, items) for h, items in groups.values() if not h.streams]
        streaming = [(h, items) for h, items in groups.values() if h.streams]
        for handler, items in batch:
            handler.answer(self, items, rnd)
        for i in sorted([*unanswerable, *(i for _, items in batch for i, _ in items)]):
            deliver(i)
        for handler, items in streaming:  # each answer is handed on as it arrives
            handler.answer(self, items, rnd)
        return [Answer(a, tuple(w)) for a, w in zip(answers, warnings, strict=True)]

    def usage_totals(self) -> dict[str, Any]:
        """Token and cost totals over every request kind of the run (cost ``None`` when no price is known)."""
        totals: dict[str, Any] = {}
        for handler in registered_handlers():
            for k, v in handler.usage(self).items():
                if k == "cost":
                    totals[k] = v if totals.get(k) is None else totals[k] + (v or 0.0)
                else:
                    totals[k] = totals.get(k, 0) + v
        return totals
