"""Half-price judging: chat requests answered through the endpoint's Batch API.

:func:`run_batches` answers several clients' requests as :meth:`ChatClient.run_many
<nbeval.chat.client.ChatClient.run_many>` does (one result per request, in order, never raising
for a failed call, ``on_done`` called as each result is ready), but sends the requests the cache
does not hold to the endpoint's OpenAI-compatible Batch API (:mod:`nbeval.chat.batch_api`): one
JSONL file per model (split at 50,000 requests), each identical request once, each line's body the
one the synchronous call would send (built by the same code), then polls until the batch is over.

Resuming: each batch is recorded beside the reply cache (:mod:`nbeval.chat.batch_store`) before it
is created at the provider, its provider id as soon as it is known, so a run stopped while it
waits (Ctrl-C, a kernel restart, a killed process) and started again polls the same batch for the
requests it holds: they are never sent twice. Replies go into the reply cache under the keys the
synchronous path uses, so a later run, batched or not, finds them there.

Endings: a request the batch answered with an error gets that error (its row says so); the
requests a batch ``expired`` or ``cancelled`` at the provider did not answer get an error saying so
(the batch is then closed: the next run, with ``batch=True``, sends only those requests in a new
batch, or with ``batch=False`` asks them one by one); the answers such a batch did give are kept. A
cancel (``cancel=``, the Cancel button) cancels the batches at the provider and answers the rest as
cancelled; once the provider agrees, the store marks the batch cancelled here, and the next batched
run keeps the answers it gave (if the provider has finished cancelling it), forgets it and sends the
rest in a new batch. Ctrl-C does not cancel (the batches go on, and the next run picks them up): it
raises :class:`BatchesRunning`, a ``KeyboardInterrupt`` naming the batches left running.

Only OpenAI-compatible endpoints have a Batch API: the requests of any other model (a Python
function, a local Hugging Face model) are answered one by one, as without batching, with one
warning. Costs use the price's batch part (``prices={"m": (p, c, batch_p, batch_c)}``), else the
price less ``discount`` (half by default).
"""

from __future__ import annotations

import functools
import json
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from nbeval.chat.accounting import ChatFailure, ChatResult, with_cost
from nbeval.chat.base import ChatError, ChatReply
from nbeval.chat.batch_api import ENDPOINT, BatchAPI, BatchState, read_lines, why_unanswered
from nbeval.chat.batch_options import BatchOptions, batch_price, still_running
from nbeval.chat.batch_store import CANCELLED_HERE, BatchStore, StoredBatch, store_path
from nbeval.chat.client import SAMPLE_PARAM, ChatClient, _as_request, _cancel_check
from nbeval.chat.openai_chat import OpenAIChat
from nbeval.chat.secrets import redact
from nbeval.errors import BadParameter

__all__ = ["BatchOptions", "BatchesRunning", "can_batch", "run_batch", "run_batches"]

#: The error codes of a line never tried because its batch ended first.
_UNANSWERED = ("batch_expired", "batch_cancelled")

_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


class BatchesRunning(KeyboardInterrupt):
    """Ctrl-C while batches wait at the provider: they go on there (and are billed); ``batches``
    holds their ids. Running the same requests again picks them up."""

    def __init__(self, batches: Sequence[str]) -> None:
        self.batches = tuple(batches)
        super().__init__(still_running(self.batches, "running the same requests again with batch=True"))


def can_batch(client: ChatClient) -> bool:
    """Whether ``client``'s model has a Batch API (an OpenAI-compatible endpoint)."""
    return isinstance(client.model, OpenAIChat)


def run_batch(
    client: ChatClient,
    requests: Sequence[Any],
    on_done: Callable[[int, ChatResult], None] | None = None,
    *,
    options: BatchOptions | None = None,
    cancel: Callable[[], bool] | threading.Event | None = None,
) -> list[ChatResult]:
    """One client's requests, batched: :meth:`ChatClient.run_many`'s contract."""
    return run_batches([(client, requests, on_done)], options, cancel=cancel)[0]


