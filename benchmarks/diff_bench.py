"""Benchmark of diffing two large saved runs (a script, not a test).

    .venv/bin/python benchmarks/diff_bench.py                   # 1,000,000 score rows per run
    .venv/bin/python benchmarks/diff_bench.py --rows 100000

It builds two synthetic results of ``rows`` score rows each, directly as tables in the long
table's schema (no scoring): 3 models answer ``rows / 9`` test cases, scored by 3 evaluators of
one metric each: ``exact`` (0/1, the exact McNemar test), ``overlap`` (a score in [0, 1], the
Wilcoxon test) and ``length_gap`` (lower is better, rounded so that it has many ties). The
second run changes some values, drops some cases and adds others, and records another judge.
Both are saved as nbeval saves a result (``result.save``), each by a child process, so that
neither building them nor their memory counts. Then a fresh child process times
``nbeval.results.runs.diff.diff(path_a, path_b)``, loading included, and reports its wall time and
its peak resident memory (``resource.getrusage``; the parent that starts it holds no result).

Targets: under 10 s and under 4 GB for a million rows per run; the script exits 1 past either.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODELS = ("model-a", "model-b", "model-c")
#: (evaluator, metric, direction, threshold)
EVALUATORS = (
    ("exact", "score", "higher", 0.5),
    ("overlap", "overlap", "higher", 0.5),
    ("length_gap", "gap", "lower", 3.0),
)
TARGET_S, TARGET_MB = 10.0, 4096.0


def build(rows: int, second: bool, folder: Path) -> None:
    """Save a synthetic result of about ``rows`` score rows to ``folder``; ``second``: the changed run."""
    import numpy as np
    import pandas as pd

    import nbeval
    from nbeval.data.model import LlmDataset, Row
    from nbeval.results.result import AGGREGATE_COLUMNS, METRIC_COLUMNS
    from nbeval.results.score_table import typed_scores

    rng = np.random.default_rng(1 if second else 0)
    n_cases = math.ceil(rows / (len(MODELS) * len(EVALUATORS)))
    first = n_cases // 100 if second else 0  # the second run drops the first 1% of cases, adds as many
    cases = np.arange(first, n_cases + first)
    keys = np.array([f"case-{i:07d}" for i in cases], dtype=object)
    n = len(keys) * len(MODELS)
    key_col, model_col = np.repeat(keys, len(MODELS)), np.tile(np.array(MODELS, dtype=object), len(keys))
    base = np.random.default_rng(7).random(n_cases + n_cases // 100 + 1)[np.repeat(cases, len(MODELS))]
    frames = []
    nones = np.full(n, None, dtype=object)
    for evaluator, metric, direction, threshold in EVALUATORS:
        if evaluator == "exact":
            value = (base > 0.4).astype(float)
            if second:
                value = np.where(rng.random(n) < 0.05, 1 - value, value)
        elif evaluator == "overlap":
            value = np.clip(base + rng.normal(0.01 if second else 0.0, 0.05, n), 0, 1)
        else:
            value = np.round(base * 10 + (0.2 if second else 0.0) + rng.normal(0, 0.5, n), 1)
        skipped = rng.random(n) < 0.01
        value = np.where(skipped, np.nan, value)
        passed = np.where(np.isnan(value), nones, value >= threshold if direction == "higher" else value <= threshold)
        frames.append(
            pd.DataFrame(
                {
                    "key": key_col,
                    "model_key": model_col,
                    "evaluator": evaluator,
                    "metric": metric,
                    "value": value,
                    "passed": passed,
                    "label": None,
                    "rationale": None,
                    "error": None,
                    "skipped": skipped,
                    "skip_reason": np.where(skipped, "missing expected_output", nones),
                    "details": None,
                }
            )
        )
    scores = typed_scores(pd.concat(frames, ignore_index=True))
    del frames
    agg = (
        scores.groupby(["model_key", "evaluator", "metric"], observed=True)
        .agg(value=("value", "mean"), n=("value", "count"), N=("value", "size"))
        .reset_index()
        .astype({"model_key": str, "evaluator": str, "metric": str})
    )
    spec = {e: (m, d, t) for e, m, d, t in EVALUATORS}
    agg["direction"] = [spec[e][1] for e in agg["evaluator"]]
    agg["threshold"] = [spec[e][2] for e in agg["evaluator"]]
    higher = agg["direction"] == "higher"
    agg["passed"] = np.where(higher, agg["value"] >= agg["threshold"], agg["value"] <= agg["threshold"])
    agg["primary"] = True
    metrics = pd.DataFrame(
        [
            [e, e, "custom", "score", m, d, 0.0, 1.0 if d == "higher" else math.inf, t, True, ""]
            for e, m, d, t in EVALUATORS
        ],
        columns=METRIC_COLUMNS,
    )
    dataset = LlmDataset(
        [
            Row(input=f"question {k}", key=k, model_key=m, actual_output="an answer")
            for k, m in zip(key_col, model_col, strict=True)
        ]
    )
    judge = {"model": "gpt-4.1" if second else "gpt-4o", "params": {"temperature": 0}}
    meta = {
        "nbeval_version": nbeval.__version__,
        "duration_s": 600.0 if second else 660.0,
        "usage": {"calls": n, "prompt_tokens": 300 * n, "completion_tokens": 40 * n, "cost": 0.0002 * n},
        "evaluators": [{"name": e, "id": e, "params": {}} for e, *_ in EVALUATORS],
        "run": {
            "started_at": "2026-01-31T09:30:00+00:00",
            "label": "second" if second else "first",
            "git_commit": None,
            "git_dirty": None,
            "dataset_fingerprint": None,
            "judge": judge,
            "embedder": None,
            "prompts": {},
        },
    }
    result = nbeval.EvaluationResult(scores, agg[AGGREGATE_COLUMNS], metrics, dataset, meta=meta)
    result.save(folder)
    print(f"saved {len(scores):,} score rows to {folder}")


def run_diff(before: Path, after: Path) -> None:
    """Time the diff of two saved folders; print its wall time and peak memory as JSON."""
    from nbeval.results.runs.diff import diff

    started = time.perf_counter()
    d = diff(before, after)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    report: dict[str, object] = {
        "seconds": seconds,
        "peak_mb": peak,
        "comparisons": len(d.table),
        "flips": len(d.flips),
    }
    report |= {
        "new_rows": len(d.new_rows),
        "gone_rows": len(d.gone_rows),
        "intervals": sorted(set(d.table["interval"])),
    }
    print(json.dumps(report))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="score rows per run")
    parser.add_argument("--build", nargs=2, metavar=("WHICH", "FOLDER"), help=argparse.SUPPRESS)
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        build(args.rows, args.build[0] == "second", Path(args.build[1]))
        return 0
    if args.diff:
        run_diff(Path(args.diff[0]), Path(args.diff[1]))
        return 0
    with tempfile.TemporaryDirectory(prefix="nbeval-diff-bench-") as tmp:
        folders = [Path(tmp) / "first", Path(tmp) / "second"]
        for which, folder in zip(("first", "second"), folders, strict=True):
            subprocess.run(
                [sys.executable, __file__, "--rows", str(args.rows), "--build", which, str(folder)], check=True
            )
        out = subprocess.run(
            [sys.executable, __file__, "--diff", *map(str, folders)], check=True, capture_output=True, text=True
        ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    ok = report["seconds"] < TARGET_S and report["peak_mb"] < TARGET_MB
    print(
        f"diff of two saved runs of {args.rows:,} score rows each: {report['seconds']:.2f} s, "
        f"peak RSS {report['peak_mb']:,.0f} MB (targets: {TARGET_S:g} s, {TARGET_MB:,.0f} MB): {'ok' if ok else 'OVER'}"
    )
    print(
        f"  {report['comparisons']} comparisons, {report['flips']:,} flips, {report['new_rows']:,} new and "
        f"{report['gone_rows']:,} gone rows; intervals: {', '.join(report['intervals'])}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
