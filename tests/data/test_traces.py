"""Agent traces (OTLP JSON with OpenInference attributes, MLflow trace JSON) read into rows.

Every file here is written by the test in the shape the OpenTelemetry collector's file exporter
writes (``{"resourceSpans": [...]}`` per line, ids in hex; base64 ids as the protobuf JSON mapping
writes them) with OpenInference's attribute names. Expected values are worked out by hand from
the spans written, following the rule in :mod:`nbeval.data.traces`.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.data import readers
from nbeval.data.readers import load, read_dataset
from nbeval.data.traces import read_traces, trace_records
from nbeval.errors import DataError

T0 = 1_700_000_000_000_000_000  # nanoseconds
MS = 1_000_000

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT, LLM1, TOOL1, RETR, TOOL2, LLM2 = (
    "00f067aa0ba902b7",
    "1111111111111111",
    "2222222222222222",
    "3333333333333333",
    "4444444444444444",
    "5555555555555555",
)
QUESTION = "What's the weather in Paris, and what should I wear?"
ANSWER = "It is 18°C and cloudy in Paris: take a light jacket."
SYSTEM = "You are a travel helper."
WEATHER = '{"temp_c": 18, "sky": "cloudy"}'


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}  # the protobuf JSON mapping writes 64-bit integers as text
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": v}


def _attrs(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in d.items()]


def _span(t: str, span: str, parent: str | None, name: str, ms: tuple[int, int], attrs: dict) -> dict[str, Any]:
    """One span as the collector writes it; ``ms``: start and end, milliseconds after T0."""
    return {
        "traceId": t,
        "spanId": span,
        "parentSpanId": parent or "",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(T0 + ms[0] * MS),
        "endTimeUnixNano": str(T0 + ms[1] * MS),
        "attributes": _attrs(attrs),
        "status": {},
    }


def _otlp(spans: list[dict[str, Any]]) -> dict[str, Any]:
    scope = {"scope": {"name": "openinference.instrumentation.langchain"}, "spans": spans}
    return {"resourceSpans": [{"resource": {"attributes": _attrs({"service.name": "agent"})}, "scopeSpans": [scope]}]}


def _flat(prefix: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenInference's flattened attributes of chat messages (tool calls in the OpenAI shape)."""
    out: dict[str, Any] = {}
    for i, m in enumerate(messages):
        at = f"{prefix}.{i}.message"
        out[f"{at}.role"] = m["role"]
        if m.get("content") is not None:
            out[f"{at}.content"] = m["content"]
        for j, c in enumerate(m.get("tool_calls", [])):
            if c.get("id"):
                out[f"{at}.tool_calls.{j}.tool_call.id"] = c["id"]
            out[f"{at}.tool_calls.{j}.tool_call.function.name"] = c["function"]["name"]
            out[f"{at}.tool_calls.{j}.tool_call.function.arguments"] = c["function"]["arguments"]
        if m.get("tool_call_id"):
            out[f"{at}.tool_call_id"] = m["tool_call_id"]
    return out


def _llm(t: str, span: str, parent: str | None, ms: tuple[int, int], inp: list, out: list, model: str) -> dict:
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": model}
    attrs |= _flat("llm.input_messages", inp) | _flat("llm.output_messages", out)
    return _span(t, span, parent, "ChatOpenAI", ms, attrs)


