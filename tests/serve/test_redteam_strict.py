"""Issue 35, more red-team findings on the service: each test failed before its fix.

18b. the JSON parser took ``NaN`` and ``Infinity``, which are not JSON;
3b. a job running when the server stopped lost the scores it had made.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from nbeval.serve.app import create_app
from tests.serve.conftest import TOKEN

HEADERS = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(token=TOKEN, data_dir=tmp_path / "data"), headers=HEADERS) as c:
        yield c


# 18b. NaN and Infinity -------------------------------------------------------------------------------


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("path", ["/v1/evaluations", "/api/v2/serve/evaluate/evaluation"])
def test_nan_and_infinity_are_refused_as_invalid_json(client: TestClient, constant: str, path: str) -> None:
    body = (
        '{"data": [{"input": "q", "expected_output": "a", "actual_output": "a", "score": %s}], '
        '"evaluators": ["exact_match"]}' % constant
    )
    r = client.post(path, content=body.encode(), headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert constant.lstrip("-") in r.text
    assert client.get("/v1/evaluations").json() == []  # no job was started


def test_plain_numbers_are_still_accepted(client: TestClient) -> None:
    body = (
        '{"data": [{"input": "q", "expected_output": "a", "actual_output": "a", "score": 1.5e3}], '
        '"evaluators": ["exact_match"]}'
    )
    r = client.post("/v1/evaluations", content=body.encode(), headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text


# 3b. a job running when the service stopped keeps what it had scored ------------------------------


class _StuckJudge:
    """A judge that answers ``free`` calls, then holds every later call until ``release`` is set;
    ``stuck`` is set when the first held call begins (the run's earlier chunks are all filed)."""

    def __init__(self, free: int) -> None:
        self.free = free
        self.calls = 0
        self.lock = threading.Lock()
        self.stuck = threading.Event()
        self.release = threading.Event()

    def __call__(self, prompt: str) -> str:
        with self.lock:
            self.calls += 1
            held = self.calls > self.free
        if held:
            self.stuck.set()
            self.release.wait(120)
        return "Rating: yes\nfine"


@pytest.mark.timeout(120)
def test_a_job_running_when_the_service_stopped_keeps_its_scores(tmp_path: Path) -> None:
    records = [{"key": f"k{i}", "input": f"q{i}", "actual_output": f"a{i}"} for i in range(6)]
    judge = _StuckJudge(free=2)
    first = create_app(token=TOKEN, data_dir=tmp_path, judge=judge, chunk_rows=2)
    try:
        with TestClient(first, headers=HEADERS) as c:
            job_id = c.post("/v1/evaluations", json={"data": records, "evaluators": ["safety"], "wait": False}).json()[
                "id"
            ]
            assert judge.stuck.wait(60)  # the first chunk (2 rows) is scored; the run hangs in the second
            # the service "dies" here: a second one starts on the same folder while the first is stuck
            with TestClient(create_app(token=TOKEN, data_dir=tmp_path), headers=HEADERS) as again:
                job = again.get(f"/v1/evaluations/{job_id}").json()
            judge.release.set()  # the first service may now end its run and stop
    finally:
        judge.release.set()
    assert job["status"] == "interrupted" and job["error"]
    keys = {s["key"] for s in job["scores"]}
    assert keys == {"k0", "k1"}, job["scores"]
    assert all(s["error"] is None for s in job["scores"])
    assert job["leaderboards"] and job["report"]
