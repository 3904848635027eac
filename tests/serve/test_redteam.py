"""Issue 35, the red team's findings on the service: each test failed before its fix.

1. requests steered the server's judge calls (``judge_params``, repeat counts);
2. memory grew without bound (jobs held their request and result; one poll returned everything);
3. jobs were forgotten by a restart;
4. slow clients held every connection;
5. one evaluator name with a lone surrogate broke the job list for everyone;
6. DB-GPT errors leaked secrets;
7. requests made the server load models, ``--no-auth`` trusted any ``Host``, websockets passed the gate.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator, MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import uvicorn
from fastapi.testclient import TestClient

from nbeval.cli import main
from nbeval.serve.app import create_app
from nbeval.serve.guard import Guard, loopback_host
from nbeval.serve.jobs import Job, JobStore
from nbeval.serve.policy import param_errors
from nbeval.serve.server import uvicorn_config
from tests.serve.conftest import TOKEN, free_port

if TYPE_CHECKING:
    import httpx2  # what starlette's TestClient answers with (it falls back to httpx without it)

PATH = "/api/v2/serve/evaluate/evaluation"
RECORDS = [{"input": f"q{i}", "expected_output": "a", "actual_output": "a" if i % 2 else "b"} for i in range(30)]


class _Judge:
    """A judge that counts its calls and always answers a passing grade."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        return "yes\nfine"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    api = create_app(token=TOKEN, data_dir=tmp_path / "data", judge=_Judge())
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


def _post(
    c: TestClient, evaluators: list[Any], data: list[dict[str, Any]] | None = None, **extra: Any
) -> httpx2.Response:
    return c.post("/v1/evaluations", json={"data": data or RECORDS[:2], "evaluators": evaluators, **extra})


# 1. judge_params and repeat counts ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("judge_params", "field"),
    [
        ({"extra_headers": {"Host": "evil.example", "Authorization": "Bearer x"}}, "judge_params.extra_headers"),
        ({"extra_query": {"api-version": "2099-01-01"}}, "judge_params.extra_query"),
        ({"n": 64}, "judge_params.n"),
        ({"service_tier": "priority"}, "judge_params.service_tier"),
        ({"max_tokens": 100_000}, "judge_params.max_tokens"),
        ({"temperature": 7}, "judge_params.temperature"),
        ({"seed": 1.5}, "judge_params.seed"),
    ],
)
def test_judge_params_are_allow_listed_with_bounds(tmp_path: Path, judge_params: dict[str, Any], field: str) -> None:
    judge = _Judge()
    api = create_app(token=TOKEN, data_dir=tmp_path, judge=judge)
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        r = _post(c, [{"id": "correctness", "params": {"judge_params": judge_params}}])
    assert r.status_code == 422, r.text
    assert f"body.evaluators.0.params.{field}" in r.json()["message"]
    assert judge.calls == 0


def test_generation_settings_within_bounds_are_accepted(client: TestClient) -> None:
    r = _post(
        client,
        [
            {
                "id": "correctness",
                "params": {"judge_params": {"temperature": 0.5, "top_p": 0.9, "max_tokens": 200, "seed": 7}},
            }
        ],
    )
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "succeeded"


def test_max_tokens_is_capped_by_the_servers_setting(tmp_path: Path) -> None:
    api = create_app(token=TOKEN, data_dir=tmp_path, judge=_Judge(), max_judge_tokens=100)
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        r = _post(c, [{"id": "correctness", "params": {"judge_params": {"max_tokens": 101}}}])
    assert r.status_code == 422 and "between 1 and 100" in r.json()["message"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"parse_attempts": 50}, "parse_attempts"),
        ({"strictness": 40}, "strictness"),
        ({"parse_attempts": 0}, "parse_attempts"),
    ],
)
def test_repeat_counts_are_capped(client: TestClient, params: dict[str, Any], field: str) -> None:
    r = _post(client, [{"id": "answer_relevancy", "params": params}])
    assert r.status_code == 422, r.text
    assert f"body.evaluators.0.params.{field}" in r.json()["message"]


def test_param_errors() -> None:
    assert param_errors({"judge_params": {"temperature": 0, "top_p": 1}, "parse_attempts": 4, "strictness": 5}) == []
    assert [f for f, _ in param_errors({"judge_params": {"extra_body": {}}, "strictness": True})] == [
        "judge_params.extra_body",
        "strictness",
    ]
    assert param_errors({"judge_params": "x"})[0][0] == "judge_params"


