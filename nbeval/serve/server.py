"""Starting the service: the authentication rule, then uvicorn.

The service runs evaluations on the host's resources and, with a judge configured, spends its
API key, so it needs a bearer token. It starts without one only when asked explicitly
(``no_auth=True``) and bound to a loopback address, where only this machine can reach it.
"""

from __future__ import annotations

import ipaddress
import os
from typing import Any

from nbeval.errors import NbevalError

__all__ = ["TOKEN_ENV", "auth_token", "is_loopback", "serve"]

#: Environment variable read for the token when none is given.
TOKEN_ENV = "NBEVAL_SERVE_TOKEN"


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


def serve(*, host: str = "127.0.0.1", port: int = 8080, token: str | None = None, no_auth: bool = False,
          log_level: str = "info", **app_options: Any) -> None:
    """Check the authentication rule (:func:`auth_token`), build the app
    (:func:`nbeval.serve.app.create_app` with ``app_options``) and serve it until interrupted."""
    required = auth_token(host, token, no_auth)  # refuse before anything is loaded
    try:
        import uvicorn

        from nbeval.serve.app import create_app
    except ImportError as exc:
        from nbeval.errors import MissingDependency

        msg = f"the service needs its extra: pip install 'nbeval[serve]' ({exc})"
        raise MissingDependency(msg) from None

    api = create_app(token=required, **app_options)
    uvicorn.run(api, host=host, port=port, log_level=log_level, server_header=False)
