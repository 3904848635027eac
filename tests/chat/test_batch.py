"""Batched judging (issue 34): the same requests and values as the synchronous path, through the
loopback Batch API; cached requests not sent, identical ones once; failed lines, expired and
refused batches; judges without a Batch API; the dry run priced both ways."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.chat import ChatClient, OpenAIChat
from nbeval.chat.batch import BatchOptions, run_batch
from nbeval.chat.batch_options import batch_price
from nbeval.engine import Plan
from nbeval.errors import BadParameter
from tests.support.fake_batch import FakeBatchServer
from tests.support.fake_openai import Recorded, Status, Text

ROWS = [
    {"key": f"k{i}", "input": f"question {i}", "expected_output": f"x{i % 2}", "actual_output": f"answer {i}"}
    for i in range(6)
]
EVALUATORS = ["safety", "correctness"]
POLL = 0.05  # seconds between polls at first: the loopback batches take a fraction of a second


def verdict(rec: Recorded) -> Text:
    """A judge whose verdict differs by row: answers 3 and 4 fail."""
    no = "answer 3" in rec.last_content or "answer 4" in rec.last_content
    return Text("Rating: no" if no else "Rating: yes", usage={"prompt_tokens": 100, "completion_tokens": 4})


def judge_of(server: FakeBatchServer) -> dict[str, Any]:
    return {"model": "judge-model", "base_url": server.url, "api_key": "sk-batch-test-key-123456"}


def table(result: Any) -> pd.DataFrame:
    """The scores that must not depend on how the judge was asked."""
    cols = ["key", "evaluator", "metric", "value", "error"]
    s = result.scores[[c for c in cols if c in result.scores.columns]]
    s = s.apply(lambda col: col.map(lambda v: "" if v is None or (isinstance(v, float) and v != v) else str(v)))
    return s.sort_values(["key", "evaluator", "metric"]).reset_index(drop=True)


def batched(rows: list[dict[str, Any]], evaluators: Any, server: FakeBatchServer, cache: Any, **kw: Any) -> Any:
    """``evaluate(..., batch=True)`` against ``server``, polling fast."""
    kw.setdefault("progress", False)
    return nbeval.evaluate(rows, evaluators, judge=judge_of(server), cache=cache, batch=True, batch_poll_s=POLL, **kw)


def canonical(bodies: list[Any]) -> list[str]:
    return sorted(json.dumps(b, sort_keys=True) for b in bodies)


def test_batched_requests_and_values_equal_the_synchronous_ones(tmp_path: Path) -> None:
    prices = {"judge-model": (1.0, 10.0)}
    with FakeBatchServer(verdict, delay=0.3) as server:
        judge = judge_of(server)
        sync = nbeval.evaluate(
            ROWS, EVALUATORS, judge=judge, cache=tmp_path / "a.sqlite", progress=False, prices=prices
        )
        by_batch = nbeval.evaluate(
            ROWS,
            EVALUATORS,
            judge=judge,
            cache=tmp_path / "b.sqlite",
            progress=False,
            prices=prices,
            batch=True,
            batch_poll_s=POLL,
        )
    assert len(server.requests) == 12 and len(server.batch_lines) == 12
    # request for request: the batch's lines carry exactly the bodies the synchronous calls sent
    assert canonical(server.batch_bodies()) == canonical([r.body for r in server.requests])
    assert server.batch_creates == 1  # one model, one round: one batch
    pd.testing.assert_frame_equal(table(by_batch), table(sync))
    assert set(table(sync)["value"]) == {"0.0", "1.0"}
    usage, sync_usage = by_batch.meta["usage"], sync.meta["usage"]
    assert (usage["calls"], usage["cached_calls"], usage["prompt_tokens"]) == (12, 0, 1200)
    assert usage["cost"] == pytest.approx(sync_usage["cost"] / 2)  # batch_discount 0.5 by default


def test_cached_requests_are_not_sent_and_identical_ones_are_sent_once(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    twin = {**ROWS[5], "key": "k5-twin"}  # the same question and answer: the same request
    with FakeBatchServer(verdict, delay=0.1) as server:
        nbeval.evaluate(ROWS[:3], ["safety"], judge=judge_of(server), cache=cache, progress=False)
        assert server.request_count == 3
        res = nbeval.evaluate(
            [*ROWS, twin],
            ["safety"],
            judge=judge_of(server),
            cache=cache,
            progress=False,
            batch=True,
            batch_poll_s=POLL,
        )
    sent = [json.loads(line)["body"]["messages"][-1]["content"] for line in _lines(server)]
    assert len(sent) == 3 and all(any(f"answer {i}" in s for s in sent) for i in (3, 4, 5))
    assert server.request_count == 3  # nothing asked one by one
    values = table(res).set_index("key")["value"]
    assert values["k5-twin"] == values["k5"] == "1.0" and values["k3"] == "0.0"
    assert res.meta["usage"]["cached_calls"] == 4  # three from the first run, the twin from its batch


def _lines(server: FakeBatchServer) -> list[str]:
    return [line for data in server.uploads.values() for line in data.decode().splitlines() if '"custom_id"' in line]


def test_a_failed_line_is_its_rows_error_and_the_others_are_scored(tmp_path: Path) -> None:
    def reply(rec: Recorded) -> Any:
        return Status(400, "this prompt is refused") if "answer 2" in rec.last_content else verdict(rec)

    with FakeBatchServer(reply, delay=0.1) as server:
        res = nbeval.evaluate(
            ROWS,
            ["safety"],
            judge=judge_of(server),
            cache=tmp_path / "c.sqlite",
            progress=False,
            batch=True,
            batch_poll_s=POLL,
        )
    rows = table(res).set_index("key")
    assert "this prompt is refused" in rows.loc["k2", "error"] and "batch" in rows.loc["k2", "error"]
    assert pd.isna(res.scores.set_index("key").loc["k2", "value"])
    assert rows.drop("k2")["value"].tolist() == ["1.0", "1.0", "0.0", "0.0", "1.0"]
    assert "sk-batch-test-key" not in res.scores.to_json()


def test_an_expired_batch_says_so_and_batch_false_asks_only_the_rest(tmp_path: Path) -> None:
    cache = tmp_path / "c.sqlite"
    with FakeBatchServer(verdict, delay=0.1, expire_after=4) as server:
        judge = judge_of(server)
        first = nbeval.evaluate(
            ROWS, ["safety"], judge=judge, cache=cache, progress=False, batch=True, batch_poll_s=POLL
        )
        errors = [e for e in table(first)["error"] if e]
        assert len(errors) == 2 and all("expired" in e and "batch=False" in e for e in errors)
        second = nbeval.evaluate(ROWS, ["safety"], judge=judge, cache=cache, progress=False)
        assert server.request_count == 2 and server.batch_creates == 1  # the answers it gave were kept
        sync = nbeval.evaluate(ROWS, ["safety"], judge=judge, cache=False, progress=False)
    pd.testing.assert_frame_equal(table(second), table(sync))


def test_a_batch_the_provider_refuses_says_why_on_every_row(tmp_path: Path) -> None:
    with FakeBatchServer(verdict, refuse="model judge-model is not available for batches") as server:
        res = nbeval.evaluate(
            ROWS[:2],
            ["safety"],
            judge=judge_of(server),
            cache=tmp_path / "c.sqlite",
            progress=False,
            batch=True,
            batch_poll_s=POLL,
        )
    assert all("not available for batches" in e and "failed" in e for e in table(res)["error"])


def test_an_endpoint_without_a_batch_api_is_a_clear_error_on_the_rows(tmp_path: Path, openai_server: Any) -> None:
    openai_server.reply = "Rating: yes"  # chat completions only: /v1/files answers 404
    judge = {"model": "judge-model", "base_url": openai_server.url, "api_key": "sk-test"}
    res = nbeval.evaluate(
        ROWS[:2], ["safety"], judge=judge, cache=tmp_path / "c.sqlite", progress=False, batch=True, batch_poll_s=POLL
    )
    errors = table(res)["error"].tolist()
    assert all("could not be sent" in e and "404" in e and "run with batch=False" in e for e in errors), errors
    assert openai_server.request_count == 0


def test_a_judge_without_a_batch_api_is_asked_one_by_one_with_a_warning(tmp_path: Path) -> None:
    def judge(prompt: str) -> str:
        return "Rating: no" if "answer 1" in prompt else "Rating: yes"

    with pytest.warns(RuntimeWarning, match="one by one"):
        by_batch = nbeval.evaluate(ROWS[:3], ["safety"], judge=judge, progress=False, batch=True, cache=False)
    plain = nbeval.evaluate(ROWS[:3], ["safety"], judge=judge, progress=False, cache=False)
    pd.testing.assert_frame_equal(table(by_batch), table(plain))


def test_batch_needs_the_cache_and_runs_on_this_machine(tmp_path: Path) -> None:
    with FakeBatchServer(verdict) as server:
        with pytest.raises(BadParameter, match="cache=False"):
            nbeval.evaluate(ROWS[:1], ["safety"], judge=judge_of(server), cache=False, progress=False, batch=True)
        with pytest.raises(BadParameter, match="scheduler"):
            nbeval.evaluate(ROWS[:1], ["safety"], judge=judge_of(server), batch=True, scheduler="tcp://127.0.0.1:1")
        with pytest.raises(BadParameter, match="batch_poll_s"):
            nbeval.evaluate(ROWS[:1], ["safety"], judge=judge_of(server), batch=True, batch_poll_s=0)
        with pytest.raises(BadParameter, match="batch_discount"):
            nbeval.evaluate(ROWS[:1], ["safety"], judge=judge_of(server), batch=True, batch_discount=1.5)
        assert server.calls == []


def test_the_dry_run_prices_the_calls_both_ways(tmp_path: Path) -> None:
    with FakeBatchServer(verdict) as server:
        judge = judge_of(server)
        kw: dict[str, Any] = {"judge": judge, "dry_run": True, "cache": tmp_path / "c.sqlite"}
        plan = nbeval.evaluate(ROWS, ["safety"], prices={"judge-model": (1.0, 10.0)}, **kw)
        assert isinstance(plan, Plan) and plan.est_cost is not None and plan.est_cost > 0
        assert plan.est_batch_cost == pytest.approx(plan.est_cost / 2)
        assert "one call at a time" in str(plan) and "with batch=True" in str(plan)
        fifth = nbeval.evaluate(ROWS, ["safety"], prices={"judge-model": (1.0, 10.0)}, batch_discount=0.2, **kw)
        assert isinstance(fifth, Plan)
        assert fifth.est_batch_cost == pytest.approx(plan.est_cost * 0.8)
        own = nbeval.evaluate(ROWS, ["safety"], prices={"judge-model": (1.0, 10.0, 0.25, 2.0)}, **kw)
        assert isinstance(own, Plan)
        expected = (plan.est_prompt_tokens * 0.25 + plan.est_completion_tokens * 2.0) / 1000
        assert own.est_cost == pytest.approx(plan.est_cost) and own.est_batch_cost == pytest.approx(expected)
        unpriced = nbeval.evaluate(ROWS, ["safety"], **kw)
        assert isinstance(unpriced, Plan)
        assert unpriced.est_cost is None and "estimated cost" not in str(unpriced)
    assert server.calls == [] and server.request_count == 0


def test_a_price_with_a_batch_part_prices_the_batched_replies(tmp_path: Path) -> None:
    assert batch_price((1.0, 10.0)) == (0.5, 5.0) and batch_price((1.0, 10.0, 0.3, 3.0)) == (0.3, 3.0)
    with FakeBatchServer(verdict, delay=0.1) as server:
        res = nbeval.evaluate(
            ROWS[:2],
            ["safety"],
            judge=judge_of(server),
            cache=tmp_path / "c.sqlite",
            prices={"judge-model": (1.0, 10.0, 0.3, 3.0)},
            progress=False,
            batch=True,
            batch_poll_s=POLL,
        )
    assert res.meta["usage"]["cost"] == pytest.approx(2 * (100 * 0.3 + 4 * 3.0) / 1000)


def test_batch_discount_is_the_share_of_the_price_a_batched_call_saves(tmp_path: Path) -> None:
    with FakeBatchServer(verdict, delay=0) as server:
        res = nbeval.evaluate(
            ROWS[:2],
            ["safety"],
            judge=judge_of(server),
            cache=tmp_path / "c.sqlite",
            prices={"judge-model": (1.0, 10.0)},
            progress=False,
            batch=True,
            batch_discount=0.25,
        )
    assert res.meta["usage"]["cost"] == pytest.approx(0.75 * 2 * (100 * 1.0 + 4 * 10.0) / 1000)


def test_batch_poll_s_is_how_long_the_run_waits_between_polls(tmp_path: Path) -> None:
    with FakeBatchServer(verdict, delay=0.6) as server:

        def polls(rows: list[dict[str, Any]], cache: str, poll_s: float) -> int:
            """How many times a batched run of ``rows`` polled its batch."""
            server.polls.clear()
            judge = judge_of(server)
            nbeval.evaluate(
                rows, ["safety"], judge=judge, cache=tmp_path / cache, progress=False, batch=True, batch_poll_s=poll_s
            )
            return len(server.polls)

        often = polls(ROWS[:1], "a.sqlite", 0.02)
        seldom = polls(ROWS[1:2], "b.sqlite", 0.5)
    # at once, then after 0.02 s, growing by half each time; or at once, after 0.5 s and 0.75 s more
    assert often >= 6 and seldom <= 3


def test_the_status_reports_the_batchs_state_and_counts(tmp_path: Path) -> None:
    seen: list[str] = []
    with FakeBatchServer(lambda rec: f"echo {rec.last_content}", delay=0.4) as server:
        client = ChatClient(OpenAIChat("m", base_url=server.url, api_key="sk-test"), cache=tmp_path / "c.sqlite")
        out = run_batch(client, ["a", "b", "c"], options=BatchOptions(poll_s=0.05, on_status=seen.append))
    assert [r.text for r in out] == ["echo a", "echo b", "echo c"]  # type: ignore[union-attr]
    assert any("in_progress" in s and "/3 done" in s for s in seen)
    assert "batch batch_fake0001: completed, 3/3 done" in seen[-1]


def test_the_progress_bar_shows_the_batch(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with FakeBatchServer(verdict, delay=0.3) as server:
        nbeval.evaluate(
            ROWS[:2], ["safety"], judge=judge_of(server), cache=tmp_path / "c.sqlite", batch=True, batch_poll_s=POLL
        )
    err = capfd.readouterr().err
    assert "batch batch_fake0001: in_progress" in err


def test_collect_through_the_batch_api_equals_collect_one_by_one(tmp_path: Path) -> None:
    from tests.chat.test_collect import make_suite

    def reply(rec: Recorded) -> str:
        return f"{rec.body['model'] if rec.body else ''}: {rec.last_content}"

    with FakeBatchServer(reply, delay=0.2) as server:
        models = {
            "alpha": OpenAIChat("alpha", base_url=server.url, api_key="sk-test"),
            "beta": OpenAIChat("beta", base_url=server.url, api_key="sk-test"),
        }
        plain = nbeval.collect(make_suite(), models, cache=tmp_path / "a.sqlite", system_prompt="Be brief.")
        one_by_one = plain.complete(progress=False)
        pending = nbeval.collect(
            make_suite(), models, cache=tmp_path / "b.sqlite", system_prompt="Be brief.", batch=True, batch_poll_s=0.05
        )
        by_batch = pending.complete(progress=False)
    assert server.batch_creates == 2  # one per model, sent together
    assert canonical(server.batch_bodies()) == canonical([r.body for r in server.requests])
    answers = [(r.model_key, r.key, r.actual_output, r.error) for r in by_batch.dataset]
    assert answers == [(r.model_key, r.key, r.actual_output, r.error) for r in one_by_one.dataset]
    assert all(a[2] for a in answers)


def test_ragas_faithfulness_takes_one_batch_per_round(tmp_path: Path) -> None:
    pytest.importorskip("ragas")
    from nbeval.evaluators.ragas.standin import standin_reply

    row = {
        "key": "k",
        "input": "Tell me about Marie Curie.",
        "actual_output": "Marie Curie won two Nobel Prizes. She was born in Paris.",
        "context": ["Curie was born in Warsaw.", "Curie won Nobel Prizes in physics and chemistry."],
    }
    with FakeBatchServer(lambda rec: standin_reply(rec.messages), delay=0.1) as server:
        judge = judge_of(server)
        sync = nbeval.evaluate([row], ["faithfulness"], judge=judge, cache=False, progress=False)
        asked = server.request_count
        in_batches = nbeval.evaluate(
            [row],
            ["faithfulness"],
            judge=judge,
            cache=tmp_path / "c.sqlite",
            progress=False,
            batch=True,
            batch_poll_s=POLL,
        )
    assert asked >= 2 and server.batch_creates == asked  # statements, then verdicts: a batch each
    assert canonical(server.batch_bodies()) == canonical([r.body for r in server.requests])
    pd.testing.assert_frame_equal(table(in_batches), table(sync))
    assert table(sync)["value"].tolist() == ["0.5"]
