"""Benchmark of reading the live result during a run (a script, not a test).

    .venv/bin/python benchmarks/live_reads_bench.py                      # 156 chunks of 64 rows
    .venv/bin/python benchmarks/live_reads_bench.py --chunks 300 --chunk-rows 16
    .venv/bin/python benchmarks/live_reads_bench.py --part-rows 500   # many part files

It runs ``exact_match`` over a dataset of ``chunks * chunk_rows`` rows (2 models) through the
engine's steps (:func:`~nbeval.engine.plan_run`, :func:`~nbeval.engine.run_chunk`,
:func:`~nbeval.engine.finish`) and reads the full partial result (``live.result()``, what the
notebook's RunPanel draws) after every chunk. Printed: the Parquet part files the score spool
wrote and the file reads it made (``pyarrow.parquet.read_table`` calls), and the seconds of the
run with the reads and without them. Issue 28: before, every read flushed a new part file and
read every part back (156 chunks: 12,402 file reads, 29.8 s against 0.9 s); now a read writes
nothing and reads only the parts written since the last read, so reads grow with the parts,
not with their square. ``--part-rows`` sets the spool's part size (default
:data:`~nbeval.results.storage.columnar.SPOOL_PART_ROWS`) to show that with many parts.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import pyarrow.parquet as pq

import nbeval
from nbeval.data.model import LlmDataset
from nbeval.engine import finish, plan_run, run_chunk
from nbeval.results.storage import columnar

MODELS = ("model-a", "model-b")


def dataset(rows: int) -> LlmDataset:
    cases = max(1, rows // len(MODELS))
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


class Counting:
    """Counts ``pyarrow.parquet.read_table`` and ``write_table`` calls while it is entered."""

    def __init__(self) -> None:
        self.reads = 0
        self.writes = 0

    def __enter__(self) -> Counting:
        self._read, self._write = pq.read_table, pq.write_table

        def read_table(*args: Any, **kwargs: Any) -> Any:
            self.reads += 1
            return self._read(*args, **kwargs)

        def write_table(*args: Any, **kwargs: Any) -> Any:
            self.writes += 1
            return self._write(*args, **kwargs)

        pq.read_table, pq.write_table = read_table, write_table  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        pq.read_table, pq.write_table = self._read, self._write  # type: ignore[assignment]


def run(ds: LlmDataset, chunk_rows: int, *, read: bool) -> tuple[float, int, Any]:
    started = time.perf_counter()
    state = plan_run(ds, ["exact_match"], keep_outcomes=False)
    chunks = 0
    while not state.finished:
        run_chunk(state, chunk_rows)
        chunks += 1
        if read:
            state.live.result()
    result = finish(state)
    return time.perf_counter() - started, chunks, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=156)
    parser.add_argument("--chunk-rows", type=int, default=64)
    parser.add_argument("--part-rows", type=int, default=columnar.SPOOL_PART_ROWS)
    args = parser.parse_args()
    columnar.SPOOL_PART_ROWS = args.part_rows
    ds = dataset(args.chunks * args.chunk_rows)
    run(dataset(64), 16, read=True)  # warm up (imports)
    with Counting() as plain:
        seconds_plain, chunks, result_plain = run(ds, args.chunk_rows, read=False)
    with Counting() as live:
        seconds_live, chunks, result_live = run(ds, args.chunk_rows, read=True)
    same = result_plain.scores.equals(result_live.scores)
    print(
        f"nbeval {nbeval.__version__}: {len(ds.rows):,} rows, {chunks} chunks of {args.chunk_rows}, "
        f"{len(result_live.scores):,} scores, parts of {args.part_rows:,} rows"
    )
    print(f"  without reads: {seconds_plain:7.2f} s, {plain.writes} part files written, {plain.reads} file reads")
    print(f"  read each chunk: {seconds_live:5.2f} s, {live.writes} part files written, {live.reads} file reads")
    print(f"  final scores equal: {same}")


if __name__ == "__main__":
    main()
