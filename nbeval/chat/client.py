"""Many chat calls at once: bounded concurrency, timeouts, retries with backoff, cache, accounting.

:class:`ChatClient` wraps one chat model. :meth:`ChatClient.run_many` answers a batch of requests
and never raises for a failed call: each request gets a :class:`~nbeval.chat.base.ChatReply` or a
:class:`ChatFailure`. Retries cover rate limits (429), server errors (5xx), timeouts, dropped
connections and unreadable bodies, with exponential backoff and jitter; a ``Retry-After`` from
the server is honoured by the request that got it (other requests go on: a sporadic 429 must not
stall the whole batch, and under a real rate limit every worker soon gets its own 429); slots that
offer a ``cool_down(seconds)`` (a Dask cluster's) are told of it too, so every machine waits.

The workers are daemon threads: a Ctrl-C stops the batch at once (calls not started are not made;
calls in flight are abandoned, and their replies still reach the cache if they arrive), and a hung
call never holds up the interpreter's exit. Every reply is in the cache the moment it arrives, so
an interrupted run loses nothing it was given. ``run_many(cancel=...)`` stops a batch more gently
(a Cancel button): no new call starts, the calls in flight finish and are kept, and the requests
never sent get a :class:`ChatFailure` with ``cancelled=True``.

Secrets (see :mod:`nbeval.chat.secrets`): the secret headers and parameters of every request are
registered, and masked in replies (a judge that echoes a key), failures, ``repr`` and warnings.
"""

from __future__ import annotations

import queue
import random
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from nbeval.chat.accounting import (
    CallPlan,
    ChatFailure,
    ChatResult,
    PriceTable,
    UsageTotals,
    max_tokens_of,
    unknown_usage_note,
    with_cost,
)
from nbeval.chat.base import ChatError, ChatModel, ChatReply, estimate_tokens, normalize_messages
from nbeval.chat.cache import ChatCache, cache_key
from nbeval.chat.config import resolve_chat_model
from nbeval.chat.secrets import redact, register_secrets, secrets_in_params
from nbeval.data.fields import DataWarning
from nbeval.errors import BadParameter, MissingDependency, ResourceError

__all__ = [
    "CANCEL_CALL_S",
    "CANCEL_POLL_S",
    "DEFAULT_TIMEOUT",
    "SAMPLE_PARAM",
    "CallPlan",
    "ChatClient",
    "ChatFailure",
    "ChatResult",
    "PriceTable",
    "UsageTotals",
    "estimate_usage",
]

_WARNED: set[str] = set()  # cache warnings already given in this process
_WARNED_LOCK = threading.Lock()


