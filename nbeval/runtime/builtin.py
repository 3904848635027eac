"""The handlers of nbeval's own request kinds: embeddings, pair scores, local models and chat.

Each groups a round's requests by model, deduplicates their inputs and answers a group with one
batched call (the chat handler hands each group to its client, which bounds concurrency, retries
and caches). A model that fails to load or run answers every request of its group with the error.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from nbeval.errors import ResourceError
from nbeval.request_kinds import DRY_RUN_MODEL, Chat, Classify, Embed, LabelScores, ScorePairs, TokenLogProbs
from nbeval.runtime.handlers import RequestCancelled, RequestHandler, Round, model_key, register_handler

if TYPE_CHECKING:
    from nbeval.chat.client import ChatResult
    from nbeval.runtime.resources import Resources

__all__ = ["ChatHandler", "EmbedHandler", "LocalModelHandler", "PairsHandler", "chat_arrival", "chat_groups"]


def _as_resource_error(exc: Exception, *, prefix: str = "") -> ResourceError:
    if isinstance(exc, ResourceError):
        return exc
    return ResourceError(prefix + (str(exc) or type(exc).__name__))


class EmbedHandler(RequestHandler):
    """:class:`~nbeval.request_kinds.Embed`: every distinct text of a round, per embedder, encoded once
    in the run (vectors are kept for the run's later rounds)."""

    kind = Embed

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        by_model: dict[str | None, list[tuple[int, Embed]]] = defaultdict(list)
        for i, r in items:
            by_model[r.model].append((i, r))
        for model, group in by_model.items():
            memo = resources.vectors.setdefault(model, {})
            try:
                emb = resources.embedder(model)
                todo = [t for t in dict.fromkeys(t for _, r in group for t in r.texts) if t not in memo]
                if todo:
                    memo.update(zip(todo, emb.encode(todo), strict=True))
            except Exception as exc:  # the model failed to load or encode: every row says why
                err = ResourceError(f"embedder failed: {exc}")
                for i, _ in group:
                    rnd.answers[i] = err
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
                    rnd.answers[i] = np.zeros((0, 0), dtype=np.float32)
                    continue
                rnd.answers[i] = matrix[[position[t] for t in r.texts]]
                truncated = sum(t in cut for t in r.texts)
                if truncated:
                    rnd.warnings[i].append(f"{truncated} text(s) longer than the embedder's window were truncated")

    def placeholder(self, request: Any) -> Any:
        import numpy as np

        return np.full((len(request.texts), 4), 0.5, dtype=np.float32)  # equal unit vectors


class PairsHandler(RequestHandler):
    """:class:`~nbeval.request_kinds.ScorePairs`: every distinct pair of a round, per cross-encoder, in one call."""

    kind = ScorePairs

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        by_model: dict[str, list[tuple[int, ScorePairs]]] = defaultdict(list)
        for i, r in items:
            by_model[r.model].append((i, r))
        for model, group in by_model.items():
            distinct = list(dict.fromkeys(p for _, r in group for p in r.pairs))
            try:
                scored = dict(zip(distinct, resources.cross_encoder(model).score(distinct).tolist(), strict=True))
            except Exception as exc:  # the model failed to load or score: every row says why
                err = _as_resource_error(exc)
                for i, _ in group:
                    rnd.answers[i] = err
                continue
            import numpy as np

            for i, r in group:
                rnd.answers[i] = np.array([scored[p] for p in r.pairs], dtype=np.float64)

    def placeholder(self, request: Any) -> Any:
        import numpy as np

        return np.zeros(len(request.pairs), dtype=np.float64)


class LocalModelHandler(RequestHandler):
    """:class:`~nbeval.request_kinds.Classify` and :class:`~nbeval.request_kinds.TokenLogProbs`: every input
    of a round that goes to one local model, deduplicated, in one call (the runner batches them,
    sorted by length)."""

    def __init__(self, kind: type) -> None:
        self.kind = kind

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        classify = self.kind is Classify
        groups: dict[Any, list[tuple[int, Any]]] = defaultdict(list)
        for i, r in items:
            groups[r.model].append((i, r))
        for ref, group in groups.items():
            inputs = [x for _, r in group for x in (r.inputs if classify else r.items)]
            distinct = list(dict.fromkeys(inputs))
            try:
                runner = resources.local_model(ref)
                if classify:
                    scored = runner.classify(distinct)
                    rows = dict(zip(distinct, range(len(distinct)), strict=True))
                else:
                    found = dict(zip(distinct, runner.logprobs(distinct), strict=True))
            except Exception as exc:  # the model failed to load or run: every row says why
                err = _as_resource_error(exc, prefix=f"{type(exc).__name__}: ")
                for i, _ in group:
                    rnd.answers[i] = err
                continue
            is_truncated = getattr(runner, "truncated", None)
            for i, r in group:
                mine = r.inputs if classify else r.items
                if classify:
                    rnd.answers[i] = LabelScores(scored.labels, scored.scores[[rows[x] for x in mine]])
                else:
                    rnd.answers[i] = tuple(found[x] for x in mine)
                cut = sum(bool(is_truncated(x)) for x in mine) if is_truncated is not None else 0
                if cut:
                    rnd.warnings[i].append(f"{cut} input(s) longer than {ref.name}'s window were truncated")


def chat_groups(
    resources: Resources, items: list[tuple[int, Any]], rnd: Round
) -> Iterator[tuple[Any, list[tuple[int, Chat]]]]:
    """A round's chat ``items`` (position in the round, request) grouped by model, each group with
    its model's chat client. A model whose client cannot be made answers every request of its group
    with the error (handed on at once), and its group is not yielded."""
    by_model: dict[Any, list[tuple[int, Chat]]] = defaultdict(list)
    for i, r in items:
        by_model[model_key(r.model)].append((i, r))
    for group in by_model.values():
        try:
            client = resources.chat_client(group[0][1].model)
        except Exception as exc:
            for i, _ in group:
                rnd.answers[i] = ResourceError(str(exc))
                rnd.deliver(i)
            continue
        yield client, group


def chat_arrival(rnd: Round, group: list[tuple[int, Any]]) -> Callable[[int, ChatResult], None]:
    """Hand a group's ``j``-th chat result on to its place in the round: a failure as the row's
    :class:`ResourceError` (with its HTTP status), a cancelled call as :class:`RequestCancelled`."""
    from nbeval.chat.client import ChatFailure

    def arrived(j: int, reply: ChatResult) -> None:
        i = group[j][0]
        if isinstance(reply, ChatFailure):
            rnd.answers[i] = (
                RequestCancelled("cancelled before the judge answered")
                if reply.cancelled
                else ResourceError(f"judge call failed: {reply.error}", status=reply.status)
            )
        else:
            rnd.answers[i] = reply
            rnd.warnings[i].extend(reply.warnings)  # e.g. text that had to be repaired: the rationale says so
        rnd.deliver(i)

    return arrived


class ChatHandler(RequestHandler):
    """:class:`~nbeval.request_kinds.Chat`: each model's calls go to its chat client, and each reply is
    handed on as it arrives."""

    kind = Chat
    streams = True

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        if resources.batch is not None:  # through the endpoints' Batch APIs: nbeval.runtime.batch_handler
            from nbeval.runtime.batch_handler import answer_batched

            answer_batched(resources, items, rnd)
            return
        for client, group in chat_groups(resources, items, rnd):
            arrived = chat_arrival(rnd, group)
            replies = client.run_many([r for _, r in group], on_done=arrived, cancel=rnd.cancel)
            for j, reply in enumerate(replies):
                if rnd.answers[group[j][0]] is None:  # not handed on as it came: hand it on now
                    arrived(j, reply)

    def placeholder(self, request: Any) -> Any:
        from nbeval.chat.base import ChatReply, Usage

        return ChatReply("", Usage(), DRY_RUN_MODEL)  # an empty reply from no model

    def usage(self, resources: Resources) -> dict[str, Any]:
        totals: dict[str, Any] = {}
        for client in resources.chat_clients.values():
            for k, v in client.usage_totals().to_dict().items():
                if k == "cost":
                    totals[k] = v if totals.get(k) is None else totals[k] + (v or 0.0)
                else:
                    totals[k] = totals.get(k, 0) + v
        return totals


for _handler in (
    EmbedHandler(),
    PairsHandler(),
    LocalModelHandler(Classify),
    LocalModelHandler(TokenLogProbs),
    ChatHandler(),
):
    register_handler(_handler)
