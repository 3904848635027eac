"""`nbeval serve`: its flags reach the service, and it refuses to start unprotected where others can reach it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from nbeval.cli import main
from tests.serve import plugins
from tests.serve.conftest import free_port, start_in_thread, uvicorn_server, wait_until_up
from tests.support.fake_openai import FakeOpenAIServer, Recorded

ROOT = Path(__file__).resolve().parents[2]
PATH = "/api/v2/serve/evaluate/evaluation"


def _nbeval(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "NBEVAL_SERVE_TOKEN"}
    full_env.update({"PYTHONPATH": str(ROOT), **(env or {})})
    return subprocess.Popen(
        [sys.executable, "-m", "nbeval.cli", *args],
        cwd=ROOT,
        env=full_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_up(proc: subprocess.Popen[str], url: str) -> None:
    wait_until_up(proc, url, lambda: proc.communicate()[1])


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture
def fake() -> Iterator[FakeOpenAIServer]:
    def reply(req: Recorded) -> str:
        return "3\nacceptable" if req.body and req.model == "judge-model" else "AWEL is a workflow language"

    with FakeOpenAIServer(reply) as server:
        yield server


def test_serve_with_a_token_a_retriever_an_endpoint_app_and_a_judge(fake: FakeOpenAIServer) -> None:
    port = free_port()
    proc = _nbeval(
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--token",
        "cli-token",
        "--retriever",
        "tests.serve.plugins:retriever",
        "--app-base-url",
        fake.url,
        "--app-model",
        "app-model",
        "--judge",
        "judge-model",
        "--judge-base-url",
        fake.url,
        "--max-body-bytes",
        "3000",
        "--workers",
        "1",
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(proc, url)
        assert httpx.get(url + "/v1/evaluators").status_code == 401
        auth = {"Authorization": "Bearer cli-token"}
        body = {
            "scene_key": "app",
            "scene_value": "app-1",
            "context": {"top_k": 1},
            "evaluate_metrics": ["AnswerRelevancyMetric"],
            "datasets": [{"query": "what is AWEL"}],
        }
        r = httpx.post(url + PATH, json=body, headers=auth, timeout=60)
        assert r.status_code == 200, r.text
        entry = r.json()["data"][0][0]
        assert (entry["prediction"], entry["score"], entry["feedback"]) == (
            "AWEL is a workflow language",
            3.0,
            "acceptable",
        )
        models = [q.model for q in fake.requests if q.body]
        assert sorted(models) == ["app-model", "judge-model"]
        app_call = next(q for q in fake.requests if q.body and q.model == "app-model")
        assert plugins.CHUNKS[0]["content"] in app_call.last_content  # the retriever's chunk went to the app
        big = {"data": [{"input": "q", "actual_output": "x" * 3000}], "evaluators": ["looping"]}
        assert httpx.post(url + "/v1/evaluations", json=big, headers=auth).status_code == 413
    finally:
        _stop(proc)


def test_the_token_can_come_from_the_environment() -> None:
    port = free_port()
    proc = _nbeval(
        "serve",
        "--port",
        str(port),
        "--retriever",
        "tests.serve.plugins:retriever",
        env={"NBEVAL_SERVE_TOKEN": "env-token"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(proc, url)
        assert httpx.get(url + "/v1/evaluators").status_code == 401
        assert httpx.get(url + "/v1/evaluators", headers={"Authorization": "Bearer env-token"}).status_code == 200
    finally:
        _stop(proc)


class _Captured:
    app: Any = None
    host: str | None = None
    port: int | None = None


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> _Captured:
    """uvicorn.run replaced: the app `nbeval serve` built, and where it would listen."""
    got = _Captured()

    def run(app: Any, *, host: str, port: int, **_: Any) -> None:
        got.app, got.host, got.port = app, host, port

    monkeypatch.setattr(uvicorn, "run", run)
    monkeypatch.delenv("NBEVAL_SERVE_TOKEN", raising=False)
    return got


def test_no_auth_on_loopback_with_a_python_app_and_workers(captured: _Captured) -> None:
    assert (
        main(
            [
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "8765",
                "--no-auth",
                "--retriever",
                "tests.serve.plugins:retriever",
                "--app",
                "tests.serve.plugins:app",
                "--workers",
                "3",
            ]
        )
        == 0
    )
    assert (captured.host, captured.port) == ("127.0.0.1", 8765)
    assert captured.app.state.jobs.workers == 3
    # serve the app it built: no token needed, and app scenes call tests.serve.plugins:app
    port = free_port()
    server = uvicorn_server(captured.app, port)
    thread = start_in_thread(server)
    try:
        body = {
            "scene_key": "app",
            "scene_value": "a",
            "context": {"top_k": 1},
            "evaluate_metrics": ["looping"],
            "datasets": [{"query": "what is AWEL"}],
        }
        r = httpx.post(f"http://127.0.0.1:{port}{PATH}", json=body, timeout=60)
        assert r.status_code == 200, r.text
        assert r.json()["data"][0][0]["prediction"] == f"About 'what is AWEL': {plugins.CHUNKS[0]['content']}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--host", "0.0.0.0"], ["no token", "--token"]),
        (["--host", "0.0.0.0", "--no-auth"], ["refusing to serve without authentication on 0.0.0.0"]),
        (["--host", "192.168.0.7", "--no-auth"], ["refusing", "192.168.0.7"]),
        (["--token", "T", "--no-auth"], ["not both"]),
        (["--token", "T", "--app", "tests.serve.plugins:app", "--app-base-url", "http://127.0.0.1:9/v1"], ["not both"]),
        (["--token", "T", "--app-model", "m"], ["--app-base-url"]),
        (["--token", "T", "--retriever", "tests.serve.no_such_module:f"], ["cannot load the retriever"]),
        (["--token", "T", "--retriever", "no-such-entry-point"], ["nbeval.retrievers"]),
        (["--token", "T", "--max-body-bytes", "0"], ["at least 1"]),
    ],
)
def test_serve_refuses_bad_settings(
    captured: _Captured, capsys: pytest.CaptureFixture[str], args: list[str], words: list[str]
) -> None:
    try:
        code = main(["serve", *args])
    except SystemExit as exc:  # argparse's own refusals
        code = int(exc.code or 0)
    assert code == 2
    assert captured.app is None, "nothing was served"
    err = capsys.readouterr().err
    for word in words:
        assert word in err


def test_the_command_refuses_a_reachable_host_without_a_token() -> None:
    proc = _nbeval("serve", "--host", "0.0.0.0", "--port", str(free_port()), "--no-auth")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "refusing to serve without authentication" in err and "--token" in err


def test_documents_gives_the_expected_documents_chunks(captured: _Captured) -> None:
    assert (
        main(
            [
                "serve",
                "--no-auth",
                "--retriever",
                "tests.serve.plugins:retriever",
                "--documents",
                "tests.serve.plugins:documents",
            ]
        )
        == 0
    )
    from fastapi.testclient import TestClient

    body = {
        "scene_key": "recall",
        "scene_value": "s",
        "context": {"top_k": 1},
        "evaluate_metrics": ["RetrieverMRRMetric"],
        "datasets": [{"query": "what is AWEL", "doc_name": "awel.md"}],
    }
    # without a token the service answers only requests for a loopback Host (TestClient's is "testserver")
    entry = TestClient(captured.app, base_url="http://127.0.0.1").post(PATH, json=body).json()["data"][0][0]
    # both awel.md chunks, though only one was retrieved: DB-GPT's contexts, from the documents function
    assert entry["contexts"] == [plugins.CHUNKS[0]["content"], plugins.CHUNKS[2]["content"]]
    assert entry["score"] == 1.0 and entry["prediction_cost"] == 0
    assert main(["serve", "--token", "T", "--documents", "tests.serve.no_such_module:f"]) == 2