def _tool(t: str, span: str, parent: str, ms: tuple[int, int], name: str, attrs: dict) -> dict[str, Any]:
    return _span(t, span, parent, name, ms, {"openinference.span.kind": "TOOL", "tool.name": name, **attrs})


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def said(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(call_id: str | None, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def asks(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def result(content: str, call_id: str | None = None, name: str | None = None) -> dict[str, Any]:
    out = {"role": "tool", "content": content}
    return out | ({"tool_call_id": call_id} if call_id else {}) | ({"name": name} if name else {})


WEATHER_CALL = call("call_w", "get_weather", '{"city": "Paris"}')


def agent_spans(t: str = TRACE) -> list[dict[str, Any]]:
    """A CHAIN root; an LLM call asking for get_weather; the tool run; a retrieval; a tool the code
    calls itself (log_query); a second LLM call, sent the history, that answers."""
    history = [{"role": "system", "content": SYSTEM}, user(QUESTION)]
    root = {"openinference.span.kind": "CHAIN", "input.value": QUESTION, "output.value": ANSWER, "session.id": "sess-1"}
    docs = {
        "openinference.span.kind": "RETRIEVER",
        "input.value": "what to wear at 18°C",
        "retrieval.documents.0.document.content": "Layering is best for 15-20°C.",
        "retrieval.documents.0.document.id": "doc-7",
        "retrieval.documents.0.document.score": 0.91,
        "retrieval.documents.1.document.content": "Pack an umbrella in spring.",
        "retrieval.documents.1.document.id": 12,
    }
    weather = {"tool.parameters": '{"city": "Paris"}', "output.value": WEATHER}
    log = {"tool.id": "audit-1", "tool.parameters": '{"q": "paris"}', "output.value": "ok"}
    sent = [*history, asks(WEATHER_CALL), result(WEATHER, "call_w")]
    return [
        _span(t, ROOT, None, "agent", (0, 2500), root),
        _llm(t, LLM1, ROOT, (100, 600), history, [asks(WEATHER_CALL)], "gpt-4o-mini"),
        _tool(t, TOOL1, ROOT, (700, 900), "get_weather", weather),
        _span(t, RETR, ROOT, "retrieve", (950, 1000), docs),
        _tool(t, TOOL2, ROOT, (1000, 1050), "log_query", log),
        _llm(t, LLM2, ROOT, (1100, 2400), sent, [said(ANSWER)], "gpt-4o-mini"),
    ]


#: The agent trace's conversation by hand: the second LLM call's input does not start with the
#: whole conversation (log_query, which no assistant asked for, came in between), so its new
#: messages (none) and its reply are added after what the spans said so far, in time order.
AGENT_MESSAGES = [
    {"role": "system", "content": SYSTEM},
    user(QUESTION),
    asks(WEATHER_CALL),
    result(WEATHER, "call_w", "get_weather"),
    asks(call("audit-1", "log_query", '{"q": "paris"}')),
    result("ok", "audit-1", "log_query"),
    said(ANSWER),
]
AGENT_CONTEXT = [
    {"content": "Layering is best for 15-20°C.", "doc_uri": "doc-7"},
    {"content": "Pack an umbrella in spring.", "doc_uri": "12"},
]


def _write_jsonl(path: Path, docs: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    return path


def _b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


# -- one agent trace ------------------------------------------------------------------------------


def test_agent_trace_gives_one_record_with_its_conversation(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "traces.jsonl", [_otlp(agent_spans())])
    (record,) = read_traces(path)
    assert record == {
        "key": TRACE,
        "input": QUESTION,
        "actual_output": ANSWER,
        "model_key": "gpt-4o-mini",
        "messages": AGENT_MESSAGES,
        "context": AGENT_CONTEXT,
        "actual_duration": 2.5,
        "trace_id": TRACE,
        "session_id": "sess-1",
        "span_count": 6,
    }


def test_base64_ids_read_as_the_same_hex_ids(tmp_path: Path) -> None:
    spans = agent_spans()
    for s in spans:
        s["traceId"] = _b64(s["traceId"])
        s["spanId"] = _b64(s["spanId"])
        s["parentSpanId"] = _b64(s["parentSpanId"]) if s["parentSpanId"] else ""
        s["startTimeUnixNano"] = int(s["startTimeUnixNano"])  # numbers, not text, are read too
    assert _b64(TRACE) == "S/kvNXezTaajzpKdDg5HNg=="
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_otlp(spans)), encoding="utf-8")
    (record,) = read_traces(path)
    assert record["key"] == TRACE and record["trace_id"] == TRACE
    assert record["messages"] == AGENT_MESSAGES and record["context"] == AGENT_CONTEXT


def test_spans_in_any_order_and_across_lines_make_the_same_trace(tmp_path: Path) -> None:
    spans = agent_spans()
    lines = [_otlp(spans[3:][::-1]), _otlp(spans[:3][::-1])]  # the collector batches by time, not by trace
    (record,) = read_traces(_write_jsonl(tmp_path / "t.jsonl", lines))
    assert record["messages"] == AGENT_MESSAGES and record["span_count"] == 6


def test_the_latest_llm_call_wins_when_it_is_sent_the_whole_history() -> None:
    # The tool span's output is shortened; the second call's input starts with the conversation
    # so far (the tool result is matched by its call id), so its logged history replaces it.
    t = "0af7651916cd43dd8448eb211c80319c"
    history = [user("Weather in Paris?"), asks(WEATHER_CALL)]
    spans = [
        _span(t, ROOT, None, "agent", (0, 100), {"openinference.span.kind": "AGENT"}),
        _llm(t, LLM1, ROOT, (1, 10), history[:1], history[1:], "m"),
        _tool(t, TOOL1, ROOT, (11, 20), "get_weather", {"tool.id": "call_w", "output.value": "18"}),
        _llm(t, LLM2, ROOT, (21, 90), [*history, result(WEATHER, "call_w")], [said("18°C.")], "m"),
    ]
    (record,) = trace_records(_otlp(spans), source="t")
    assert record["messages"] == [*history, result(WEATHER, "call_w"), said("18°C.")]
    assert record["input"] == "Weather in Paris?" and record["actual_output"] == "18°C."


def test_a_framework_logging_only_the_new_turn_is_merged_in_time_order() -> None:
    # Each call logs only its new input; tool calls carry no ids (call_1 is given); the system
    # prompt is sent again and kept once; the tool span's arguments match in another key order.
    t = "0af7651916cd43dd8448eb211c80319d"
    system = {"role": "system", "content": "Be brief."}
    add = {"input.value": '{"b": 3, "a": 2}', "output.value": "5"}
    spans = [
        _span(t, ROOT, None, "agent", (0, 100), {"openinference.span.kind": "AGENT", "input.value": "2+3?"}),
        _llm(t, LLM1, ROOT, (1, 10), [system, user("2+3?")], [asks(call(None, "add", '{"a": 2, "b": 3}'))], "m"),
        _tool(t, TOOL1, ROOT, (11, 20), "add", add),
        _llm(t, LLM2, ROOT, (21, 90), [system, result("5")], [said("5")], "m"),
    ]
    (record,) = trace_records(_otlp(spans), source="t")
    assert record["messages"] == [
        system,
        user("2+3?"),
        asks(call("call_1", "add", '{"a": 2, "b": 3}')),
        result("5", "call_1", "add"),
        said("5"),
    ]


def test_what_runs_inside_a_tool_stays_out_of_the_conversation_but_its_retrieval_counts() -> None:
    # The code runs a search tool first, which calls its own LLM (a query rewriter) and a
    # retriever; then an LLM call, seen twice (the framework's span and the client's inside it).
    t = "0af7651916cd43dd8448eb211c80319e"
    schema = '{"type": "object", "properties": {"q": {"type": "string"}}}'  # the definition, not the call
    search = {"tool.parameters": schema, "input.value": "Dune author", "output.value": "Frank Herbert"}
    docs = {"openinference.span.kind": "RETRIEVER", "retrieval.documents.0.document.content": "Dune (1965)"}
    spans = [
        _span(t, ROOT, None, "agent", (0, 100), {"openinference.span.kind": "AGENT"}),
        _tool(t, TOOL1, ROOT, (1, 40), "search", search),
        _llm(t, "6666666666666666", TOOL1, (2, 10), [user("rewrite: Who wrote Dune?")], [said("Dune author")], "small"),
        _span(t, RETR, TOOL1, "retrieve", (11, 20), docs),
        _llm(t, LLM2, ROOT, (50, 90), [user("Who wrote Dune?")], [said("Frank Herbert.")], "big"),
        _llm(t, "7777777777777777", LLM2, (51, 89), [user("Who wrote Dune?")], [said("Frank Herbert.")], "big"),
    ]
    (record,) = trace_records(_otlp(spans), source="t")
    assert record["messages"] == [
        asks(call("call_1", "search", '"Dune author"')),  # text given to a tool: its arguments are a JSON string
        result("Frank Herbert", "call_1", "search"),
        user("Who wrote Dune?"),
        said("Frank Herbert."),
    ]
    assert record["context"] == [{"content": "Dune (1965)", "doc_uri": None}]
    assert "model_key" not in record  # two models: "small" and "big"


def test_a_trace_without_messages_falls_back_to_the_root_span_and_marks_its_error() -> None:
    t = "0af7651916cd43dd8448eb211c80319f"
    root = _span(t, ROOT, None, "pipeline", (0, 1500), {"input.value": "q?", "output.value": "partial"})
    root["status"] = {"code": 2, "message": "TimeoutError: step 3"}
    (record,) = trace_records(_otlp([root]), source="t")
    assert record == {
        "key": t,
        "input": "q?",
        "actual_output": "partial",
        "actual_duration": 1.5,
        "error": "TimeoutError: step 3",
        "trace_id": t,
        "span_count": 1,
    }


def test_several_root_spans_give_one_row_from_the_first_input_to_the_last_output() -> None:
    t = "0af7651916cd43dd8448eb211c8031a0"
    first = _span(t, ROOT, None, "turn", (0, 100), {"input.value": "first", "output.value": "one"})
    second = _span(t, LLM1, None, "turn", (200, 700), {"input.value": "second", "output.value": "two"})
    (record,) = trace_records([_otlp([second]), _otlp([first, first])], source="t")  # `first` sent twice
    assert (record["input"], record["actual_output"], record["actual_duration"]) == ("first", "two", 0.7)
    assert record["span_count"] == 2


# -- files of several traces ----------------------------------------------------------------------


def _qa(t: str, q: str, a: str, model: str) -> dict[str, Any]:
    return _llm(t, "8888888888888888", None, (0, 250), [user(q)], [said(a)], model)


def test_jsonl_of_several_traces_gives_a_row_each_in_file_order(tmp_path: Path) -> None:
    a, b = "a" * 32, "b" * 32
    lines = [
        _otlp([_qa(b, "2+2?", "4", "m1")]),
        _otlp(agent_spans()),
        _otlp([_qa(a, "Capital of France?", "Paris", "m2")]),
    ]
    dataset = load(_write_jsonl(tmp_path / "many.jsonl", lines))
    assert isinstance(dataset, nbeval.LlmDataset)
    assert [r.key for r in dataset] == [b, TRACE, a]
    assert [(r.input, r.actual_output, r.model_key) for r in dataset] == [
        ("2+2?", "4", "m1"),
        (QUESTION, ANSWER, "gpt-4o-mini"),
        ("Capital of France?", "Paris", "m2"),
    ]
    assert [r.actual_duration for r in dataset] == [0.25, 2.5, 0.25]


def test_load_otlp_file_gives_conversation_rows(tmp_path: Path) -> None:
    dataset = nbeval.load(str(_write_jsonl(tmp_path / "agent.jsonl", [_otlp(agent_spans())])))
    assert isinstance(dataset, nbeval.LlmDataset)
    (row,) = dataset.rows
    assert row.messages == AGENT_MESSAGES
    assert (row.key, row.model_key, row.input, row.actual_output) == (TRACE, "gpt-4o-mini", QUESTION, ANSWER)
    assert [c.to_json() for c in row.context] == AGENT_CONTEXT
    assert row.actual_duration == 2.5
    assert row.extra == {"trace_id": TRACE, "session_id": "sess-1", "span_count": 6}


def test_a_single_otlp_object_and_read_dataset_load_too(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(json.dumps(_otlp(agent_spans())), encoding="utf-8")
    for dataset in (load(path), read_dataset(path)):
        assert isinstance(dataset, nbeval.LlmDataset)
        assert [r.key for r in dataset] == [TRACE]


def test_a_large_otlp_jsonl_is_read_as_traces_not_as_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readers, "_CHUNKED_JSONL_BYTES", 1)  # every file counts as large
    dataset = load(_write_jsonl(tmp_path / "big.jsonl", [_otlp(agent_spans())]))
    assert isinstance(dataset, nbeval.LlmDataset) and dataset.rows[0].key == TRACE


def test_rows_files_still_load_as_rows(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "rows.jsonl", [{"input": "q", "actual_output": "a"}])
    assert [r.input for r in load(path)] == ["q"]  # type: ignore[union-attr]


# -- MLflow traces --------------------------------------------------------------------------------


def _mlflow_span(span: str, parent: str | None, kind: str, ms: tuple[int, int], inputs: Any, outputs: Any) -> dict:
    """A span as MLflow 3 writes it in a trace's JSON: every attribute is JSON text."""
    attrs = {"mlflow.spanType": kind, "mlflow.spanInputs": inputs, "mlflow.spanOutputs": outputs}
    return {
        "trace_id": "tr-7f3a",
        "span_id": span,
        "parent_span_id": parent,
        "name": kind.lower() if kind != "TOOL" else "get_weather",
        "start_time_unix_nano": T0 + ms[0] * MS,
        "end_time_unix_nano": T0 + ms[1] * MS,
        "status": {"code": "OK", "message": ""},
        "attributes": {"mlflow.traceRequestId": '"tr-7f3a"'} | {k: json.dumps(v) for k, v in attrs.items()},
        "events": [],
    }


def test_an_mlflow_trace_gives_one_row(tmp_path: Path) -> None:
    q, asked, answer = (
        user("Weather in Paris?"),
        asks(call("call_9", "get_weather", '{"city": "Paris"}')),
        said("18°C."),
    )
    docs = [{"page_content": "Paris is mild in May.", "metadata": {"doc_uri": "wiki/Paris"}, "id": "p1"}]
    second = {"messages": [q, asked, result("18C", "call_9")], "model": "gpt-4o"}
    spans = [
        _mlflow_span(ROOT, None, "AGENT", (0, 900), {"question": "Weather in Paris?"}, "18°C."),
        _mlflow_span(
            LLM1, ROOT, "CHAT_MODEL", (10, 200), {"messages": [q], "model": "gpt-4o"}, {"choices": [{"message": asked}]}
        ),
        _mlflow_span(TOOL1, ROOT, "TOOL", (210, 300), {"city": "Paris"}, "18C"),
        _mlflow_span(RETR, ROOT, "RETRIEVER", (310, 320), {"query": "Paris"}, docs),
        _mlflow_span(LLM2, ROOT, "CHAT_MODEL", (330, 880), second, {"choices": [{"message": answer}]}),
    ]
    info = {"trace_id": "tr-7f3a", "state": "OK", "trace_metadata": {"mlflow.trace.session": "chat-42"}}
    path = tmp_path / "mlflow_trace.json"
    path.write_text(json.dumps({"info": info, "data": {"spans": spans}}), encoding="utf-8")
    (row,) = load(path).rows  # type: ignore[union-attr]
    assert (row.key, row.model_key, row.input, row.actual_output) == ("tr-7f3a", "gpt-4o", q["content"], "18°C.")
    assert row.messages == [q, asked, result("18C", "call_9"), answer]
    assert [c.to_json() for c in row.context] == [{"content": "Paris is mild in May.", "doc_uri": "wiki/Paris"}]
    assert row.actual_duration == 0.9
    assert row.extra == {"trace_id": "tr-7f3a", "session_id": "chat-42", "span_count": 5}


def test_an_mlflow_2_trace_with_langchain_messages_and_an_error() -> None:
    attrs: dict[str, Any] = {
        "mlflow.spanType": "CHAT_MODEL",
        "mlflow.spanInputs": {"messages": [{"type": "human", "content": "hi"}]},
    }
    attrs["mlflow.spanOutputs"] = {"role": "assistant", "content": "hello"}
    span: dict[str, Any] = {
        "name": "chat",
        "context": {"span_id": "0x" + LLM1, "trace_id": "0x" + TRACE},
        "parent_id": None,
    }
    span |= {"start_time": T0, "end_time": T0 + 40 * MS, "status_code": "ERROR", "status_message": "cut off"}
    span["attributes"] = {k: json.dumps(v) for k, v in attrs.items()}
    rows = trace_records([{"info": {"request_id": "tr-old"}, "data": {"spans": [span]}}], source="t")
    assert rows == [
        {"key": "tr-old", "input": "hi", "actual_output": "hello", "messages": [user("hi"), said("hello")]}
        | {"actual_duration": 0.04, "error": "cut off", "trace_id": "tr-old", "span_count": 1}
    ]


# -- bad files: each error names the file, the span and the field ---------------------------------

SPAN = f"trace {TRACE} span {TOOL1}"


def _break(index: int, key: str, value: Any) -> list[dict[str, Any]]:
    spans = agent_spans()
    spans[index]["attributes"] = [a for a in spans[index]["attributes"] if a["key"] != key]
    spans[index]["attributes"].append({"key": key, "value": value})
    return spans


def _set(index: int, field: str, value: Any) -> list[dict[str, Any]]:
    spans = agent_spans()
    spans[index][field] = value
    return spans


AT = "resourceSpans[1].scopeSpans[1].spans[3]"
ROLE = "llm.input_messages.1.message.role"
CALL_NAME = "llm.output_messages.0.message.tool_calls.0.tool_call.function.name"
BAD = [  # (id, spans, where the error says the span is, the field, what it says)
    ("string-not-text", _break(2, "tool.name", {"stringValue": 5}), SPAN, "tool.name", "stringValue holds 5"),
    ("int-not-a-number", _break(1, "n", {"intValue": "many"}), f"span {LLM1}", "n", "not a valid intValue"),
    ("value-not-an-object", _break(0, "input.value", "plain"), f"span {ROOT}", "input.value", "stringValue"),
    (
        "parameters-not-json",
        _break(2, "tool.parameters", {"stringValue": "city=Paris"}),
        SPAN,
        "tool.parameters",
        "JSON",
    ),
    ("unknown-role", _break(1, ROLE, {"stringValue": "robot"}), f"span {LLM1}", ROLE, "unknown role 'robot'"),
    ("call-without-name", _break(1, CALL_NAME, {"stringValue": ""}), f"span {LLM1}", CALL_NAME, "function's name"),
    ("missing-trace-id", _set(2, "traceId", ""), AT, "traceId", "is missing"),
    ("bad-span-id", _set(2, "spanId", "xyz"), AT, "spanId", "is not a spanId"),
    ("bad-parent-id", _set(2, "parentSpanId", "00f067aa0ba9"), SPAN, "parentSpanId", "is not a spanId"),
    ("zero-trace-id", _set(2, "traceId", "0" * 32), AT, "traceId", "all zeros"),
    ("bad-start-time", _set(2, "startTimeUnixNano", "yesterday"), SPAN, "startTimeUnixNano", "is not a time"),
    ("missing-start-time", _set(2, "startTimeUnixNano", None), SPAN, "startTimeUnixNano", "is missing"),
]


@pytest.mark.parametrize(("spans", "span", "field", "says"), [pytest.param(*b[1:], id=b[0]) for b in BAD])
def test_a_bad_span_is_a_data_error_naming_file_span_and_field(
    spans: list[dict[str, Any]], span: str, field: str, says: str, tmp_path: Path
) -> None:
    path = _write_jsonl(tmp_path / "bad.jsonl", [_otlp([]), _otlp(spans)])
    with pytest.raises(DataError) as info:
        load(path)
    err = info.value
    assert err.source == str(path) and "bad.jsonl" in str(err)
    assert span in str(err.row) and "(line 2)" in str(err.row)
    assert err.field == field and f"field '{field}'" in str(err)
    assert says in str(err)


def test_a_trace_with_nothing_to_use_as_input_is_a_data_error(tmp_path: Path) -> None:
    t = "c" * 32
    path = _write_jsonl(tmp_path / "noinput.jsonl", [_otlp([_span(t, ROOT, None, "x", (0, 1), {"output.value": "a"})])])
    with pytest.raises(DataError) as info:
        load(path)
    assert info.value.row == f"trace {t} span {ROOT} (line 1)" and info.value.field == "input.value"
    assert "no user message" in str(info.value)


def test_a_line_that_is_not_a_trace_is_a_data_error(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "mixed.jsonl", [_otlp(agent_spans()), {"input": "q"}])
    with pytest.raises(DataError, match=r"line 2.*neither an OTLP trace export"):
        load(path)
    path.write_text(json.dumps(_otlp(agent_spans())) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"row 2.*not valid JSON"):
        load(path)


def test_an_mlflow_trace_without_its_id_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps([{"info": {"state": "OK"}, "data": {"spans": []}}]), encoding="utf-8")
    with pytest.raises(DataError) as info:
        load(path)
    assert info.value.source == str(path) and info.value.row == "item 1" and info.value.field == "info.trace_id"
