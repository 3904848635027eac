"""Total deadlines for chat calls: ``timeout=`` bounds the whole call, not the gap between bytes.

HTTP clients time each step (connect, each read, each write) separately, so a server that sends a
byte a second never trips a 60-second read timeout and can hold a call forever. Two remedies:

* For HTTP (httpx/httpcore, the stack of the ``openai`` client), :func:`arm_http_client` wraps the
  connection pools' network backend: inside :func:`deadline_scope`, every connect, read, write
  and TLS handshake gets at most the time left before the deadline, and fails with the library's
  own timeout error once it has passed. The call's thread stops at the deadline; the connection is
  closed by the library as after any timeout.
* For Python functions (and HTTP clients that cannot be armed), :func:`call_with_deadline` runs
  the call on a daemon thread and stops waiting at the deadline: the call is abandoned, not
  stopped, and reported as a timeout. Daemon threads never hold up the interpreter's exit.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from nbeval.chat.base import ChatError

__all__ = ["arm_http_client", "call_with_deadline", "deadline_scope", "remaining"]

_LOCAL = threading.local()


@contextmanager
def deadline_scope(seconds: float | None) -> Iterator[None]:
    """Network I/O of this thread inside the block must end within ``seconds`` (``None``: no bound)."""
    previous = getattr(_LOCAL, "deadline", None)
    _LOCAL.deadline = None if seconds is None else time.monotonic() + max(float(seconds), 0.0)
    try:
        yield
    finally:
        _LOCAL.deadline = previous


def remaining() -> float | None:
    """Seconds left before this thread's deadline (``None`` outside a :func:`deadline_scope`)."""
    deadline = getattr(_LOCAL, "deadline", None)
    return None if deadline is None else deadline - time.monotonic()


def call_with_deadline(call: Callable[[], Any], timeout: float, name: str) -> Any:
    """``call()``, abandoned after ``timeout`` seconds with a retryable :class:`ChatError`."""
    box: dict[str, Any] = {}

    def run() -> None:
        """Call in the worker thread, keeping the result or the exception for the caller."""
        try:
            box["out"] = call()
        except BaseException as e:  # handed back to the caller's thread below
            box["err"] = e

    worker = threading.Thread(target=run, name=f"nbeval-call-{name}", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        msg = f"{name}: timed out after {timeout:g} s (the call was abandoned; it may still finish in the background)"
        raise ChatError(msg, retryable=True)
    if "err" in box:
        raise box["err"]
    return box["out"]


# ---------------------------------------------------------------------------------------------
# httpcore network backends with a deadline


class _Errors:
    """The timeout exception classes of one httpcore-like package."""

    def __init__(self, package: Any) -> None:
        self.connect = package.ConnectTimeout
        self.read = package.ReadTimeout
        self.write = package.WriteTimeout


def _clamp(timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` shortened to what is left of the call's total deadline; raises ``error`` when none is left."""
    left = remaining()
    if left is None:
        return timeout
    if left <= 0:
        msg = "the call's total deadline has passed"
        raise error(msg)
    return left if timeout is None else min(timeout, left)


class _DeadlineStream:
    """An httpcore network stream whose reads and writes stop at the call's total deadline."""

    def __init__(self, inner: Any, errors: _Errors) -> None:
        self._inner = inner
        self._errors = errors

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Read up to ``max_bytes``, waiting no longer than the deadline allows."""
        data: bytes = self._inner.read(max_bytes, timeout=_clamp(timeout, self._errors.read))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Write ``buffer``, waiting no longer than the deadline allows."""
        self._inner.write(buffer, timeout=_clamp(timeout, self._errors.write))

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> _DeadlineStream:
        """Upgrade to TLS within the deadline; the new stream keeps it."""
        stream = self._inner.start_tls(
            ssl_context, server_hostname=server_hostname, timeout=_clamp(timeout, self._errors.connect)
        )
        return _DeadlineStream(stream, self._errors)

    def close(self) -> None:
        """Close the stream."""
        self._inner.close()

    def get_extra_info(self, info: str) -> Any:
        """What the wrapped stream says of itself (its socket, its TLS object...)."""
        return self._inner.get_extra_info(info)

    def __getattr__(self, name: str) -> Any:
        """Anything else comes from the wrapped stream."""
        return getattr(self._inner, name)


class _DeadlineBackend:
    """An httpcore network backend whose connections and streams keep to the call's total deadline."""

    def __init__(self, inner: Any, errors: _Errors) -> None:
        self._inner = inner
        self._errors = errors

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Any = None,
    ) -> _DeadlineStream:
        """Open a TCP connection within the deadline, as a stream that keeps to it."""
        stream = self._inner.connect_tcp(
            host,
            port,
            timeout=_clamp(timeout, self._errors.connect),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self._errors)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> _DeadlineStream:
        """Open a Unix socket connection within the deadline, as a stream that keeps to it."""
        stream = self._inner.connect_unix_socket(
            path, timeout=_clamp(timeout, self._errors.connect), socket_options=socket_options
        )
        return _DeadlineStream(stream, self._errors)

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``."""
        self._inner.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        """Anything else comes from the wrapped backend."""
        return getattr(self._inner, name)


def arm_http_client(client: Any) -> bool:
    """Put deadlines on every connection pool of an httpx(-like) sync ``client``.

    Returns ``False`` when some pool could not be armed (an unknown transport or library
    version): the caller then bounds calls with :func:`call_with_deadline` instead.
    """
    transports = [getattr(client, "_transport", None), *dict(getattr(client, "_mounts", None) or {}).values()]
    pools: list[tuple[Any, Any]] = []
    for transport in transports:
        if transport is None:
            continue
        pool: Any = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if pool is None or backend is None:
            return False
        pools.append((pool, backend))
    if not pools:
        return False
    for pool, backend in pools:
        if isinstance(backend, _DeadlineBackend):
            continue
        package = sys.modules.get(type(backend).__module__.split(".")[0])
        try:
            errors = _Errors(package)
        except AttributeError:
            return False
        pool._network_backend = _DeadlineBackend(backend, errors)
    return True
