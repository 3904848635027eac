"""The service's HTTP connections: how many it holds, and how long a client has to send a request.

Every connection is a file descriptor, and a process may hold only ``ulimit -n`` of them; past
that, the server cannot accept anyone (``OSError: [Errno 24] Too many open files``), not even
``/health``. So the service (:func:`open_file_limit`, :func:`connection_bounds`):

* raises its soft ``RLIMIT_NOFILE`` to the hard limit at start-up (:func:`raise_open_file_limit`);
* keeps :data:`RESERVE_FDS` descriptors for its own files (SQLite and its journal, result folders
  being written, logs) and room for what one pass of the accept loop may take (a few times the
  listen ``backlog``, which is kept small where descriptors are few), and caps connections at
  the rest;
* when a new connection would pass the cap (``limit_concurrency``, lowered to the descriptors
  there are), closes the connections that have been *waiting for a request head* the longest
  first (half-open connections and idle keep-alive ones). A connection with a request in progress
  is never closed for another; when every connection has one, the newcomer's request gets 503
  (uvicorn's ``limit_concurrency``) or, past the descriptors there are, it is closed at once.
  So clients that never finish their headers cannot lock anyone out: each new client pushes out
  the oldest of them.

Deadlines (:func:`deadline_protocol`): a connection has ``header_timeout`` seconds to send a
whole request head (from connecting, or from its last response), and ``body_timeout`` seconds
from the head to send the whole body; past the second it is answered 408 and closed.
"""

from __future__ import annotations

import json
from typing import Any

from nbeval.errors import NbevalError

__all__ = ["RESERVE_FDS", "connection_bounds", "deadline_protocol", "open_file_limit", "raise_open_file_limit"]

#: File descriptors kept for the service's own files, never given to connections.
RESERVE_FDS = 64
#: Used when the process's limit on open files is unknown or unlimited.
_UNLIMITED = 1 << 20


def open_file_limit() -> int:
    """The process's soft limit on open files (``ulimit -n``)."""
    try:
        import resource
    except ImportError:  # not POSIX: no such limit to respect
        return _UNLIMITED
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _UNLIMITED if soft == resource.RLIM_INFINITY else int(soft)


def raise_open_file_limit() -> int:
    """Raise the soft limit on open files to the hard limit where allowed; the soft limit after."""
    try:
        import resource
    except ImportError:
        return _UNLIMITED
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = _UNLIMITED if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError):  # not allowed here (a sandbox, macOS's OPEN_MAX): keep the soft one
            pass
    return open_file_limit()


def connection_bounds(limit_concurrency: int, open_files: int) -> tuple[int, int, int]:
    """The connection bounds for a process that may open ``open_files`` files.

    ``(limit, cap, backlog)``: connections past ``limit`` push out those waiting for a request head
    (or get 503); past ``cap`` a new one is closed at once; ``backlog`` is the listen backlog (also
    what one pass of the accept loop takes).
    """
    backlog = max(16, min(128, open_files // 16))
    cap = open_files - RESERVE_FDS - 4 * backlog
    if cap < 8:
        msg = (
            f"this process may open only {open_files} files (ulimit -n), too few to serve: the service keeps "
            f"{RESERVE_FDS + 4 * backlog} for itself; raise it (e.g. ulimit -n 1024)"
        )
        raise NbevalError(msg)
    return max(2, min(limit_concurrency, cap)), cap, backlog


def deadline_protocol(header_timeout: float, body_timeout: float, limit: int, cap: int) -> type:
    """uvicorn's h11 protocol with the service's connection cap and deadlines.

    The cap and the head and body deadlines are described in the module's description. Each call
    makes a class with its own register of connections.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    waiting: dict[Any, None] = {}  # connections waiting for a request head, the longest-waiting first
    timeout_body = json.dumps({"detail": f"the request body did not arrive within {body_timeout:g} seconds"}).encode()

    class HeaderDeadlineProtocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            waiting[self] = None
            self._arm()
            connections = self.connections
            while len(connections) >= limit:  # uvicorn answers 503 from `limit` connections on
                victim = next((c for c in waiting if c is not self), None)
                if victim is None:
                    break
                del waiting[victim]
                connections.discard(victim)  # gone now; its descriptor is freed on the next turn of the loop
                victim.transport.abort()
            if len(connections) > cap:  # every other connection has a request in progress
                waiting.pop(self, None)
                connections.discard(self)
                transport.abort()

        def handle_events(self) -> None:
            super().handle_events()
            cycle = self.cycle
            if cycle is not None and not cycle.response_complete:  # a request head came
                waiting.pop(self, None)
                if cycle.more_body and getattr(self, "_body_cycle", None) is not cycle:
                    self._body_cycle = cycle
                    self._cancel("_body_timer")
                    self._body_timer = self.loop.call_later(body_timeout, self._body_expire, cycle)

        def on_response_complete(self) -> None:
            if not self.transport.is_closing():
                waiting.pop(self, None)
                waiting[self] = None  # waits for its next request head from now
            self._cancel("_body_timer")
            super().on_response_complete()  # may start a pipelined request (handle_events)
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            waiting.pop(self, None)
            self._cancel("_head_timer")
            self._cancel("_body_timer")
            super().connection_lost(exc)

        def _cancel(self, name: str) -> None:
            timer = getattr(self, name, None)
            if timer is not None:
                timer.cancel()
                setattr(self, name, None)

        def _arm(self) -> None:
            self._cancel("_head_timer")
            self._head_timer = self.loop.call_later(header_timeout, self._expire, self.cycle)

        def _expire(self, cycle: Any) -> None:
            # no request head came since the timer was set (a new one would have made a new cycle)
            if self.cycle is cycle and (cycle is None or cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()

        def _body_expire(self, cycle: Any) -> None:
            if self.cycle is not cycle or not cycle.more_body or cycle.response_complete or self.transport.is_closing():
                return
            if not cycle.response_started:  # answer 408; the application's own answer, if any, is dropped
                cycle.response_started = True
                headers = [
                    ("content-type", "application/json"),
                    ("connection", "close"),
                    ("content-length", str(len(timeout_body))),
                ]
                try:
                    parts = [
                        self.conn.send(h11.Response(status_code=408, headers=headers, reason=b"Request Timeout")),
                        self.conn.send(h11.Data(data=timeout_body)),
                        self.conn.send(h11.EndOfMessage()),
                    ]
                    self.transport.write(b"".join(p or b"" for p in parts))
                except h11.LocalProtocolError:  # h11 cannot answer in this state: close without a word
                    pass
            self.transport.close()

    return HeaderDeadlineProtocol
