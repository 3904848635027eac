"""Where a partitioned run's time goes: its tasks run one after another in this process, beside a local run.

A script, not a test. It writes the input of ``scale_bench.py``, then runs what the workers of a
partitioned run do (stage each slice, check each bucket, score each bucket, fingerprint the stage)
in this one process, without Dask, timing each phase, and then the same evaluation as one local
run. The ratio is the partitioned path's own cost per core, with no cluster overhead::

    .venv/bin/python benchmarks/partition_phases_bench.py --rows 150000
    .venv/bin/python benchmarks/partition_phases_bench.py --rows 150000 --evaluators exact_match
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_bench

import nbeval
from nbeval.engine import dask_part_tasks, dask_parts
from nbeval.engine.dask_run import _payload
from nbeval.engine.dask_worker import shipped_options
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.options import RunOptions
from nbeval.results.statistics.part_summaries import sample_bar


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=150_000, help="answers (cases x 3 models)")
    parser.add_argument("--evaluators", default="exact_match,text_matching,rouge", help="comma-separated ids")
    args = parser.parse_args()
    evaluators = [e.strip() for e in args.evaluators.split(",") if e.strip()]
    work = Path(tempfile.mkdtemp(prefix="nbeval-phases-"))
    try:
        path = scale_bench.write_input(args.rows, work)
        run_dir = work / "run"
        (run_dir / "stage").mkdir(parents=True)
        (run_dir / "parts").mkdir()
        dask_part_tasks._cancel_flag = lambda run_id: lambda: False  # no scheduler to ask
        times: dict[str, float] = {}

        def timed(name: str, fn: Callable[[], Any]) -> Any:
            start = time.perf_counter()
            out = fn()
            times[name] = times.get(name, 0.0) + time.perf_counter() - start
            return out

        source = dask_parts.PartitionedInput(str(path), "parquet")
        slices = timed("cut", lambda: dask_parts._slices(source))
        n_buckets = dask_parts._bucket_count(args.rows, 1)
        for piece in slices:
            timed("stage", lambda p=piece: dask_part_tasks.stage_slice(p, str(run_dir), n_buckets))
        checks = [
            timed("check", lambda b=b: dask_part_tasks.check_bucket(str(run_dir), len(slices), b, str(path)))
            for b in range(n_buckets)
        ]
        payload = _payload(resolve_evaluators(evaluators), shipped_options(RunOptions()))
        bar = sample_bar(sum(c.keys for c in checks))
        for b in range(n_buckets):
            timed(
                "score",
                lambda b=b: dask_part_tasks.score_bucket(
                    payload, "bench", str(run_dir), len(slices), b, str(path), bar
                ),
            )
        timed("fingerprint", lambda: dask_part_tasks.fingerprint_stage(str(run_dir), len(slices), str(path)))
        start = time.perf_counter()
        nbeval.evaluate(str(path), evaluators, progress=False)
        local = time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)
    total = sum(times.values())
    phases = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in times.items())
    print(f"rows: {args.rows:,} x {', '.join(evaluators)}; {n_buckets} buckets")
    print(f"partitioned tasks in one process: {total:.2f} s ({phases})")
    print(f"one local run: {local:.2f} s; ratio {total / local:.3f}")


if __name__ == "__main__":
    main()
