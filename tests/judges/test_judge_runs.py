"""Judge evaluators inside whole runs: configuration errors, cache, dry run, accounting, secrets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.engine import Plan
from nbeval.errors import JudgeNotConfigured
from tests.judges.helpers import cell, run
from tests.support.fake_openai import FakeOpenAIServer, Status, Text, rate_limited

ROWS = [
    {"key": f"k{i}", "input": f"question {i}", "expected_output": "x", "actual_output": f"answer {i}"} for i in range(6)
]


def test_no_judge_is_one_clear_error_before_the_run() -> None:
    with pytest.raises(JudgeNotConfigured) as info:
        nbeval.evaluate(ROWS, ["exact_match", "safety"], progress=False)
    text = str(info.value)
    assert "'safety' needs a judge" in text and "NBEVAL_JUDGE_MODEL" in text and "judge=" in text


def test_judge_from_env(monkeypatch: pytest.MonkeyPatch, openai_server: FakeOpenAIServer) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_MODEL", "env-judge")
    monkeypatch.setenv("NBEVAL_JUDGE_BASE_URL", openai_server.url)
    openai_server.reply = "Rating: yes"
    res = nbeval.evaluate(ROWS[:2], ["safety"], progress=False, cache=False)
    assert cell(res, "k0", "safety") == 1.0
    assert openai_server.requests[0].model == "env-judge"


def test_python_callable_judge() -> None:
    seen: list[str] = []

    def judge(prompt: str) -> str:
        seen.append(prompt)
        return "Rationale: fine.\nRating: no"

    res = nbeval.evaluate(ROWS[:2], ["relevance_to_query"], judge=judge, progress=False, cache=False)
    assert cell(res, "k1", "relevance_to_query") == 0.0
    assert len(seen) == 2 and "System: Decide whether an AI answer is relevant" in seen[0]


def test_per_evaluator_judge_overrides_the_run_judge(openai_server: FakeOpenAIServer) -> None:
    ev = nbeval.evaluator("safety", judge=lambda prompt: "Rating: no")
    res = nbeval.evaluate(ROWS[:1], [ev], judge=lambda prompt: "Rating: yes", progress=False, cache=False)
    assert cell(res, "k0", "safety") == 0.0


def test_second_run_asks_nothing(openai_server: FakeOpenAIServer, judge: dict[str, Any], tmp_path: Path) -> None:
    openai_server.reply = lambda rec: Text("Rating: yes", usage={"prompt_tokens": 100, "completion_tokens": 3})
    cache = tmp_path / "c.sqlite"
    first = run(ROWS, ["safety", "correctness"], judge, cache=cache, prices={"judge-model": (1.0, 10.0)})
    assert openai_server.request_count == 12
    usage = first.meta["usage"]
    counts = (usage["calls"], usage["cached_calls"], usage["prompt_tokens"], usage["completion_tokens"])
    assert counts == (12, 0, 1200, 36)
    assert usage["cost"] == pytest.approx(12 * (0.1 + 0.03))
    details = json.loads(cell(first, "k0", "safety", "details"))["judge"]
    assert (details["calls"], details["prompt_tokens"], details["cost"]) == (1, 100, pytest.approx(0.13))
    plan = nbeval.evaluate(ROWS, ["safety", "correctness", "groundedness"], judge=judge, dry_run=True, cache=cache)
    assert isinstance(plan, Plan)
    assert (plan.judge_calls, plan.cached_calls) == (12, 12)  # groundedness: no context, no calls
    second = run(ROWS, ["safety", "correctness"], judge, cache=cache)
    assert openai_server.request_count == 12
    assert second.meta["usage"]["cached_calls"] == 12 and second.meta["usage"]["prompt_tokens"] == 0
    assert cell(second, "k3", "correctness") == 1.0


def test_dry_run_estimates_without_calling(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    plan = nbeval.evaluate(ROWS, ["safety"], judge=judge, dry_run=True, cache=False)
    assert isinstance(plan, Plan)
    assert plan.judge_calls == 6 and plan.cached_calls == 0 and plan.est_prompt_tokens > 0
    assert openai_server.request_count == 0


def test_transient_failures_still_score_every_row(openai_server: FakeOpenAIServer, judge: dict[str, Any]) -> None:
    openai_server.reply = "Rating: yes"
    openai_server.push(Status(500), rate_limited("0.1"), Status(503))
    res = run(ROWS, ["safety"], judge, max_attempts=4)
    assert [cell(res, r["key"], "safety") for r in ROWS] == [1.0] * 6
    assert openai_server.request_count == 9


def test_api_key_stays_out_of_results(openai_server: FakeOpenAIServer, judge: dict[str, Any], tmp_path: Path) -> None:
    openai_server.reply = lambda rec: Status(401, f"bad key {judge['api_key']}")
    res = run(ROWS[:2], ["safety"], judge)
    assert "authentication failed" in cell(res, "k0", "safety", "error")
    res.save(tmp_path / "out")
    res.to_html(tmp_path / "out" / "report.html")
    blob = b"".join(p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert b"authentication failed" in blob
    assert judge["api_key"].encode() not in blob


def test_api_key_in_evaluator_settings_is_not_saved(openai_server: FakeOpenAIServer, tmp_path: Path) -> None:
    key = "sk-evaluator-level-key-987654"
    openai_server.reply = "Rating: yes"
    ev = nbeval.evaluator("safety", judge={"model": "m", "base_url": openai_server.url, "api_key": key})
    res = nbeval.evaluate(ROWS[:1], [ev], progress=False, cache=False)
    assert cell(res, "k0", "safety") == 1.0
    assert openai_server.requests[0].headers["Authorization"] == f"Bearer {key}"
    res.save(tmp_path / "out")
    blob = b"".join(p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert b"OpenAIChat('m'" in blob and key.encode() not in blob
