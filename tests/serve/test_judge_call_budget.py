"""Issue 43, point 24: the service bounds the judge calls a request plans, not only its scores.

``pairwise`` on one test case answered by 25 models is 25 scores but 25·24/2 = 300 pairs, each
asked in both orders: 600 judge calls. One ``chunk_relevance`` row with 300 retrieved chunks is
one score and 300 calls. The counts below are worked out by hand from those rules, not read from
the code under test; the judge is a Python function that counts the calls it gets.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from nbeval.serve.app import create_app
from nbeval.serve.budget import DEFAULT_MAX_JUDGE_CALLS, planned_judge_calls
from tests.serve.conftest import TOKEN

PAIRWISE_ROWS = [
    {"key": "q1", "input": "q", "actual_output": f"answer {i}", "model_key": f"m{i:02d}"} for i in range(25)
]
PAIRWISE_CALLS = 25 * 24 // 2 * 2  # every pair, in both orders
CHUNKS_ROW = [{"input": "q", "actual_output": "a", "context": [f"chunk {i}" for i in range(300)]}]


class _Judge:
    """Counts its calls; answers "A" (a pairwise verdict) or "yes" (a chunk's rating)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: str) -> str:
        self.calls += 1
        return "yes"


def _client(tmp_path: Path, judge: _Judge, **options: Any) -> Iterator[TestClient]:
    api = create_app(token=TOKEN, data_dir=tmp_path / "data", judge=judge, **options)
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c


@pytest.mark.parametrize(
    ("rows", "evaluator", "calls"), [(PAIRWISE_ROWS, "pairwise", PAIRWISE_CALLS), (CHUNKS_ROW, "chunk_relevance", 300)]
)
def test_a_request_over_the_judge_call_limit_is_refused_before_any_call(
    tmp_path: Path, rows: list[dict[str, Any]], evaluator: str, calls: int
) -> None:
    judge = _Judge()
    for c in _client(tmp_path, judge, max_judge_calls=calls - 1):
        r = c.post("/v1/evaluations", json={"data": rows, "evaluators": [evaluator]})
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert f"{calls:,} judge calls" in message and f"limit of {calls - 1:,}" in message, message
        assert f"{evaluator}: {calls:,}" in message and "--max-judge-calls" in message, message
        assert c.get("/v1/evaluations").json() == [], "nothing was started"
    assert judge.calls == 0


@pytest.mark.parametrize(
    ("rows", "evaluator", "calls"), [(PAIRWISE_ROWS, "pairwise", PAIRWISE_CALLS), (CHUNKS_ROW, "chunk_relevance", 300)]
)
def test_a_request_at_the_limit_runs_and_makes_the_calls_planned(
    tmp_path: Path, rows: list[dict[str, Any]], evaluator: str, calls: int
) -> None:
    judge = _Judge()
    for c in _client(tmp_path, judge, max_judge_calls=calls):
        r = c.post("/v1/evaluations", json={"data": rows, "evaluators": [evaluator]})
        assert r.status_code == 200, r.text
        assert r.json()["status"] == "succeeded"
    assert judge.calls == calls  # the bound counts what the run really asks


def test_the_calls_of_every_evaluator_add_up(tmp_path: Path) -> None:
    # three judge evaluators on two rows, one call each per row: 6 calls
    judge = _Judge()
    rows = [{"input": f"q{i}", "actual_output": "a", "expected_output": "a"} for i in range(2)]
    evaluators = ["correctness", "relevance_to_query", "safety", "exact_match"]
    for c in _client(tmp_path, judge, max_judge_calls=5):
        r = c.post("/v1/evaluations", json={"data": rows, "evaluators": evaluators})
        assert r.status_code == 422, r.text
        message = r.json()["message"]
        assert "6 judge calls" in message and "correctness: 2" in message and "exact_match" not in message
    assert judge.calls == 0


def test_the_default_limit_and_the_count_stops_early() -> None:
    assert DEFAULT_MAX_JUDGE_CALLS == 10_000
    from nbeval.engine import plan_run
    from nbeval.runtime import Resources

    state = plan_run(PAIRWISE_ROWS, ["pairwise"], resources=Resources(judge=_Judge()), keep_outcomes=False)
    assert planned_judge_calls(state.planned) == {"pairwise": PAIRWISE_CALLS}
    # past ``stop_after`` the walk ends: the count is then a lower bound, and said to be one
    assert sum(planned_judge_calls(state.planned, stop_after=10).values()) >= 11


def test_the_limit_is_shown_with_the_others(tmp_path: Path) -> None:
    api = create_app(token=TOKEN, data_dir=tmp_path, max_judge_calls=123)
    assert api.state.limits["max_judge_calls"] == 123


def test_the_command_passes_max_judge_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import uvicorn

    from nbeval.cli import main

    got: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: got.update(kw, app=app))
    monkeypatch.delenv("NBEVAL_SERVE_TOKEN", raising=False)
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-never-used-123456")  # refused before any call
    judge = ["--judge", "judge-model", "--judge-base-url", "http://127.0.0.1:9/v1"]
    argv = ["serve", "--no-auth", "--data-dir", str(tmp_path), *judge, "--max-judge-calls", "299"]
    assert main(argv) == 0
    assert got["app"].state.limits["max_judge_calls"] == 299
    c = TestClient(got["app"], base_url="http://127.0.0.1")
    r = c.post("/v1/evaluations", json={"data": CHUNKS_ROW, "evaluators": ["chunk_relevance"]})
    assert r.status_code == 422 and "300 judge calls" in r.json()["message"], r.text


