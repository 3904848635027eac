"""Answers the requests evaluators yield, in batches: the bridge from the engine to resources.

One :class:`Resources` lives for one run. It receives every request of a round from every
evaluator and row, groups them by kind and model, and answers each group with one batched call:
all texts to embed go to the embedder at once (deduplicated), all chat calls to the chat client
(which bounds concurrency, retries and caches). Heavy packages load on first use.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from nbeval.errors import ResourceError
from nbeval.requests import Chat, Embed, Request

__all__ = ["Resources", "model_key"]


def model_key(model: Any) -> Any:
    """A hashable key for a chat-model spec: names as they are, objects (callables, dicts, models) by identity."""
    return model if isinstance(model, (str, type(None))) else id(model)


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
        self.warnings: dict[int, list[str]] = defaultdict(list)
        """Per request (by position in the last round), warnings to attach to its row."""

    # -- dispatch --------------------------------------------------------------------------

    def answer(self, requests: Sequence[Request]) -> list[Any]:
        """One answer per request, in order; a failed request's answer is a ResourceError."""
        answers: list[Any] = [None] * len(requests)
        embeds = [(i, r) for i, r in enumerate(requests) if isinstance(r, Embed)]
        chats = [(i, r) for i, r in enumerate(requests) if isinstance(r, Chat)]
        other = [i for i, r in enumerate(requests) if not isinstance(r, (Embed, Chat))]
        for i in other:
            answers[i] = ResourceError(f"no resource answers a {type(requests[i]).__name__} request")
        if embeds:
            self._answer_embeds(embeds, answers)
        if chats:
            self._answer_chats(chats, answers)
        return answers

    # -- embeddings ------------------------------------------------------------------------

    def embedder(self, model: Any = None) -> Any:
        """The embedder for ``model`` (``None``: the run's): a name or path resolves to the shared
        :func:`~nbeval.resources.embedder.get_embedder` instance; a ready ``Embedder`` (or any
        object with ``encode``) is used as it is."""
        from nbeval.resources.embedder import get_embedder

        spec = model if model is not None else self.embedder_spec
        if spec is not None and hasattr(spec, "encode"):
            return spec
        return get_embedder(spec, device=self.device)

    def _answer_embeds(self, items: list[tuple[int, Embed]], answers: list[Any]) -> None:
        by_model: dict[str | None, list[tuple[int, Embed]]] = defaultdict(list)
        for i, r in items:
            by_model[r.model].append((i, r))
        for model, group in by_model.items():
            memo = self._vectors.setdefault(model, {})
            try:
                emb = self.embedder(model)
                todo = [t for t in dict.fromkeys(t for _, r in group for t in r.texts) if t not in memo]
                if todo:
                    memo.update(zip(todo, emb.encode(todo)))
            except Exception as exc:  # the model failed to load or encode: every row says why
                err = ResourceError(f"embedder failed: {exc}")
                for i, _ in group:
                    answers[i] = err
                continue
            import numpy as np

            is_truncated = getattr(emb, "truncated", None)
            for i, r in group:
                answers[i] = np.stack([memo[t] for t in r.texts]) if r.texts else np.zeros((0, 0), dtype=np.float32)
                truncated = [t for t in r.texts if is_truncated is not None and is_truncated(t)]
                if truncated:
                    self.warnings[i].append(
                        f"{len(truncated)} text(s) longer than the embedder's window were truncated")

    # -- chat ------------------------------------------------------------------------------

    def chat_client(self, model: Any = None) -> Any:
        """The chat client for ``model`` (``None``: the run's judge)."""
        spec = model if model is not None else self.judge_spec
        key = model_key(spec)
        if key not in self._chat_clients:
            from nbeval.chat.client import ChatClient
            from nbeval.chat.config import resolve_chat_model

            resolved = resolve_chat_model(spec)
            if resolved is None:
                from nbeval.chat.config import judge_help_text
                from nbeval.errors import JudgeNotConfigured

                raise JudgeNotConfigured("no judge model is configured. " + judge_help_text())
            kwargs: dict[str, Any] = {"concurrency": self.concurrency, "cache": self.cache}
            if self.timeout is not None:
                kwargs["timeout"] = self.timeout
            if self.max_attempts is not None:
                kwargs["max_attempts"] = self.max_attempts
            if self.prices is not None:
                kwargs["prices"] = self.prices
            self._chat_clients[key] = ChatClient(resolved, **kwargs)
        return self._chat_clients[key]

    def _answer_chats(self, items: list[tuple[int, Chat]], answers: list[Any],
                      on_done: Callable[[int], None] | None = None) -> None:
        from nbeval.chat.client import ChatFailure

        by_model: dict[Any, list[tuple[int, Chat]]] = defaultdict(list)
        for i, r in items:
            by_model[model_key(r.model)].append((i, r))
        for group in by_model.values():
            try:
                client = self.chat_client(group[0][1].model)
            except Exception as exc:
                for i, _ in group:
                    answers[i] = ResourceError(str(exc))
                continue
            done = (lambda k, _result: on_done(group[k][0])) if on_done is not None else None
            replies = client.run_many([r for _, r in group], on_done=done)
            for (i, _), reply in zip(group, replies):
                answers[i] = ResourceError(f"judge call failed: {reply.error}") if isinstance(reply, ChatFailure) else reply

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
