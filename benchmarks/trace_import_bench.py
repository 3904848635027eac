"""Benchmark of reading agent traces exported as OTLP JSON lines (a script, not a test).

    .venv/bin/python benchmarks/trace_import_bench.py                  # 10,000 traces of 10 spans
    .venv/bin/python benchmarks/trace_import_bench.py --traces 1000

It writes ``traces`` agent traces of 10 spans each, with OpenInference attributes, as the
OpenTelemetry collector's file exporter writes them: one ``{"resourceSpans": [...]}`` object per
line, each line a batch of the spans of 10 traces in order of start time (so a trace's spans are
interleaved with others'). Each trace: a CHAIN root; three LLM calls (the second and third sent
the whole history), two of them asking for a tool; the two TOOL runs; a RETRIEVER of three
documents; an EMBEDDING and a GUARDRAIL span. Then a fresh child process times
``nbeval.data.readers.load(path)`` end to end (reading, grouping, building the conversations and
checking the rows) and reports its wall time, its CPU time (the fairer number on a busy machine)
and its peak resident memory (``resource.getrusage``; the parent that wrote the file holds
nothing of it).

Targets: under 60 s and under 4 GB for 10,000 traces (100,000 spans); the script exits 1 past either.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_S, TARGET_MB = 60.0, 4096.0
SPANS_PER_TRACE = 10
TRACES_PER_LINE = 10
T0 = 1_700_000_000_000_000_000
MS = 1_000_000


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": v}


def _messages(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, m in enumerate(messages):
        at = f"{prefix}.{i}.message"
        out[f"{at}.role"] = m["role"]
        if m.get("content") is not None:
            out[f"{at}.content"] = m["content"]
        for j, c in enumerate(m.get("tool_calls", [])):
            out[f"{at}.tool_calls.{j}.tool_call.id"] = c["id"]
            out[f"{at}.tool_calls.{j}.tool_call.function.name"] = c["name"]
            out[f"{at}.tool_calls.{j}.tool_call.function.arguments"] = c["arguments"]
        if m.get("tool_call_id"):
            out[f"{at}.tool_call_id"] = m["tool_call_id"]
    return out


def trace_spans(n: int, rng: random.Random) -> list[dict[str, Any]]:
    """The 10 spans of agent trace ``n``, ids in hex, times staggered by trace."""
    trace_id = f"{n + 1:032x}"
    start = T0 + n * 50 * MS
    city = rng.choice(["Paris", "Lyon", "Oslo", "Lima", "Pune"])
    question = f"Question {n}: what is the weather in {city} and what should I pack for {rng.randint(2, 9)} days?"
    system: dict[str, Any] = {
        "role": "system",
        "content": "You are a travel assistant. Use the tools; answer in two sentences.",
    }
    ask1 = {"id": f"call_{n}_a", "name": "get_weather", "arguments": json.dumps({"city": city})}
    ask2 = {"id": f"call_{n}_b", "name": "packing_list", "arguments": json.dumps({"city": city, "days": 5})}
    weather = json.dumps({"city": city, "temp_c": rng.randint(-5, 35), "sky": "cloudy"})
    packing = json.dumps({"items": ["jacket", "umbrella", "charger", "passport"]})
    answer = f"It is mild and cloudy in {city}. Pack a light jacket, an umbrella and your charger."
    h1: list[dict[str, Any]] = [system, {"role": "user", "content": question}]
    a1: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [ask1]}
    h2 = [*h1, a1, {"role": "tool", "content": weather, "tool_call_id": ask1["id"]}]
    a2: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [ask2]}
    h3 = [*h2, a2, {"role": "tool", "content": packing, "tool_call_id": ask2["id"]}]
    a3: dict[str, Any] = {"role": "assistant", "content": answer}
    llm: dict[str, Any] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.token_count.total": 512,
    }
    docs: dict[str, Any] = {"openinference.span.kind": "RETRIEVER", "input.value": f"packing advice {city}"}
    for i in range(3):
        docs[f"retrieval.documents.{i}.document.content"] = f"Travel note {i} for {city}: layers beat bulk. " * 3
        docs[f"retrieval.documents.{i}.document.id"] = f"notes/{city.lower()}/{i}"
        docs[f"retrieval.documents.{i}.document.score"] = 0.9 - i / 10
    root = {"openinference.span.kind": "CHAIN", "input.value": question, "output.value": answer, "session.id": f"s{n}"}
    tool = {"openinference.span.kind": "TOOL"}
    guard = {"openinference.span.kind": "GUARDRAIL", "input.value": answer, "output.value": "pass"}
    moderation = {"openinference.span.kind": "LLM", "llm.model_name": "guard-1", "input.value": answer}
    calls = [
        llm | _messages("llm.input_messages", h) | _messages("llm.output_messages", [a])
        for h, a in ((h1, a1), (h2, a2), (h3, a3))
    ]
    spans: list[tuple[int, int | None, str, int, int, dict[str, Any]]] = [  # (span, parent, name, start, end, attrs)
        (1, None, "agent", 0, 45, root),
        (2, 1, "embed", 1, 2, {"openinference.span.kind": "EMBEDDING", "embedding.model_name": "e5"}),
        (3, 1, "retrieve", 2, 4, docs),
        (4, 1, "ChatOpenAI", 5, 12, calls[0]),
        (
            5,
            1,
            "get_weather",
            13,
            15,
            tool | {"tool.name": "get_weather", "tool.parameters": ask1["arguments"], "output.value": weather},
        ),
        (6, 1, "ChatOpenAI", 16, 24, calls[1]),
        (
            7,
            1,
            "packing_list",
            25,
            27,
            tool | {"tool.name": "packing_list", "tool.parameters": ask2["arguments"], "output.value": packing},
        ),
        (8, 1, "ChatOpenAI", 28, 40, calls[2]),
        (9, 1, "guard", 41, 43, guard),
        (10, 9, "moderation", 41, 42, moderation | {"output.value": "safe"}),
    ]
    return [
        {
            "traceId": trace_id,
            "spanId": f"{n + 1:08x}{k:08x}",
            "parentSpanId": f"{n + 1:08x}{parent:08x}" if parent else "",
            "name": name,
            "kind": 1,
            "startTimeUnixNano": str(start + a * MS),
            "endTimeUnixNano": str(start + b * MS),
            "attributes": [{"key": key, "value": _value(v)} for key, v in attrs.items()],
            "status": {"code": 1},
        }
        for k, parent, name, a, b, attrs in spans
    ]


def write(traces: int, path: Path) -> None:
    """Write ``traces`` traces as OTLP JSON lines, a line per batch of 10 traces' spans."""
    rng = random.Random(0)
    with path.open("w", encoding="utf-8") as fh:
        for first in range(0, traces, TRACES_PER_LINE):
            batch = [s for n in range(first, min(first + TRACES_PER_LINE, traces)) for s in trace_spans(n, rng)]
            batch.sort(key=lambda s: int(s["startTimeUnixNano"]))
            scope = {"scope": {"name": "openinference.instrumentation.openai"}, "spans": batch}
            resource_ = {"attributes": [{"key": "service.name", "value": {"stringValue": "travel-agent"}}]}
            fh.write(json.dumps({"resourceSpans": [{"resource": resource_, "scopeSpans": [scope]}]}) + "\n")