class ChatClient:
    """Ask one chat model many things at once.

    ``model`` is anything :func:`~nbeval.chat.config.resolve_chat_model` accepts. At most
    ``concurrency`` calls are in flight at once (across every ``run_many`` of this client); each
    call is bounded by ``timeout`` seconds (``None``: the model's own ``timeout`` when it has one,
    such as a judge's ``{"timeout": ...}`` setting, else :data:`DEFAULT_TIMEOUT`) and tried up to
    ``max_attempts`` times, waiting
    ``backoff_base * 2**(attempt-1)`` seconds (capped at ``backoff_max``, jittered down by up to
    half) or the server's ``Retry-After`` (capped at ``retry_after_max``) between tries.

    ``cache``: ``True`` for the default on-disk cache, ``False``/``None`` for none, a path, or a
    :class:`~nbeval.chat.cache.ChatCache`. A model that cannot be identified reliably (a Python
    function holding state that cannot be fingerprinted, see
    :class:`~nbeval.chat.callable_chat.CallableChat`) is not cached, with one warning.

    ``prices`` maps model names to ``(USD per 1k prompt tokens, USD per 1k completion tokens)``;
    a reply's model name matches a key exactly, else by the longest key it starts with.
    """

    def __init__(
        self,
        model: Any,
        *,
        concurrency: int = 8,
        timeout: float | None = None,
        max_attempts: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        retry_after_max: float = 120.0,
        cache: bool | str | Any = True,
        prices: PriceTable | None = None,
        completion_tokens_guess: int = 200,
        seed: int | None = None,
        slots: Any = None,
    ) -> None:
        resolved = resolve_chat_model(model, required=True)
        if concurrency < 1 or max_attempts < 1:
            msg = f"concurrency and max_attempts must be at least 1, got {concurrency} and {max_attempts}"
            raise BadParameter(msg)
        self.model: ChatModel = resolved
        self.concurrency = int(concurrency)
        own = getattr(resolved, "timeout", None)
        self.timeout: float = float(timeout if timeout is not None else own if own is not None else DEFAULT_TIMEOUT)
        """Seconds each call may take, all of it (the model's own timeout when none was given)."""
        self.max_attempts = int(max_attempts)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.retry_after_max = float(retry_after_max)
        self.prices: dict[str, tuple[float, float]] = dict(prices or {})
        self.completion_tokens_guess = completion_tokens_guess
        self.cache: ChatCache | None = None
        if cache is not None and cache is not False:
            if getattr(resolved, "cacheable", True):
                self.cache = _make_cache(cache)
            else:
                _warn_uncached(resolved)
        self._identity = resolved.cache_identity()
        # A slot is held for each call: ``slots`` (a context manager, e.g. a cluster-wide
        # semaphore) or this client's own ``concurrency`` slots.
        self._slots = slots if slots is not None else threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Lock()
        self._rng = random.Random(seed)
        self._totals = UsageTotals()
        self._cache_warned = False
        self._usage_warned = False

    def __repr__(self) -> str:
        return redact(f"ChatClient({self.model!r}, concurrency={self.concurrency}, cache={self.cache!r})")

    # -- public ----------------------------------------------------------------------------

    def chat(self, messages: Any, **params: Any) -> ChatReply:
        """One request; raises :class:`~nbeval.errors.ResourceError` when it finally fails."""
        result = self.run_many([(messages, params)])[0]
        if isinstance(result, ChatFailure):
            raise ResourceError(result.error)
        return result

    def run_many(
        self,
        requests: Sequence[Any],
        on_done: Callable[[int, ChatResult], None] | None = None,
        *,
        cancel: Callable[[], bool] | threading.Event | None = None,
    ) -> list[ChatResult]:
        """Answer every request, in order. Never raises for a failed call.

        A request is ``(messages, params)``, bare ``messages``, a prompt string, or an object
        with ``messages`` and ``params`` attributes (the engine's ``Chat``). Identical requests
        are sent once when the cache is on. ``on_done(index, result)`` is called from the calling
        thread as each result arrives (cached ones first).

        ``cancel``: an event (or a function saying whether to stop), watched while the batch runs:
        once it is set no new call starts; the calls in flight finish and their replies are kept;
        the other requests get a :class:`ChatFailure` with ``cancelled=True``.
        """
        reqs = [_as_request(r) for r in requests]
        results: list[ChatResult | None] = [None] * len(reqs)
        jobs = self._cached_or_jobs(reqs, results, on_done)
        if jobs:
            self._run_jobs(reqs, jobs, results, on_done, _cancel_check(cancel))
        return [r if r is not None else ChatFailure("no result", 0) for r in results]

    def plan(self, requests: Sequence[Any]) -> CallPlan:
        """How many calls and roughly how many tokens ``requests`` would take; calls nothing."""
        reqs = [_as_request(r) for r in requests]
        cache = self.cache
        if cache is not None:
            keys = [cache_key(self._identity, m, p) for m, p in reqs]
            hits = self._safe(lambda: cache.contains(sorted(set(keys))), set())
            cached = sum(k in hits for k in keys)
            todo = {k: r for k, r in zip(keys, reqs, strict=True) if k not in hits}
            pending = list(todo.values())
        else:
            cached, pending = 0, reqs
        prompt, completion = estimate_usage(pending, self.completion_tokens_guess)
        price = self._price(getattr(self.model, "name", ""))
        cost = None if price is None else (prompt * price[0] + completion * price[1]) / 1000
        return CallPlan(len(reqs), cached, len(pending), prompt, completion, cost)

    def usage_totals(self) -> UsageTotals:
        """Calls, cached calls, failures, attempts, tokens and cost so far."""
        with self._lock:
            return self._totals

    # -- batch machinery -------------------------------------------------------------------

    def cache_key_of(self, request: Any) -> str:
        """The reply cache's key of ``request`` for this client's model (what a batch line's ``custom_id`` is)."""
        msgs, params = _as_request(request)
        return cache_key(self._identity, msgs, params)

    def answer_cached(
        self, requests: Sequence[Any], on_done: Callable[[int, ChatResult], None] | None = None
    ) -> list[tuple[str | None, list[int]]]:
        """Answer the requests the reply cache holds (``on_done(i, reply)``, counted as cached); return the rest.

        The rest come grouped by cache key, as ``(key, positions of the requests with it)``; the
        key is ``None`` (one group per request) when the client has no cache. Nothing is sent.
        """
        reqs = [_as_request(r) for r in requests]
        return self._cached_or_jobs(reqs, [None] * len(reqs), on_done)

    def _cached_or_jobs(
        self,
        reqs: list[tuple[list[dict[str, str]], dict[str, Any]]],
        results: list[ChatResult | None],
        on_done: Callable[[int, ChatResult], None] | None,
    ) -> list[tuple[str | None, list[int]]]:
        cache = self.cache
        if cache is None:
            return [(None, [i]) for i in range(len(reqs))]
        groups: dict[str, list[int]] = {}
        for i, (msgs, params) in enumerate(reqs):
            groups.setdefault(cache_key(self._identity, msgs, params), []).append(i)
        jobs: list[tuple[str | None, list[int]]] = []
        for key, idxs in groups.items():
            hit: ChatReply | None = self._safe(lambda k=key: cache.get(k), None)  # type: ignore[misc]
            if hit is None:
                jobs.append((key, idxs))
                continue
            self._account(hit, len(idxs), cached=True)
            for i in idxs:
                results[i] = hit
                if on_done is not None:
                    on_done(i, hit)
        return jobs

    def _run_jobs(
        self,
        reqs: list[tuple[list[dict[str, str]], dict[str, Any]]],
        jobs: list[tuple[str | None, list[int]]],
        results: list[ChatResult | None],
        on_done: Callable[[int, ChatResult], None] | None,
        cancel: Callable[[], bool] | None = None,
    ) -> None:
        stop = threading.Event()
        todo: queue.SimpleQueue[int] = queue.SimpleQueue()
        done: queue.SimpleQueue[tuple[int, ChatResult | BaseException]] = queue.SimpleQueue()
        for k in range(len(jobs)):
            todo.put(k)
        if cancel is not None and cancel():  # cancelled already: nothing is sent
            _halt(stop, todo, done)

        def work() -> None:
            while not stop.is_set():
                try:
                    k = todo.get_nowait()
                except queue.Empty:
                    return
                key, idxs = jobs[k]
                msgs, params = reqs[idxs[0]]
                try:
                    out: ChatResult | BaseException = self._one(key, msgs, params, len(idxs), stop)
                except BaseException as e:  # MissingDependency: raised in the calling thread
                    out = e
                done.put((k, out))

        # Daemon threads, not a ThreadPoolExecutor: its workers are joined at exit, so one hung
        # call would keep a Ctrl-C'd process alive. Extra workers only wait on the semaphore;
        # they keep slots busy while others back off.
        for n in range(0 if stop.is_set() else min(len(jobs), 2 * self.concurrency)):
            threading.Thread(target=work, name=f"nbeval-chat-{n}", daemon=True).start()
        try:
            for _ in range(len(jobs)):
                k, out = self._next_done(done, todo, stop, cancel)
                if isinstance(out, BaseException):
                    raise out
                for i in jobs[k][1]:
                    results[i] = out
                    if on_done is not None:
                        on_done(i, out)
        finally:
            stop.set()  # a KeyboardInterrupt (or a failing on_done) stops new attempts

    @staticmethod
    def _next_done(
        done: queue.SimpleQueue[tuple[int, ChatResult | BaseException]],
        todo: queue.SimpleQueue[int],
        stop: threading.Event,
        cancel: Callable[[], bool] | None,
    ) -> tuple[int, ChatResult | BaseException]:
        """Wait for the next finished job, watching for a cancel.

        While waiting, a cancel is noticed within :data:`CANCEL_POLL_S`: it stops the workers taking
        jobs, and the jobs none took are answered as cancelled here.
        """
        while cancel is not None and not stop.is_set():
            if cancel():
                _halt(stop, todo, done)
                break
            try:
                return done.get(timeout=CANCEL_POLL_S)
            except queue.Empty:
                continue
        return done.get()

    def _one(
        self,
        key: str | None,
        messages: list[dict[str, str]],
        params: dict[str, Any],
        copies: int,
        stop: threading.Event,
    ) -> ChatResult:
        attempts = 0
        params = {k: v for k, v in params.items() if k != SAMPLE_PARAM}
        while True:
            if stop.is_set():
                return ChatFailure("cancelled before an answer came", attempts, cancelled=True)
            with self._slots:
                if stop.is_set():  # cancelled while this call waited for a slot: it is not sent
                    return ChatFailure("cancelled before an answer came", attempts, cancelled=True)
                attempts += 1
                self._bump(attempts=1)
                try:
                    reply = self.model.chat(messages, timeout=self.timeout, **params)
                    err = None
                except ChatError as e:
                    err = e
                except MissingDependency:
                    raise
                except (TimeoutError, ConnectionError) as e:
                    err = ChatError(f"{type(e).__name__}: {e}", retryable=True)
                except Exception as e:  # a bug in a user's model must not stop the run
                    err = ChatError(f"{type(e).__name__}: {e}")
            if err is None:
                break
            if not err.retryable or attempts >= self.max_attempts:
                what = "gave up after" if err.retryable else "not retried; failed after"
                plural = "s" if attempts != 1 else ""
                return self._fail(
                    ChatFailure(redact(f"{err} ({what} {attempts} attempt{plural})"), attempts, err.status), copies
                )
            delay = self._delay(attempts, err)
            cool_down = getattr(self._slots, "cool_down", None)  # slots shared by machines share the wait too
            if err.retry_after is not None and cool_down is not None:
                cool_down(delay)
            if stop.wait(delay):
                return ChatFailure(redact(f"cancelled while retrying: {err}"), attempts, err.status, cancelled=True)
        clean = redact(reply.text, patterns=False)  # a judge that echoes a key must not spread it
        if clean != reply.text:
            reply = replace(reply, text=clean)
        if reply.cost is None:
            reply = with_cost(reply, self._price(reply.model) or self._price(getattr(self.model, "name", "")))
        cache = self.cache
        if key is not None and cache is not None:
            # at once: a kill keeps it. Stored cut to MAX_REPLY_CHARS (cap_reply, with a note a cache
            # hit shows on its row); this run parses the whole reply, and the results cap what it shows.
            self._safe(lambda: cache.put(key, redact(self._identity), reply), None)
        self._account(reply, copies, cached=False)
        return reply

    def _delay(self, attempt: int, err: ChatError) -> float:
        if err.retry_after is not None:
            return min(err.retry_after, self.retry_after_max)
        cap: float = min(self.backoff_max, self.backoff_base * 2 ** (attempt - 1))
        return cap / 2 + self._rng.uniform(0, cap / 2)

    # -- accounting ------------------------------------------------------------------------

    def _price(self, name: str) -> tuple[float, float] | None:
        if not self.prices or not name:
            return None
        if name in self.prices:
            return self.prices[name]
        matches = [k for k in self.prices if name.startswith(k)]
        return self.prices[max(matches, key=len)] if matches else None

    def _bump(self, **counts: int) -> None:
        with self._lock:
            t = self._totals
            self._totals = replace(t, **{f: getattr(t, f) + n for f, n in counts.items()})

    def _account(self, reply: ChatReply, copies: int, *, cached: bool) -> None:
        with self._lock:
            self._totals = self._totals.counted(reply, copies, cached=cached)
            warn = not cached and not reply.usage.known and not self._usage_warned
            self._usage_warned = self._usage_warned or warn
        if warn:  # once per client: the run's totals count them all
            where = getattr(self.model, "base_url", None) or type(self.model).__name__
            warnings.warn(redact(unknown_usage_note(reply.model, str(where))), DataWarning, stacklevel=3)

    def _fail(self, failure: ChatFailure, copies: int) -> ChatFailure:
        self._bump(calls=copies, failed_calls=copies)
        return failure

    def _safe(self, fn: Callable[[], Any], default: Any) -> Any:
        """Run a cache operation; a broken cache warns once and the run goes on without it."""
        try:
            return fn()
        except sqlite3.Error as e:
            if not self._cache_warned:
                self._cache_warned = True
                warnings.warn(
                    redact(f"nbeval chat cache {self.cache!r} is unusable ({e}); going on without it"),
                    RuntimeWarning,
                    stacklevel=3,
                )
            return default