def run_batches(
    jobs: Sequence[tuple[ChatClient, Sequence[Any], Callable[[int, ChatResult], None] | None]],
    options: BatchOptions | None = None,
    *,
    cancel: Callable[[], bool] | threading.Event | None = None,
) -> list[list[ChatResult]]:
    """Every job's ``(client, requests, on_done)`` answered, each model's requests in batches sent
    together and polled together; per job its results in order (see the module's docs)."""
    runner = _Runner(options or BatchOptions(), _cancel_check(cancel))
    parts = [_Part(client, requests, on_done) for client, requests, on_done in jobs]
    runner.run(parts)
    return [[r if r is not None else ChatFailure("no result", 0) for r in p.results] for p in parts]


class _Part:
    """One client's requests and their results."""

    def __init__(
        self, client: ChatClient, requests: Sequence[Any], on_done: Callable[[int, ChatResult], None] | None
    ) -> None:
        self.client = client
        self.requests = requests
        self.reqs = [_as_request(r) for r in requests]
        self.results: list[ChatResult | None] = [None] * len(self.reqs)
        self.on_done = on_done
        self.waiting: dict[str, list[int]] = {}
        """Cache key -> the requests waiting for its answer."""

    def deliver(self, key: str, result: ChatResult, *, fresh: bool) -> None:
        idxs = self.waiting.pop(key, None)
        if not idxs:
            return
        client = self.client
        if isinstance(result, ChatReply):
            client._account(result, len(idxs), cached=False)
        elif not result.cancelled:
            client._fail(result, len(idxs))
        if fresh:
            client._bump(attempts=1)
        for i in idxs:
            self.results[i] = result
            if self.on_done is not None:
                self.on_done(i, result)


@dataclass
class _Live:
    """A batch being waited on."""

    submission: str
    batch_id: str
    keys: frozenset[str]
    client: ChatClient
    api: BatchAPI
    store: BatchStore
    state: BatchState | None = None
    misses: int = 0


