"""Benchmark of the engine's live view (a script, not a test).

    .venv/bin/python benchmarks/engine_bench.py                 # 25,000 and 100,000 rows
    .venv/bin/python benchmarks/engine_bench.py --sizes 10000   # other sizes (rows, all models)

It builds a dataset of ``n / 2`` test cases answered by 2 models and runs ``exact_match`` (cheap
and deterministic, so the engine's own cost dominates) through :func:`nbeval.evaluate` with
``chunk_rows=256``, three ways:

* without ``on_progress``;
* with an ``on_progress`` that reads the running leaderboard after every chunk: each model's
  running ``exact_match`` aggregate through ``live.value(...)`` (what a progress line shows);
* with an ``on_progress`` that, like the notebook's RunPanel, builds the full partial result
  (``live.result()``) when the panel's own ``RedrawThrottle`` allows: at most every ``--refresh``
  seconds (0.5 s, the panel's default) and no sooner than four times the last build's cost.

Printed per size: the best of ``--repeat`` times for each way, microseconds per row, and the
ratio of each callback run to the run without one. Targets: with a callback / without at most
1.3, and the time per row at the largest size within 1.3x of the smallest (the live view is
linear in the run's size: before it was fed incrementally, every chunk rebuilt the whole
partial result, which is quadratic).
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

import nbeval
from nbeval.data.model import LlmDataset

MODELS = ("model-a", "model-b")


def dataset(rows: int) -> LlmDataset:
    cases = rows // len(MODELS)
    records = [
        {
            "key": f"case-{i}",
            "input": f"What is {i} plus {i}?",
            "expected_output": str(2 * i),
            "actual_output": str(2 * i if (i * (m + 3)) % 7 else i),
            "model_key": model,
        }
        for m, model in enumerate(MODELS)
        for i in range(cases)
    ]
    return LlmDataset.from_records(records)


def timed(ds: LlmDataset, on_progress: Callable[..., None] | None, chunk_rows: int) -> tuple[float, Any]:
    gc.collect()
    started = time.perf_counter()
    result = nbeval.evaluate(ds, ["exact_match"], progress=False, on_progress=on_progress, chunk_rows=chunk_rows)
    return time.perf_counter() - started, result


def running_leaderboard() -> tuple[Callable[..., None], list[Any]]:
    seen: list[Any] = []

    def on_progress(live: Any, done: int, total: int) -> None:
        seen[:] = [(done, total), *(live.value("exact_match", m) for m in MODELS)]

    return on_progress, seen


def panel_like(refresh: float) -> tuple[Callable[..., None], list[Any]]:
    from nbeval.widgets.run_panel import RedrawThrottle  # the RunPanel's own rule for when to redraw

    throttle = RedrawThrottle(refresh)

    def on_progress(live: Any, done: int, total: int) -> None:
        if throttle.due():
            started = time.monotonic()
            live.result().leaderboard("exact_match")
            throttle.done(time.monotonic() - started)

    return on_progress, [throttle]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[25_000, 100_000], help="rows (cases x 2 models)")
    parser.add_argument("--chunk-rows", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each way; the best time is kept")
    parser.add_argument("--refresh", type=float, default=0.5, help="seconds between the panel-like full builds")
    args = parser.parse_args()

    nbeval.evaluate(dataset(1000), ["exact_match"], progress=False)  # imports and registry, once
    per_row: dict[str, dict[int, float]] = {}
    print(f"exact_match, {len(MODELS)} models, chunk_rows={args.chunk_rows}, best of {args.repeat}")
    print(f"{'rows':>9} {'way':<34} {'seconds':>8} {'us/row':>8} {'ratio':>6}")
    for rows in args.sizes:
        ds = dataset(rows)
        base = min(timed(ds, None, args.chunk_rows)[0] for _ in range(args.repeat))
        per_row.setdefault("no callback", {})[rows] = base / rows
        print(f"{rows:>9,} {'no callback':<34} {base:>8.3f} {base / rows * 1e6:>8.2f} {'':>6}")
        ways: list[tuple[str, Callable[[], tuple[Callable[..., None], list[Any]]]]] = [
            ("callback: running leaderboard", running_leaderboard),
            (f"callback: full result every {args.refresh:g} s", lambda: panel_like(args.refresh)),
        ]
        for name, make in ways:
            best, last = float("inf"), None
            for _ in range(args.repeat):
                callback, seen = make()
                t, result = timed(ds, callback, args.chunk_rows)
                best, last = min(best, t), seen
            assert result.aggregates["N"].sum() == rows and last
            per_row.setdefault(name, {})[rows] = best / rows
            print(f"{rows:>9,} {name:<34} {best:>8.3f} {best / rows * 1e6:>8.2f} {best / base:>6.2f}")
    small, large = min(args.sizes), max(args.sizes)
    if small != large:
        print(f"time per row at {large:,} rows / at {small:,} rows:")
        for name, times in per_row.items():
            print(f"  {name:<34} {times[large] / times[small]:.2f}x")


if __name__ == "__main__":
    main()
