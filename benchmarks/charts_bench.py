"""Benchmark of the notebook kit's charts (a script, not a test).

    .venv/bin/python benchmarks/charts_bench.py                 # 1,000 cases x 5 models, then 100,000 rows
    .venv/bin/python benchmarks/charts_bench.py --cases 2000    # another size for the first part

Part 1 runs ``exact_match`` and ``text_matching`` through ``nbeval.evaluate`` on ``--cases`` test
cases answered by 5 models, then times each chart: building it (``build``) and turning it into
a validated Vega-Lite dict (``to_dict``), the best of ``--repeat`` runs. The target is a heatmap
of 1,000 cases x 5 models in under 1 s. Part 2 evaluates 20,000 cases x 5 models with ``exact_match``
(100,000 score rows) and checks every chart inlines at most 5,000 rows per dataset (no ``MaxRowsError``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbeval
from nbeval.widgets import display
from nbeval.widgets.charts import distribution_chart, heatmap, leaderboard_chart, pass_fail_chart

WORDS = [
    "the",
    "a",
    "river",
    "city",
    "train",
    "station",
    "capital",
    "north",
    "south",
    "ticket",
    "fare",
    "route",
    "line",
    "delay",
]


def make_records(n_cases: int, n_models: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for i in range(n_cases):
        expected = " ".join(rng.choices(WORDS, k=6))
        prompt = f"Question {i}: " + " ".join(rng.choices(WORDS, k=rng.randint(5, 40)))
        for m in range(n_models):
            answer = expected if rng.random() < 0.3 + 0.1 * m else " ".join(rng.choices(WORDS, k=6))
            if rng.random() < 0.02:
                answer = None  # an answer that was never collected: a skipped cell
            records.append(
                {
                    "key": f"case-{i}",
                    "input": prompt,
                    "expected_output": expected,
                    "output_condition": f'"{expected.split()[0]}"',
                    "actual_output": answer,
                    "error": "timeout" if answer is None else None,
                    "model_key": f"model-{m}",
                }
            )
    return records


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def inlined_rows(spec: dict) -> int:
    """Rows of the largest inlined dataset (Altair's limit applies per dataset)."""
    return max(len(v) for v in spec.get("datasets", {}).values())


def time_charts(result: nbeval.EvaluationResult, repeat: int) -> None:
    cases = {
        "leaderboard": lambda: leaderboard_chart(result, "exact_match"),
        "heatmap by case": lambda: heatmap(result, "exact_match"),
        "heatmap by metric": lambda: heatmap(result, by="metric"),
        "pass/fail": lambda: pass_fail_chart(result, "text_matching"),
        "distribution (box)": lambda: distribution_chart(result, "exact_match"),
        "distribution (hist)": lambda: distribution_chart(result, "exact_match", kind="hist"),
    }
    print(f"{'chart':<22}{'build s':>10}{'to_dict s':>11}{'total s':>10}{'max rows':>14}{'spec KB':>10}")
    for name, make in cases.items():
        build, chart = best_of(repeat, make)
        to_dict, spec = best_of(repeat, chart.to_dict)
        total, _ = best_of(repeat, lambda make=make: make().to_dict())
        size = len(json.dumps(spec)) / 1024
        print(f"{name:<22}{build:>10.3f}{to_dict:>11.3f}{total:>10.3f}{inlined_rows(spec):>14,}{size:>10.0f}")
    t, _ = best_of(repeat, lambda: display.result_mimebundle(result, widget=False))
    print(f"{'result mimebundle':<22}{'':>10}{'':>11}{t:>10.3f}   (text + HTML summary + static SVG leaderboard)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--models", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    records = make_records(args.cases, args.models)
    t = time.perf_counter()
    result = nbeval.evaluate(records, ["exact_match", "text_matching"], progress=False)
    print(
        f"part 1: {args.cases:,} cases x {args.models} models, {len(result.scores):,} score rows "
        f"(evaluated in {time.perf_counter() - t:.1f} s)"
    )
    display.result_mimebundle(result, widget=False)  # warm vl-convert once
    time_charts(result, args.repeat)

    t = time.perf_counter()
    big = nbeval.evaluate(make_records(20_000, 5), ["exact_match"], progress=False)
    print(
        f"\npart 2: {len(big.scores):,} score rows (20,000 cases x 5 models, exact_match; "
        f"evaluated in {time.perf_counter() - t:.1f} s)"
    )
    charts = {
        "leaderboard": leaderboard_chart(big),
        "heatmap by case": heatmap(big),
        "heatmap by metric": heatmap(big, by="metric"),
        "pass/fail": pass_fail_chart(big, "exact_match"),
        "distribution (box)": distribution_chart(big),
        "distribution (hist)": distribution_chart(big, kind="hist"),
    }
    for name, chart in charts.items():
        t = time.perf_counter()
        spec = chart.to_dict()
        print(f"{name:<22} {inlined_rows(spec):>6,} rows inlined, to_dict {time.perf_counter() - t:.3f} s")
    print("heatmap subtitle:", heatmap(big).to_dict()["title"]["subtitle"][0])


if __name__ == "__main__":
    main()
