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

Two runs asking the same requests together (two notebooks on one cache) share one batch: the
second waits while the first creates it (the store's lease, :mod:`nbeval.chat.batch_store`) and
then polls it too.

Endings: a request the batch answered with an error gets that error (its row says so), and so does
one whose line nbeval cannot read (a field of the wrong type: :mod:`nbeval.chat.batch_lines`); the
batch is closed all the same, so a rerun sends only those requests anew instead of reading the
same line again. A batch whose status nbeval does not know, or still running an hour past its
expiry, is given up after a few polls, its status named (:mod:`nbeval.chat.batch_watch`). The
output and error files are read line by line as they arrive. The requests a batch ``expired`` or
``cancelled`` at the provider did not answer get an error saying so (the batch is then closed:
the next run, with ``batch=True``, sends only those requests in a new batch, or with
``batch=False`` asks them one by one); the answers such a batch did give are kept. A cancel
(``cancel=``, the Cancel button) cancels the batches at the provider and answers the rest as
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
from nbeval.chat.batch_api import ENDPOINT, BatchAPI, BatchState, why_unanswered
from nbeval.chat.batch_options import BatchOptions, batch_price, still_running
from nbeval.chat.batch_results import BatchResults, missing_note
from nbeval.chat.batch_store import CANCELLED_HERE, LEASE_S, BatchStore, StoredBatch, creating, store_path
from nbeval.chat.batch_watch import Watch
from nbeval.chat.client import SAMPLE_PARAM, ChatClient, _as_request, _cancel_check
from nbeval.chat.openai_chat import OpenAIChat
from nbeval.chat.secrets import redact
from nbeval.errors import BadParameter

__all__ = ["BatchOptions", "BatchesRunning", "Live", "Part", "can_batch", "run_batch", "run_batches"]

_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


class Part:
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

    def deliver(self, key: str, result: ChatResult, *, fresh: bool, cached: bool = False) -> None:
        """Give ``result`` to every request waiting on cache key ``key``.

        Its usage or failure is counted once per request; ``fresh``: a call was made for it.
        """
        idxs = self.waiting.pop(key, None)
        if not idxs:
            return
        client = self.client
        if isinstance(result, ChatReply):
            client._account(result, len(idxs), cached=cached)
        elif not result.cancelled:
            client._fail(result, len(idxs))
        if fresh:
            client._bump(attempts=1)
        for i in idxs:
            self.results[i] = result
            if self.on_done is not None:
                self.on_done(i, result)


@dataclass
class Live:
    """A batch being waited on."""

    submission: str
    batch_id: str
    keys: frozenset[str]
    client: ChatClient
    api: BatchAPI
    store: BatchStore
    state: BatchState | None = None
    misses: int = 0
    watch: Watch | None = None


def _sent(params: dict[str, Any]) -> dict[str, Any]:
    """A request's parameters as sent: without the sample number, which only tells copies apart."""
    return {k: v for k, v in params.items() if k != SAMPLE_PARAM}


def _read_file(api: BatchAPI, file_id: str, kind: str, results: BatchResults) -> None:
    """Hand each line of file ``file_id`` (the batch's ``kind`` file) to ``results`` as it arrives."""
    count = iter(range(1, 1 << 62))
    api.read(file_id, lambda raw: results.add(raw, f"line {next(count)} of its {kind} file"))


def _chunks(lines: list[tuple[str, bytes]], max_lines: int, max_bytes: int) -> list[list[tuple[str, bytes]]]:
    """``lines`` cut, in order, into batches of at most ``max_lines`` lines and ``max_bytes`` bytes."""
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


class _Cancelled(Exception):
    """The cancel came while the run waited for a batch another run is creating."""


class BatchesRunning(KeyboardInterrupt):
    """Ctrl-C while batches wait at the provider: they go on there (and are billed); ``batches`` holds their ids.

    Running the same requests again picks them up.
    """

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
    wait: bool = True,
) -> list[list[ChatResult]]:
    """Answer every job's requests through the providers' Batch APIs.

    Every job's ``(client, requests, on_done)`` is answered, each model's requests in batches sent
    together and polled together; per job, its results come back in order (see the module's docs).

    ``wait=False`` only sends: the batches the requests need are created (or found open) and
    recorded, and the call returns without waiting; the requests the cache holds are answered, the
    rest are not (``"not waited for"``). A later call with the same requests finds those batches
    and waits for them: a partitioned run sends all its batches of a round this way, a slice of
    requests at a time, before it waits for any.
    """
    runner = _Runner(options or BatchOptions(), _cancel_check(cancel))
    parts = [Part(client, requests, on_done) for client, requests, on_done in jobs]
    runner.run(parts, wait=wait)
    if not wait:
        return [[r if r is not None else ChatFailure("not waited for", 0) for r in p.results] for p in parts]
    return [[r if r is not None else ChatFailure("no result", 0) for r in p.results] for p in parts]


