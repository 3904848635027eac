"""The :class:`Chat` request and its handler.

Each model's calls go to its chat client (made once per run and model, kept in the run's state),
which bounds concurrency, retries and caches; each reply is handed on as it arrives.

With ``evaluate(..., batch=True)`` a round's calls go through the endpoints' Batch APIs instead.
The engine drives evaluators in rounds (:func:`~nbeval.engine.drive.drive`): a round's requests
are every row's next question, and a row's next question may depend on the answer to its last
(ragas's faithfulness extracts statements, then asks about each). So a batched run sends one
batch per model *per round*: the round's requests the cache does not hold, for every model at once
(:func:`~nbeval.chat.batch.run_batches`), waits for them, hands the answers on, and the next
round's questions make the next batch. Each answer is handed on as a synchronous reply is: a
failed request as its row's error, a cancelled one as :class:`RequestCancelled`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from nbeval.errors import ResourceError
from nbeval.runtime.handlers import Request, RequestCancelled, RequestHandler, Round, model_key, register_handler

if TYPE_CHECKING:
    from nbeval.chat.client import ChatResult
    from nbeval.chat.structured import VerdictSchema
    from nbeval.runtime.resources import Resources

__all__ = ["DRY_RUN_MODEL", "Chat", "ChatHandler", "chat_client", "in_shape"]

#: The ``model`` of the placeholder replies a dry run answers chat requests with (nothing is
#: called): an evaluator whose later questions depend on the replies may recognise it and stand
#: in a plausible reply, so the dry run's count of later calls is closer to the real one.
DRY_RUN_MODEL = "dry-run"


@dataclass(frozen=True)
class Chat(Request):
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
    verdict: VerdictSchema | None = None
    """The shape of the reply the judge is asked for (:mod:`nbeval.chat.structured`): a model that
    decodes under a schema (a local GGUF model; OpenAI's API) is sent it with the request's
    params, and they are then part of the cache key; any other model is asked as without it."""


class ChatHandler(RequestHandler):
    """The handler that answers :class:`Chat` requests.

    Each model's calls go to its chat client, and each reply is handed on as it arrives (through the
    Batch APIs when the run's ``resources.batch`` says so).
    """

    kind = Chat
    streams = True

    def client(self, resources: Resources, model: Any = None) -> Any:
        """The run's chat client for ``model``.

        ``None`` asks for the run's judge. Made on first use with the run's settings as defaults for
        what the judge's own dict does not say.
        """
        spec = model if model is not None else resources.judge_spec
        key = model_key(spec)
        clients = resources.state(Chat)
        with resources.lock:
            if key not in clients:
                clients[key] = _new_client(resources, spec)
            return clients[key]

    def answer(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        """Send each model's calls to its client, handing each reply on as it arrives."""
        if resources.batch is not None and resources.batch.collect is not None:
            self._answer_collected(resources, items, rnd, resources.batch)
            return
        if resources.batch is not None:
            self._answer_batched(resources, items, rnd)
            return
        for client, group in self._groups(resources, items, rnd):
            arrived = _arrival(rnd, group)
            shaped = [in_shape(r, client.model) for _, r in group]
            replies = client.run_many(shaped, on_done=arrived, cancel=rnd.cancel)
            for j, reply in enumerate(replies):
                if rnd.answers[group[j][0]] is None:  # not handed on as it came: hand it on now
                    arrived(j, reply)

    def placeholder(self, request: Any) -> Any:
        """An empty reply from no model (:data:`DRY_RUN_MODEL`)."""
        from nbeval.chat.base import ChatReply, Usage

        return ChatReply("", Usage(), DRY_RUN_MODEL)

    def usage(self, resources: Resources) -> dict[str, Any]:
        """The tokens, calls and cost of every chat client of the run, summed."""
        totals: dict[str, Any] = {}
        for client in list(resources.state(Chat).values()):
            for k, v in client.usage_totals().to_dict().items():
                if k == "cost":
                    totals[k] = v if totals.get(k) is None else totals[k] + (v or 0.0)
                else:
                    totals[k] = totals.get(k, 0) + v
        return totals

    def _groups(
        self, resources: Resources, items: list[tuple[int, Any]], rnd: Round
    ) -> Iterator[tuple[Any, list[tuple[int, Chat]]]]:
        """A round's ``items`` grouped by model, each group with its model's client.

        A model whose client cannot be made answers every request of its group with the error (handed on at once), and
        its group is not yielded.
        """
        by_model: dict[Any, list[tuple[int, Chat]]] = defaultdict(list)
        for i, r in items:
            by_model[model_key(r.model)].append((i, r))
        for group in by_model.values():
            try:
                client = self.client(resources, group[0][1].model)
            except Exception as exc:
                for i, _ in group:
                    rnd.answers[i] = ResourceError(str(exc))
                    rnd.deliver(i)
                continue
            yield client, group

    def _answer_collected(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round, batch: Any) -> None:
        """A partitioned run's worker: answer from the cache, hand the rest to ``batch.collect``.

        A request whose batch already answered with an error (``batch.failed``) gets that error;
        any other miss is collected once per model and round and answered
        :data:`~nbeval.chat.batch_options.PENDING` until the run's client has its batch's answer.
        A model with no Batch API (a Python function, a local model) is asked here, one call at a
        time, as without batching.
        """
        from nbeval.chat.accounting import ChatFailure
        from nbeval.chat.batch import can_batch
        from nbeval.chat.batch_options import PENDING

        for client, group in self._groups(resources, items, rnd):
            arrived = _arrival(rnd, group)
            if not can_batch(client):
                shaped = [in_shape(r, client.model) for _, r in group]
                replies = client.run_many(shaped, on_done=arrived, cancel=rnd.cancel)
                for j, reply in enumerate(replies):
                    if rnd.answers[group[j][0]] is None:
                        arrived(j, reply)
                continue
            jobs = client.answer_cached([r for _, r in group], arrived)
            collected = []
            for key, idxs in jobs:
                error = batch.failed.get(key) if key is not None else None
                if error is None:
                    collected.append(group[idxs[0]][1])
                for j in idxs:
                    arrived(j, ChatFailure(error if error is not None else PENDING, 0))
            if collected:
                batch.collect(collected)

    def _answer_batched(self, resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
        """The round's calls in batches, one per model, all sent before any is waited for."""
        from nbeval.chat.batch import can_batch, run_batches

        jobs: list[tuple[Any, list[Any], Callable[[int, ChatResult], None]]] = []
        groups: list[list[tuple[int, Any]]] = []
        for client, group in self._groups(resources, items, rnd):
            # a model with no Batch API is asked live, one call at a time: in its verdict's shape
            asked = [r if can_batch(client) else in_shape(r, client.model) for _, r in group]
            jobs.append((client, asked, _arrival(rnd, group)))
            groups.append(group)
        if not jobs:
            return
        results = run_batches(jobs, resources.batch, cancel=rnd.cancel)
        for group, (_, _, arrived), replies in zip(groups, jobs, results, strict=True):
            for j, reply in enumerate(replies):
                if rnd.answers[group[j][0]] is None:  # not handed on as it came: hand it on now
                    arrived(j, reply)


def _new_client(resources: Resources, spec: Any) -> Any:
    from nbeval.chat.client import ChatClient
    from nbeval.chat.config import judge_configured, judge_help_text, resolve_chat_model

    if not judge_configured(spec):
        from nbeval.errors import JudgeNotConfigured

        raise JudgeNotConfigured("no judge model is configured. " + judge_help_text())
    from nbeval.chat.judge_settings import client_settings_of

    resolved = resolve_chat_model(spec, required=True, device=resources.device)
    # The run's settings are defaults: what a judge's own dict says wins for its calls
    # (a juror's or an evaluator's dict too, made a model before it gets here).
    own = client_settings_of(resolved)
    concurrency = int(own.get("concurrency", resources.concurrency))
    kwargs: dict[str, Any] = {"concurrency": concurrency, "cache": resources.cache}
    timeout = own.get("timeout", resources.timeout)
    if timeout is not None:
        kwargs["timeout"] = timeout
    max_attempts = own.get("max_attempts", resources.max_attempts)
    if max_attempts is not None:
        kwargs["max_attempts"] = max_attempts
    if resources.prices is not None:
        kwargs["prices"] = resources.prices
    if resources.chat_slots is not None:
        kwargs["slots"] = resources.chat_slots(concurrency, resolved.cache_identity())
    return ChatClient(resolved, **kwargs)


def in_shape(request: Chat, model: Any) -> Chat:
    """``request`` with the fields that ask ``model`` for its verdict's shape (unchanged for most models).

    Calls made one at a time only: a batch sends requests as they are, since a Batch API that
    refused the format would fail every row of the batch, where a live call is asked again
    without it.
    """
    from nbeval.chat.structured import structured_params

    params = structured_params(model, request.params, request.verdict)
    return request if params is None else replace(request, params=params)


def _arrival(rnd: Round, group: list[tuple[int, Any]]) -> Callable[[int, ChatResult], None]:
    """A callback that hands a group's chat results on to their places in the round.

    The returned function hands the group's ``j``-th result on: a failure as the row's
    :class:`ResourceError` (with its HTTP status), a cancelled call as :class:`RequestCancelled`.
    """
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


_HANDLER = register_handler(ChatHandler())
"""The registered chat handler: :func:`chat_client` asks it."""


def chat_client(resources: Resources, model: Any = None) -> Any:
    """The run's chat client for ``model``, made on first use.

    ``None`` asks for the run's judge: raises :class:`~nbeval.errors.JudgeNotConfigured` when no
    judge is configured (a plan checks early).
    """
    return _HANDLER.client(resources, model)
