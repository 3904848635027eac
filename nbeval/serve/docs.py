"""The service's documentation pages, which load offline and sign a browser in.

    GET  /docs           Swagger UI; the sign-in form until the browser is signed in
    GET  /redoc          ReDoc; the same
    GET  /docs/static/…  their scripts and styles, from the fastapi-offline package (no CDN)
    POST /docs/login     the form's token: sets the cookie, then back to the page
    POST /docs/logout    forgets the cookie

A browser cannot send ``Authorization: Bearer <token>``, so the form takes the token once and
sets the cookie :data:`~nbeval.serve.guard.COOKIE` (HttpOnly, ``SameSite=Strict``, ``Secure`` over
https), which the guard accepts in its place (see :mod:`nbeval.serve.guard` for where it counts).
The form takes a token only from this machine (a loopback client) or over https, where it does
not cross a network in clear; the token is compared in constant time (:func:`hmac.compare_digest`).

Every file the pages load is served here: Swagger UI's and ReDoc's scripts, styles and icon come
with fastapi-offline, Swagger UI's online validator is off and ReDoc's Google fonts are not asked
for, and a ``Content-Security-Policy`` keeps the browser from fetching anything from elsewhere.
"""

from __future__ import annotations

import hmac
from html import escape
from typing import Any
from urllib.parse import parse_qs

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from starlette.responses import Response

from nbeval.errors import MissingDependency
from nbeval.serve.guard import AUTH_KEY, COOKIE, cookie_value, same_origin, secure_channel

__all__ = ["COOKIE_MAX_AGE", "STATIC_PATH", "add_docs"]

#: Where the pages' scripts and styles are served.
STATIC_PATH = "/docs/static"
#: Seconds the sign-in lasts (a working day); the browser forgets it sooner when asked to (sign out).
COOKIE_MAX_AGE = 12 * 3600
_PAGES = ("/docs", "/redoc")
_PAGE_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
_FORM_CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

