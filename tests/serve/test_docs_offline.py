"""The docs pages (issue 26): served from files installed with fastapi-offline, nothing from
another host; a browser signs in through a form that sets an HttpOnly, SameSite=Strict cookie;
and a missing judge is explained to an HTTP client in the service's terms, not Python's."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from nbeval.serve.guard import COOKIE, cookie_value
from nbeval.serve.policy import error_text
from tests.serve.conftest import TOKEN, LiveService

SIGNED_IN = {"Cookie": f"{COOKIE}={cookie_value(TOKEN)}"}
RECORDS = [{"input": "2+2?", "expected_output": "4", "actual_output": "4"}]


def _login(svc: LiveService, token: str, **headers: str) -> httpx.Response:
    return svc.anonymous.post("/docs/login", data={"token": token, "next": "/docs"}, headers=headers)


def _assets(html: str) -> list[str]:
    """Every URL the page loads: script src, link href, img src, and Swagger UI's spec url."""
    urls = re.findall(r"""<(?:script|link|img)\b[^>]*?\b(?:src|href)=["']([^"']+)""", html)
    urls += re.findall(r"""\burl:\s*['"]([^'"]+)""", html)
    urls += re.findall(r"""spec-url=["']([^"']+)""", html)
    return urls


# -- sign-in ----------------------------------------------------------------------------------


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_without_the_cookie_the_pages_show_the_sign_in_form(service: LiveService, page: str) -> None:
    r = service.anonymous.get(page)
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    assert '<form method="post" action="/docs/login">' in r.text and 'type="password"' in r.text
    assert f'name="next" value="{page}"' in r.text
    assert TOKEN not in r.text and cookie_value(TOKEN) not in r.text
    assert "set-cookie" not in r.headers and "swagger-ui-bundle" not in r.text
    assert "default-src 'none'" in r.headers["content-security-policy"]


@pytest.mark.parametrize("given", ["wrong", TOKEN + "x", TOKEN[:-1], "", "ünïcödé", "a" * 5000])
def test_a_wrong_token_gets_the_form_again_with_an_error(service: LiveService, given: str) -> None:
    r = _login(service, given)
    assert r.status_code == 401, r.text
    assert 'class="error"' in r.text and 'type="password"' in r.text
    assert "set-cookie" not in r.headers and TOKEN not in r.text


def test_a_body_that_is_not_a_form_gets_the_form_too(service: LiveService) -> None:
    for body in (b"token=%FF%FE%00", b"\xff\xfe", b"token", b"&&&=", b'{"token": "x"}'):
        r = service.anonymous.post(
            "/docs/login", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
        )
        assert r.status_code == 401 and 'type="password"' in r.text, body


def test_the_right_token_from_loopback_sets_the_cookie_and_goes_back(service: LiveService) -> None:
    r = _login(service, TOKEN)
    assert r.status_code == 303 and r.headers["location"] == "/docs"
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}={cookie_value(TOKEN)};")
    attributes = {a.strip().lower() for a in cookie.split(";")[1:]}
    assert {"httponly", "samesite=strict", "path=/"} <= attributes
    assert "secure" not in attributes  # plain http on loopback: a Secure cookie would never come back
    assert TOKEN not in cookie  # the cookie is derived from the token, not the token


def test_next_goes_only_to_a_docs_page(service: LiveService) -> None:
    r = service.anonymous.post("/docs/login", data={"token": TOKEN, "next": "https://evil.example/"})
    assert r.headers["location"] == "/docs"
    r = service.anonymous.post("/docs/login", data={"token": TOKEN, "next": "/redoc"})
    assert r.headers["location"] == "/redoc"


def test_sign_in_is_refused_from_another_machine_over_plain_http(service: LiveService) -> None:
    # uvicorn takes the client's address from a proxy on 127.0.0.1 (X-Forwarded-For): a remote browser
    r = _login(service, TOKEN, **{"X-Forwarded-For": "203.0.113.7"})
    assert r.status_code == 403 and "set-cookie" not in r.headers
    assert "https" in r.text
    # and the cookie does not count there either
    r = service.anonymous.get("/openapi.json", headers={**SIGNED_IN, "X-Forwarded-For": "203.0.113.7"})
    assert r.status_code == 401


def test_sign_in_over_https_sets_a_secure_cookie(service: LiveService) -> None:
    r = _login(service, TOKEN, **{"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"})
    assert r.status_code == 303
    assert "secure" in {a.strip().lower() for a in r.headers["set-cookie"].split(";")}


