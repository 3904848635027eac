"""A real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions wire format, for tests.

    with FakeOpenAIServer(reply="yes") as server:
        model = OpenAIChat("fake", base_url=server.url, api_key="sk-test")
        ...
        assert server.request_count == 1

What it answers, in order of precedence for each ``POST /v1/chat/completions``:

1. the next item of the queue (``server.push(Status(500), "ok")``), else
2. ``server.reply``: a fixed text or behaviour, or a function of the :class:`Recorded` request
   returning a text or a behaviour.

Behaviours: a plain string or :class:`Text` (a normal completion), :class:`Status` (an error
status, with headers such as ``Retry-After``), :func:`rate_limited`, :class:`Hang` (no answer for
a while), :class:`Drop` (close the connection without answering), :class:`Garbage` (a 200 with a
body that is not JSON), :class:`Drip` (a 200 whose headers come at once and whose body then comes
one byte at a time, slowly: no gap between bytes is long, but the whole reply takes minutes).
``latency`` delays every answer. Every request is recorded (``requests``),
counted (``request_count``), and the most requests ever in flight at once is ``max_in_flight``.
``wait_until(condition)`` blocks until the server's counts say so (no polling, no sleeping), and
``together(server, n)`` is a reply that holds the first requests until ``n`` are in flight at once.

Log-probabilities: a :class:`Text` with ``logprobs`` (one ``(token, logprob, [(token, logprob),
...])`` a generated token) answers a request that asks for them (``logprobs: true``) with
``choices[0].logprobs.content`` in OpenAI's shape, each token's ``top_logprobs`` cut to the
request's ``top_logprobs`` (none when it gives none); any other reply carries ``"logprobs": null``,
as a server that returns none does.

Default token usage, easy to work out by hand: prompt tokens = the number of whitespace-separated
words over all message contents, completion tokens = the words of the reply.
"""

from __future__ import annotations

import collections
import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "Behaviour",
    "Drip",
    "Drop",
    "FakeOpenAIServer",
    "Garbage",
    "Hang",
    "Recorded",
    "Status",
    "Text",
    "TokenLogprobs",
    "logprobs_content",
    "rate_limited",
    "together",
]


#: One generated token's log-probabilities: its text, its logprob, and the likeliest tokens there.
TokenLogprobs = tuple[str, float, list[tuple[str, float]]]


@dataclass
class Text:
    """A normal completion with ``content``; ``usage`` overrides the word counts; ``logprobs``
    (per generated token) are sent when the request asks for them."""

    content: str
    usage: dict[str, int] | None = None
    model: str | None = None
    latency: float = 0.0
    logprobs: list[TokenLogprobs] | None = None


@dataclass
class Status:
    """An error reply: ``code`` with a JSON error body and extra ``headers``."""

    code: int
    message: str = "simulated failure"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Hang:
    """Say nothing for ``seconds`` (interrupted when the server stops), then close."""

    seconds: float = 30.0


@dataclass
class Drop:
    """Close the connection abruptly (a TCP reset) without answering."""


@dataclass
class Garbage:
    """A ``200 OK`` whose body is not JSON."""

    body: str = "<html><body>502 upstream confused</body></html>"


@dataclass
class Drip:
    """A ``200 OK`` with a normal completion of ``content``, sent one byte every ``interval`` seconds
    after the headers (stopped when the server stops)."""

    content: str = "ok"
    interval: float = 1.0


def logprobs_content(tokens: list[TokenLogprobs], top: int | None) -> list[dict[str, Any]]:
    """``choices[0].logprobs.content`` as OpenAI writes it, each token's alternatives cut to ``top``."""

    def entry(token: str, logprob: float) -> dict[str, Any]:
        return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}

    return [
        {**entry(token, lp), "top_logprobs": [entry(t, v) for t, v in alternatives[: top or 0]]}
        for token, lp, alternatives in tokens
    ]