def run_load(path: Path) -> None:
    """Time ``load(path)``; print its wall time, peak memory and what it read, as JSON."""
    from nbeval.data.model import LlmDataset
    from nbeval.data.readers import load

    started, cpu = time.perf_counter(), time.process_time()
    dataset = load(path)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    assert isinstance(dataset, LlmDataset)
    rows = max(len(dataset), 1)
    report = {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "peak_mb": peak,
        "rows": len(dataset),
        "messages": sum(len(r.messages) for r in dataset) / rows,
        "contexts": sum(len(r.context) for r in dataset) / rows,
    }
    print(json.dumps(report))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--traces", type=int, default=10_000, help="agent traces of 10 spans each")
    parser.add_argument("--load", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        run_load(Path(args.load))
        return 0
    with tempfile.TemporaryDirectory(prefix="nbeval-trace-bench-") as tmp:
        path = Path(tmp) / "traces.jsonl"
        write(args.traces, path)
        size_mb = path.stat().st_size / 2**20
        out = subprocess.run(
            [sys.executable, __file__, "--load", str(path)], check=True, capture_output=True, text=True
        ).stdout
    report = json.loads(out.strip().splitlines()[-1])
    ok = report["seconds"] < TARGET_S and report["peak_mb"] < TARGET_MB
    spans = args.traces * SPANS_PER_TRACE
    print(
        f"load() of {args.traces:,} traces ({spans:,} spans, {size_mb:,.0f} MB of OTLP JSON lines): "
        f"{report['seconds']:.2f} s ({report['cpu_seconds']:.2f} s of CPU), peak RSS {report['peak_mb']:,.0f} MB "
        f"(targets: {TARGET_S:g} s, {TARGET_MB:,.0f} MB): {'ok' if ok else 'OVER'}"
    )
    print(
        f"  {report['rows']:,} rows; {report['messages']:.1f} messages and {report['contexts']:.1f} "
        "context chunks a row"
    )
    return 0 if ok and report["rows"] == args.traces else 1


if __name__ == "__main__":
    sys.exit(main())