def test_sign_in_from_another_origin_is_refused(service: LiveService) -> None:
    r = _login(service, TOKEN, Origin="http://127.0.0.1:8888")
    assert r.status_code == 403 and "set-cookie" not in r.headers
    assert _login(service, TOKEN, Origin=service.url).status_code == 303


def test_sign_out_clears_the_cookie(service: LiveService) -> None:
    r = service.anonymous.post("/docs/logout", headers=SIGNED_IN)
    assert r.status_code == 303 and r.headers["location"] == "/docs"
    assert r.headers["set-cookie"].startswith(f'{COOKIE}="";') and "Max-Age=0" in r.headers["set-cookie"]


# -- with the cookie ----------------------------------------------------------------------------


@pytest.mark.parametrize(("page", "kind"), [("/docs", "swagger"), ("/redoc", "redoc")])
def test_signed_in_the_pages_load_only_files_of_the_service(service: LiveService, page: str, kind: str) -> None:
    r = service.anonymous.get(page, headers=SIGNED_IN)
    assert r.status_code == 200
    html = r.text
    assert "<form" not in html or "/docs/logout" in html  # the page, not the sign-in form
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", html), html
    assert "fonts.googleapis" not in html and "cdn.jsdelivr" not in html
    urls = _assets(html)
    assert "/openapi.json" in urls
    files = [u for u in urls if u.startswith("/docs/static/")]
    assert len(files) >= 2, urls
    assert all(urlsplit(u).netloc == "" and u.startswith("/") for u in urls), urls
    for url in files:
        got = service.anonymous.get(url, headers=SIGNED_IN)
        assert got.status_code == 200, url
        kind_of = got.headers["content-type"]
        if url.endswith(".js"):
            assert "javascript" in kind_of and len(got.content) > 100_000
            assert (b"SwaggerUIBundle" if kind == "swagger" else b"Redoc") in got.content
        elif url.endswith(".css"):
            assert kind_of.startswith("text/css") and b".swagger-ui" in got.content
        else:
            assert kind_of.startswith("image/")
    csp = r.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "connect-src 'self'" in csp
    assert r.headers["cache-control"] == "no-store"


def test_the_cookie_opens_the_openapi_document_and_the_api(service: LiveService) -> None:
    doc = service.anonymous.get("/openapi.json", headers=SIGNED_IN)
    assert doc.status_code == 200 and "/v1/evaluations" in doc.json()["paths"]
    assert not {"/docs", "/redoc", "/docs/login"} & set(doc.json()["paths"])  # the pages are not API
    assert service.anonymous.get("/v1/evaluators", headers=SIGNED_IN).status_code == 200
    assert (
        service.anonymous.get("/v1/evaluators", headers={"Cookie": f"{COOKIE}={cookie_value(TOKEN)}x"}).status_code
        == 401
    )
    assert service.anonymous.get("/v1/evaluators", headers={"Cookie": f"{COOKIE}={TOKEN}"}).status_code == 401


def test_a_change_by_cookie_needs_the_service_s_own_origin(service: LiveService) -> None:
    body = {"data": RECORDS, "evaluators": ["exact_match"], "wait": True}
    # another page of the same site (another port) could make the browser send the cookie
    for origin in (None, "http://127.0.0.1:8888", "null", "http://localhost:1"):
        headers = dict(SIGNED_IN, **({"Origin": origin} if origin else {}))
        r = service.anonymous.post("/v1/evaluations", json=body, headers=headers)
        assert r.status_code == 403, origin
        assert "Origin" in r.json()["detail"]
        assert service.anonymous.delete("/v1/evaluations/nope", headers=headers).status_code == 403
    r = service.anonymous.post("/v1/evaluations", json=body, headers={**SIGNED_IN, "Origin": service.url})
    assert r.status_code == 200 and r.json()["status"] == "succeeded"
    # the bearer token needs no Origin
    assert service.client.post("/v1/evaluations", json=body).status_code == 200


def test_the_bearer_token_still_opens_the_page(service: LiveService) -> None:
    r = service.client.get("/docs")
    assert r.status_code == 200 and "swagger-ui-bundle.js" in r.text and "/docs/logout" not in r.text


def test_without_a_token_the_pages_need_no_sign_in(start_service: Callable[..., LiveService]) -> None:
    svc = start_service(token=None)
    r = svc.anonymous.get("/docs")
    assert r.status_code == 200 and "swagger-ui-bundle.js" in r.text
    assert svc.anonymous.post("/docs/login", data={"token": "x"}).status_code == 303
    assert svc.anonymous.get("/docs/static/swagger-ui.css").status_code == 200