def rate_limited(retry_after: str | float = "1") -> Status:
    """A 429 asking the client to wait ``retry_after`` (seconds or an HTTP date)."""
    return Status(429, "rate limit reached", {"Retry-After": str(retry_after)})


Behaviour = Union[str, Text, Status, Hang, Drop, Garbage, Drip]


def together(
    server: FakeOpenAIServer, n: int, then: Behaviour | Callable[[Recorded], Behaviour] = "ok", *, hold: float = 30.0
) -> Callable[[Recorded], Behaviour]:
    """A reply for ``server.reply``: the first requests are held until ``n`` are in flight at
    once, then every request gets ``then``. A client allowed ``n`` calls at once makes
    ``server.max_in_flight == n`` without relying on the server being slow; a client that never
    gets to ``n`` waits ``hold`` seconds per held call and the test sees a smaller maximum."""
    full = threading.Event()

    def reply(rec: Recorded) -> Behaviour:
        if server.in_flight >= n:
            full.set()
        full.wait(hold)
        return then(rec) if callable(then) else then

    return reply


class Headers(dict):
    """Request headers looked up case-insensitively, as HTTP defines them (clients differ in case)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__((k.lower(), v) for k, v in dict(items).items())

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and super().__contains__(key.lower())

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)


@dataclass
class Recorded:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None
    started: float
    """``time.monotonic()`` when the request was read."""
    query: dict[str, str] = field(default_factory=dict)
    """The URL's query parameters (``path`` is the whole request target, query included)."""

    @property
    def model(self) -> Any:
        """The body's ``model`` (a request without a JSON body fails the test)."""
        assert self.body is not None, f"{self.path} came without a JSON body"
        return self.body["model"]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.body or {}).get("messages", []))

    @property
    def last_content(self) -> str:
        """The content of the last message (the prompt, in most tests)."""
        msgs = self.messages
        return str(msgs[-1].get("content", "")) if msgs else ""

    @property
    def params(self) -> dict[str, Any]:
        """Everything in the body besides ``model`` and ``messages``."""
        return {k: v for k, v in (self.body or {}).items() if k not in ("model", "messages")}


