"""Benchmark of a large run: a million rows on one machine, and through a Dask cluster (a script, not a test).

    .venv/bin/python benchmarks/scale_bench.py --rows 100000                     # in this process
    .venv/bin/python benchmarks/scale_bench.py --rows 1000000 --scheduler local2 # a 2-worker LocalCluster
    .venv/bin/python benchmarks/scale_bench.py --rows 1000000 --scheduler tcp://host:8786

It writes a dataset of ``rows / 3`` test cases answered by 3 models to a Parquet file, loads it
with :func:`nbeval.load`, and runs ``exact_match``, ``text_matching`` and ``rouge`` through
:func:`nbeval.evaluate`; then saves the result and reads it back. Printed: the load, run, save
and reload times, rows per second of the run, the peak resident memory of this process after the
run, after the save and after reloading (and of each worker, on a cluster), and the size of each
saved file (``scores.parquet``, ``dataset.parquet``, ...). The goal on a 2-core machine:
peak memory under 4 GB for a million rows.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbeval

MODELS = ("model-a", "model-b", "model-c")
EVALUATORS = ["exact_match", "text_matching", "rouge"]
_CITIES = ("Paris", "Lyon", "Berlin", "Madrid", "Rome", "Vienna", "Prague", "Lisbon", "Oslo", "Dublin")


def records(rows: int, lo: int = 0, hi: int | None = None) -> list[dict[str, Any]]:
    """``rows`` answers: ``rows // 3`` cases, each answered by the 3 models (some right, some not);
    with ``lo``/``hi`` only the cases in ``range(lo, hi)``."""
    out = []
    cases = rows // len(MODELS)
    for m, model in enumerate(MODELS):
        for i in range(lo, min(cases, hi if hi is not None else cases)):
            city, other = _CITIES[i % 10], _CITIES[(i * 7 + m) % 10]
            expected = f"The capital city in question {i} is {city}, with {i % 97} museums."
            right = (i * (m + 3)) % 5 != 0
            answer = (
                expected
                if right and m == 0
                else (f"It is {city}; it has {i % 97} museums." if right else f"I believe it is {other}.")
            )
            out.append(
                {
                    "key": f"case-{i}",
                    "model_key": model,
                    "input": f"Which city is meant in question {i}?",
                    "expected_output": expected,
                    "actual_output": answer,
                    "output_condition": f'"{city}" AND NOT "believe"',
                }
            )
    return out


def write_input(rows: int, folder: Path) -> Path:
    """The dataset as a Parquet file, written by a child process in slices of cases (so neither the
    records nor their memory count in this process's peak)."""
    path = folder / "answers.parquet"
    subprocess.run([sys.executable, __file__, "--write-input", str(path), "--rows", str(rows)], check=True)
    return path


def _write_input(rows: int, path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    cases = rows // len(MODELS)
    with pq.ParquetWriter(path, pa.Table.from_pylist(records(rows, 0, 1)).schema) as writer:
        for lo in range(0, cases, 20_000):
            writer.write_table(pa.Table.from_pylist(records(rows, lo, lo + 20_000)))


def reload_apart(folder: Path) -> tuple[float, float]:
    """Seconds and peak RSS (MB) of :func:`nbeval.load_result` in a fresh process: the memory a
    later session needs to open the saved result, without this run's copy beside it."""
    out = subprocess.run(
        [sys.executable, __file__, "--reload", str(folder)], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[-2]), float(out[-1])


def _reload(folder: Path) -> None:
    t0 = time.perf_counter()
    nbeval.load_result(folder)
    # VmHWM, not getrusage: a child's ru_maxrss starts from its parent's peak at the fork
    hwm = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM"))
    print(f"{time.perf_counter() - t0:.3f} {int(hwm.split()[1]) / 1024:.1f}")


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def scheduler_for(name: str | None) -> tuple[Any, Any]:
    """The ``scheduler=`` argument, and the cluster to close afterwards (``local2``: one made here)."""
    if not name:
        return None, None
    if name == "local2":
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        )
        return Client(cluster), cluster
    return name, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="answers (cases x 3 models)")
    parser.add_argument("--scheduler", default=None, help="'local2' (a 2-worker LocalCluster) or an address")
    parser.add_argument("--keep", default=None, help="a folder to keep the input and the saved result in")
    parser.add_argument("--write-input", default=None, help=argparse.SUPPRESS)  # the child that writes the input
    parser.add_argument("--reload", default=None, help=argparse.SUPPRESS)  # the child that reloads a result
    args = parser.parse_args()
    if args.write_input:
        _write_input(args.rows, Path(args.write_input))
        return
    if args.reload:
        _reload(Path(args.reload))
        return

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="nbeval-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t0 = time.perf_counter()
        path = write_input(args.rows, folder)
        t_write = time.perf_counter() - t0
        scheduler, cluster = scheduler_for(args.scheduler)  # before loading: workers start small
        t0 = time.perf_counter()
        data = nbeval.load(path)
        t_load = time.perf_counter() - t0
        rss_before = peak_rss_mb()
        t0 = time.perf_counter()
        result = nbeval.evaluate(data, EVALUATORS, progress=False, scheduler=scheduler)
        t_run = time.perf_counter() - t0
        rss_run = peak_rss_mb()
        worker_peaks = []
        if cluster is not None or scheduler is not None:
            client = scheduler if cluster is not None else None
            if client is not None:
                worker_peaks = sorted(client.run(_worker_peak_mb).values())
                client.close()
                cluster.close()
        t0 = time.perf_counter()
        saved = result.save(folder / "result")
        t_save = time.perf_counter() - t0
        rss_save = peak_rss_mb()  # what `nbeval run --out` needs: it saves but does not reload
        t0 = time.perf_counter()
        again = nbeval.load_result(saved)
        t_reload = time.perf_counter() - t0
        assert len(again.scores) == len(result.scores)
        del again
        t_apart, rss_apart = reload_apart(saved)
        size = {p.name: p.stat().st_size for p in saved.iterdir() if p.is_file()}
        print(
            f"rows: {args.rows:,} ({len(MODELS)} models) x {', '.join(EVALUATORS)}; "
            f"scheduler: {args.scheduler or 'none (this process)'}; cpus: {os.cpu_count()}"
        )
        print(f"input: write {t_write:.1f} s ({path.stat().st_size / 1e6:.1f} MB Parquet); nbeval.load {t_load:.1f} s")
        print(f"run: {t_run:.1f} s, {args.rows / t_run:,.0f} rows/s; {len(result.scores):,} scores")
        print(
            f"peak RSS of this process: {rss_before:,.0f} MB after loading, {rss_run:,.0f} MB after the run, "
            f"{rss_save:,.0f} MB after save, {peak_rss_mb():,.0f} MB after save and load_result"
            + (f"; workers: {', '.join(f'{p:,.0f}' for p in worker_peaks)} MB" if worker_peaks else "")
        )
        print(f"load_result in a fresh process: {t_apart:.1f} s, peak RSS {rss_apart:,.0f} MB")
        print(
            f"save {t_save:.1f} s, load_result {t_reload:.1f} s; files: "
            + ", ".join(f"{name} {n / 1e6:.1f} MB" for name, n in sorted(size.items()))
        )
        print(result.leaderboard("rouge").to_string())
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
