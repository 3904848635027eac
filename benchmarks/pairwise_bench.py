"""Head-to-head throughput and rating-fit benchmark (prints its figures; exit 1 if a target is missed).

``models`` models answer ``cases`` test cases; ``pairwise`` asks every pair of every case in both
orders (``2 x models·(models−1)/2 x cases`` calls) of the fake OpenAI-compatible server, which
answers after ``latency`` seconds with the longer answer as the winner (and the first one on a
fifth of the calls, a position-biased judge). Targets (issue 29):

1. wall time / (calls x latency / concurrency)   target <= 1.25 (1.0 is perfect overlap)
2. the rating fit and a 1,000-resample bootstrap (``result.arena()`` + ``head_to_head()`` +
   ``position_bias()``)                           target < 10 s

The issue's size is 10 models x 500 cases (45,000 calls, 562 s at 100 ms and concurrency 8);
the default here is 10 x 40 (3,600 calls, 45 s), the same rounds per case at a size a session
can wait for; ``--cases 500`` runs the full one. A warm-up run pays the one-time costs first. The
fake server runs in this process and competes with the client for the GIL: pessimistic figures.

    python benchmarks/pairwise_bench.py [--models 10] [--cases 40] [--latency 0.1] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import nbeval
from tests.support.fake_openai import FakeOpenAIServer, Recorded

_BLOCK = re.compile(r"<answer_a>\n(.*?)\n</answer_a>.*<answer_b>\n(.*?)\n</answer_b>", re.DOTALL)


def judge_reply(rec: Recorded) -> str:
    found = _BLOCK.search(rec.last_content)
    assert found, "no answers in the prompt"
    a, b = found.groups()
    winner = "A" if len(a) > len(b) else "B" if len(b) > len(a) else "tie"
    if hash(rec.last_content) % 5 == 0:
        winner = "A"  # a judge that sometimes just takes the first answer
    return json.dumps({"rationale": f"{len(a)} against {len(b)} characters", "winner": winner})


def records(models: int, cases: int) -> list[dict[str, Any]]:
    return [
        {
            "key": f"case-{c}",
            "model_key": f"model-{m}",
            "input": f"question {c}",
            "actual_output": "x" * (10 + 3 * m + (c * 7 + m) % 11),
        }
        for c in range(cases)
        for m in range(models)
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, default=10)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    calls = args.models * (args.models - 1) * args.cases
    with FakeOpenAIServer(judge_reply, latency=args.latency) as server:
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-bench-123456"}
        kw: dict[str, Any] = {"judge": judge, "progress": False, "cache": False, "concurrency": args.concurrency}
        nbeval.evaluate(records(3, 1), ["pairwise"], **kw)  # warm-up
        server.reset()
        started = time.perf_counter()
        result = nbeval.evaluate(records(args.models, args.cases), ["pairwise"], **kw)
        took = time.perf_counter() - started
        made = server.request_count
    ideal = calls * args.latency / args.concurrency
    ratio = took / ideal
    print(
        f"{args.models} models x {args.cases} cases: {made:,} judge calls (expected {calls:,}) in {took:.1f} s; "
        f"ideal {ideal:.1f} s; ratio {ratio:.2f} (target <= 1.25)"
    )
    started = time.perf_counter()
    arena = result.arena()
    result.head_to_head()
    bias = result.position_bias()
    fit = time.perf_counter() - started
    print(f"rating fit + 1,000-resample bootstrap + three tables: {fit:.2f} s (target < 10 s)")
    print(arena.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
    print(bias.to_string(index=False, float_format=lambda x: f"{x:.3f}"))
    return 0 if made == calls and ratio <= 1.25 and fit < 10 else 1


if __name__ == "__main__":
    sys.exit(main())