class FakeOpenAIServer:
    """The server. ``url`` is the base URL to give the client (ends in ``/v1``)."""

    def __init__(
        self,
        reply: Behaviour | Callable[[Recorded], Behaviour] = "ok",
        *,
        latency: float = 0.0,
        model: str = "fake-model",
    ) -> None:
        self.reply = reply
        self.latency = latency
        self.model = model
        self.requests: list[Recorded] = []
        self.max_in_flight = 0
        self.in_flight = 0
        self._queue: collections.deque[Behaviour] = collections.deque()
        self._lock = threading.RLock()  # re-entrant: a wait_until condition may read request_count
        self._changed = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()  # open client connections, ended by stop()

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> FakeOpenAIServer:
        handler = type("Handler", (_Handler,), {"fake": self})
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        # A kept-alive connection's handler thread would wait for its next request for ever (and
        # answer it, after the server has stopped): shutting the connection down ends it.
        with self._lock:
            open_connections, self._connections = list(self._connections), set()
        for conn in open_connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- programming ------------------------------------------------------------------------

    def push(self, *behaviours: Behaviour) -> None:
        """Queue behaviours for the next requests, in order."""
        with self._lock:
            self._queue.extend(behaviours)

    def reset(self) -> None:
        """Forget recorded requests, counters and queued behaviours."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.max_in_flight = 0

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def wait_until(self, condition: Callable[[FakeOpenAIServer], bool], timeout: float = 60.0) -> bool:
        """Block until ``condition(server)`` is true, checked now and whenever a request begins or
        ends; ``False`` if it is still false after ``timeout`` seconds (a generous bound: a test
        waits on what the server sees, not on the clock)."""
        with self._changed:
            return self._changed.wait_for(lambda: condition(self), timeout)

    def prompts(self) -> list[str]:
        """The last message's content of every request so far, in arrival order."""
        with self._lock:
            return [r.last_content for r in self.requests]

    # -- used by the handler ----------------------------------------------------------------

    def _begin(self, rec: Recorded) -> Behaviour:
        with self._lock:
            self.requests.append(rec)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            queued = self._queue.popleft() if self._queue else None
            self._changed.notify_all()
        if queued is not None:
            return queued
        reply = self.reply
        return reply(rec) if callable(reply) else reply

    def _end(self) -> None:
        with self._lock:
            self.in_flight -= 1
            self._changed.notify_all()

    def _sleep(self, seconds: float) -> None:
        if seconds > 0:
            self._stopping.wait(seconds)

    def completion(self, rec: Recorded, text: Text) -> dict[str, Any]:
        """The JSON body of a successful reply."""
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in rec.messages)
        usage = text.usage or {"prompt_tokens": prompt_words, "completion_tokens": len(text.content.split())}
        usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
        n = len(self.requests)
        body = rec.body or {}
        logprobs = None
        if text.logprobs is not None and body.get("logprobs"):
            logprobs = {"content": logprobs_content(text.logprobs, body.get("top_logprobs")), "refusal": None}
        return {
            "id": f"chatcmpl-fake-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": text.model or body.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": text.content},
                    "logprobs": logprobs,
                }
            ],
            "usage": usage,
        }


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAIServer
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

    def setup(self) -> None:
        super().setup()
        with self.fake._lock:
            self.fake._connections.add(self.connection)
        # Headers and body go out in two writes; without this, Nagle's algorithm and delayed
        # ACKs add ~40 ms to some replies, which would skew latency-sensitive tests.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def finish(self) -> None:
        with self.fake._lock:
            self.fake._connections.discard(self.connection)
        super().finish()

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(
        self, code: int, body: bytes, content_type: str = "application/json", headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": self.fake.model, "object": "model"}]}
            self._send(200, json.dumps(body).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        target = urlsplit(self.path)
        if not target.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        rec = Recorded(
            self.path,
            Headers(self.headers.items()),
            body,
            time.monotonic(),
            dict(parse_qsl(target.query, keep_blank_values=True)),
        )
        fake = self.fake
        behaviour = fake._begin(rec)
        try:
            fake._sleep(fake.latency)
            self._act(rec, behaviour)
        finally:
            fake._end()

    def _act(self, rec: Recorded, behaviour: Behaviour) -> None:
        fake = self.fake
        if isinstance(behaviour, str):
            behaviour = Text(behaviour)
        if isinstance(behaviour, Text):
            fake._sleep(behaviour.latency)
            self._send(200, json.dumps(fake.completion(rec, behaviour)).encode())
        elif isinstance(behaviour, Status):
            err = {"error": {"message": behaviour.message, "type": "fake_error", "code": behaviour.code}}
            self._send(behaviour.code, json.dumps(err).encode(), headers=behaviour.headers)
        elif isinstance(behaviour, Hang):
            fake._sleep(behaviour.seconds)
            self.close_connection = True
        elif isinstance(behaviour, Drop):
            # SO_LINGER with a zero timeout makes close() send a reset instead of a clean FIN.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True
            self.connection.close()
        elif isinstance(behaviour, Garbage):
            self._send(200, behaviour.body.encode(), content_type="text/html")
        elif isinstance(behaviour, Drip):
            body = json.dumps(fake.completion(rec, Text(behaviour.content))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.flush()
            self.close_connection = True
            for i in range(len(body)):
                fake._sleep(behaviour.interval)
                if fake._stopping.is_set():
                    return
                try:
                    self.wfile.write(body[i : i + 1])
                    self.wfile.flush()
                except OSError:  # the client gave up and closed the connection
                    return
        else:  # a test bug: say so loudly in the reply
            self._send(500, json.dumps({"error": {"message": f"bad behaviour {behaviour!r}"}}).encode())
