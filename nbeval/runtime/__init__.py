"""Answers the requests evaluators yield, in batches: the bridge from the engine to resources.

One :class:`Resources` lives for one run. It receives every request of a round from every
evaluator and row, groups them by kind and model, and answers each group with one batched call:
all texts to embed go to the embedder at once (deduplicated), all text pairs to score go to the
cross-encoder at once (deduplicated), all chat calls to the chat client (which bounds
concurrency, retries and caches). Heavy packages load on first use.

Answers are handed on as they come (``answer(on_answer=...)``): the engine advances a row as soon
as its answer is in, so progress moves with every judge reply rather than with every round. A
round can be cancelled (``answer(cancel=...)``): no new judge call starts, and the requests never
sent are answered with :class:`RequestCancelled`.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nbeval.errors import ResourceError
from nbeval.requests import Chat, Classify, Embed, LabelScores, Request, ScorePairs, TokenLogProbs

__all__ = ["Answer", "RequestCancelled", "Resources", "model_key"]


def model_key(model: Any) -> Any:
    """A hashable key for a chat-model spec: names as they are, objects (callables, dicts, models) by identity."""
    return model if isinstance(model, (str, type(None))) else id(model)


def _own_timeout(spec: Any) -> bool:
    """Whether the judge ``spec`` sets its own call timeout (``{"timeout": ...}``): it then bounds
    that judge's calls, not the run's ``timeout``."""
    return isinstance(spec, Mapping) and spec.get("timeout") is not None


@dataclass(frozen=True)
class Answer:
    """The answer to one request, and what the row it belongs to should be told about it."""

    value: Any
    """What the evaluator receives at its ``yield``; a :class:`ResourceError` when the request failed."""
    warnings: tuple[str, ...] = ()
    """Notes for the row's rationale (e.g. texts the embedder truncated)."""


class RequestCancelled(ResourceError):
    """The answer to a request the run was cancelled before sending: the engine reports its row
    as ``cancelled``, not as an error."""


