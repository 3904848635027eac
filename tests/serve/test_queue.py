"""Jobs that wait for a worker: at most ``max_queued`` of them (503 with Retry-After past that),
and they wait on disk, not in memory (issue 35, point 2)."""

from __future__ import annotations

import gc
from collections.abc import Callable
from pathlib import Path

from nbeval.engine.planning import RunState
from nbeval.errors import NbevalError
from nbeval.serve.jobs import Job, JobStore
from tests.serve.conftest import LiveService
from tests.serve.test_evaluations import Gate, _poll, _rows, _wait_for, gate  # noqa: F401 (gate: a fixture)


def _post(svc: LiveService, rows: int = 5) -> tuple[int, dict[str, str], dict[str, object]]:
    r = svc.client.post("/v1/evaluations", json={"data": _rows(rows), "evaluators": ["t_held"], "wait": False})
    return r.status_code, dict(r.headers), r.json()


def test_past_max_queued_a_request_gets_503_with_retry_after(
    start_service: Callable[..., LiveService],
    gate: Gate,  # noqa: F811 (the fixture imported above)
) -> None:
    svc = start_service(workers=1, max_queued=2, app="tests.serve.plugins:app")
    first = _post(svc)
    assert first[0] == 202
    assert gate.reached.wait(60)  # the first job runs, held; the next two wait
    queued = [_post(svc) for _ in range(2)]
    assert [status for status, _, _ in queued] == [202, 202]
    status, headers, body = _post(svc)
    assert status == 503, body
    assert int(headers["retry-after"]) > 0
    assert "--max-queued" in str(body["detail"]) and "2 evaluations are already waiting" in str(body["detail"])
    assert len(svc.client.get("/v1/evaluations").json()) == 3, "the refused request made no job"
    dbgpt = {"scene_key": "app", "scene_value": "a", "evaluate_metrics": ["t_held"], "datasets": [{"query": "q"}]}
    r = svc.client.post("/api/v2/serve/evaluate/evaluation", json=dbgpt)
    assert r.status_code == 503 and r.json()["err_code"] == "E503" and "retry-after" in r.headers
    gate.release.set()
    for _, _, job in [first, *queued]:
        assert _poll(svc.client, str(job["id"]))["status"] == "succeeded"
    assert _post(svc)[0] in (200, 202), "room again once the queue has drained"


def test_waiting_jobs_are_kept_on_disk_and_planned_when_they_start(
    start_service: Callable[..., LiveService],
    gate: Gate,  # noqa: F811 (the fixture imported above)
) -> None:
    svc = start_service(workers=1)
    running = _post(svc, 50)[2]
    assert gate.reached.wait(60)
    waiting = [_post(svc, 300)[2] for _ in range(3)]
    assert [j["status"] for j in waiting] == ["queued"] * 3
    queue = Path(str(svc.data_dir)) / "queue"
    assert sorted(p.name for p in queue.iterdir()) == sorted(f"{j['id']}.pickle" for j in waiting)
    gc.collect()
    planned = [o for o in gc.get_objects() if isinstance(o, RunState)]
    assert [len(s.dataset.rows) for s in planned] == [50], "only the running job's rows are in memory"
    gate.release.set()
    for job in [running, *waiting]:
        done = _poll(svc.client, str(job["id"]))
        assert done["status"] == "succeeded" and done["progress"] == {"done": job["rows"], "total": job["rows"]}
    assert _wait_for(lambda: not list(queue.iterdir()))


def test_a_waiting_job_cancelled_before_it_starts_ends_cancelled(
    start_service: Callable[..., LiveService],
    gate: Gate,  # noqa: F811 (the fixture imported above)
) -> None:
    svc = start_service(workers=1)
    running = _post(svc)[2]
    assert gate.reached.wait(60)
    waiting = _post(svc, 20)[2]
    assert svc.client.delete(f"/v1/evaluations/{waiting['id']}").status_code == 200
    gate.release.set()
    assert _poll(svc.client, str(running["id"]))["status"] == "succeeded"
    done = _poll(svc.client, str(waiting["id"]))
    assert done["status"] == "cancelled" and done["scores_page"]["total"] == 20


def test_a_request_left_waiting_at_a_restart_is_removed_and_its_job_interrupted(tmp_path: Path) -> None:
    from nbeval.runtime import Resources

    store = JobStore(Resources, data_dir=tmp_path)
    store._save(Job(id="j1", evaluators=["exact_match"], rows=3, total=3, status="queued"))
    (tmp_path / "queue" / "j1.pickle").write_bytes(b"left by a service that was killed")
    store.shutdown()
    again = JobStore(Resources, data_dir=tmp_path)
    try:
        job = again.get("j1")
        assert job is not None and job.status == "interrupted"
        assert not (tmp_path / "queue" / "j1.pickle").exists()
    finally:
        again.shutdown()


def test_max_queued_zero_takes_only_what_the_workers_can_start(tmp_path: Path) -> None:
    from nbeval.runtime import Resources
    from nbeval.serve.jobs import QueueFull

    store = JobStore(Resources, data_dir=tmp_path, workers=1, max_queued=0)
    try:
        store._jobs["busy"] = Job(id="busy", evaluators=["exact_match"], rows=1, total=1, status="running")
        try:
            store.start([{"input": "q", "actual_output": "a", "expected_output": "a"}], ["exact_match"])
        except QueueFull as exc:
            assert "0 evaluations are already waiting" in str(exc) and exc.retry_after > 0
            assert not isinstance(exc, NbevalError), "a full queue is not a bad request (422)"
        else:
            raise AssertionError("a job past max_queued was taken")
    finally:
        store._jobs["busy"].status = "succeeded"
        store.shutdown()
