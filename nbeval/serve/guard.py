"""The service's gate, in front of every route: bearer-token authentication and a body size limit.

It is plain ASGI middleware, so it also covers routes that do not exist (no probing without the
token) and the OpenAPI pages. Only ``GET /health`` is open. The token is compared in constant
time (:func:`hmac.compare_digest`), so the time a refusal takes says nothing about the token.

A browser cannot send the header, so the docs pages (:mod:`nbeval.serve.docs`) sign it in: the
form there sets the cookie :data:`COOKIE` (HttpOnly, ``SameSite=Strict``), which stands in for the
header on every route. Its value is derived from the token (:func:`cookie_value`), not the token
itself, and it counts only where it could have been set: from a loopback client or over https
(:func:`secure_channel`). ``SameSite=Strict`` keeps other sites' pages from sending it; a page of
the same site on another port (``http://127.0.0.1:8888``) still could, so a request that changes
something (any method but ``GET``, ``HEAD``, ``OPTIONS``) counts the cookie only when its
``Origin`` is the service's own (:func:`same_origin`; browsers send ``Origin`` with every such
request), else 403. The sign-in pages themselves (:data:`SIGN_IN_ROUTES`) pass without
credentials; the guard tells them what it found in ``scope["nbeval.auth"]`` (:data:`AUTH_KEY`).
A body over the limit is refused with 413 before the application reads any of it: at once when
its ``Content-Length`` says so, else as soon as the bytes received pass the limit.

Without a token (``--no-auth``, loopback only) a web page the user visits could still reach the
service by DNS rebinding (a name of the attacker's that resolves to 127.0.0.1): the browser sends
that name as ``Host``. So without a token, a request whose ``Host`` is not a loopback name or
address (``localhost``, ``127.0.0.1``, ``[::1]``, with or without a port) is refused with 421.
WebSocket connections (the service has none) are closed unless authenticated, never passed on.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = [
    "AUTH_KEY",
    "COOKIE",
    "OPEN_ROUTES",
    "SIGN_IN_ROUTES",
    "Guard",
    "cookie_value",
    "is_loopback",
    "loopback_host",
    "same_origin",
    "secure_channel",
]

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]
_ASGIApp = Callable[[_Scope, _Receive, _Send], Awaitable[None]]

#: (method, path) pairs answered without a token.
OPEN_ROUTES = frozenset({("GET", "/health"), ("HEAD", "/health")})
#: (method, path) pairs passed on without credentials, which answer by what ``scope[AUTH_KEY]`` says:
#: the docs pages (the sign-in form without credentials) and the sign-in and sign-out.
SIGN_IN_ROUTES = frozenset({("GET", "/docs"), ("GET", "/redoc"), ("POST", "/docs/login"), ("POST", "/docs/logout")})
#: The cookie the docs' sign-in sets, accepted in place of ``Authorization: Bearer <token>``.
COOKIE = "nbeval_token"
#: Where the guard leaves how a request was authenticated: ``"bearer"``, ``"cookie"``, ``"open"``
#: (the service has no token) or ``None``.
AUTH_KEY = "nbeval.auth"
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


class _TooLarge(Exception):
    pass


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address (``127.0.0.0/8``, ``::1``, ``localhost``)."""
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def loopback_host(host: bytes | None) -> bool:
    """Whether a ``Host`` header names this machine.

    ``localhost``, a ``127.0.0.0/8`` address or ``[::1]``, with or without a port.
    """
    if not host:
        return False
    try:
        text = host.decode("ascii").strip().lower()
    except UnicodeDecodeError:
        return False
    if text.startswith("["):  # [v6]:port
        name, _, rest = text[1:].partition("]")
        if rest and not (rest.startswith(":") and rest[1:].isdigit()):
            return False
    else:
        name, _, port = text.partition(":")
        if port and not port.isdigit():
            return False
    return is_loopback(name.rstrip(".")) if name else False


def cookie_value(token: str) -> str:
    """The docs cookie's value for ``token``.

    An HMAC of a fixed label under it, so the cookie opens this service's routes but is not the
    token itself.
    """
    return hmac.new(token.encode(), b"nbeval docs sign-in", hashlib.sha256).hexdigest()


def _header(scope: _Scope, wanted: bytes) -> bytes | None:
    for name, value in scope.get("headers", []):
        if name == wanted:
            return bytes(value)
    return None


def _cookie(scope: _Scope, wanted: str) -> bytes | None:
    key = wanted.encode()
    for name, value in scope.get("headers", []):
        if name != b"cookie":
            continue
        for pair in bytes(value).split(b";"):
            k, sep, v = pair.partition(b"=")
            if sep and k.strip() == key:
                return v.strip().strip(b'"')
    return None


