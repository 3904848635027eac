"""Benchmark of a large run: a million rows on one machine, and through a Dask cluster (a script, not a test).

    .venv/bin/python benchmarks/scale_bench.py --rows 100000                      # in this process
    .venv/bin/python benchmarks/scale_bench.py --rows 1000000 --scheduler local2  # a 2-worker LocalCluster
    .venv/bin/python benchmarks/scale_bench.py --rows 10000000 --scheduler local2 \
        --evaluators exact_match,text_matching --max-client-mb 1024               # the client's bound
    .venv/bin/python benchmarks/scale_bench.py --rows 1000000 --scheduler tcp://host:8786 --run-dir /shared/run

It writes a dataset of ``rows / 3`` test cases answered by 3 models to a Parquet file (row groups
of 100,000 rows) and runs ``exact_match``, ``text_matching`` and ``rouge`` (or ``--evaluators``)
through :func:`nbeval.evaluate`.

In this process it loads the file with :func:`nbeval.load` first, then saves the result and
reads it back. With a scheduler it gives :func:`nbeval.evaluate` the file's path, so the workers
read it and write the result's parts themselves (:mod:`nbeval.engine.dask_parts`) and the client
holds no rows; the result is then read only as far as its leaderboard (``--save`` also saves it,
which reads its long table).

Printed: the load, run, save and reload times, rows per second of the run, the peak resident
memory of this process (the client; with a LocalCluster its scheduler runs here too) and of each
worker, the run folder's size, and the size of each saved file. ``--max-client-mb`` makes the
script exit with status 1 when the client's peak passes it. The goal on a 2-core machine: peak
memory under 4 GB for a million rows in one process; a client under 1 GB at any size on a cluster.
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
            writer.write_table(pa.Table.from_pylist(records(rows, lo, lo + 20_000)), row_group_size=100_000)


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
    """The ``scheduler=`` argument, and the cluster to close afterwards (``localN``: N one-thread workers made here)."""
    if not name:
        return None, None
    if name.startswith("local") and name[5:].isdigit():
        from distributed import Client, LocalCluster

        cluster = LocalCluster(
            n_workers=int(name[5:]), threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        )
        return Client(cluster), cluster
    return name, None


def folder_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="answers (cases x 3 models)")
    parser.add_argument("--scheduler", default=None, help="'localN' (an N-worker LocalCluster) or an address")
    parser.add_argument("--evaluators", default=",".join(EVALUATORS), help="comma-separated evaluator ids")
    parser.add_argument("--run-dir", default=None, help="with a scheduler: the run folder (default: a temporary one)")
    parser.add_argument("--save", action="store_true", help="with a scheduler: save the result too (reads every score)")
    parser.add_argument("--max-client-mb", type=float, default=None, help="exit 1 when this process's peak passes it")
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

    evaluators = [e.strip() for e in args.evaluators.split(",") if e.strip()]
    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="nbeval-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    run_dir = Path(args.run_dir) if args.run_dir else folder / "run"
    try:
        t0 = time.perf_counter()
        path = write_input(args.rows, folder)
        t_write = time.perf_counter() - t0
        scheduler, cluster = scheduler_for(args.scheduler)  # before loading: workers start small
        t0 = time.perf_counter()
        data: Any = path if scheduler is not None else nbeval.load(path)
        t_load = time.perf_counter() - t0
        rss_before = peak_rss_mb()
        t0 = time.perf_counter()
        result = nbeval.evaluate(
            data, evaluators, progress=False, scheduler=scheduler, run_dir=str(run_dir) if scheduler else None
        )
        t_run = time.perf_counter() - t0
        rss_run = peak_rss_mb()
        worker_peaks = []
        if cluster is not None:
            worker_peaks = sorted(scheduler.run(_worker_peak_mb).values())
            scheduler.close()
            cluster.close()
        print(
            f"rows: {args.rows:,} ({len(MODELS)} models) x {', '.join(evaluators)}; "
            f"scheduler: {args.scheduler or 'none (this process)'}; cpus: {os.cpu_count()}"
        )
        print(
            f"input: write {t_write:.1f} s ({path.stat().st_size / 1e6:.1f} MB Parquet)"
            + (f"; nbeval.load {t_load:.1f} s" if scheduler is None else "; read by the workers")
        )
        print(f"run: {t_run:.1f} s, {args.rows / t_run:,.0f} rows/s; {result.n_scores:,} scores")
        if scheduler is not None:
            parts = run_dir / "parts"
            n_parts = len([p for p in parts.iterdir() if p.name.startswith("p-")]) if parts.is_dir() else 0
            print(
                f"run folder: {folder_mb(run_dir):,.1f} MB ({folder_mb(run_dir / 'stage'):,.1f} MB staged input, "
                f"{folder_mb(parts):,.1f} MB in {n_parts} parts of about {args.rows / max(1, n_parts):,.0f} rows)"
            )
        print(
            f"peak RSS of this process: {rss_before:,.0f} MB before the run, {rss_run:,.0f} MB after it"
            + (f"; workers: {', '.join(f'{p:,.0f}' for p in worker_peaks)} MB" if worker_peaks else "")
        )
        print(result.leaderboard(evaluators[-1]).to_string())
        if scheduler is None or args.save:
            t0 = time.perf_counter()
            saved = result.save(folder / "result")
            t_save = time.perf_counter() - t0
            rss_save = peak_rss_mb()  # what `nbeval run --out` needs: it saves but does not reload
            t0 = time.perf_counter()
            again = nbeval.load_result(saved)
            t_reload = time.perf_counter() - t0
            assert again.n_scores == result.n_scores
            del again
            t_apart, rss_apart = reload_apart(saved)
            size = {p.name: p.stat().st_size for p in saved.iterdir() if p.is_file()}
            print(f"peak RSS after save: {rss_save:,.0f} MB, after save and load_result: {peak_rss_mb():,.0f} MB")
            print(f"load_result in a fresh process: {t_apart:.1f} s, peak RSS {rss_apart:,.0f} MB")
            print(
                f"save {t_save:.1f} s, load_result {t_reload:.1f} s; files: "
                + ", ".join(f"{name} {n / 1e6:.1f} MB" for name, n in sorted(size.items()))
            )
        if args.max_client_mb is not None and rss_run > args.max_client_mb:
            print(f"FAIL: the client's peak ({rss_run:,.0f} MB) passed --max-client-mb {args.max_client_mb:,.0f}")
            sys.exit(1)
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