class _Runner:
    def __init__(self, options: BatchOptions, cancel: Callable[[], bool] | None) -> None:
        self.options = options
        self.cancel = cancel
        self.parts: list[Part] = []
        self.live: dict[str, Live] = {}
        self.stores: dict[str, BatchStore] = {}
        self.clock: Callable[[], float] = time.time
        """The time (seconds since the epoch) a batch's expiry is compared with."""

    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel()

    # -- starting ------------------------------------------------------------------------------

    def run(self, parts: list[Part], *, wait: bool = True) -> None:
        self.parts = parts
        one_by_one = []
        for part in parts:
            if not can_batch(part.client):
                _warn_one_by_one(part.client)
                one_by_one.append(part)
                continue
            if part.client.cache is None:
                msg = (
                    "{batch} keeps the batch's replies in the reply cache (so that a stopped run resumes "
                    "its batch); it cannot be used with {no_cache}"
                )
                raise BadParameter(msg, options={"batch": ("batch", True), "no_cache": ("cache", False)})
            jobs = part.client._cached_or_jobs(part.reqs, part.results, part.on_done)
            part.waiting = {key: idxs for key, idxs in jobs if key is not None}
        if self.cancelled():  # cancelled already: nothing is sent
            self._answer_all(lambda _key: ChatFailure("cancelled before it was sent", 0, cancelled=True))
            return
        try:
            try:
                for part in parts:
                    if part.waiting:
                        self._start(part)
            except _Cancelled:
                self._cancel_all()
                self._answer_all(lambda _key: ChatFailure("cancelled before it was sent", 0, cancelled=True))
                return
            if not wait:  # sent and recorded: a later call waits for them
                return
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

    def _start(self, part: Part) -> None:
        """Resume the open batches holding the part's requests; send the rest in new batches."""
        client = part.client
        model = client.model
        assert isinstance(model, OpenAIChat)
        identity = client._identity
        store, api = self._store(client), BatchAPI(model, client.timeout)
        covered = {k for live in self.live.values() if live.client._identity == identity for k in live.keys}
        waited = False
        for stored in store.open_for(identity, [k for k in part.waiting if k not in covered]):
            if stored.status == CANCELLED_HERE:  # its unanswered requests are sent anew below
                self._reclaim(stored, client, api, store)
                continue
            if stored.batch_id is None:  # being created by another run, or created just before a run stopped
                waited = True
                created = self._await_created(store, stored) or self._find(store, stored, api, identity)
                if created is None:  # never created: its requests are sent below
                    continue
                stored = created
            assert stored.batch_id is not None
            self.live[stored.submission] = Live(stored.submission, stored.batch_id, stored.keys, client, api, store)
            covered |= stored.keys
        if waited:  # a batch that ended while this run waited for it left its replies in the cache
            self._take_cached(part, covered)
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

    def _await_created(self, store: BatchStore, stored: StoredBatch) -> StoredBatch | None:
        """A record with no provider id: wait while a live run may be creating it.

        The record with its id once its creator wrote it; ``None`` when it is gone or still has no id.
        """
        while store.may_be_live(stored.submission):
            if self._sleep(min(self.options.poll_s, 0.25)):
                raise _Cancelled
        now = store.get(stored.submission)
        return now if now is not None and now.batch_id is not None else None

    def _find(self, store: BatchStore, stored: StoredBatch, api: BatchAPI, identity: str) -> StoredBatch | None:
        """Look up a batch whose creator stopped before writing the provider's id.

        Returns the batch if the provider has it (created just before its run stopped), else
        ``None`` (the record is forgotten).
        """
        if store.get(stored.submission) is None:
            return None  # closed or forgotten meanwhile
        found = _quietly(lambda: api.find(stored.submission))
        if found is None:
            if store.forget_unsent(stored.submission):
                return None
            now = store.get(stored.submission)  # written meanwhile by a run that came back to it
            return now if now is not None and now.batch_id is not None else None
        store.created(stored.submission, found.id, found.status, identity=identity, keys=stored.keys)
        return replace(stored, batch_id=found.id, status=found.status)

    def _take_cached(self, part: Part, covered: set[str]) -> None:
        """Hand on the replies the cache now holds for the part's requests no batch covers."""
        cache = part.client.cache
        assert cache is not None
        for key in [k for k in part.waiting if k not in covered]:
            hit: ChatReply | None = part.client._safe(lambda k=key: cache.get(k), None)  # type: ignore[misc]
            if hit is not None:
                part.deliver(key, hit, fresh=False, cached=True)

    def _submit(self, part: Part, api: BatchAPI, store: BatchStore, chunk: list[tuple[str, bytes]]) -> None:
        client, keys = part.client, [k for k, _ in chunk]
        submission = uuid.uuid4().hex
        try:
            file_id = self._retrying(client, lambda: api.upload(b"".join(line for _, line in chunk)))
        except ChatError as err:
            hint = "; the endpoint may have no Batch API: run with batch=False" if err.status in (404, 405) else ""
            self._fail_keys(client, keys, f"the batch could not be sent: {err}{hint}")
            return
        # Recorded before it exists (a crash can find it again), leased to this process while it
        # creates it (another run waits for it instead of forgetting it).
        lease = client.timeout + LEASE_S
        with creating(submission):  # from before the record exists: another thread never sees it unleased
            store.add(submission, client._identity, file_id, keys, lease_s=lease)
            try:
                state = self._create(client, api, file_id, submission, store, lease)
            except ChatError as err:
                store.forget(submission)
                self._fail_keys(client, keys, f"the batch could not be created: {err}")
                return
            store.created(
                submission, state.id, state.status, identity=client._identity, keys=keys, input_file_id=file_id
            )
        self.live[submission] = Live(submission, state.id, frozenset(keys), client, api, store, state)

    def _create(
        self, client: ChatClient, api: BatchAPI, file_id: str, submission: str, store: BatchStore, lease: float
    ) -> BatchState:
        attempt = 0
        while True:
            attempt += 1
            try:
                return api.create(file_id, submission, self.options.completion_window)
            except ChatError as err:
                if not err.retryable:
                    raise
                if attempt >= client.max_attempts:  # the last answer lost: the batch may exist all the same
                    found = _quietly(lambda: api.find(submission))
                    if found is None:
                        raise
                    return found
                delay = client._delay(attempt, err)
                store.renew(submission, delay + lease)  # still creating it: the lease holds through the wait
                time.sleep(delay)
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
            ended: list[tuple[Live, BatchState, str | None]] = []
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
                live.watch = live.watch or Watch(self.options.completion_window, since=self.clock())
                why = live.watch.give_up(state, self.clock())  # a status it does not know, or long past expiry
                if state.terminal or why is not None:
                    del self.live[submission]
                    ended.append((live, state, why))
            self._status([state for _, state, _ in ended])  # told before the rows they answer finish
            for live, state, why in ended:
                self._collect(live, state, why)

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

    def _collect(self, live: Live, state: BatchState, gave_up: str | None = None) -> None:
        """Cache and hand on the answers of a finished batch, and close it in the store.

        Also used for a batch given up on, ``gave_up`` saying why.
        """
        model, client = live.client.model, live.client
        assert isinstance(model, OpenAIChat)
        try:
            results = self._read(live, state)
        except ChatError as err:
            self._give_up(live, err, f"could not read batch {state.id}'s results")
            return
        live.store.close(live.submission, state.status)
        if gave_up is None:
            why = why_unanswered(state, self.options.completion_window)
        else:
            why = (
                f"{gave_up}: it is given up (if it still runs at the provider it is billed: cancel it there, "
                f"POST .../batches/{state.id}/cancel); run again to send these requests in a new batch, or with "
                "batch=False to ask them one by one"
            )
        missing = ChatFailure(model._describe(why + missing_note(results)), 0)
        got = results.got
        parts = self._parts_of(client._identity)
        for key in live.keys:
            result = got.get(key, missing)
            for part in parts:
                part.deliver(key, result, fresh=key in got)

    def _reclaim(self, stored: StoredBatch, client: ChatClient, api: BatchAPI, store: BatchStore) -> None:
        """Take back what a batch cancelled here answered, and forget it.

        Once the provider has finished cancelling it, the answers it gave before it stopped are
        cached and handed on; its other requests stay waiting.
        """
        batch_id = stored.batch_id
        state = None if batch_id is None else _quietly(lambda: api.retrieve(batch_id))
        if state is not None and state.terminal:
            try:
                got = self._read(Live(stored.submission, state.id, stored.keys, client, api, store), state).got
            except ChatError:
                got = {}
            parts = self._parts_of(client._identity)
            for key, result in got.items():
                if isinstance(result, ChatReply):  # a line that failed is asked again
                    for part in parts:
                        part.deliver(key, result, fresh=True)
        store.forget(stored.submission)

    def _read(self, live: Live, state: BatchState) -> BatchResults:
        """Read the results of a finished batch by cache key.

        Its replies are cached and its files streamed line by line; a :class:`ChatError` when its
        files cannot be read.
        """
        model, client = live.client.model, live.client
        assert isinstance(model, OpenAIChat)
        results = BatchResults(
            state.id,
            live.keys,
            parse=lambda text: model._parse(text, 0.0),
            describe=model._describe,
            keep=lambda key, reply: self._keep(client, key, reply),
        )
        for file_id, kind in ((state.output_file_id, "output"), (state.error_file_id, "error")):
            if file_id is not None:
                self._retrying(client, functools.partial(_read_file, live.api, file_id, kind, results))
        return results

    def _give_up(self, live: Live, err: ChatError, what: str) -> None:
        """The batch's requests fail with ``err``.

        A refusal (the provider does not know the batch, or its files are gone) forgets the batch, so a later run sends
        its requests anew; a connection or server trouble leaves it recorded, so a later run picks up its replies.
        """
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

    def _parts_of(self, identity: str) -> list[Part]:
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
