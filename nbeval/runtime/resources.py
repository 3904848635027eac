"""Resources: the expensive shared things of one run, and the dispatch of a round's requests to
the handler of each kind (:mod:`nbeval.runtime.handlers`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Self

from nbeval.errors import ResourceError
from nbeval.runtime import builtin as _builtin  # noqa: F401  (registers nbeval's own handlers)
from nbeval.runtime.handlers import Answer, Round, handler_for, model_key, registered_handlers

if TYPE_CHECKING:
    from nbeval.options import RunOptions

__all__ = ["Resources"]


class Resources:
    """The expensive shared things of one run, loaded lazily.

    ``chat_slots(concurrency)``, when given, makes the context manager each chat client takes a
    slot from before a call (a Dask worker passes a cluster-wide semaphore); by default each client
    allows ``concurrency`` calls at once."""

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
        chat_slots: Callable[[int], AbstractContextManager[Any]] | None = None,
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
        self.chat_clients: dict[Any, Any] = {}
        """The run's chat clients, by :func:`~nbeval.runtime.handlers.model_key` of their model."""
        self.vectors: dict[str | None, dict[str, Any]] = {}
        """Every vector of the run by embedder and text: a text is encoded once, whichever round,
        row or evaluator asks for it."""

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
        with :class:`~nbeval.runtime.handlers.RequestCancelled`."""
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

    # -- the shared things, made on first use ------------------------------------------------

    def embedder(self, model: Any = None) -> Any:
        """The embedder for ``model`` (``None``: the run's): a name or path resolves to the shared
        :func:`~nbeval.resources.embedder.get_embedder` instance; a ready ``Embedder`` (or any
        object with ``encode``) is used as it is."""
        from nbeval.resources.embedder import get_embedder

        spec = model if model is not None else self.embedder_spec
        # A name or path is looked up; only another kind of object is taken as a ready embedder
        # (a str has an ``encode`` method too, so duck typing alone would mistake it for one).
        if spec is None or isinstance(spec, (str, os.PathLike)):
            return get_embedder(spec, device=self.device)
        if callable(getattr(spec, "encode", None)):
            return spec
        msg = f"embedder must be a model name, a local path or an object with encode(texts); got {type(spec).__name__}"
        raise ResourceError(msg)

    def cross_encoder(self, model: str) -> Any:
        """The shared :func:`~nbeval.resources.cross_encoder.get_cross_encoder` scorer for ``model``
        on the run's device."""
        from nbeval.resources.cross_encoder import get_cross_encoder

        return get_cross_encoder(model, device=self.device)

    def local_model(self, ref: Any) -> Any:
        """The shared runner of the local model ``ref`` (a :class:`~nbeval.request_kinds.LocalModel`) on
        its device, else the run's."""
        from nbeval.resources.local_models import get_local_model

        return get_local_model(ref, default_device=self.device)

    def chat_client(self, model: Any = None) -> Any:
        """The chat client for ``model`` (``None``: the run's judge)."""
        spec = model if model is not None else self.judge_spec
        key = model_key(spec)
        if key not in self.chat_clients:
            from nbeval.chat.client import ChatClient
            from nbeval.chat.config import judge_configured, judge_help_text, resolve_chat_model

            if not judge_configured(spec):
                from nbeval.errors import JudgeNotConfigured

                raise JudgeNotConfigured("no judge model is configured. " + judge_help_text())
            from nbeval.chat.judge_settings import client_settings_of

            resolved = resolve_chat_model(spec, required=True, device=self.device)
            # The run's settings are defaults: what a judge's own dict says wins for its calls
            # (a juror's or an evaluator's dict too, made a model before it gets here).
            own = client_settings_of(resolved)
            concurrency = int(own.get("concurrency", self.concurrency))
            kwargs: dict[str, Any] = {"concurrency": concurrency, "cache": self.cache}
            timeout = own.get("timeout", self.timeout)
            if timeout is not None:
                kwargs["timeout"] = timeout
            max_attempts = own.get("max_attempts", self.max_attempts)
            if max_attempts is not None:
                kwargs["max_attempts"] = max_attempts
            if self.prices is not None:
                kwargs["prices"] = self.prices
            if self.chat_slots is not None:
                kwargs["slots"] = self.chat_slots(concurrency)
            self.chat_clients[key] = ChatClient(resolved, **kwargs)
        return self.chat_clients[key]

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

    @classmethod
    def from_options(cls, options: RunOptions, **extra: Any) -> Self:
        """The resources a run configured by ``options`` (a :class:`~nbeval.options.RunOptions`)
        shares: its embedder, judge, device, cache, concurrency, timeout, attempts and prices;
        ``extra`` adds or replaces constructor keywords (``batch=``, ``chat_slots=``, a subclass's own)."""
        from nbeval.options import RESOURCE_OPTIONS

        keywords: dict[str, Any] = {name: getattr(options, name) for name in RESOURCE_OPTIONS}
        keywords["prices"] = dict(options.prices) if options.prices is not None else None
        return cls(**{**keywords, **extra})