# -- the bound at run time: calls the plan could not foresee --------------------------------------


def test_the_runs_resources_answer_no_more_chat_calls_than_the_budget() -> None:
    # the plan walks each row with placeholder replies, so calls that depend on the judge's real
    # answers are estimated; the run's resources refuse the calls past the budget all the same
    from nbeval.errors import ResourceError
    from nbeval.request_kinds import Chat
    from nbeval.serve.budget import BoundedResources

    judge = _Judge()
    resources = BoundedResources(3, judge=judge, cache=False)
    chats = [Chat(messages=({"role": "user", "content": f"question {i}"},)) for i in range(5)]
    seen: list[int] = []
    answers = resources.answer(chats, on_answer=lambda i, a: seen.append(i))
    assert [isinstance(a.value, ResourceError) for a in answers] == [False, False, False, True, True]
    assert "budget of 3 judge calls" in str(answers[3].value) and "--max-judge-calls" in str(answers[3].value)
    assert sorted(seen) == [0, 1, 2, 3, 4] and judge.calls == 3
    again = resources.answer(chats[:1])
    assert isinstance(again[0].value, ResourceError) and judge.calls == 3


def test_the_service_runs_each_job_with_its_own_budget(tmp_path: Path) -> None:
    judge = _Judge()
    for c in _client(tmp_path, judge, max_judge_calls=300):
        for _ in range(2):  # a second request has its own 300 calls, not what the first one left
            r = c.post("/v1/evaluations", json={"data": CHUNKS_ROW, "evaluators": ["chunk_relevance"]})
            assert r.status_code == 200 and r.json()["status"] == "succeeded", r.text
    assert judge.calls == 600


def test_re_asks_the_plan_cannot_foresee_stop_at_the_budget(tmp_path: Path) -> None:
    # faithfulness plans 2 calls a row (statements, then their verdicts); a judge whose replies
    # cannot be read is asked again, so without the run-time bound the row made 4 calls
    calls = 0

    def garbage(prompt: str) -> str:
        nonlocal calls
        calls += 1
        return "garbage"

    rows = [{"input": "q", "actual_output": "a. b. c.", "context": ["x"]}]
    api = create_app(token=TOKEN, data_dir=tmp_path / "data", judge=garbage, max_judge_calls=2)
    with TestClient(api, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        r = c.post("/v1/evaluations", json={"data": rows, "evaluators": ["faithfulness"]})
        assert r.status_code == 200, r.text
        (score,) = r.json()["scores"]
    assert calls == 2
    assert score["value"] is None and "budget of 2 judge calls is spent" in score["error"], score
