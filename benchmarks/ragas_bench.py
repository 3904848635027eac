"""RAGAS family throughput and cache benchmark (prints its figures; exit 1 if a target is missed).

300 rows through the six RAGAS-family evaluators (faithfulness, answer_relevancy,
context_precision, context_recall, answer_correctness, ragas) against the fake OpenAI-compatible
server with 100 ms of latency per call and concurrency 8. The server answers ragas's prompts with
the rule-based stand-in judge; embeddings come from the default embedder (the packaged MiniLM).

1. wall time / (requests x 0.1 s / 8)     target <= 1.3 (1.0 is perfect overlap of the calls)
2. requests made by a second identical run target 0 (everything comes from the cache)
3. ``import nbeval`` in a fresh interpreter: seconds, and ragas / instructor not imported

``requests`` counts what the server received: identical calls of two evaluators (``ragas`` repeats
the other four's) are sent once. The wall time includes everything nbeval does around the calls:
driving ragas's code, parsing, embedding, building the result. A two-row warm-up run first pays
the one-time costs (importing ragas, loading the embedder). The fake server runs in this process
and competes with the client for the GIL, so the figures are pessimistic.

    python benchmarks/ragas_bench.py [--rows 300] [--latency 0.1] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EVALUATORS = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "answer_correctness", "ragas"]
TOPICS = ["Paris", "the Nile", "Mount Fuji", "the Danube", "Jupiter", "the Amazon", "Everest", "Saturn"]


def rows(n: int) -> list[dict[str, Any]]:
    out = []
    for i in range(n):
        t = TOPICS[i % len(TOPICS)]
        out.append(
            {
                "key": f"case-{i}",
                "model_key": "model-a",
                "input": f"Question {i}: what should a visitor know about {t}?",
                "expected_output": f"{t} is famous in case {i}. Visitors to {t} come in spring.",
                "actual_output": f"{t} is famous in case {i}. It is visited by {i % 7 + 2} million people. "
                f"Spring is the best season for {t}.",
                "context": [
                    f"{t} is famous in case {i} and draws visitors.",
                    f"Most visitors to {t} come in spring.",
                    f"Case {i} has nothing to do with {t} prices.",
                ],
            }
        )
    return out


def import_cost() -> tuple[float, str]:
    code = (
        "import time, sys; t = time.perf_counter(); import nbeval; d = time.perf_counter() - t; "
        "print(d, ' '.join(m for m in ('ragas', 'instructor', 'langchain_core') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    seconds, _, loaded = out.stdout.strip().partition(" ")
    return float(seconds), loaded.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--latency", type=float, default=0.1)
    ap.add_argument("--concurrency", type=int, default=8)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import nbeval
    from nbeval.evaluators.ragas.standin import standin_reply
    from tests.support.fake_openai import FakeOpenAIServer

    data = rows(args.rows)
    ok = True
    with (
        tempfile.TemporaryDirectory() as tmp,
        FakeOpenAIServer(lambda rec: standin_reply(rec.messages), latency=args.latency) as server,
    ):
        judge = {"model": "bench-judge", "base_url": server.url, "api_key": "sk-bench-not-a-real-key"}

        def run(cache: Path | bool) -> tuple[Any, float]:
            start = time.perf_counter()
            res = nbeval.evaluate(
                data, EVALUATORS, judge=judge, concurrency=args.concurrency, cache=cache, progress=False
            )
            return res, time.perf_counter() - start

        nbeval.evaluate(rows(2), EVALUATORS, judge=judge, cache=False, progress=False)  # warm-up
        server.reset()
        res, wall = run(Path(tmp) / "cache")
        requests = server.request_count
        ideal = requests * args.latency / args.concurrency
        ratio = wall / ideal
        primary = res.scores[res.scores["metric"].isin(EVALUATORS)]
        scored = int(primary["value"].notna().sum())
        print(
            f"run 1: {args.rows} rows x {len(EVALUATORS)} evaluators, {requests} requests "
            f"({requests / args.rows:.1f} per row), wall {wall:.2f} s, ideal {ideal:.2f} s, "
            f"ratio {ratio:.3f} (target <= 1.3), max in flight {server.max_in_flight}, "
            f"{scored} of {len(primary)} primary values"
        )
        ok &= ratio <= 1.3 and scored == len(primary)

        before = server.request_count
        res2, wall2 = run(Path(tmp) / "cache")
        again = server.request_count - before
        same = res2.scores["value"].equals(res.scores["value"])
        print(f"run 2 (same cache): {again} requests (target 0), wall {wall2:.2f} s, same values: {same}")
        ok &= again == 0 and same

    seconds, loaded = import_cost()
    print(f"import nbeval: {seconds:.3f} s; heavy modules loaded: {loaded or 'none'}")
    ok &= not loaded
    print("all targets met" if ok else "A TARGET WAS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
