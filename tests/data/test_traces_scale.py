"""Loading one trace costs time linear in its spans (issue 43: 8,000 spans took about 12 s).

The trace is the benchmark's (``benchmarks/trace_span_scale_bench.py``): an agent loop nested one
turn inside the other, whose every turn asks the conversation's indices a question (is this
message in it, which call waits for this tool, was this id asked for, does this span run inside
a tool). Two checks: the lines of the conversation rule run grow with the spans, not their
square (counted, so exact whatever the machine's load: 43,561 for 500 spans, 174,061 for
2,000); and 8,000 spans load in seconds (before: 12 s on the shared
test machine, 47 s when it was busy; after: 0.5 s, 1.4 s busy; the bound leaves room).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any

from nbeval.data import span_conversation
from nbeval.data import trace_record as trace_record_module
from nbeval.data.readers import load
from nbeval.data.trace_record import trace_record
from nbeval.data.traces import _Traces

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "trace_span_scale_bench", ROOT / "benchmarks" / "trace_span_scale_bench.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCH = _bench()


def _lines_run(n: int, tmp_path: Path) -> int:
    """How many lines of the conversation rule and the record run to make the row of a trace of
    ``n`` spans: every loop's every turn counts, so a scan of the conversation per span shows."""
    path = tmp_path / f"t{n}.jsonl"
    BENCH.write(n, path)
    traces = _Traces(str(path))
    traces.add(json.loads(path.read_text(encoding="utf-8")), "")
    (spans,) = traces.spans.values()
    watched = {span_conversation.__file__, trace_record_module.__file__}
    count = 0

    def local(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return local

    def calls(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename in watched else None

    sys.settrace(calls)
    try:
        record = trace_record(spans, key="k", source=str(path))
    finally:
        sys.settrace(None)
    assert len(record["messages"]) == _messages(n)
    return count


def _messages(n: int) -> int:
    """By hand: a turn (5 spans after the root) adds the question, the call, its result, the audit
    call and its result, and the answer (the answer's LLM span logs the result again: not added)."""
    turns, rest = divmod(n - 1, 5)
    return 6 * turns + [0, 0, 2, 3, 5][rest]


def test_the_work_grows_linearly_with_the_spans(tmp_path: Path) -> None:
    small, large = _lines_run(500, tmp_path), _lines_run(2_000, tmp_path)
    assert large <= 4.4 * small, (small, large)  # 4 times the spans; quadratic would be 16 times


def test_a_trace_of_8000_spans_loads_in_seconds(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    BENCH.write(8_000, path)
    started = time.perf_counter()
    (row,) = load(path).rows  # type: ignore[union-attr]
    seconds = time.perf_counter() - started
    assert len(row.messages) == _messages(8_000) == 9_599
    assert seconds < 12, seconds
