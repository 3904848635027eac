"""nbeval's own API over HTTP: POST /v1/evaluations answered at once or as a job, polling,
cancelling, reports, bad bodies and several clients at once.

A long job is made of ``t_held`` rows, which wait for the test to let them go (a
``threading.Event``): what a test sees while a job runs does not depend on how fast the machine is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from nbeval.evaluators import registry
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
from tests.serve.conftest import TOKEN, LiveService

RECORDS = [
    {"key": "q1", "input": "2+2?", "expected_output": "4", "actual_output": "4", "model_key": "good"},
    {"key": "q2", "input": "3+3?", "expected_output": "6", "actual_output": "6", "model_key": "good"},
    {"key": "q1", "input": "2+2?", "expected_output": "4", "actual_output": "5", "model_key": "bad"},
    {"key": "q2", "input": "3+3?", "expected_output": "6", "actual_output": "6", "model_key": "bad"},
]


@dataclass
class Gate:
    """What ``t_held`` rows wait for: rows ``r<i>`` with ``i >= hold_from`` wait for ``release``;
    ``reached`` is set when the first of them starts waiting."""

    hold_from: int = 0
    release: threading.Event = field(default_factory=threading.Event)
    reached: threading.Event = field(default_factory=threading.Event)


@pytest.fixture
def gate() -> Iterator[Gate]:
    """``t_held`` registered for the test (every row held until ``gate.release``); let go after it."""
    g = Gate()

    @registry.register(
        spec=EvaluatorSpec(
            id="t_held",
            family="test",
            kind="score",
            inputs=("actual_output",),
            metrics=(MetricSpec("score", primary=True),),
        )
    )
    class Held(Evaluator):
        def score(self, row: Any) -> Score:
            if int(str(row.key).lstrip("r")) >= g.hold_from:
                g.reached.set()
                assert g.release.wait(60), "a held row was never let go"
            return Score({"score": 1.0})

    yield g
    g.release.set()


def _rows(n: int) -> list[dict[str, Any]]:
    return [{"key": f"r{i}", "input": f"q{i}", "actual_output": f"a{i}"} for i in range(n)]


def _wait_for(condition: Callable[[], bool], timeout: float = 60) -> bool:
    """Whether ``condition()`` came true within ``timeout`` seconds, asked every 20 ms (what the
    service shows only over HTTP; the bound is generous, not a measure)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _progress(client: httpx.Client, job_id: str, seen: list[dict[str, Any]]) -> dict[str, Any]:
    seen.append(client.get(f"/v1/evaluations/{job_id}").json()["progress"])
    return seen[-1]


