"""Bearer-token authentication on every route but GET /health, and the rule for starting without a token."""

from __future__ import annotations

import inspect

import pytest

from nbeval.errors import NbevalError
from nbeval.serve import guard
from nbeval.serve.guard import is_loopback
from nbeval.serve.server import TOKEN_ENV, auth_token
from tests.serve.conftest import TOKEN, LiveService

PROTECTED = [
    ("GET", "/v1/evaluators"),
    ("GET", "/v1/evaluations"),
    ("GET", "/v1/evaluations/nope"),
    ("DELETE", "/v1/evaluations/nope"),
    ("POST", "/v1/evaluations"),
    ("POST", "/api/v2/serve/evaluate/evaluation"),
    ("GET", "/openapi.json"),
    ("GET", "/docs/static/swagger-ui-bundle.js"),
    ("GET", "/no/such/route"),
]


@pytest.mark.parametrize(("method", "path"), PROTECTED)
def test_every_route_refuses_a_missing_token(service: LiveService, method: str, path: str) -> None:
    r = service.anonymous.request(method, path, json={} if method == "POST" else None)
    assert r.status_code == 401
    assert r.headers["www-authenticate"].startswith("Bearer")
    assert "Bearer" in r.json()["detail"]


@pytest.mark.parametrize(
    "header", [f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", "Bearer", f"Basic {TOKEN}", TOKEN, f"Token {TOKEN}"]
)
def test_a_wrong_token_or_scheme_is_refused(service: LiveService, header: str) -> None:
    r = service.anonymous.get("/v1/evaluators", headers={"Authorization": header})
    assert r.status_code == 401


def test_health_is_open_and_the_right_token_opens_the_rest(service: LiveService) -> None:
    assert service.anonymous.get("/health").json()["status"] == "ok"
    r = service.client.get("/v1/evaluators")
    assert r.status_code == 200
    assert "exact_match" in {e["id"] for e in r.json()}
    # the scheme's case does not matter (RFC 7235)
    assert service.anonymous.get("/v1/evaluators", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200


def test_the_openapi_document_describes_both_apis(service: LiveService) -> None:
    doc = service.client.get("/openapi.json").json()
    assert {
        "/v1/evaluations",
        "/v1/evaluations/{job_id}",
        "/v1/evaluations/{job_id}/report",
        "/api/v2/serve/evaluate/evaluation",
        "/health",
    } <= set(doc["paths"])
    assert service.client.get("/docs").status_code == 200
    assert doc["components"]["securitySchemes"]["bearer"] == {"type": "http", "scheme": "bearer"}
    assert doc["security"] == [{"bearer": []}] and doc["paths"]["/health"]["get"]["security"] == []


def test_the_token_is_compared_in_constant_time() -> None:
    assert "hmac.compare_digest" in inspect.getsource(guard.Guard._authorized)
    assert "hmac.compare_digest" in inspect.getsource(guard.Guard._signed_in)


def test_no_token_means_no_authentication_when_the_app_is_built_so(start_service) -> None:
    svc = start_service(token=None)
    assert svc.anonymous.get("/v1/evaluators").status_code == 200


# -- starting without a token -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.5.5.5", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.org", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_token_is_required_unless_no_auth_on_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    assert auth_token("0.0.0.0", "T", False) == "T"
    assert auth_token("127.0.0.1", None, True) is None
    with pytest.raises(NbevalError, match="no token: give --token"):
        auth_token("127.0.0.1", None, False)
    with pytest.raises(NbevalError, match=r"refusing to serve without authentication on 0\.0\.0\.0"):
        auth_token("0.0.0.0", None, True)
    with pytest.raises(NbevalError, match="not both"):
        auth_token("127.0.0.1", "T", True)
    with pytest.raises(NbevalError, match="empty"):
        auth_token("127.0.0.1", "  ", False)
    monkeypatch.setenv(TOKEN_ENV, "from-env")
    assert auth_token("0.0.0.0", None, False) == "from-env"


def test_the_package_loads_nothing_heavy_until_used() -> None:
    import subprocess
    import sys

    code = (
        "import sys, nbeval.serve, nbeval.cli; "
        "print(' '.join(m for m in ('fastapi', 'uvicorn', 'starlette', 'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    from nbeval.serve import create_app
    from nbeval.serve.app import create_app as direct

    assert create_app is direct