class _Runner:
    def __init__(self, options: BatchOptions, cancel: Callable[[], bool] | None) -> None:
        self.options = options
        self.cancel = cancel
        self.parts: list[_Part] = []
        self.live: dict[str, _Live] = {}
        self.stores: dict[str, BatchStore] = {}

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel()

    # -- starting ------------------------------------------------------------------------------

    def run(self, parts: list[_Part]) -> None:
        self.parts = parts
        one_by_one = []
        for part in parts:
            if not can_batch(part.client):
                _warn_one_by_one(part.client)
                one_by_one.append(part)
                continue
            if part.client.cache is None:
                msg = (
                    "batch=True keeps the batch's replies in the reply cache (so that a stopped run resumes "
                    "its batch); it cannot be used with cache=False"
                )
                raise BadParameter(msg)
            jobs = part.client._cached_or_jobs(part.reqs, part.results, part.on_done)
            part.waiting = {key: idxs for key, idxs in jobs if key is not None}
        if self.cancelled():  # cancelled already: nothing is sent
            self._answer_all(lambda _key: ChatFailure("cancelled before it was sent", 0, cancelled=True))
            return
        try:
            for part in parts:
                if part.waiting:
                    self._start(part)
            for part in one_by_one:  # while the batches wait at the provider
                part.results = list(part.client.run_many(part.requests, part.on_done, cancel=self.cancel))
            self._status()
            self._poll()
        except KeyboardInterrupt:  # the batches go on at the provider: say which
            running = [live.batch_id for live in self.live.values()]
            if not running:
                raise
            raise BatchesRunning(running) from None

    def _store(self, client: ChatClient) -> BatchStore:
        assert client.cache is not None
        path = str(store_path(client.cache.path))
        if path not in self.stores:
            self.stores[path] = BatchStore(path)
        return self.stores[path]

    def _start(self, part: _Part) -> None:
        """Resume the open batches holding the part's requests; send the rest in new batches."""
        client = part.client
        model = client.model
        assert isinstance(model, OpenAIChat)
        identity = client._identity
        store, api = self._store(client), BatchAPI(model, client.timeout)
        covered = {k for live in self.live.values() if live.client._identity == identity for k in live.keys}
        for stored in store.open_for(identity, [k for k in part.waiting if k not in covered]):
            if stored.status == CANCELLED_HERE:  # its unanswered requests are sent anew below
                self._reclaim(stored, client, api, store)
                continue
            batch_id = stored.batch_id
            if batch_id is None:  # recorded, and maybe created just before the last run stopped
                found = _quietly(lambda s=stored.submission: api.find(s))  # type: ignore[misc]
                if found is None:
                    store.forget(stored.submission)
                    continue
                store.created(stored.submission, found.id, found.status)
                batch_id = found.id
            self.live[stored.submission] = _Live(stored.submission, batch_id, stored.keys, client, api, store)
            covered |= stored.keys
        lines: list[tuple[str, bytes]] = []
        one_by_one: list[str] = []
        for key, idxs in part.waiting.items():
            if key in covered:
                continue
            messages, params = part.reqs[idxs[0]]
            body, options = model._request(messages, {**model.default_params, **_sent(params)})
            if options:  # per-call headers or query parameters: a batch line carries a body only
                one_by_one.append(key)
                continue
            line = {"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body}
            lines.append((key, json.dumps(line, default=repr).encode("utf-8") + b"\n"))
        for chunk in _chunks(lines, self.options.max_lines, self.options.max_bytes):
            self._submit(part, api, store, chunk)
        if one_by_one:
            asked = [part.reqs[part.waiting[k][0]] for k in one_by_one]
            for key, result in zip(one_by_one, part.client.run_many(asked, cancel=self.cancel), strict=True):
                part.deliver(key, result, fresh=False)  # run_many counted these calls itself

    def _submit(self, part: _Part, api: BatchAPI, store: BatchStore, chunk: list[tuple[str, bytes]]) -> None:
        client, keys = part.client, [k for k, _ in chunk]
        submission = uuid.uuid4().hex
        try:
            file_id = self._retrying(client, lambda: api.upload(b"".join(line for _, line in chunk)))
        except ChatError as err:
            hint = "; the endpoint may have no Batch API: run with batch=False" if err.status in (404, 405) else ""
            self._fail_keys(client, keys, f"the batch could not be sent: {err}{hint}")
            return
        store.add(submission, client._identity, file_id, keys)  # before it exists: a crash can find it again
        try:
            state = self._create(client, api, file_id, submission)
        except ChatError as err:
            store.forget(submission)
            self._fail_keys(client, keys, f"the batch could not be created: {err}")
            return
        store.created(submission, state.id, state.status)
        self.live[submission] = _Live(submission, state.id, frozenset(keys), client, api, store, state)

    def _create(self, client: ChatClient, api: BatchAPI, file_id: str, submission: str) -> BatchState:
        attempt = 0
        while True:
            attempt += 1
            try:
                return api.create(file_id, submission, self.options.completion_window)
            except ChatError as err:
                if not err.retryable or attempt >= client.max_attempts:
                    raise
                time.sleep(client._delay(attempt, err))
                found = _quietly(lambda: api.find(submission))  # created before the connection broke?
                if found is not None:
                    return found

    @staticmethod
    def _retrying(client: ChatClient, fn: Callable[[], Any]) -> Any:
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except ChatError as err:
                if not err.retryable or attempt >= client.max_attempts:
                    raise
                time.sleep(client._delay(attempt, err))

    # -- waiting -------------------------------------------------------------------------------

    def _poll(self) -> None:
        wait, cap = 0.0, min(300.0, max(self.options.poll_s, 30 * self.options.poll_s))
        while self.live:
            if self._sleep(wait):
                self._cancel_all()
                return
            wait = self.options.poll_s if wait == 0 else min(wait * 1.5, cap)
            ended: list[tuple[_Live, BatchState]] = []
            for submission, live in list(self.live.items()):
                try:
                    state = live.api.retrieve(live.batch_id)
                except ChatError as err:
                    live.misses += 1
                    if not err.retryable or live.misses >= live.client.max_attempts:
                        del self.live[submission]
                        self._give_up(live, err, f"could not poll batch {live.batch_id}")
                    continue
                live.misses = 0
                if live.state is None or state.status != live.state.status:
                    live.store.update(submission, state.status)
                live.state = state
                if state.terminal:
                    del self.live[submission]
                    ended.append((live, state))
            self._status([state for _, state in ended])  # told before the rows they answer finish
            for live, state in ended:
                self._collect(live, state)

    def _sleep(self, seconds: float) -> bool:
        """Wait ``seconds``, watching the cancel; whether it was cancelled."""
        end = time.monotonic() + seconds
        while True:
            if self.cancelled():
                return True
            left = end - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(left, 0.05))

    def _status(self, ended: Sequence[BatchState] = ()) -> None:
        """Tell ``on_status`` the state and counts of each batch waited on (and of those just ``ended``)."""
        on_status = self.options.on_status
        states = [*ended, *(live.state for live in self.live.values() if live.state is not None)]
        if on_status is not None and states:
            on_status("; ".join(f"batch {s.id}: {s.status}, {s.counts_text()}" for s in states))

    def _cancel_all(self) -> None:
        """Cancel every batch at the provider; the requests still waiting are cancelled."""
        for submission, live in list(self.live.items()):
            try:
                live.api.cancel(live.batch_id)
                live.store.update(submission, CANCELLED_HERE)  # the next run sends the rest anew
                why = f"cancelled: batch {live.batch_id} was cancelled at the provider"
            except ChatError as err:  # it goes on there; a later run picks up its replies
                why = f"cancelled (batch {live.batch_id} could not be cancelled at the provider: {err})"
            for part in self._parts_of(live.client._identity):
                for key in live.keys:
                    part.deliver(key, ChatFailure(redact(why), 0, cancelled=True), fresh=False)
        self.live.clear()

    # -- results -------------------------------------------------------------------------------

    def _collect(self, live: _Live, state: BatchState) -> None:
        """Cache the answers of a finished batch, close it in the store and hand them on."""
        model, client = live.client.model, live.client
        assert isinstance(model, OpenAIChat)
        try:
            got = self._read(live, state)
        except ChatError as err:
            self._give_up(live, err, f"could not read batch {state.id}'s results")
            return
        live.store.close(live.submission, state.status)
        missing = ChatFailure(model._describe(why_unanswered(state, self.options.completion_window)), 0)
        parts = self._parts_of(client._identity)
        for key in live.keys:
            result = got.get(key, missing)
            for part in parts:
                part.deliver(key, result, fresh=key in got)

    def _reclaim(self, stored: StoredBatch, client: ChatClient, api: BatchAPI, store: BatchStore) -> None:
        """A batch cancelled here: hand on (and cache) the answers it gave before it stopped, when
        the provider has finished cancelling it, and forget it; its other requests stay waiting."""
        batch_id = stored.batch_id
        state = None if batch_id is None else _quietly(lambda: api.retrieve(batch_id))
        if state is not None and state.terminal:
            try:
                got = self._read(_Live(stored.submission, state.id, stored.keys, client, api, store), state)
            except ChatError:
                got = {}
            parts = self._parts_of(client._identity)
            for key, result in got.items():
                if isinstance(result, ChatReply):  # a line that failed is asked again
                    for part in parts:
                        part.deliver(key, result, fresh=True)
        store.forget(stored.submission)

    def _read(self, live: _Live, state: BatchState) -> dict[str, ChatResult]:
        """The results of a finished batch by cache key, its replies cached; a :class:`ChatError`
        when its files cannot be read."""
        model, client = live.client.model, live.client
        assert isinstance(model, OpenAIChat)
        texts = [
            self._retrying(client, functools.partial(live.api.content, file_id))
            for file_id in filter(None, (state.output_file_id, state.error_file_id))
        ]
        got: dict[str, ChatResult] = {}
        for text in texts:
            for line in read_lines(text):
                if line.custom_id not in live.keys or (line.error or "").startswith(_UNANSWERED):
                    continue  # not asked here, or not answered before the batch ended (said below)
                if line.error is None and line.status_code == 200:
                    try:
                        reply = model._parse(json.dumps(line.body), 0.0)
                    except ChatError as err:
                        got[line.custom_id] = ChatFailure(redact(f"{err} (batch {state.id})"), 1, 200)
                        continue
                    got[line.custom_id] = self._keep(client, line.custom_id, reply)
                elif line.custom_id not in got or isinstance(got[line.custom_id], ChatFailure):
                    what = model._describe(f"batch {state.id} answered this request with an error: {line.error}")
                    got[line.custom_id] = ChatFailure(what, 1, line.status_code)
        return got

    def _give_up(self, live: _Live, err: ChatError, what: str) -> None:
        """The batch's requests fail with ``err``. A refusal (the provider does not know the batch,
        or its files are gone) forgets the batch, so a later run sends its requests anew; a
        connection or server trouble leaves it recorded, so a later run picks up its replies."""
        if err.retryable:
            note = "the batch stays recorded: run again to pick up its replies"
        else:
            live.store.close(live.submission, "lost")
            note = "it is given up: run again to send these requests anew"
        self._fail_keys(live.client, live.keys, f"{what}: {err}; {note}")

    def _keep(self, client: ChatClient, key: str, reply: ChatReply) -> ChatReply:
        """A batch's reply, redacted, priced and cached, as :class:`ChatClient` keeps a call's."""
        clean = redact(reply.text, patterns=False)  # a judge that echoes a key must not spread it
        if clean != reply.text:
            reply = replace(reply, text=clean)
        if reply.cost is None:
            price = client._price(reply.model) or client._price(getattr(client.model, "name", ""))
            reply = with_cost(reply, batch_price(price, self.options.discount))
        cache = client.cache
        if cache is not None:
            client._safe(lambda: cache.put(key, redact(client._identity), reply), None)
        return reply

    def _parts_of(self, identity: str) -> list[_Part]:
        return [p for p in self.parts if p.waiting and p.client._identity == identity]

    def _fail_keys(self, client: ChatClient, keys: Sequence[str] | frozenset[str], error: str) -> None:
        failure = ChatFailure(redact(error), 0)
        for part in self._parts_of(client._identity):
            for key in keys:
                part.deliver(key, failure, fresh=False)

    def _answer_all(self, make: Callable[[str], ChatFailure]) -> None:
        for part in self.parts:
            for key in list(part.waiting):
                part.deliver(key, make(key), fresh=False)


def _sent(params: dict[str, Any]) -> dict[str, Any]:
    """A request's parameters as sent: without the sample number, which only tells copies apart."""
    return {k: v for k, v in params.items() if k != SAMPLE_PARAM}


def _chunks(lines: list[tuple[str, bytes]], max_lines: int, max_bytes: int) -> list[list[tuple[str, bytes]]]:
    chunks: list[list[tuple[str, bytes]]] = []
    size = 0
    for item in lines:
        if not chunks or len(chunks[-1]) >= max_lines or (chunks[-1] and size + len(item[1]) > max_bytes):
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += len(item[1])
    return chunks


def _quietly(fn: Callable[[], BatchState | None]) -> BatchState | None:
    try:
        return fn()
    except ChatError:
        return None


def _warn_one_by_one(client: ChatClient) -> None:
    name = getattr(client.model, "name", type(client.model).__name__)
    msg = (
        f"nbeval: batch=True: {name!r} is not an OpenAI-compatible endpoint, which alone has a Batch API; "
        "its calls are made one by one"
    )
    with _WARNED_LOCK:
        if msg in _WARNED:
            return
        _WARNED.add(msg)
    warnings.warn(redact(msg), RuntimeWarning, stacklevel=4)