def secure_channel(scope: _Scope) -> bool:
    """Whether the request came over https or from this machine.

    From this machine: a loopback client address. That is where the docs' sign-in takes a token and
    its cookie counts.
    """
    if scope.get("scheme") == "https":
        return True
    client = scope.get("client")
    return client is not None and is_loopback(str(client[0]))


def same_origin(scope: _Scope) -> bool:
    """Whether the request's ``Origin`` is the service's own (its scheme and ``Host``); ``False`` when it sends none."""
    origin, host = _header(scope, b"origin"), _header(scope, b"host")
    if not origin or not host:
        return False
    own = f"{scope.get('scheme', 'http')}://".encode() + host
    return origin.strip().lower() == own.strip().lower()


async def _reply(send: _Send, status: int, body: dict[str, Any], headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()), *headers],
        }
    )
    await send({"type": "http.response.body", "body": data})


class Guard:
    """ASGI middleware that checks the token and the size of request bodies.

    Refuses requests without ``Authorization: Bearer <token>`` or the docs' cookie (401, with
    ``WWW-Authenticate: Bearer``) unless ``token`` is ``None`` (authentication off), and bodies over
    ``max_body_bytes`` (413).
    """

    def __init__(self, app: _ASGIApp, *, token: str | None, max_body_bytes: int) -> None:
        self.app = app
        self._token = token.encode() if token is not None else None
        self._cookie = cookie_value(token).encode() if token is not None else None
        self.max_body_bytes = max_body_bytes

    def _authorized(self, scope: _Scope) -> bool:
        """Whether the request carries ``Authorization: Bearer <token>``."""
        if self._token is None:
            return False
        scheme, _, credentials = (_header(scope, b"authorization") or b"").partition(b" ")
        # compare_digest on equal-type bytes; a wrong scheme still costs one comparison
        ok = hmac.compare_digest(credentials.strip(), self._token)
        return ok and scheme.lower() == b"bearer"

    def _signed_in(self, scope: _Scope) -> bool:
        """Whether the request carries the docs' cookie, where it counts (:func:`secure_channel`)."""
        given = _cookie(scope, COOKIE)
        if given is None or self._cookie is None or not secure_channel(scope):
            return False
        return hmac.compare_digest(given, self._cookie)

    def _credential(self, scope: _Scope) -> str | None:
        if self._token is None:
            return "open"
        if self._authorized(scope):
            return "bearer"
        return "cookie" if self._signed_in(scope) else None

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        """Check an ASGI connection, then pass it on to the wrapped app or refuse it.

        A websocket needs the bearer token (else it is closed, code 1008); other scopes than HTTP
        pass as they are. Without a token, only HTTP requests whose ``Host`` header names this
        machine are answered (421 otherwise). A route that is neither open nor the docs' sign-in
        needs the bearer token or the docs' cookie (401); the cookie counts for a method that
        changes state only on requests from the service's own pages (403). A body over
        ``max_body_bytes`` is refused (413); otherwise the app gets the request with its body read
        whole (nothing, when the client went away first).
        """
        if scope["type"] == "websocket":
            if not self._authorized(scope):  # no token: nothing is authenticated
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._token is None and not loopback_host(_header(scope, b"host")):
            await _reply(
                send,
                421,
                {
                    "detail": "this service runs without a token and answers only requests for "
                    "localhost, 127.0.0.1 or [::1] (the Host header)"
                },
            )
            return
        route = (scope.get("method"), scope.get("path"))
        credential = scope[AUTH_KEY] = self._credential(scope)
        if route not in OPEN_ROUTES and route not in SIGN_IN_ROUTES:
            if credential is None:
                await _reply(
                    send,
                    401,
                    {"detail": "missing or wrong bearer token: send 'Authorization: Bearer <token>'"},
                    ((b"www-authenticate", b'Bearer realm="nbeval"'),),
                )
                return
            if credential == "cookie" and scope.get("method") not in _SAFE_METHODS and not same_origin(scope):
                await _reply(
                    send,
                    403,
                    {
                        "detail": "the docs' sign-in cookie counts only on requests from the "
                        "service's own pages (their Origin header); send "
                        "'Authorization: Bearer <token>'"
                    },
                )
                return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.max_body_bytes:
                await self._too_large(send)
                return
        try:
            body = await self._read_body(receive)
        except _TooLarge:
            await self._too_large(send)
            return
        if body is None:  # the client went away before sending its body
            return
        await self.app(scope, _replay(body, receive), send)

    async def _too_large(self, send: _Send) -> None:
        await _reply(send, 413, {"detail": f"the request body is over the limit of {self.max_body_bytes} bytes"})

    async def _read_body(self, receive: _Receive) -> bytes | None:
        """The whole body (``None`` when the client disconnected), refused as soon as it passes the limit."""
        parts: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _TooLarge
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)


def _replay(body: bytes, receive: _Receive) -> _Receive:
    """A ``receive`` that hands the app the body already read, then waits on the real one."""
    sent = False

    async def replay() -> _Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