def _cancel_check(cancel: Callable[[], bool] | threading.Event | None) -> Callable[[], bool] | None:
    """``cancel`` as a check cheap enough to make often.

    Cheap enough to make every :data:`CANCEL_POLL_S`: an event's own ``is_set``; any other function
    is called at most every :data:`CANCEL_CALL_S` (it may ask another machine: a Dask event asks the
    scheduler).
    """
    if cancel is None or isinstance(cancel, threading.Event):
        return cancel.is_set if cancel is not None else None
    if isinstance(getattr(cancel, "__self__", None), threading.Event):  # an event's is_set
        return cancel
    last, said = [float("-inf")], [False]

    def check() -> bool:
        now = time.monotonic()
        if not said[0] and now - last[0] >= CANCEL_CALL_S:
            last[0], said[0] = now, bool(cancel())
        return said[0]

    return check


def _halt(
    stop: threading.Event, todo: queue.SimpleQueue[int], done: queue.SimpleQueue[tuple[int, ChatResult | BaseException]]
) -> None:
    """Stop a batch's workers taking jobs, and answer the jobs none took as cancelled.

    A job is taken once: by a worker, which answers it, or here.
    """
    stop.set()
    while True:
        try:
            k = todo.get_nowait()
        except queue.Empty:
            return
        done.put((k, ChatFailure("cancelled before it was sent", 0, cancelled=True)))


