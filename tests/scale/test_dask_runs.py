"""Runs partitioned across a 2-process LocalCluster on loopback: the same result as a local run,
one judge concurrency limit per model for the whole cluster, the reply cache written by the client, Cancel,
and partitions that move between workers after the evaluators were used there."""

from __future__ import annotations

import gc
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.chat.cache import ChatCache

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import this test module

pytestmark = pytest.mark.slow

CITIES = ("Paris", "Lyon", "Rome", "Oslo")


def _records(cases: int) -> list[dict[str, Any]]:
    out = []
    for m, model in enumerate(("m1", "m2", "m3")):
        for i in range(cases):
            city = CITIES[i % 4]
            expected = f"The city in case {i} is {city}."
            answer = expected if (i + m) % 3 else f"Maybe {CITIES[(i + 1) % 4]}, I think."
            out.append(
                {
                    "key": f"k{i}",
                    "model_key": model,
                    "input": f"Which city in case {i}?",
                    "expected_output": None if i == 7 else expected,
                    "actual_output": answer,
                    "output_condition": f'"{city}" AND NOT "Maybe"',
                }
            )
    return out


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    gc.collect()  # earlier tests' garbage is finalized here, not on the client's event loop thread
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        c.wait_for_workers(2, timeout=120)  # the partition counts below are for two workers
        yield c


def test_a_cluster_run_equals_a_local_run_row_for_row(client: Any) -> None:
    recs = _records(100)  # 300 rows; case k7 has no expected output (skipped), rouge stops at 60 rows per model
    evaluators = ["exact_match", "text_matching", ("rouge", {"max_rows": 60})]
    local = nbeval.evaluate(recs, evaluators, progress=False, chunk_rows=16)
    seen: list[tuple[int, int]] = []
    on_cluster = nbeval.evaluate(
        recs,
        evaluators,
        progress=False,
        chunk_rows=16,
        scheduler=client,
        on_progress=lambda live, done, total: seen.append((done, total)),
    )
    pd.testing.assert_frame_equal(on_cluster.scores, local.scores)
    pd.testing.assert_frame_equal(on_cluster.aggregates, local.aggregates)
    pd.testing.assert_frame_equal(on_cluster.problems, local.problems)
    assert on_cluster.explanations == local.explanations and on_cluster.meta["cancelled"] is False
    # 300 rows in partitions of 32 (a whole number of 16-row chunks): progress after each one
    dones = [d for d, _ in seen]
    assert len(seen) == 10 and dones == sorted(set(dones)) and seen[-1] == (900, 900)
    by_address = nbeval.evaluate(recs[:30], ["exact_match"], progress=False, scheduler=client.scheduler.address)
    pd.testing.assert_frame_equal(by_address.scores, nbeval.evaluate(recs[:30], ["exact_match"], progress=False).scores)


def _logging_judge(log_path: Path, pause: float) -> Callable[[str], str]:
    """A judge that logs when each call starts and ends. The pause is the point: a call that
    lasts makes two calls at once show up in the log if the cluster-wide limit failed; with the
    limit, the log never shows an overlap however the processes are scheduled."""
    log = str(log_path)  # text, not a Path: a Path fills cached slots when used, which changes the cache identity

    def judge(prompt: str) -> str:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"start {time.time()}\n")
        time.sleep(pause)
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"end {time.time()}\n")
        return "Rating: yes\nThe answer is safe."

    return judge


def _most_at_once(log: Path) -> int:
    events = sorted(
        (float(t), 1 if kind == "start" else -1)
        for kind, t in (line.split() for line in log.read_text(encoding="utf-8").splitlines())
    )
    now = most = 0
    for _, step in events:
        now += step
        most = max(most, now)
    return most


def test_judge_calls_share_one_limit_and_the_client_caches_the_replies(client: Any, tmp_path: Path) -> None:
    log, cache = tmp_path / "calls.log", tmp_path / "replies.sqlite"
    recs = _records(8)[:16]  # 8 cases of m1, 8 of m2
    judge = _logging_judge(log, 0.15)
    res = nbeval.evaluate(
        recs, ["safety"], judge=judge, concurrency=1, cache=str(cache), chunk_rows=2, progress=False, scheduler=client
    )
    distinct = len({(r["input"], r["actual_output"]) for r in recs})  # what the safety prompt shows the judge
    calls = log.read_text(encoding="utf-8").count("start")
    assert distinct == 13 and distinct <= calls <= 16  # two workers may both ask a prompt neither has cached
    assert res.meta["usage"]["calls"] == 16  # answered requests, cache hits included
    assert _most_at_once(log) == 1  # 2 workers x 2 threads, yet never two calls at once
    assert len(ChatCache(cache)) == distinct  # written by the client from what the workers sent back
    again = nbeval.evaluate(recs, ["safety"], judge=_logging_judge(log, 0.15), cache=str(cache), progress=False)
    assert log.read_text(encoding="utf-8").count("start") == calls  # every reply came from the cache
    pd.testing.assert_frame_equal(again.scores.drop(columns="details"), res.scores.drop(columns="details"))
    assert all('"cached_calls": 1' in d for d in again.scores["details"])  # the details say where replies came from


def _merged_log(*logs: Path, into: Path) -> Path:
    into.write_text("".join(log.read_text(encoding="utf-8") for log in logs), encoding="utf-8")
    return into