# 2. memory: bounded requests, nothing kept in memory, paginated scores --------------------------


def test_a_request_over_the_score_limit_is_refused(tmp_path: Path) -> None:
    api = create_app(token=TOKEN, data_dir=tmp_path, max_scores=50)
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        r = _post(c, ["exact_match", "rouge"], RECORDS)  # 30 rows x 2 evaluators
        assert r.status_code == 422
        assert "body.data" in r.json()["message"] and "50" in r.json()["message"]
        assert c.get("/v1/evaluations").json() == []
        assert _post(c, ["exact_match", "rouge"], RECORDS[:25]).status_code == 200  # 50: at the limit


def test_scores_are_paginated_with_a_next_link(tmp_path: Path) -> None:
    api = create_app(token=TOKEN, data_dir=tmp_path, page_scores=12)
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        first = _post(c, ["exact_match"], RECORDS).json()
        assert first["status"] == "succeeded" and len(first["scores"]) == 12
        assert first["scores_page"] == {
            "offset": 0,
            "limit": 12,
            "total": 30,
            "next": f"/v1/evaluations/{first['id']}?offset=12&limit=12",
        }
        seen = list(first["scores"])
        nxt = first["scores_page"]["next"]
        while nxt:
            page = c.get(nxt).json()
            seen += page["scores"]
            nxt = page["scores_page"]["next"]
        assert len(seen) == 30 and len({s["key"] for s in seen}) == 30
        small = c.get(f"/v1/evaluations/{first['id']}", params={"offset": 28, "limit": 5}).json()
        assert len(small["scores"]) == 2 and small["scores_page"]["next"] is None
        assert c.get(f"/v1/evaluations/{first['id']}", params={"limit": 13}).status_code == 422  # over the page size


def test_a_finished_job_holds_neither_its_request_nor_its_result_in_memory(client: TestClient) -> None:
    job_id = _post(client, ["exact_match"]).json()["id"]
    job = client.app.state.jobs.get(job_id)  # type: ignore[attr-defined]
    assert not {"result", "payload", "state", "data"} & set(vars(job))
    assert client.get(f"/v1/evaluations/{job_id}/report").status_code == 200  # read from its folder


def test_jobs_are_forgotten_by_size_as_well_as_count(tmp_path: Path) -> None:
    api = create_app(token=TOKEN, data_dir=tmp_path, keep_bytes=1)
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        ids = [_post(c, ["exact_match"]).json()["id"] for _ in range(3)]
        assert [j["id"] for j in c.get("/v1/evaluations").json()] == ids[-1:]
        assert sorted(p.name for p in (tmp_path / "results").iterdir()) == ids[-1:]


# 3. jobs survive a restart ------------------------------------------------------------------------


def test_a_finished_job_is_served_after_a_restart(tmp_path: Path) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with TestClient(create_app(token=TOKEN, data_dir=tmp_path), headers=headers) as c:
        before = _post(c, ["exact_match"], RECORDS).json()
    with TestClient(create_app(token=TOKEN, data_dir=tmp_path), headers=headers) as c:
        after = c.get(f"/v1/evaluations/{before['id']}").json()
        assert after["status"] == "succeeded"
        assert after["scores"] == before["scores"] and after["leaderboards"] == before["leaderboards"]
        assert [j["id"] for j in c.get("/v1/evaluations").json()] == [before["id"]]
        assert "<html" in c.get(after["report"]).text.lower()


def test_a_job_running_at_a_restart_is_interrupted(tmp_path: Path) -> None:
    from nbeval.runtime import Resources

    store = JobStore(Resources, data_dir=tmp_path)
    store._save(Job(id="j1", evaluators=["exact_match"], rows=10, total=10, done=4, status="running"))
    store.shutdown()
    with TestClient(create_app(token=TOKEN, data_dir=tmp_path), headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        job = c.get("/v1/evaluations/j1").json()
    assert job["status"] == "interrupted" and job["progress"] == {"done": 4, "total": 10}
    assert job["error"] and job["finished"]


# 4. slow clients -----------------------------------------------------------------------------------


class _Server:
    def __init__(self, **bounds: Any) -> None:
        api = create_app(token=TOKEN, data_dir=None if "data_dir" not in bounds else bounds.pop("data_dir"))
        self.port = free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(api, host="127.0.0.1", port=self.port, log_level="warning", **uvicorn_config(**bounds))
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> _Server:
        self.thread.start()
        deadline = time.monotonic() + 60
        while not self.server.started:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)