def _poll(
    client: httpx.Client, job_id: str, seen: list[dict[str, Any]] | None = None, timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = client.get(f"/v1/evaluations/{job_id}").json()
        if seen is not None:
            seen.append(body["progress"])
        if body["status"] in ("succeeded", "failed", "cancelled"):
            return body
        assert time.monotonic() < deadline, f"job still {body['status']} after {timeout}s"
        time.sleep(0.02)


def test_a_small_run_answers_with_the_long_table_and_leaderboards(service: LiveService) -> None:
    r = service.client.post("/v1/evaluations", json={"data": RECORDS, "evaluators": ["exact_match"], "wait": True})
    assert r.status_code == 200
    body = r.json()
    assert body["status"] == "succeeded" and body["progress"] == {"done": 4, "total": 4}
    got = {(s["model_key"], s["key"]): s["value"] for s in body["scores"]}
    # worked by hand: "bad" answered q1 with 5 instead of 4
    assert got == {("good", "q1"): 1.0, ("good", "q2"): 1.0, ("bad", "q1"): 0.0, ("bad", "q2"): 1.0}
    assert {s["evaluator"] for s in body["scores"]} == {"exact_match"}
    board = body["leaderboards"]["exact_match"]
    assert [(row["model_key"], row["score"], row["N"]) for row in board] == [("good", 1.0, 2), ("bad", 0.5, 2)]


def test_scores_match_the_reference_library(service: LiveService) -> None:
    from rouge_score import rouge_scorer

    data = [{"input": "q", "expected_output": "the cat sat on the mat", "actual_output": "a cat sat on a mat"}]
    body = service.client.post("/v1/evaluations", json={"data": data, "evaluators": ["rouge"]}).json()
    expected = rouge_scorer.RougeScorer(["rougeL"]).score(data[0]["expected_output"], data[0]["actual_output"])
    value = next(s["value"] for s in body["scores"] if s["metric"] == "rouge_l")
    assert value == pytest.approx(expected["rougeL"].fmeasure)


def test_evaluator_params_take_effect(service: LiveService) -> None:
    data = [{"input": "q", "actual_output": "Order 12345 shipped"}]
    body = service.client.post(
        "/v1/evaluations", json={"data": data, "evaluators": [{"id": "regex_match", "params": {"pattern": r"\d{5}"}}]}
    ).json()
    assert body["status"] == "succeeded"
    assert body["scores"][0]["value"] == 1.0


def test_a_lab_is_evaluated_like_the_library_does(service: LiveService) -> None:
    import nbeval
    from nbeval.demo import demo_lab

    lab = demo_lab()
    body = service.client.post(
        "/v1/evaluations", json={"lab": lab.to_json(), "evaluators": ["exact_match"], "wait": True}
    ).json()
    direct = nbeval.evaluate(lab, ["exact_match"], progress=False).scores
    assert body["status"] == "succeeded"
    assert [s["value"] for s in body["scores"]] == [None if v != v else v for v in direct["value"]]
    assert {row["model_key"] for row in body["leaderboards"]["exact_match"]} == {m.key for m in lab.models}


def test_a_long_job_answers_with_its_id_and_is_polled_to_completion(
    start_service: Callable[..., LiveService], gate: Gate
) -> None:
    gate.hold_from = 20  # the first half is scored at once, the rest waits until progress was seen
    svc = start_service(wait_rows=10, chunk_rows=4)
    r = svc.client.post("/v1/evaluations", json={"data": _rows(40), "evaluators": ["t_held"]})
    assert r.status_code == 202
    job = r.json()
    assert r.headers["location"] == f"/v1/evaluations/{job['id']}"
    assert job["scores"] is None and job["progress"]["total"] == 40
    seen: list[dict[str, Any]] = []
    assert gate.reached.wait(60)
    assert _wait_for(lambda: _progress(svc.client, job["id"], seen)["done"] > 0)  # while r20 and on wait
    gate.release.set()
    final = _poll(svc.client, job["id"], seen)
    assert final["status"] == "succeeded"
    assert final["progress"] == {"done": 40, "total": 40}
    done = [p["done"] for p in seen]
    assert done == sorted(done), "progress never goes back"
    assert any(0 < d < 40 for d in done), f"no progress seen between start and end: {done}"
    assert len(final["scores"]) == 40 and all(s["value"] == 1.0 for s in final["scores"])
    listed = svc.client.get("/v1/evaluations").json()
    assert [j["id"] for j in listed] == [job["id"]] and listed[0]["scores"] is None


def test_cancel_stops_a_job_and_keeps_what_was_scored(start_service: Callable[..., LiveService], gate: Gate) -> None:
    gate.hold_from = 10  # r0..r9 are scored; r10 waits until the job is cancelled
    svc = start_service(chunk_rows=2)
    job = svc.client.post("/v1/evaluations", json={"data": _rows(60), "evaluators": ["t_held"], "wait": False}).json()
    assert gate.reached.wait(60)
    r = svc.client.delete(f"/v1/evaluations/{job['id']}")
    assert r.status_code == 200
    gate.release.set()
    final = _poll(svc.client, job["id"])
    assert final["status"] == "cancelled"
    scored = [s for s in final["scores"] if not s["skipped"]]
    cancelled = [s for s in final["scores"] if s["skip_reason"] == "cancelled"]
    assert scored and cancelled and len(scored) + len(cancelled) == 60
    assert final["meta"]["cancelled"] is True


def test_workers_bounds_the_runs_at_once(start_service: Callable[..., LiveService], gate: Gate) -> None:
    svc = start_service(workers=1)
    first = svc.client.post("/v1/evaluations", json={"data": _rows(10), "evaluators": ["t_held"], "wait": False}).json()
    second = svc.client.post(
        "/v1/evaluations", json={"data": _rows(10), "evaluators": ["t_held"], "wait": False}
    ).json()
    assert gate.reached.wait(60)  # the first job runs (held at its first row)
    assert svc.client.get(f"/v1/evaluations/{second['id']}").json()["status"] == "queued"
    gate.release.set()
    assert _poll(svc.client, first["id"])["status"] == "succeeded"
    assert _poll(svc.client, second["id"])["status"] == "succeeded"


def test_the_report_is_html_with_the_text_escaped(service: LiveService) -> None:
    data = [{"input": "<b>q</b>", "expected_output": "x", "actual_output": "<script>alert(1)</script>"}]
    job = service.client.post("/v1/evaluations", json={"data": data, "evaluators": ["exact_match"]}).json()
    r = service.client.get(job["report"])
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "<script>alert(1)" not in r.text
    assert "&lt;script&gt;alert(1)" in r.text
    assert service.anonymous.get(job["report"]).status_code == 401


def test_unknown_jobs_are_404_and_an_unfinished_report_409(
    start_service: Callable[..., LiveService], gate: Gate
) -> None:
    svc = start_service()
    for method in ("GET", "DELETE"):
        r = svc.client.request(method, "/v1/evaluations/no-such-job")
        assert r.status_code == 404 and "no-such-job" in r.json()["detail"]
    assert svc.client.get("/v1/evaluations/no-such-job/report").status_code == 404
    job = svc.client.post("/v1/evaluations", json={"data": _rows(20), "evaluators": ["t_held"], "wait": False}).json()
    r = svc.client.get(f"/v1/evaluations/{job['id']}/report")  # unfinished: every row is held
    assert r.status_code == 409
    svc.client.delete(f"/v1/evaluations/{job['id']}")


BAD_BODIES = [
    ({"data": RECORDS}, ["body.evaluators", "Field required"]),
    ({"evaluators": ["exact_match"]}, ["'data'", "'lab'"]),
    ({"data": RECORDS, "lab": {}, "evaluators": ["exact_match"]}, ["exactly one of 'data'"]),
    ({"data": [], "evaluators": ["exact_match"]}, ["'data' is empty"]),
    ({"data": RECORDS, "evaluators": []}, ["body.evaluators", "at least 1"]),
    ({"data": "/etc/passwd", "evaluators": ["exact_match"]}, ["body.data"]),
    ({"data": RECORDS, "evaluators": ["exact_match"], "dat": 1}, ["body.dat", "Extra inputs"]),
    ({"data": RECORDS, "evaluators": ["exact_match"], "wait": "soon"}, ["body.wait"]),
    ({"data": RECORDS, "evaluators": ["no_such_evaluator"]}, ["body.evaluators", "no_such_evaluator"]),
    (
        {"data": RECORDS, "evaluators": [{"id": "rouge", "params": {"judge": "http://elsewhere"}}]},
        ["body.evaluators.0", "judge", "set by the server"],
    ),
    (
        {"data": RECORDS, "evaluators": [{"id": "rouge", "params": {"no_such_param": 1}}]},
        ["body.evaluators", "no_such_param"],
    ),
    (
        {"data": [{"input": "q", "actual_output": "a"}, {"input": "q", "context": 5}], "evaluators": ["exact_match"]},
        ["body.data", "row 2", "'context'"],
    ),
    ({"data": RECORDS, "evaluators": ["correctness"]}, ["body.evaluators", "judge"]),
]


@pytest.mark.parametrize(("body", "words"), BAD_BODIES)
def test_bad_bodies_get_422_naming_the_field(service: LiveService, body: dict[str, Any], words: list[str]) -> None:
    r = service.client.post("/v1/evaluations", json=body)
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    for word in words:
        assert word in message, message


def test_a_body_that_is_not_json_gets_422(service: LiveService) -> None:
    r = service.client.post("/v1/evaluations", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 422
    assert "JSON" in r.json()["message"]


def test_concurrent_requests_each_get_their_own_result(start_service: Callable[..., LiveService]) -> None:
    svc = start_service(workers=3)
    gate = threading.Barrier(8)

    def one(i: int) -> tuple[int, dict[str, Any]]:
        data = [
            {"key": f"k{j}", "input": "q", "expected_output": "yes", "actual_output": "yes" if j < i else "no"}
            for j in range(8)
        ]
        with httpx.Client(base_url=svc.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60) as c:
            gate.wait()
            return i, c.post("/v1/evaluations", json={"data": data, "evaluators": ["exact_match"], "wait": True}).json()

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(8)))
    assert len({body["id"] for _, body in answers}) == 8
    for i, body in answers:
        assert body["status"] == "succeeded"
        # request i has its first i answers right: the mean is i/8
        assert body["leaderboards"]["exact_match"][0]["score"] == pytest.approx(i / 8)