def _warn_uncached(model: Any) -> None:
    problem = getattr(model, "cache_problem", None)
    if not problem:  # cache=False on the model itself: asked for, nothing to say
        return
    name = getattr(model, "name", type(model).__name__)
    msg = redact(
        f"nbeval: the replies of {name!r} are not cached, because its configuration cannot be "
        f"identified reliably: {problem}. To cache them, name this configuration: "
        f'CallableChat(fn, cache_key="...") (change the key whenever the behaviour changes); '
        f"to silence this, pass cache=False."
    )
    with _WARNED_LOCK:
        if msg in _WARNED:
            return
        _WARNED.add(msg)
    warnings.warn(msg, RuntimeWarning, stacklevel=4)


def _make_cache(cache: Any) -> ChatCache | None:
    if cache is None or cache is False:
        return None
    if cache is True:
        return ChatCache()
    if isinstance(cache, ChatCache):
        return cache
    return ChatCache(cache)


#: How often (seconds) a batch waiting for replies checks its ``cancel`` (an event's flag).
CANCEL_POLL_S = 0.02

#: Seconds a whole chat call may take when neither the client nor the model says.
DEFAULT_TIMEOUT = 60.0

#: How often (seconds) at most a batch calls a ``cancel`` that is a function, not an event.
CANCEL_CALL_S = 0.25