def _half_open(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # and never the blank line
    return s


def _busy(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(
        b"POST /v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "
        + TOKEN.encode()
        + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
    )  # a request in progress
    return s


def test_past_the_connection_limit_waiting_connections_make_room_and_busy_ones_get_503(tmp_path: Path) -> None:
    with _Server(limit_concurrency=3, header_timeout=60, data_dir=tmp_path) as srv:
        slow = [_half_open(srv.port) for _ in range(4)]
        try:  # the connections waiting longest for a request head are pushed out
            assert httpx.get(f"http://127.0.0.1:{srv.port}/health", timeout=10).status_code == 200
            slow[0].settimeout(10)
            try:
                assert slow[0].recv(100) == b"", "the oldest was closed"
            except ConnectionResetError:  # or reset
                pass
            slow += [_busy(srv.port) for _ in range(3)]  # requests in progress are never pushed out
            time.sleep(0.5)
            r = httpx.get(f"http://127.0.0.1:{srv.port}/health", timeout=10)
            assert r.status_code == 503
        finally:
            for s in slow:
                s.close()


def test_a_client_that_never_finishes_its_head_is_cut_off(tmp_path: Path) -> None:
    with _Server(limit_concurrency=10, header_timeout=1, data_dir=tmp_path) as srv:
        slow = [_half_open(srv.port) for _ in range(4)]
        try:
            for s in slow:
                s.settimeout(10)
                assert s.recv(100) == b"", "the server closed it"
            assert httpx.get(f"http://127.0.0.1:{srv.port}/health", timeout=10).status_code == 200
        finally:
            for s in slow:
                s.close()


def test_the_command_passes_the_connection_bounds_to_uvicorn(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    got: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: got.update(kw, app=app))
    monkeypatch.delenv("NBEVAL_SERVE_TOKEN", raising=False)
    assert (
        main(
            [
                "serve",
                "--no-auth",
                "--limit-concurrency",
                "7",
                "--timeout-keep-alive",
                "3",
                "--header-timeout",
                "4",
                "--max-header-bytes",
                "9000",
                "--data-dir",
                str(tmp_path),
                "--max-scores",
                "11",
            ]
        )
        == 0
    )
    assert (got["limit_concurrency"], got["timeout_keep_alive"], got["h11_max_incomplete_event_size"]) == (7, 3, 9000)
    assert got["http"].__name__ == "HeaderDeadlineProtocol"
    assert got["app"].state.jobs.folder == tmp_path
    defaults = uvicorn_config()
    assert all(defaults[k] for k in ("limit_concurrency", "timeout_keep_alive", "h11_max_incomplete_event_size"))


def test_the_command_passes_the_request_and_job_limits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    got: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: got.update(kw, app=app))
    monkeypatch.delenv("NBEVAL_SERVE_TOKEN", raising=False)
    assert (
        main(
            [
                "serve",
                "--no-auth",
                "--data-dir",
                str(tmp_path),
                "--max-scores",
                "3",
                "--max-judge-tokens",
                "10",
                "--keep-jobs",
                "2",
                "--keep-bytes",
                "5000",
                "--allow-models",
            ]
        )
        == 0
    )
    api = got["app"]
    assert (api.state.jobs.keep, api.state.jobs.keep_bytes) == (2, 5000)
    assert api.state.limits["allow_models"] is True
    c = TestClient(api, base_url="http://127.0.0.1")
    r = c.post("/v1/evaluations", json={"data": RECORDS[:2], "evaluators": ["exact_match", "rouge"]})
    assert r.status_code == 422 and "limit of 3 scores" in r.json()["message"]
    r = c.post(
        "/v1/evaluations",
        json={
            "data": RECORDS[:1],
            "evaluators": [{"id": "correctness", "params": {"judge_params": {"max_tokens": 11}}}],
        },
    )
    assert r.status_code == 422 and "between 1 and 10" in r.json()["message"]


# 5. lone surrogates ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "evaluator", ['"em\\ud800"', '{"id": "exact_match", "params": {"name": "em\\ud800"}}', '{"id": "em\\udfff"}']
)
def test_a_name_with_a_lone_surrogate_is_refused_and_the_list_still_answers(client: TestClient, evaluator: str) -> None:
    record = '{"input": "q", "expected_output": "a", "actual_output": "a"}'
    body = '{"data": [%s], "evaluators": [%s]}' % (record, evaluator)
    r = client.post("/v1/evaluations", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert "body.evaluators" in r.json()["message"]  # said by nbeval ("lone surrogate") or by pydantic
    assert client.get("/v1/evaluations").status_code == 200


# 6. DB-GPT errors ---------------------------------------------------------------------------------

SECRET_DSN = "postgresql://admin:hunter2@db.internal:5432/kb"
SECRET_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789"


def _failing_retriever(query: str, top_k: int) -> list[str]:
    raise ConnectionError(f"cannot reach {SECRET_DSN} with key {SECRET_KEY}")


def _failing_app(query: str) -> str:
    raise RuntimeError(f"upstream refused api_key={SECRET_KEY} at {SECRET_DSN}")


@pytest.mark.parametrize(
    ("scene", "options"), [("recall", {"retriever": _failing_retriever}), ("app", {"app": _failing_app})]
)
def test_dbgpt_errors_do_not_leak_secrets(tmp_path: Path, scene: str, options: dict[str, Any]) -> None:
    api = create_app(token=TOKEN, data_dir=tmp_path, **options)
    body = {
        "scene_key": scene,
        "scene_value": "s",
        "evaluate_metrics": ["looping"],
        "datasets": [{"query": "q", "doc_name": "d"}],
    }
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        r = c.post(PATH, json=body)
    assert r.status_code == 200, r.text
    error = r.json()["data"][0][0]["error"]
    assert "failed" in error
    assert "hunter2" not in r.text and SECRET_KEY not in r.text


# 7. models, Host, websockets ------------------------------------------------------------------------


def test_evaluators_that_load_a_model_are_refused_unless_allowed(client: TestClient, tmp_path: Path) -> None:
    r = _post(client, ["toxicity"])
    assert r.status_code == 422 and "loads a local model" in r.json()["message"]
    r = _post(client, ["semantic_similarity"])
    assert r.status_code == 422 and "embedding model" in r.json()["message"]
    r = _post(client, [{"id": "toxicity", "params": {"batch_size": 4096}}])
    assert r.status_code == 422 and "batch_size" in r.json()["message"]
    body = {
        "scene_key": "recall",
        "scene_value": "s",
        "evaluate_metrics": ["RetrieverSimilarityMetric"],
        "datasets": [{"query": "q", "doc_name": "d"}],
    }
    allowed = create_app(token=TOKEN, data_dir=tmp_path, retriever=lambda q, k: ["x"])
    with TestClient(allowed, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        r = c.post(PATH, json=body)
    assert r.status_code == 422 and "embedding model" in r.json()["err_msg"]


@pytest.mark.parametrize(
    ("host", "ok"),
    [
        ("127.0.0.1:8080", True),
        ("localhost", True),
        ("[::1]:80", True),
        ("127.0.0.1", True),
        ("evil.example", False),
        ("evil.example:8080", False),
        ("127.0.0.1.evil.example", False),
        ("", False),
        ("[::1]x", False),
    ],
)
def test_loopback_host(host: str, ok: bool) -> None:
    assert loopback_host(host.encode()) is ok


def test_without_a_token_only_loopback_hosts_are_answered(tmp_path: Path) -> None:
    api = create_app(token=None, data_dir=tmp_path)
    c = TestClient(api, base_url="http://127.0.0.1:8080")
    assert c.get("/v1/evaluators").status_code == 200
    rebound = c.get("/v1/evaluators", headers={"Host": "attacker.example:8080"})
    assert rebound.status_code == 421
    assert TestClient(api, base_url="http://localhost").get("/health").status_code == 200


@pytest.mark.parametrize("token", [TOKEN, None])
def test_websockets_are_closed_unless_authenticated(token: str | None) -> None:
    called = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        called.append(scope)

    sent: list[MutableMapping[str, Any]] = []

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    scope = {"type": "websocket", "path": "/ws", "headers": [(b"host", b"127.0.0.1")]}
    asyncio.run(Guard(app, token=token, max_body_bytes=100)(scope, receive, send))
    assert called == [] and sent == [{"type": "websocket.close", "code": 1008}]
    if token is not None:
        ok = {**scope, "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {token}".encode())]}
        asyncio.run(Guard(app, token=token, max_body_bytes=100)(ok, receive, send))
        assert len(called) == 1
