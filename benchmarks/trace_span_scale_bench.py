"""Benchmark of loading ONE long agent trace: time against its number of spans (a script, not a test).

    .venv/bin/python benchmarks/trace_span_scale_bench.py                 # 1,000, 8,000 and 100,000 spans
    .venv/bin/python benchmarks/trace_span_scale_bench.py --spans 2000 --spans 4000

Issue 43: reading one trace was quadratic in its spans (8,000 spans took about 12 s, 100,000 about
half an hour), since each step of the conversation rule scanned the conversation so far and each
span walked up to the root. This writes one trace of ``n`` spans as one OTLP JSON line, an agent
loop in which every turn is nested in the turn before it (so the trace is ``n / 5`` spans deep)
and exercises each index of :mod:`nbeval.data.span_conversation`:

* an LLM span that logs only the new turn (a user message) and asks for a tool;
* the TOOL span that answers it (found among the calls waiting for a result);
* a TOOL span the code ran itself (an id no assistant asked for: a call and its result added);
* an LLM span that logs the tool result again and the assistant's text (found in the conversation);
* the turn's CHAIN span, parent of the four and child of the previous turn's CHAIN.

Then it times ``nbeval.data.readers.load(path)`` end to end (reading, building the conversation,
checking the row) in this process, and prints seconds per size and the ratio of time to spans
(about constant when linear). Exits 1 when 100,000 spans take over 60 s.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

T0 = 1_700_000_000_000_000_000
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TARGET_S = 60.0


def _attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": {"stringValue": v}} for k, v in d.items()]


def _span(n: int, parent: int | None, start: int, attrs: dict[str, Any]) -> dict[str, Any]:
    return {
        "traceId": TRACE,
        "spanId": f"{n:016x}",
        "parentSpanId": f"{parent:016x}" if parent else "",
        "name": attrs.get("tool.name", attrs["openinference.span.kind"].lower()),
        "startTimeUnixNano": str(T0 + start * 1000),
        "endTimeUnixNano": str(T0 + start * 1000 + 500),
        "attributes": _attrs(attrs),
    }


def trace_spans(n: int) -> list[dict[str, Any]]:
    """One agent trace of ``n`` spans (a root and turns of five spans), in time order."""
    root = {"openinference.span.kind": "AGENT", "input.value": "start", "output.value": "done"}
    spans = [_span(1, None, 0, root)]
    parent, t, turn = 1, 0, 0
    while len(spans) < n:
        turn += 1
        call_id, args = f"call_{turn}", json.dumps({"city": f"city {turn}"})
        ask = {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": f"question {turn}",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": call_id,
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": args,
        }
        answer = {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "tool",
            "llm.input_messages.0.message.tool_call_id": call_id,
            "llm.input_messages.0.message.content": f"sunny {turn}",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": f"It is sunny in city {turn}.",
        }
        tool = {"openinference.span.kind": "TOOL", "tool.name": "get_weather", "tool.id": call_id}
        tool |= {"tool.parameters": args, "output.value": f"sunny {turn}"}
        audit = {"openinference.span.kind": "TOOL", "tool.name": "audit", "tool.id": f"audit_{turn}"}
        audit |= {"input.value": args, "output.value": "ok"}
        chain = {"openinference.span.kind": "CHAIN", "input.value": f"turn {turn}"}
        here = len(spans) + 1
        spans.append(_span(here, parent, t + 1, chain))
        for k, attrs in enumerate((ask, tool, audit, answer), 1):
            spans.append(_span(here + k, here, t + 1 + k, attrs))
        parent, t = here, t + 6
    return spans[:n]


def write(n: int, path: Path) -> None:
    scope = {"scope": {"name": "openinference.instrumentation"}, "spans": trace_spans(n)}
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [scope]}]}) + "\n", encoding="utf-8")


def time_load(path: Path) -> tuple[float, int]:
    """Seconds ``load(path)`` takes, and the number of messages of the row it reads."""
    from nbeval.data.readers import load

    started = time.perf_counter()
    (row,) = load(path).rows  # type: ignore[union-attr]
    return time.perf_counter() - started, len(row.messages)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--spans", type=int, action="append", help="spans in the trace (repeat for several sizes)")
    args = parser.parse_args()
    sizes = args.spans or [1_000, 8_000, 100_000]
    ok = True
    with tempfile.TemporaryDirectory(prefix="nbeval-span-bench-") as tmp:
        for n in sizes:
            path = Path(tmp) / f"trace_{n}.jsonl"
            write(n, path)
            seconds, messages = time_load(path)
            size_mb = path.stat().st_size / 2**20
            print(
                f"one trace of {n:,} spans ({size_mb:,.1f} MB, {messages:,} messages): "
                f"{seconds:.2f} s, {seconds / n * 1e6:.0f} µs a span"
            )
            ok = ok and (n < 100_000 or seconds < TARGET_S)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