# -- a missing judge, in the service's terms ----------------------------------------------------


def test_a_missing_judge_is_explained_for_http_not_python(
    start_service: Callable[..., LiveService], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    svc = start_service()
    r = svc.client.post("/v1/evaluations", json={"data": RECORDS, "evaluators": ["correctness"]})
    assert r.status_code == 422
    for text in (r.json()["message"], r.json()["detail"][0]["msg"]):
        assert "needs a judge" in text and "correctness" in text
        assert "judge=" not in text and "nbeval.evaluate" not in text and "my_function" not in text
        assert "nbeval serve --judge" in text and "--judge-base-url" in text and "needs_judge" in text


def test_the_python_wording_is_unchanged() -> None:
    from nbeval.chat.config import judge_help_text
    from nbeval.errors import JudgeNotConfigured

    assert "judge=" in judge_help_text()  # the Python API's own advice stays
    exc = JudgeNotConfigured(
        "no model name for the OpenAI-compatible endpoint: pass model=... or set NBEVAL_JUDGE_MODEL"
    )
    text = error_text(exc)
    assert "model=..." not in text and "set NBEVAL_JUDGE_MODEL" in text and "nbeval serve --judge" in text
    assert error_text(ValueError("other")) == "other"


# -- in a browser -------------------------------------------------------------------------------

CHROMIUM = "/usr/bin/chromium"
SHOTS = Path(os.environ.get("NBEVAL_SHOTS", "/tmp/shots_service"))


def _playwright() -> Any:
    if not Path(CHROMIUM).exists() or shutil.which(CHROMIUM) is None:
        pytest.skip(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed")
    return sync_playwright


def test_swagger_ui_renders_offline_in_chromium(service: LiveService) -> None:
    sync_playwright = _playwright()
    outside: list[str] = []
    problems: list[str] = []

    def only_the_service(route: Any) -> None:
        host = urlsplit(route.request.url).hostname
        if host == "127.0.0.1":
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.route("**/*", only_the_service)
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(f"{service.url}/docs")
            page.fill("input[name=token]", "not the token")
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.click("button[type=submit]")
            page.wait_for_selector(".error")
            assert "not the service's token" in page.inner_text(".error")
            page.screenshot(path=str(SHOTS / "signin.png"))
            page.fill("input[name=token]", TOKEN)
            page.click("button[type=submit]")
            page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
            assert "nbeval evaluation service" in page.inner_text(".swagger-ui .info .title")
            page.wait_for_selector(".opblock", timeout=30_000)
            assert page.locator(".opblock").count() >= 8
            cookies = {c["name"]: c for c in page.context.cookies()}
            assert cookies[COOKIE]["httpOnly"] and cookies[COOKIE]["sameSite"] == "Strict"
            assert page.evaluate("document.cookie") == ""  # HttpOnly: the page's scripts cannot read it

            # "Try it out" goes through the cookie: a GET, and a POST (the browser sends Origin)
            _try_it(page, "get", "/v1/evaluators", "200")
            _try_it(page, "post", "/v1/evaluations", "422")  # the example body: both data and lab
            page.locator(".opblock.is-open .opblock-summary").first.click()
            page.evaluate("window.scrollTo(0, 0)")
            page.screenshot(path=str(SHOTS / "docs.png"), full_page=False)

            page.click("text=Sign out")
            page.wait_for_selector("input[name=token]")
            assert COOKIE not in {c["name"] for c in page.context.cookies()}
        finally:
            browser.close()
    assert outside == [], outside
    csp = [m for m in problems if "Content Security Policy" in m]
    assert csp == [], csp
    # the wrong token's 401 and the example body's 422 are logged as failed resources; nothing else may fail
    assert all("status of 401" in m or "status of 422" in m for m in problems), problems


def _try_it(page: Any, method: str, path: str, status: str) -> None:
    block = page.locator(f".opblock-{method}", has=page.locator(f".opblock-summary-path[data-path='{path}']"))
    block.locator(".opblock-summary").first.click()
    block.get_by_role("button", name="Try it out").click()
    block.get_by_role("button", name="Execute").click()
    cell = block.locator(".live-responses-table .response .response-col_status").first
    cell.wait_for(timeout=30_000)
    assert cell.inner_text().strip().startswith(status), cell.inner_text()