class Resources:
    """The expensive shared things of one run, loaded lazily."""

    def __init__(self, *, embedder: Any = None, judge: Any = None, device: str | None = None,
                 cache: Any = True, concurrency: int = 8, timeout: float | None = None,
                 max_attempts: int | None = None, prices: dict[str, Any] | None = None) -> None:
        self.embedder_spec = embedder
        self.judge_spec = judge
        self.device = device
        self.cache = cache
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.prices = prices
        self._chat_clients: dict[Any, Any] = {}
        # Every vector of the run by embedder and text: a text is encoded once, whichever round,
        # row or evaluator asks for it.
        self._vectors: dict[str | None, dict[str, Any]] = {}

    # -- dispatch --------------------------------------------------------------------------

    def answer(self, requests: Sequence[Request], *, on_answer: Callable[[int, Answer], None] | None = None,
               cancel: Callable[[], bool] | None = None) -> list[Answer]:
        """One :class:`Answer` per request, in order; a failed request's value is a ResourceError.

        ``on_answer(index, answer)`` is called once per request as its answer is ready (a batch of
        embeddings, pair scores or local-model outputs at once, each judge reply as it arrives).
        ``cancel``: once it says so, no new judge call starts; the requests not sent are answered
        with :class:`RequestCancelled`."""
        answers: list[Any] = [None] * len(requests)
        warnings: list[list[str]] = [[] for _ in requests]
        embeds = [(i, r) for i, r in enumerate(requests) if isinstance(r, Embed)]
        pairs = [(i, r) for i, r in enumerate(requests) if isinstance(r, ScorePairs)]
        chats = [(i, r) for i, r in enumerate(requests) if isinstance(r, Chat)]
        local = [(i, r) for i, r in enumerate(requests) if isinstance(r, (Classify, TokenLogProbs))]
        for i, r in enumerate(requests):
            if not isinstance(r, (Embed, ScorePairs, Chat, Classify, TokenLogProbs)):
                answers[i] = ResourceError(f"no resource answers a {type(r).__name__} request")
        if embeds:
            self._answer_embeds(embeds, answers, warnings)
        if pairs:
            self._answer_pairs(pairs, answers)
        if local:
            self._answer_local(local, answers, warnings)

        def deliver(i: int) -> None:
            if on_answer is not None:
                on_answer(i, Answer(answers[i], tuple(warnings[i])))

        for i, r in enumerate(requests):
            if not isinstance(r, Chat):
                deliver(i)
        if chats:
            self._answer_chats(chats, answers, warnings, deliver, cancel)
        return [Answer(a, tuple(w)) for a, w in zip(answers, warnings, strict=True)]

    # -- embeddings ------------------------------------------------------------------------

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
        msg = (f"embedder must be a model name, a local path or an object with encode(texts); "
               f"got {type(spec).__name__}")
        raise ResourceError(msg)

    def _answer_embeds(self, items: list[tuple[int, Embed]], answers: list[Any],
                       warnings: list[list[str]]) -> None:
        by_model: dict[str | None, list[tuple[int, Embed]]] = defaultdict(list)
        for i, r in items:
            by_model[r.model].append((i, r))
        for model, group in by_model.items():
            memo = self._vectors.setdefault(model, {})
            try:
                emb = self.embedder(model)
                todo = [t for t in dict.fromkeys(t for _, r in group for t in r.texts) if t not in memo]
                if todo:
                    memo.update(zip(todo, emb.encode(todo), strict=True))
            except Exception as exc:  # the model failed to load or encode: every row says why
                err = ResourceError(f"embedder failed: {exc}")
                for i, _ in group:
                    answers[i] = err
                continue
            import numpy as np

            # One matrix of the round's distinct texts; each row's answer indexes into it (one
            # gather per row instead of stacking its vectors one by one).
            position = {t: k for k, t in enumerate(dict.fromkeys(t for _, r in group for t in r.texts))}
            matrix = np.stack([memo[t] for t in position]) if position else None
            is_truncated = getattr(emb, "truncated", None)
            cut = {t for t in position if is_truncated(t)} if is_truncated is not None else set()
            for i, r in group:
                if not r.texts or matrix is None:
                    answers[i] = np.zeros((0, 0), dtype=np.float32)
                    continue
                answers[i] = matrix[[position[t] for t in r.texts]]
                truncated = sum(t in cut for t in r.texts)
                if truncated:
                    warnings[i].append(f"{truncated} text(s) longer than the embedder's window were truncated")

    # -- pair scoring ----------------------------------------------------------------------

    def cross_encoder(self, model: str) -> Any:
        """The shared :func:`~nbeval.resources.cross_encoder.get_cross_encoder` scorer for ``model``
        on the run's device."""
        from nbeval.resources.cross_encoder import get_cross_encoder

        return get_cross_encoder(model, device=self.device)

    def _answer_pairs(self, items: list[tuple[int, ScorePairs]], answers: list[Any]) -> None:
        by_model: dict[str, list[tuple[int, ScorePairs]]] = defaultdict(list)
        for i, r in items:
            by_model[r.model].append((i, r))
        for model, group in by_model.items():
            distinct = list(dict.fromkeys(p for _, r in group for p in r.pairs))
            try:
                scored = dict(zip(distinct, self.cross_encoder(model).score(distinct).tolist(), strict=True))
            except Exception as exc:  # the model failed to load or score: every row says why
                err = exc if isinstance(exc, ResourceError) else ResourceError(str(exc) or type(exc).__name__)
                for i, _ in group:
                    answers[i] = err
                continue
            import numpy as np

            for i, r in group:
                answers[i] = np.array([scored[p] for p in r.pairs], dtype=np.float64)

    # -- local models (classifiers, causal language models) -------------------------------

    def local_model(self, ref: Any) -> Any:
        """The shared runner of the local model ``ref`` (a :class:`~nbeval.requests.LocalModel`) on
        its device, else the run's."""
        from nbeval.resources.local_models import get_local_model

        return get_local_model(ref, default_device=self.device)

    def _answer_local(self, items: list[tuple[int, Classify | TokenLogProbs]], answers: list[Any],
                      warnings: list[list[str]]) -> None:
        """Every input of a round that goes to one model, deduplicated, in one call (the runner
        batches them, sorted by length)."""
        groups: dict[tuple[type, Any], list[tuple[int, Any]]] = defaultdict(list)
        for i, r in items:
            groups[(type(r), r.model)].append((i, r))
        for (kind, ref), group in groups.items():
            inputs = [x for _, r in group for x in (r.inputs if kind is Classify else r.items)]
            distinct = list(dict.fromkeys(inputs))
            try:
                runner = self.local_model(ref)
                if kind is Classify:
                    scored = runner.classify(distinct)
                    rows = dict(zip(distinct, range(len(distinct)), strict=True))
                else:
                    found = dict(zip(distinct, runner.logprobs(distinct), strict=True))
            except Exception as exc:  # the model failed to load or run: every row says why
                err = exc if isinstance(exc, ResourceError) else ResourceError(f"{type(exc).__name__}: {exc}")
                for i, _ in group:
                    answers[i] = err
                continue
            is_truncated = getattr(runner, "truncated", None)
            for i, r in group:
                mine = r.inputs if kind is Classify else r.items
                if kind is Classify:
                    answers[i] = LabelScores(scored.labels, scored.scores[[rows[x] for x in mine]])
                else:
                    answers[i] = tuple(found[x] for x in mine)
                cut = sum(bool(is_truncated(x)) for x in mine) if is_truncated is not None else 0
                if cut:
                    warnings[i].append(f"{cut} input(s) longer than {ref.name}'s window were truncated")

    # -- chat ------------------------------------------------------------------------------

    def chat_client(self, model: Any = None) -> Any:
        """The chat client for ``model`` (``None``: the run's judge)."""
        spec = model if model is not None else self.judge_spec
        key = model_key(spec)
        if key not in self._chat_clients:
            from nbeval.chat.client import ChatClient
            from nbeval.chat.config import judge_configured, judge_help_text, resolve_chat_model

            if not judge_configured(spec):
                from nbeval.errors import JudgeNotConfigured

                raise JudgeNotConfigured("no judge model is configured. " + judge_help_text())
            resolved = resolve_chat_model(spec, required=True, device=self.device)
            kwargs: dict[str, Any] = {"concurrency": self.concurrency, "cache": self.cache}
            if self.timeout is not None and not _own_timeout(spec):
                kwargs["timeout"] = self.timeout  # the run's default; a judge's own setting wins
            if self.max_attempts is not None:
                kwargs["max_attempts"] = self.max_attempts
            if self.prices is not None:
                kwargs["prices"] = self.prices
            self._chat_clients[key] = ChatClient(resolved, **kwargs)
        return self._chat_clients[key]

    def _answer_chats(self, items: list[tuple[int, Chat]], answers: list[Any], warnings: list[list[str]],
                      deliver: Callable[[int], None], cancel: Callable[[], bool] | None) -> None:
        from nbeval.chat.client import ChatFailure, ChatResult

        by_model: dict[Any, list[tuple[int, Chat]]] = defaultdict(list)
        for i, r in items:
            by_model[model_key(r.model)].append((i, r))
        for group in by_model.values():
            try:
                client = self.chat_client(group[0][1].model)
            except Exception as exc:
                for i, _ in group:
                    answers[i] = ResourceError(str(exc))
                    deliver(i)
                continue

            def arrived(j: int, reply: ChatResult, group: list[tuple[int, Chat]] = group) -> None:
                i = group[j][0]
                if isinstance(reply, ChatFailure):
                    answers[i] = RequestCancelled("cancelled before the judge answered") if reply.cancelled \
                        else ResourceError(f"judge call failed: {reply.error}")
                else:
                    answers[i] = reply
                    warnings[i].extend(reply.warnings)  # e.g. text that had to be repaired: the rationale says so
                deliver(i)

            replies = client.run_many([r for _, r in group], on_done=arrived, cancel=cancel)
            for j, reply in enumerate(replies):
                if answers[group[j][0]] is None:  # not handed on as it came: hand it on now
                    arrived(j, reply)

    def usage_totals(self) -> dict[str, Any]:
        """Token and cost totals over every chat client of the run (cost ``None`` when no price is known)."""
        totals: dict[str, Any] = {}
        for client in self._chat_clients.values():
            for k, v in client.usage_totals().to_dict().items():
                if k == "cost":
                    totals[k] = v if totals.get(k) is None else totals[k] + (v or 0.0)
                else:
                    totals[k] = totals.get(k, 0) + v
        return totals