_FORM = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} - sign in</title>
<style>
body {{ font-family: system-ui, sans-serif; background: #fafafa; color: #222; margin: 0; }}
main {{ max-width: 28rem; margin: 12vh auto; background: #fff; padding: 2rem; border-radius: 8px;
       box-shadow: 0 1px 4px rgba(0,0,0,.15); }}
h1 {{ font-size: 1.3rem; margin-top: 0; }} p {{ line-height: 1.4; }}
input[type=password] {{ width: 100%; box-sizing: border-box; padding: .5rem; font: inherit; margin: .3rem 0 1rem; }}
button {{ padding: .5rem 1.2rem; font: inherit; cursor: pointer; }}
.error {{ color: #a40000; background: #fdecec; padding: .6rem .8rem; border-radius: 4px; }}
code {{ background: #f0f0f0; padding: 0 .2rem; }}
</style></head>
<body><main>
<h1>{title}</h1>
<p>The API documentation needs the service's token, the one clients send as
<code>Authorization: Bearer &lt;token&gt;</code>. Signing in keeps a key derived from it in a cookie
of this browser for 12 hours, or until you sign out.</p>
{error}<form method="post" action="{action}">
<label for="token">Token</label>
<input type="password" id="token" name="token" autocomplete="current-password" required autofocus>
<input type="hidden" name="next" value="{next}">
<button type="submit">Sign in</button>
</form>
</main></body></html>
"""
_SIGN_OUT = (
    '<form method="post" action="{action}" style="position:absolute;top:.8rem;right:1rem;margin:0">'
    '<button type="submit">Sign out</button></form>\n'
)


def _static_dir() -> str:
    try:
        from importlib.resources import files

        folder = files("fastapi_offline") / "static"
    except ModuleNotFoundError:
        msg = "the service's docs pages need fastapi-offline: pip install 'nbeval[serve]'"
        raise MissingDependency(msg) from None
    return str(folder)


def _root(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def _page(value: Any) -> str:
    """``value`` when it names a docs page, else ``/docs``: the form never sends anyone elsewhere."""
    return value if value in _PAGES else "/docs"


def _no_store(response: Response, csp: str) -> Response:
    response.headers["Cache-Control"] = "no-store"
    response.headers["Content-Security-Policy"] = csp
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"  # no-referrer would make the form's Origin "null"
    return response


def add_docs(api: FastAPI, *, token: str | None) -> None:
    """Add the docs pages, their files and the sign-in to ``api``.

    ``api`` is built with ``docs_url=None`` and ``redoc_url=None``; ``token`` is the service's
    (``None``: no sign-in).
    """
    api.mount(STATIC_PATH, StaticFiles(directory=_static_dir()), name="docs-static")
    title = api.title

    def form(request: Request, next_page: str, error: str = "", status: int = 200) -> Response:
        shown = f'<p class="error" role="alert">{escape(error)}</p>\n' if error else ""
        html = _FORM.format(
            title=escape(title), error=shown, action=escape(f"{_root(request)}/docs/login"), next=escape(next_page)
        )
        headers = {"WWW-Authenticate": 'Bearer realm="nbeval"'} if status == 401 else None
        return _no_store(HTMLResponse(html, status_code=status, headers=headers), _FORM_CSP)

    def signed_in(request: Request) -> bool:
        return request.scope.get(AUTH_KEY) is not None

    @api.get("/docs", include_in_schema=False)
    async def swagger_ui(request: Request) -> Response:
        if not signed_in(request):
            return form(request, "/docs")
        root = _root(request)
        page = get_swagger_ui_html(
            openapi_url=f"{root}{api.openapi_url}",
            title=f"{title} - Swagger UI",
            swagger_js_url=f"{root}{STATIC_PATH}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{STATIC_PATH}/swagger-ui.css",
            swagger_favicon_url=f"{root}{STATIC_PATH}/favicon.png",
            swagger_ui_parameters={"validatorUrl": None},
        )  # no badge from swagger.io
        if request.scope.get(AUTH_KEY) == "cookie":  # signed in by the form: a way out
            sign_out = _SIGN_OUT.format(action=escape(f"{root}/docs/logout")).encode()
            anchor = b'<div id="swagger-ui">'
            page = HTMLResponse(bytes(page.body).replace(anchor, sign_out + anchor, 1))
        return _no_store(page, _PAGE_CSP)

    @api.get("/redoc", include_in_schema=False)
    async def redoc(request: Request) -> Response:
        if not signed_in(request):
            return form(request, "/redoc")
        root = _root(request)
        page = get_redoc_html(
            openapi_url=f"{root}{api.openapi_url}",
            title=f"{title} - ReDoc",
            redoc_js_url=f"{root}{STATIC_PATH}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{STATIC_PATH}/favicon.png",
            with_google_fonts=False,
        )
        return _no_store(page, _PAGE_CSP)

    @api.post("/docs/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        fields = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=10)
        next_page = _page((fields.get("next") or ["/docs"])[0])
        back = RedirectResponse(f"{_root(request)}{next_page}", status_code=303)
        if token is None:  # no authentication: nothing to sign in to
            return back
        if request.headers.get("origin") is not None and not same_origin(request.scope):
            return form(request, next_page, "Sign in from this service's own page.", 403)
        if not secure_channel(request.scope):
            return form(
                request,
                next_page,
                "Sign in over https, or from this machine (127.0.0.1 or ::1): "
                "elsewhere the token would cross the network in clear.",
                403,
            )
        given = (fields.get("token") or [""])[0].strip()
        if not hmac.compare_digest(given.encode(), token.encode()):
            return form(request, next_page, "That is not the service's token." if given else "Give the token.", 401)
        back.set_cookie(
            COOKIE,
            cookie_value(token),
            max_age=COOKIE_MAX_AGE,
            path=f"{_root(request)}/",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="strict",
        )
        return back

    @api.post("/docs/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        back = RedirectResponse(f"{_root(request)}/docs", status_code=303)
        back.delete_cookie(
            COOKIE, path=f"{_root(request)}/", secure=request.url.scheme == "https", httponly=True, samesite="strict"
        )
        return back
