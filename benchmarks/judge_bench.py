"""Judge throughput, cache and resilience benchmark (prints its figures; exit 1 if a target is missed).

300 rows x 3 judge evaluators (900 calls) against the fake OpenAI-compatible server with 100 ms of
latency per call and concurrency 8:

1. wall time / (calls x 0.1 s / 8)            target <= 1.25 (1.0 is perfect overlap)
2. requests made by a second identical run     target 0 (everything comes from the cache)
3. a fresh run where 10% of calls fail once with a 500 or a 429 (Retry-After: 1 s): every row
   must still be scored.

A two-row warm-up run first pays the one-time costs (importing openai and pandas, opening the
connection pool), so the figures measure throughput, not interpreter start-up. The fake server
runs in this process, so it competes with the client for the GIL: the figures are pessimistic.

    python benchmarks/judge_bench.py [--rows 300] [--latency 0.1] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EVALUATORS = ["safety", "correctness", "relevance_to_query"]


def rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "key": f"case-{i}",
            "input": f"Question number {i}: what is {i} plus {i}?",
            "expected_output": str(2 * i),
            "actual_output": f"The sum is {2 * i}.",
        }
        for i in range(n)
    ]


def flaky_reply(share: float) -> Any:
    """A reply function failing once (500 or 429) for about ``share`` of the distinct requests."""
    from tests.support.fake_openai import Recorded, Status, rate_limited

    seen: set[str] = set()
    lock = threading.Lock()
    counts = {"500": 0, "429": 0}

    def reply(rec: Recorded) -> Any:
        ident = hashlib.sha256(repr(rec.messages).encode()).digest()
        with lock:
            first = ident not in seen
            seen.add(ident)
        if first and ident[0] < 256 * share:
            kind = "429" if ident[1] % 2 else "500"
            counts[kind] += 1
            return rate_limited("1") if kind == "429" else Status(500, "simulated outage")
        return "Rationale: fine.\nRating: yes"

    reply.counts = counts  # type: ignore[attr-defined]
    return reply


def scored_everything(result: Any, n_rows: int) -> bool:
    s = result.scores
    primary = s[s["metric"].isin(EVALUATORS)]
    return len(primary) == n_rows * len(EVALUATORS) and primary["value"].notna().all() and not primary["skipped"].any()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args(argv)

    import nbeval
    from tests.support.fake_openai import FakeOpenAIServer

    data = rows(args.rows)
    calls = args.rows * len(EVALUATORS)
    ideal = calls * args.latency / args.concurrency
    ok = True
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeOpenAIServer("Rationale: fine.\nRating: yes", latency=args.latency) as server,
    ):
        os.environ["NBEVAL_CACHE_DIR"] = tmp
        judge = {"model": "bench-judge", "base_url": server.url, "api_key": "sk-bench-not-a-real-key"}

        def run(cache: Path) -> tuple[Any, float]:
            start = time.perf_counter()
            res = nbeval.evaluate(
                data, EVALUATORS, judge=judge, concurrency=args.concurrency, cache=cache, progress=False
            )
            return res, time.perf_counter() - start

        nbeval.evaluate(rows(2), EVALUATORS, judge=judge, cache=False, progress=False)  # warm-up
        server.reset()
        res, wall = run(Path(tmp) / "first.sqlite")
        ratio = wall / ideal
        print(
            f"run 1: {calls} calls, {server.request_count} requests, wall {wall:.2f} s, "
            f"ideal {ideal:.2f} s, ratio {ratio:.3f} (target <= 1.25), max in flight {server.max_in_flight}"
        )
        ok &= ratio <= 1.25 and scored_everything(res, args.rows)

        before = server.request_count
        res2, wall2 = run(Path(tmp) / "first.sqlite")
        again = server.request_count - before
        print(
            f"run 2 (same cache): {again} requests (target 0), wall {wall2:.2f} s, "
            f"cached calls {res2.meta['usage'].get('cached_calls')}"
        )
        ok &= again == 0 and scored_everything(res2, args.rows)

        reply = flaky_reply(0.10)
        server.reply = reply
        before = server.request_count
        res3, wall3 = run(Path(tmp) / "flaky.sqlite")
        made = server.request_count - before
        complete = scored_everything(res3, args.rows)
        print(
            f"run 3 (10% fail once): {reply.counts['500']} x 500 and {reply.counts['429']} x 429 injected, "
            f"{made} requests for {calls} calls, wall {wall3:.2f} s, every row scored: {complete}"
        )
        ok &= complete and made == calls + reply.counts["500"] + reply.counts["429"]
    print("all targets met" if ok else "A TARGET WAS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
