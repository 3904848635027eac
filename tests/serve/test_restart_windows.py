"""A service killed in the middle of saving loses nothing it had saved whole.

Two windows: between writing a job's whole result and recording its status (the job must come
back finished, with its result, not interrupted with it thrown away), and between replacing the
previous partial result and putting the new one in place (an interrupted job must keep a whole
partial result). Each test makes the files a kill in that window leaves, then starts a service.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from fastapi.testclient import TestClient

from nbeval.serve.app import create_app
from tests.serve.conftest import TOKEN

HEADERS = {"Authorization": f"Bearer {TOKEN}"}
RECORDS = [
    {"key": f"k{i}", "input": f"q{i}", "expected_output": "a", "actual_output": "a" if i % 2 else "b"} for i in range(4)
]


def _finished_job(data: Path) -> tuple[str, dict]:
    with TestClient(create_app(token=TOKEN, data_dir=data), headers=HEADERS) as c:
        job = c.post("/v1/evaluations", json={"data": RECORDS, "evaluators": ["exact_match"]}).json()
        assert job["status"] == "succeeded", job
        return job["id"], job


def _mark_running(data: Path, job_id: str) -> None:
    """What the database holds when the service died before recording the job's end."""
    with sqlite3.connect(data / "jobs.sqlite") as db:
        db.execute("UPDATE jobs SET status = 'running', finished = NULL, done = 0 WHERE id = ?", (job_id,))


def _scores(job: dict) -> list[tuple]:
    return sorted((s["key"], s["metric"], s["value"]) for s in job["scores"])


def test_a_result_saved_whole_before_the_status_was_recorded_is_served_as_finished(tmp_path: Path) -> None:
    data = tmp_path / "data"
    job_id, before = _finished_job(data)
    _mark_running(data, job_id)
    with TestClient(create_app(token=TOKEN, data_dir=data), headers=HEADERS) as c:
        after = c.get(f"/v1/evaluations/{job_id}").json()
        report = c.get(f"/v1/evaluations/{job_id}/report")
    assert after["status"] == "succeeded" and not after.get("error"), after
    assert _scores(after) == _scores(before) and len(after["scores"]) == len(before["scores"])
    assert after["leaderboards"] == before["leaderboards"]
    assert report.status_code == 200


def test_a_kill_while_the_partial_result_is_swapped_keeps_a_whole_one(tmp_path: Path) -> None:
    data = tmp_path / "data"
    job_id, before = _finished_job(data)
    results = data / "results"
    # the kill came after the old partial result was moved aside and before the new one (whole,
    # under .tmp) was renamed into place; the job had no final result yet
    shutil.copytree(results / job_id, results / f"{job_id}.partial.tmp")
    shutil.rmtree(results / job_id)
    _mark_running(data, job_id)
    with TestClient(create_app(token=TOKEN, data_dir=data), headers=HEADERS) as c:
        after = c.get(f"/v1/evaluations/{job_id}").json()
    assert after["status"] == "interrupted" and "kept" in after["error"], after
    assert _scores(after) == _scores(before)
    assert not list(results.glob(f"{job_id}.partial*"))  # the spares are cleared once used
