"""Benchmark of the arena fit's memory and time at many models (issue 43, point 20).

    .venv/bin/python benchmarks/arena_memory_bench.py                       # 100, 200, 500 models
    .venv/bin/python benchmarks/arena_memory_bench.py --models 500 --resamples 1000

Each size runs in a fresh Python process, which builds arena-style verdicts (``--cases`` test
cases, each comparing ``--per-model`` × models random ordered pairs of models with evenly spaced
strengths, one judge) and times ``fit_arena`` with ``--resamples`` bootstrap refits (1,000 is
what ``result.arena()`` and printing a result use). It prints the fit's time, the peak of the
memory NumPy and Python allocated during the fit (``tracemalloc``), and the process's peak
resident memory. The target: 500 models under 2 GB; exit 1 if it is missed. Before issue 43 the
Hessian was built from a per-cell outer product (cells × parameters², about models⁴): about
862 MB at 100 models and 14 GB at 200.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_BYTES = 2 * 1024**3


def one(n_models: int, n_cases: int, per_model: int, resamples: int, seed: int) -> dict[str, float]:
    """Fit one size in this process and measure it."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from nbeval.results.statistics.arena import Verdict, fit_arena

    rng = np.random.default_rng(seed)
    strength = np.linspace(-1.5, 1.5, n_models)
    names = [f"model-{i:03d}" for i in range(n_models)]
    per_case = per_model * n_models
    verdicts = []
    for case in range(n_cases):
        first = rng.integers(0, n_models, per_case)
        second = (first + rng.integers(1, n_models, per_case)) % n_models
        won = rng.random(per_case) < 1 / (1 + np.exp(-(strength[first] - strength[second])))
        verdicts += [
            Verdict(f"case-{case}", names[f], names[s], "first" if w else "second")
            for f, s, w in zip(first.tolist(), second.tolist(), won.tolist(), strict=True)
        ]
    tracemalloc.start()
    start = time.perf_counter()
    fit = fit_arena(verdicts, n_boot=resamples)
    table = fit.arena_table()
    seconds = time.perf_counter() - start
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    recovered = float(np.corrcoef(table.sort_values("model_key").rating, strength)[0, 1])
    return {
        "models": n_models,
        "verdicts": len(verdicts),
        "resamples": resamples,
        "seconds": seconds,
        "fit_peak_mb": traced / 1e6,
        "process_peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "correlation_with_truth": recovered,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=int, nargs="+", default=[100, 200, 500])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--per-model", type=int, default=5, help="comparisons per model and case")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child process: fit this size
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, args.cases, args.per_model, args.resamples, args.seed)))
        return 0
    print(f"{'models':>6} {'verdicts':>9} {'resamples':>9} {'fit s':>8} {'fit peak MB':>11} {'process peak MB':>15}")
    worst = 0.0
    for n in args.models:
        command = [sys.executable, __file__, "--one", str(n), "--cases", str(args.cases)]
        command += ["--per-model", str(args.per_model), "--resamples", str(args.resamples), "--seed", str(args.seed)]
        out = json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        worst = max(worst, out["process_peak_mb"] * 1e6)
        print(
            f"{out['models']:>6} {out['verdicts']:>9,} {out['resamples']:>9} {out['seconds']:>8.1f} "
            f"{out['fit_peak_mb']:>11.0f} {out['process_peak_mb']:>15.0f}"
            f"   (r with truth {out['correlation_with_truth']:.3f})"
        )
    ok = worst < TARGET_BYTES
    print(f"target: every size under {TARGET_BYTES / 1e9:.1f} GB of process memory: {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
