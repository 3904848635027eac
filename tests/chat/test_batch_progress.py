"""Batched runs as the user watches them (issue 34): ``on_progress`` and ``live.status`` while the
run waits on the provider, ``complete(on_status=...)``, and collect's plan priced both ways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat import OpenAIChat
from nbeval.errors import BadParameter
from nbeval.results.live import LiveResult
from tests.chat.test_batch import POLL, ROWS, judge_of, verdict
from tests.chat.test_collect import make_suite
from tests.support.fake_batch import FakeBatchServer


def test_on_progress_hears_the_batch_while_no_row_finishes(tmp_path: Path) -> None:
    heard: list[tuple[str, int, int]] = []

    def on_progress(live: LiveResult, done: int, total: int) -> None:
        heard.append((live.status, done, total))

    with FakeBatchServer(verdict, delay=0.4) as server:
        judge = judge_of(server)
        kw: dict[str, Any] = {"judge": judge, "progress": False, "on_progress": on_progress}
        nbeval.evaluate(ROWS, ["safety"], cache=tmp_path / "a.sqlite", batch=True, batch_poll_s=POLL, **kw)
        waiting = [h for h in heard if "in_progress" in h[0]]
        assert waiting, heard  # told at each poll, before any row finished
        assert all(done == 0 and total == 6 for _, done, total in waiting), heard
        assert any("batch batch_fake0001: in_progress, " in s and "/6 done" in s for s, _, _ in waiting)
        assert heard[-1] == ("batch batch_fake0001: completed, 6/6 done", 6, 6)
        heard.clear()
        nbeval.evaluate(ROWS, ["safety"], cache=tmp_path / "b.sqlite", **kw)  # one by one: no batch to tell of
    assert heard and {s for s, _, _ in heard} == {""}


def test_the_status_counts_the_failed_lines(tmp_path: Path) -> None:
    from tests.support.fake_openai import Recorded, Status

    def reply(rec: Recorded) -> Any:
        return Status(400, "refused") if "answer 2" in rec.last_content else verdict(rec)

    statuses: list[str] = []
    with FakeBatchServer(reply, delay=0.1) as server:
        nbeval.evaluate(
            ROWS,
            ["safety"],
            judge=judge_of(server),
            cache=tmp_path / "c.sqlite",
            progress=False,
            batch=True,
            batch_poll_s=POLL,
            on_progress=lambda live, done, total: statuses.append(live.status),
        )
    assert "batch batch_fake0001: completed, 5/6 done, 1 failed" in statuses


def test_complete_tells_on_status_of_its_batches(tmp_path: Path) -> None:
    seen: list[str] = []
    with FakeBatchServer(lambda rec: f"echo {rec.last_content}", delay=0.3) as server:
        models = {"alpha": OpenAIChat("alpha", base_url=server.url, api_key="sk-test")}
        pending = nbeval.collect(make_suite(), models, cache=tmp_path / "c.sqlite", batch=True, batch_poll_s=POLL)
        lab = pending.complete(progress=False, on_status=seen.append)
    assert [r.actual_output for r in lab.dataset] == [
        "echo Capital of France?",
        "echo Capital of Peru?",
        "echo Capital of Chile?",
    ]
    assert any("in_progress" in s and "/3 done" in s for s in seen), seen
    assert seen[-1] == "batch batch_fake0001: completed, 3/3 done"


def test_collect_plan_prices_both_ways(tmp_path: Path) -> None:
    with FakeBatchServer(verdict) as server:
        models = {
            "alpha": OpenAIChat("alpha", base_url=server.url, api_key="sk-test"),
            "beta": OpenAIChat("beta", base_url=server.url, api_key="sk-test"),
        }
        cache = tmp_path / "c.sqlite"
        half = nbeval.collect(make_suite(), models, cache=cache, prices={"alpha": (1.0, 10.0), "beta": (2.0, 20.0)})
        plan = half.plan()
        assert plan.calls == 6 and plan.est_cost is not None and plan.est_cost > 0
        assert plan.est_batch_cost == pytest.approx(plan.est_cost / 2)  # batch_discount 0.5 by default
        assert f"about ${plan.est_cost:.4f} one call at a time, ${plan.est_batch_cost:.4f} with batch=True" in str(plan)
        fifth = nbeval.collect(
            make_suite(), models, cache=cache, prices={"alpha": (1.0, 10.0), "beta": (2.0, 20.0)}, batch_discount=0.2
        ).plan()
        assert fifth.est_batch_cost == pytest.approx(plan.est_cost * 0.8)
        own = nbeval.collect(make_suite(), models, cache=cache, prices={"alpha": (1.0, 10.0, 0.1, 1.0)}).plan()
        alpha = half.client("alpha").plan(half.requests("alpha"))
        expected = (alpha.est_prompt_tokens * 0.1 + alpha.est_completion_tokens * 1.0) / 1000
        assert own.est_cost == pytest.approx(alpha.est_cost) and own.est_batch_cost == pytest.approx(expected)
        unpriced = nbeval.collect(make_suite(), models, cache=cache).plan()
        assert unpriced.est_cost is None and unpriced.est_batch_cost is None and "batch" not in str(unpriced)
        with pytest.raises(BadParameter, match="batch_discount"):
            nbeval.collect(make_suite(), models, cache=cache, batch=True, batch_discount=2)
    assert server.calls == [] and server.request_count == 0


def test_a_function_is_priced_at_its_full_price_batched_or_not(tmp_path: Path) -> None:
    from nbeval.chat.accounting import CallPlan
    from nbeval.chat.batch_options import with_batch_cost

    class Fn:
        def __init__(self) -> None:
            self.model = object()  # not an OpenAI-compatible endpoint: no Batch API
            self.prices = {"fn": (1.0, 10.0)}

    plan = CallPlan(3, 0, 3, 300, 30, 0.6)
    assert with_batch_cost(Fn(), plan).est_batch_cost == pytest.approx(0.6)
    assert with_batch_cost(Fn(), CallPlan(3, 0, 3, 300, 30)).est_batch_cost is None
