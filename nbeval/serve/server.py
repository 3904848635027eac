"""Starting the service: the authentication rule, then uvicorn.

The service runs evaluations on the host's resources and, with a judge configured, spends its
API key, so it needs a bearer token. It starts without one only when asked explicitly
(``no_auth=True``) and bound to a loopback address, where only this machine can reach it.

Connections are bounded (:func:`uvicorn_config`): past ``limit_concurrency`` open connections a
request is answered 503 at once; an idle keep-alive connection is closed after
``timeout_keep_alive`` seconds; a connection that has not sent a whole request head
(``header_timeout`` seconds; uvicorn has no such deadline of its own, so the service's HTTP
protocol adds it) or sends a head larger than ``max_header_bytes`` is closed. That keeps a few
slow clients from holding every file descriptor; against many (a slowloris from many
addresses), and for TLS, put a reverse proxy in front (nginx, Caddy, a cloud load balancer).
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any

from nbeval.errors import NbevalError

__all__ = ["HEADER_TIMEOUT", "LIMIT_CONCURRENCY", "MAX_HEADER_BYTES", "TIMEOUT_KEEP_ALIVE", "TOKEN_ENV",
           "auth_token", "is_loopback", "serve", "uvicorn_config"]

#: Environment variable read for the token when none is given.
TOKEN_ENV = "NBEVAL_SERVE_TOKEN"
#: Open connections past which requests get 503 (the rest of the process's file descriptors stay free).
LIMIT_CONCURRENCY = 200
#: Seconds an idle keep-alive connection is kept open.
TIMEOUT_KEEP_ALIVE = 5
#: Seconds a connection has to send a whole request head (request line and headers).
HEADER_TIMEOUT = 10.0
#: The largest request head accepted (h11's incomplete-event limit).
MAX_HEADER_BYTES = 64 * 1024


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def auth_token(host: str, token: str | None, no_auth: bool) -> str | None:
    """The token the service requires (``None``: no authentication), or an error saying what to give.

    ``token`` falls back to ``NBEVAL_SERVE_TOKEN``."""
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None and not token.strip():
        raise NbevalError("the token is empty; give a long random string (e.g. from `openssl rand -hex 32`)")
    if token is not None and no_auth:
        raise NbevalError("give either a token or --no-auth, not both")
    if token is not None:
        return token
    if not no_auth:
        msg = (f"no token: give --token TOKEN or set {TOKEN_ENV} (clients send 'Authorization: Bearer TOKEN'); "
               "to run without authentication on this machine only, use --host 127.0.0.1 --no-auth")
        raise NbevalError(msg)
    if not is_loopback(host):
        msg = (f"refusing to serve without authentication on {host}, which other machines can reach: "
               f"give --token TOKEN (or set {TOKEN_ENV}), or bind to 127.0.0.1")
        raise NbevalError(msg)
    return None


def _deadline_protocol(header_timeout: float) -> type:
    """uvicorn's h11 protocol, closing a connection that has not sent a whole request head within
    ``header_timeout`` seconds of connecting or of its last response."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderDeadlineProtocol(H11Protocol):
        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            timer = getattr(self, "_head_timer", None)
            if timer is not None:
                timer.cancel()
            super().connection_lost(exc)

        def _arm(self) -> None:
            timer = getattr(self, "_head_timer", None)
            if timer is not None:
                timer.cancel()
            self._head_timer = self.loop.call_later(header_timeout, self._expire, self.cycle)

        def _expire(self, cycle: Any) -> None:
            # no request head came since the timer was set (a new one would have made a new cycle)
            if self.cycle is cycle and (cycle is None or cycle.response_complete) and not self.transport.is_closing():
                self.transport.close()

    return HeaderDeadlineProtocol


def uvicorn_config(*, limit_concurrency: int = LIMIT_CONCURRENCY, timeout_keep_alive: int = TIMEOUT_KEEP_ALIVE,
                   header_timeout: float = HEADER_TIMEOUT, max_header_bytes: int = MAX_HEADER_BYTES) -> dict[str, Any]:
    """The settings of ``uvicorn.Config`` (or ``uvicorn.run``) that bound connections, as the
    service runs with them (see the module's description)."""
    return {"server_header": False, "limit_concurrency": limit_concurrency, "timeout_keep_alive": timeout_keep_alive,
            "h11_max_incomplete_event_size": max_header_bytes, "http": _deadline_protocol(header_timeout)}


def serve(*, host: str = "127.0.0.1", port: int = 8080, token: str | None = None, no_auth: bool = False,
          log_level: str = "info", limit_concurrency: int = LIMIT_CONCURRENCY,
          timeout_keep_alive: int = TIMEOUT_KEEP_ALIVE, header_timeout: float = HEADER_TIMEOUT,
          max_header_bytes: int = MAX_HEADER_BYTES, **app_options: Any) -> None:
    """Check the authentication rule (:func:`auth_token`), build the app
    (:func:`nbeval.serve.app.create_app` with ``app_options``) and serve it until interrupted,
    with the connection bounds of :func:`uvicorn_config`."""
    required = auth_token(host, token, no_auth)  # refuse before anything is loaded
    try:
        import uvicorn

        from nbeval.serve.app import create_app
    except ImportError as exc:
        from nbeval.errors import MissingDependency

        msg = f"the service needs its extra: pip install 'nbeval[serve]' ({exc})"
        raise MissingDependency(msg) from None

    api = create_app(token=required, **app_options)
    bounds = uvicorn_config(limit_concurrency=limit_concurrency, timeout_keep_alive=timeout_keep_alive,
                            header_timeout=header_timeout, max_header_bytes=max_header_bytes)
    uvicorn.run(api, host=host, port=port, log_level=log_level, **bounds)