def test_each_judge_model_has_its_own_cluster_wide_limit(client: Any, tmp_path: Path) -> None:
    # As in a local run (one client, one limit, per model): two judge models with concurrency=1
    # each make one call at a time across the cluster, but not one call at a time between them.
    log_a, log_b = tmp_path / "a.log", tmp_path / "b.log"
    recs = _records(12)[:24]
    res = nbeval.evaluate(
        recs,
        [
            ("safety", {"judge": _logging_judge(log_a, 0.1)}),
            ("relevance_to_query", {"judge": _logging_judge(log_b, 0.1)}),
        ],
        concurrency=1,
        cache=False,
        chunk_rows=4,
        progress=False,
        scheduler=client,
    )
    assert res.meta["usage"]["calls"] == 48
    assert _most_at_once(log_a) == 1 and _most_at_once(log_b) == 1  # 2 workers x 2 threads, one call per model
    # one limit for the whole run would never let a call to one model overlap a call to the other
    assert _most_at_once(_merged_log(log_a, log_b, into=tmp_path / "both.log")) == 2


def test_a_429_holds_every_workers_calls_to_that_model(client: Any) -> None:
    # The first call gets "429, retry after 2 s": once the worker that got it has read it, every
    # worker must hold its calls to that model until the 2 s are over. Without that the other
    # worker would go on calling (40 calls of 0.1 s on two slots take about 2 s), finding the
    # limit with a 429 of its own.
    from tests.support.fake_openai import FakeOpenAIServer, Recorded, rate_limited

    arrived: list[float] = []

    def reply(rec: Recorded) -> Any:
        arrived.append(time.time())
        return rate_limited(2) if len(arrived) == 1 else "ok"

    with FakeOpenAIServer(latency=0.1, reply=reply) as server:
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-judge-test-key-123456"}
        res = nbeval.evaluate(
            _records(20)[:40],
            ["safety"],
            judge=judge,
            concurrency=2,
            cache=False,
            chunk_rows=4,
            progress=False,
            scheduler=client,
        )
    assert res.meta["usage"]["calls"] == 40  # the call told to wait was tried again, and answered
    assert not res.scores["error"].str.contains("429|rate limit", na=False).any()
    [(_, ends)] = client.get_metadata(["nbeval-cool-down"]).values()  # what the worker told the others
    told, until = ends - 2.0, ends
    # calls already on their way, or sent before a worker's next look (every 0.1 s), may start just
    # after it was told; then none until the wait is over, and the rest after it
    assert not [round(t - told, 2) for t in arrived if told + 0.3 <= t < until - 0.05]
    assert arrived[-1] >= until


def test_cancel_stops_the_cluster_run_and_marks_the_rest(client: Any, tmp_path: Path) -> None:
    recs = _records(40)[:80]
    stop = threading.Event()
    log = tmp_path / "log"
    res = nbeval.evaluate(
        recs,
        ["safety"],
        judge=_logging_judge(log, 0.05),
        cache=False,
        chunk_rows=2,
        concurrency=2,
        progress=False,
        scheduler=client,
        cancel=stop,
        on_progress=lambda *_: stop.set(),
    )
    assert log.read_text(encoding="utf-8").count("start") < 80  # stopped before every call was made
    s = res.scores
    primary = s[s["metric"] == res.primary_metric("safety")]
    assert res.meta["cancelled"] is True and len(primary) == 80  # every row is in the table, scored or not
    cancelled = primary["skip_reason"].eq("cancelled").fillna(False)
    assert 0 < cancelled.sum() < 80 and (~primary["skipped"]).sum() == 80 - cancelled.sum()


def test_cli_run_scores_on_the_scheduler_it_names(client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json as _json

    from nbeval.cli import main
    from nbeval.engine import dask_parts, dask_run

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(_json.dumps(r) + "\n" for r in _records(10)), encoding="utf-8")
    seen: list[Any] = []
    real = dask_run.connect

    def connect(scheduler, **kw):
        seen.append(scheduler)
        return real(scheduler, **kw)

    monkeypatch.setattr(dask_run, "connect", connect)
    monkeypatch.setattr(dask_parts, "connect", connect)
    out, run_dir = tmp_path / "out", tmp_path / "run"
    address = client.scheduler.address
    argv = ["run", str(data), "-e", "exact_match,rouge", "--out", str(out), "--scheduler", address]
    assert main([*argv, "--run-dir", str(run_dir), "--no-progress"]) == 0
    assert seen == [address]  # the run went to the cluster, by its address
    assert list((run_dir / "parts").glob("p-*/scores.parquet"))  # the workers wrote the parts where it says
    local = nbeval.evaluate(str(data), ["exact_match", "rouge"], progress=False)
    pd.testing.assert_frame_equal(nbeval.load_result(out).scores, local.scores)


@pytest.mark.timeout(150)  # it used to wait for ever: fail in good time instead
def test_partitions_move_between_workers_after_the_evaluators_were_used(client: Any) -> None:
    """The Active Memory Manager drops a worker's copy of what the run sent when no task there is
    waiting for it; the worker's next partition fetches it from another worker, which has used
    the evaluators by then. A used ``rouge`` did not pickle (it does since issue 35): the fetch
    failed inside Dask and the partition waited for ever. The run sends its evaluators pickled
    once, as bytes, so any worker can hand them on. Here the Manager runs after every partition instead of every 2 s."""
    recs = _records(40)
    local = nbeval.evaluate(recs, ["rouge"], chunk_rows=2, progress=False)
    res = nbeval.evaluate(
        recs, ["rouge"], chunk_rows=2, progress=False, scheduler=client, on_progress=lambda *_: client.amm.run_once()
    )
    pd.testing.assert_frame_equal(res.scores, local.scores)
