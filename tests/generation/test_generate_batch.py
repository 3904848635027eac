"""``nbeval.generate(..., batch=True)`` and ``nbeval generate --batch`` (issue 34): the judge's calls
through the loopback Batch API, request for request the synchronous ones, the same suite; the
bar shows the batch; the dry run priced both ways."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.cli import main
from nbeval.data.model import TestSuite
from nbeval.generation import GenerationPlan
from tests.generation.corpus import EXPENSES, HANDBOOK, LEAVE
from tests.generation.loopback import SchemaJudge
from tests.support.fake_batch import FakeBatchServer

POLL = 0.05


@pytest.fixture
def batch_server() -> Iterator[FakeBatchServer]:
    with FakeBatchServer(SchemaJudge(), delay=0.3) as s:
        yield s


def _judge(server: FakeBatchServer) -> dict[str, Any]:
    return {"model": "writer-model", "base_url": server.url, "api_key": "sk-generate-test-123456"}


def _canonical(bodies: list[Any]) -> list[str]:
    return sorted(json.dumps(b, sort_keys=True) for b in bodies)


def _cases(suite: Any) -> list[Any]:
    assert isinstance(suite, TestSuite)
    return [json.loads(json.dumps(c.to_json())) for c in suite.test_cases]


def test_generate_through_the_batch_api_writes_the_same_suite(
    batch_server: FakeBatchServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    prices = {"writer-model": (1.0, 10.0)}
    judge = _judge(batch_server)
    one_by_one = nbeval.generate(HANDBOOK, 4, seed=2, judge=judge, cache=tmp_path / "a.sqlite", prices=prices)
    assert batch_server.request_count == 4 and batch_server.batch_creates == 0
    batched = nbeval.generate(
        HANDBOOK, 4, seed=2, judge=judge, cache=tmp_path / "b.sqlite", prices=prices, batch=True, batch_poll_s=POLL
    )
    assert batch_server.request_count == 4  # nothing asked one by one
    assert batch_server.batch_creates == 1  # every reply fitted: one round, one batch
    assert _canonical(batch_server.batch_bodies()) == _canonical([r.body for r in batch_server.requests])
    assert _cases(batched) == _cases(one_by_one)
    report, sync_report = batched.extra["generation_report"], one_by_one.extra["generation_report"]
    assert report["prompt_tokens"] == sync_report["prompt_tokens"] > 0
    assert report["cost"] == pytest.approx(sync_report["cost"] / 2)  # batch_discount 0.5 by default
    err = capfd.readouterr().err
    assert "batch batch_fake0001: in_progress" in err and "generate" in err  # the bar, while it waits


def test_generate_batch_progress_false_draws_nothing(
    batch_server: FakeBatchServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    nbeval.generate(
        LEAVE,
        2,
        kinds=["single_hop"],
        judge=_judge(batch_server),
        cache=tmp_path / "c.sqlite",
        batch=True,
        batch_poll_s=POLL,
        progress=False,
    )
    assert batch_server.batch_creates == 1 and capfd.readouterr().err == ""


def test_generate_dry_run_prices_both_ways(batch_server: FakeBatchServer, tmp_path: Path) -> None:
    kw: dict[str, Any] = {"judge": _judge(batch_server), "cache": tmp_path / "c.sqlite", "dry_run": True}
    plan = nbeval.generate(HANDBOOK, 6, prices={"writer-model": (1.0, 10.0)}, **kw)
    assert isinstance(plan, GenerationPlan) and plan.est_cost is not None and plan.est_cost > 0
    assert plan.est_batch_cost == pytest.approx(plan.est_cost / 2)
    assert f"${plan.est_cost:.4f} one call at a time, ${plan.est_batch_cost:.4f} with batch=True" in str(plan)
    fifth = nbeval.generate(HANDBOOK, 6, prices={"writer-model": (1.0, 10.0)}, batch=True, batch_discount=0.2, **kw)
    assert isinstance(fifth, GenerationPlan) and fifth.est_batch_cost == pytest.approx(plan.est_cost * 0.8)
    own = nbeval.generate(HANDBOOK, 6, prices={"writer-model": (1.0, 10.0, 0.3, 3.0)}, **kw)
    assert isinstance(own, GenerationPlan)
    expected = (plan.est_prompt_tokens * 0.3 + plan.est_completion_tokens * 3.0) / 1000
    assert own.est_batch_cost == pytest.approx(expected)
    assert batch_server.calls == [] and batch_server.request_count == 0


def test_cli_generate_batch_sends_one_batch_and_writes_the_same_suite(
    batch_server: FakeBatchServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-generate-test-123456")
    (tmp_path / "leave.md").write_text(LEAVE, encoding="utf-8")
    (tmp_path / "expenses.md").write_text(EXPENSES, encoding="utf-8")
    out = tmp_path / "suite.json"
    docs = [str(tmp_path / "leave.md"), str(tmp_path / "expenses.md")]
    args = ["generate", *docs, "-n", "4", "--judge", "writer-model", "--judge-base-url", batch_server.url]
    assert main([*args, "--batch", "--out", str(out)]) == 0, capsys.readouterr().err
    assert batch_server.batch_creates == 1 and batch_server.request_count == 0
    assert "made 4 of 4 test cases" in capsys.readouterr().out
    want = nbeval.generate(docs, 4, judge=_judge(batch_server), cache=tmp_path / "own.sqlite")
    assert _cases(TestSuite.from_json(out)) == _cases(want)
    assert _canonical(batch_server.batch_bodies()) == _canonical([r.body for r in batch_server.requests])
    # a second run finds every reply in the cache: no second batch
    assert main([*args, "--batch", "--out", str(out)]) == 0 and batch_server.batch_creates == 1