#: Reserved parameter carrying a request's ``sample`` number: part of its cache key, never sent.
SAMPLE_PARAM = "nbeval_sample"


def _as_request(r: Any) -> tuple[list[dict[str, str]], dict[str, Any]]:
    if hasattr(r, "messages") and hasattr(r, "params"):
        msgs, params = normalize_messages(r.messages), dict(r.params or {})
        if getattr(r, "sample", 0):  # another independent sample of the same request: its own key
            params[SAMPLE_PARAM] = int(r.sample)
    elif isinstance(r, tuple) and len(r) == 2 and (r[1] is None or isinstance(r[1], Mapping)):
        msgs, params = normalize_messages(r[0]), dict(r[1] or {})
    else:
        msgs, params = normalize_messages(r), {}
    if params:  # secret headers or parameters of the call: masked wherever they show up later
        register_secrets(*secrets_in_params(params))
    return msgs, params


def estimate_usage(requests: Sequence[Any], completion_guess: int = 200) -> tuple[int, int]:
    """Rough prompt and completion tokens of ``requests``, with no model at hand.

    ``requests`` are as :meth:`ChatClient.run_many` takes them. The prompt is estimated from the
    messages' text (four characters a token), the completion from each request's ``max_tokens`` (an
    upper bound, not an estimate: replies are often far shorter) or, where it sets none,
    ``completion_guess`` (a guess). With ``completion_guess=0`` the completion is the bound alone
    (the requests' ``max_tokens``).
    """
    reqs = [_as_request(r) for r in requests]
    prompt = sum(sum(estimate_tokens(str(m.get("content", ""))) + 4 for m in msgs) for msgs, _ in reqs)
    completion = sum(max_tokens_of(p, completion_guess) for _, p in reqs)
    return prompt, completion