def test_a_job_that_breaks_says_why_and_the_service_goes_on(service: LiveService) -> None:
    @registry.register(
        spec=EvaluatorSpec(
            id="t_broken",
            family="test",
            kind="score",
            inputs=("actual_output",),
            metrics=(MetricSpec("score", primary=True),),
        )
    )
    class Broken(Evaluator):
        def score(self, row: Any) -> Score:
            return Score({"score": 1.0})

        def aggregate(self, rows: Any, scores: Any) -> Any:
            raise RuntimeError("aggregate broke")

    r = service.client.post("/v1/evaluations", json={"data": _rows(3), "evaluators": ["t_broken"], "wait": True})
    body = r.json()
    assert body["status"] == "failed" and "aggregate broke" in body["error"] and body["scores"] is None
    assert service.client.get(f"/v1/evaluations/{body['id']}/report").status_code == 409
    ok = service.client.post("/v1/evaluations", json={"data": RECORDS, "evaluators": ["exact_match"]}).json()
    assert ok["status"] == "succeeded"


def test_only_the_latest_finished_jobs_are_remembered(start_service: Callable[..., LiveService]) -> None:
    svc = start_service(keep_jobs=2)
    ids = [
        svc.client.post("/v1/evaluations", json={"data": RECORDS, "evaluators": ["exact_match"]}).json()["id"]
        for _ in range(3)
    ]
    assert svc.client.get(f"/v1/evaluations/{ids[0]}").status_code == 404
    assert [j["id"] for j in svc.client.get("/v1/evaluations").json()] == ids[1:]


def test_waiting_requests_do_not_starve_the_others(start_service: Callable[..., LiveService], gate: Gate) -> None:
    svc = start_service(workers=1)
    with ThreadPoolExecutor(50) as pool:  # more waiting clients than the server has threads (40)
        waiting = [
            pool.submit(
                svc.client.post, "/v1/evaluations", json={"data": _rows(1), "evaluators": ["t_held"], "wait": True}
            )
            for _ in range(45)
        ]
        # Every job is held, so all 45 requests stay waiting: the server still lists them, and
        # answers /health. A starved server would not answer before the rows are let go, which
        # is never: the request's timeout (generous, for a busy machine) would end the test.
        assert _wait_for(lambda: len(svc.client.get("/v1/evaluations", timeout=30).json()) == 45)
        assert svc.anonymous.get("/health", timeout=30).status_code == 200
        for job in svc.client.get("/v1/evaluations").json():
            svc.client.delete(f"/v1/evaluations/{job['id']}")
        gate.release.set()
        assert all(f.result().status_code == 200 for f in waiting)
