"""Starting the service: the authentication rule, then uvicorn.

The service runs evaluations on the host's resources and, with a judge configured, spends its
API key, so it needs a bearer token. It starts without one only when asked explicitly
(``no_auth=True``) and bound to a loopback address, where only this machine can reach it.

Connections are bounded (:func:`uvicorn_config`, :mod:`nbeval.serve.connections`): at most
``limit_concurrency`` are held, fewer where the process may open few files (``ulimit -n``; the
soft limit is raised to the hard one at start-up); a new connection past it pushes out those
that have waited longest for a request head, and when every connection has a request in
progress its request is answered 503 at once. An idle keep-alive connection is closed after
``timeout_keep_alive`` seconds; a connection that has not sent a whole request head within
``header_timeout`` seconds, or sends a head larger than ``max_header_bytes``, is closed; one
that has not sent its whole body within ``body_timeout`` seconds of its head is answered 408
and closed (uvicorn has neither deadline of its own: the service's HTTP protocol adds them). So
slow clients cannot use up the file descriptors or lock out ``/health``; for TLS, and against
many slow clients crowding out real ones, put a reverse proxy in front (nginx, Caddy, a cloud
load balancer).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from nbeval.errors import NbevalError
from nbeval.serve.connections import connection_bounds, deadline_protocol, open_file_limit, raise_open_file_limit
from nbeval.serve.guard import is_loopback

__all__ = [
    "BODY_TIMEOUT",
    "HEADER_TIMEOUT",
    "LIMIT_CONCURRENCY",
    "MAX_HEADER_BYTES",
    "TIMEOUT_KEEP_ALIVE",
    "TOKEN_ENV",
    "auth_token",
    "serve",
    "uvicorn_config",
]

#: Environment variable read for the token when none is given.
TOKEN_ENV = "NBEVAL_SERVE_TOKEN"
#: Open connections past which requests get 503 (the rest of the process's file descriptors stay free).
LIMIT_CONCURRENCY = 200
#: Seconds an idle keep-alive connection is kept open.
TIMEOUT_KEEP_ALIVE = 5
#: Seconds a connection has to send a whole request head (request line and headers).
HEADER_TIMEOUT = 10.0
#: Seconds a connection has, from its request head, to send the whole body (then 408).
BODY_TIMEOUT = 60.0
#: The largest request head accepted (h11's incomplete-event limit).
MAX_HEADER_BYTES = 64 * 1024


def auth_token(host: str, token: str | None, no_auth: bool) -> str | None:
    """The token the service requires (``None``: no authentication), or an error saying what to give.

    ``token`` falls back to ``NBEVAL_SERVE_TOKEN``.
    """
    token = token if token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None and not token.strip():
        raise NbevalError("the token is empty; give a long random string (e.g. from `openssl rand -hex 32`)")
    if token is not None and no_auth:
        raise NbevalError("give either a token or --no-auth, not both")
    if token is not None:
        return token
    if not no_auth:
        msg = (
            f"no token: give --token TOKEN or set {TOKEN_ENV} (clients send 'Authorization: Bearer TOKEN'); "
            "to run without authentication on this machine only, use --host 127.0.0.1 --no-auth"
        )
        raise NbevalError(msg)
    if not is_loopback(host):
        msg = (
            f"refusing to serve without authentication on {host}, which other machines can reach: "
            f"give --token TOKEN (or set {TOKEN_ENV}), or bind to 127.0.0.1"
        )
        raise NbevalError(msg)
    return None


def uvicorn_config(
    *,
    limit_concurrency: int = LIMIT_CONCURRENCY,
    timeout_keep_alive: int = TIMEOUT_KEEP_ALIVE,
    header_timeout: float = HEADER_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    max_header_bytes: int = MAX_HEADER_BYTES,
    open_files: int | None = None,
) -> dict[str, Any]:
    """The settings of ``uvicorn.Config`` that bound connections.

    The settings of ``uvicorn.Config`` (or ``uvicorn.run``) as the service runs with them (see the
    module's description); ``open_files``: the process's limit on open files (default: its soft
    ``RLIMIT_NOFILE``), which may lower ``limit_concurrency``.
    """
    limit, cap, backlog = connection_bounds(limit_concurrency, open_files or open_file_limit())
    return {
        "server_header": False,
        "limit_concurrency": limit,
        "timeout_keep_alive": timeout_keep_alive,
        "h11_max_incomplete_event_size": max_header_bytes,
        "backlog": backlog,
        "http": deadline_protocol(header_timeout, body_timeout, limit, cap),
    }


def serve(
    *,
    host: str = "127.0.0.1",
    port: int = 8080,
    token: str | None = None,
    no_auth: bool = False,
    log_level: str = "info",
    limit_concurrency: int = LIMIT_CONCURRENCY,
    timeout_keep_alive: int = TIMEOUT_KEEP_ALIVE,
    header_timeout: float = HEADER_TIMEOUT,
    body_timeout: float = BODY_TIMEOUT,
    max_header_bytes: int = MAX_HEADER_BYTES,
    **app_options: Any,
) -> None:
    """Serve the nbeval service until interrupted.

    Check the authentication rule (:func:`auth_token`), build the app
    (:func:`nbeval.serve.app.create_app` with ``app_options``) and serve it, with the connection
    bounds of :func:`uvicorn_config`.
    """
    required = auth_token(host, token, no_auth)  # refuse before anything is loaded
    try:
        import uvicorn

        from nbeval.serve.app import create_app
    except ImportError as exc:
        from nbeval.errors import MissingDependency

        msg = f"the service needs its extra: pip install 'nbeval[serve]' ({exc})"
        raise MissingDependency(msg) from None

    open_files = raise_open_file_limit()
    bounds = uvicorn_config(
        limit_concurrency=limit_concurrency,
        timeout_keep_alive=timeout_keep_alive,
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        max_header_bytes=max_header_bytes,
        open_files=open_files,
    )
    if bounds["limit_concurrency"] < limit_concurrency:
        print(
            f"nbeval serve: at most {bounds['limit_concurrency']} connections, not {limit_concurrency}: this "
            f"process may open only {open_files} files (raise ulimit -n for more)",
            file=sys.stderr,
        )
    api = create_app(token=required, **app_options)
    uvicorn.run(api, host=host, port=port, log_level=log_level, **bounds)
