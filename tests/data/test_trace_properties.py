"""Property-based tests of the trace readers (issue 43: "make the class of bug hard to write again").

* Whatever JSON a trace file holds (any structure of spans, odd numbers, missing parents, loops
  of parent ids, duplicate span ids), reading it returns rows or raises the documented
  :class:`~nbeval.errors.DataError` naming the file and where (the span, or the place in the
  file), in one line; nothing else escapes.
* Reading is invariant to the order of the spans in the file (shuffled, split over lines and
  batches, a span sent twice), and to the format: the same trace written as OTLP JSON and as
  Phoenix's span JSON reads the same. The generated traces give every span its own start time:
  spans that start at the same nanosecond are ordered by their place in the file, as documented.

Budgets keep each test under about 20 s on the shared machine; the cases each tried and what they
found are in the closing note of issue 43 (``--hypothesis-show-statistics``).
"""

from __future__ import annotations

import json
import math
import random
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from nbeval.data.jsonio import json_shape
from nbeval.data.traces import trace_records
from nbeval.errors import DataError

SOURCE = "traces.json"
T0 = 1_700_000_000_000_000_000

# -- any JSON, and odd values where the readers expect ids, times and attributes -----------------

ODD_NUMBERS = st.one_of(
    st.integers(min_value=-(10**450), max_value=10**450),
    st.sampled_from([2**63, 2**64 - 1, 2**64, -1, 0]),
    st.integers(400, 4300).map(lambda digits: 10**digits - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet="0123456789²³¹٣۴ _-+.eE", max_size=30),
    st.sampled_from(["1e400", "NaN", "0x10", "1_000"]),
    st.integers(300, 4500).map(lambda digits: "9" * digits),
)
SCALARS = st.one_of(st.none(), st.booleans(), ODD_NUMBERS, st.text(max_size=12))
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
KEYS = st.one_of(
    st.sampled_from(
        [
            "openinference.span.kind",
            "input.value",
            "output.value",
            "llm.model_name",
            "tool.name",
            "tool.id",
            "tool.parameters",
            "session.id",
            "llm.input_messages.0.message.role",
            "llm.input_messages.0.message.content",
            "llm.input_messages.².message.role",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
            "retrieval.documents.0.document.id",
        ]
    ),
    st.integers(19, 4400).map(lambda digits: f"llm.output_messages.{'9' * digits}.message.role"),
    st.text(max_size=10),
)
KINDS = st.sampled_from(["LLM", "TOOL", "CHAIN", "RETRIEVER", "AGENT", "llm", "", "CHAT_MODEL"])
ANY_VALUE = st.one_of(KINDS, JSON)


def _otlp_value(v: Any) -> st.SearchStrategy[Any]:
    return st.sampled_from(["stringValue", "intValue", "doubleValue", "boolValue", "arrayValue", "kvlistValue"]).map(
        lambda k: {k: v}
    )


OTLP_VALUE = st.one_of(ANY_VALUE.flatmap(_otlp_value), JSON)
IDS = st.one_of(st.sampled_from(["4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "AAECAwQFBgc=", ""]), JSON)
OTLP_SPAN = st.fixed_dictionaries(
    {},
    optional={
        "traceId": st.one_of(st.just("4bf92f3577b34da6a3ce929d0e0e4736"), IDS),
        "spanId": st.one_of(st.sampled_from(["00f067aa0ba902b7", "1111111111111111"]), IDS),
        "parentSpanId": st.one_of(st.sampled_from(["00f067aa0ba902b7", "2222222222222222", ""]), IDS),
        "startTimeUnixNano": st.one_of(st.just(str(T0)), ODD_NUMBERS, JSON),
        "endTimeUnixNano": st.one_of(st.just(str(T0 + 5)), ODD_NUMBERS, JSON),
        "attributes": st.one_of(st.lists(st.fixed_dictionaries({"key": KEYS, "value": OTLP_VALUE}), max_size=6), JSON),
        "status": st.one_of(st.fixed_dictionaries({"code": st.one_of(st.sampled_from([2, "2", 1]), JSON)}), JSON),
        "events": JSON,
        "name": JSON,
    },
)
PHOENIX_SPAN = st.fixed_dictionaries(
    {"context": st.fixed_dictionaries({"trace_id": st.one_of(st.just("t1"), IDS), "span_id": IDS})},
    optional={
        "span_kind": ANY_VALUE,
        "parent_id": IDS,
        "start_time": st.one_of(st.just("2026-07-09T00:00:01.5+00:00"), ODD_NUMBERS, st.text(max_size=30), JSON),
        "end_time": st.one_of(ODD_NUMBERS, st.text(max_size=30)),
        "status_code": st.one_of(st.sampled_from(["ERROR", "OK"]), JSON),
        "status_message": JSON,
        "attributes": st.one_of(st.dictionaries(KEYS, ANY_VALUE, max_size=6), JSON),
        "events": JSON,
        "name": JSON,
    },
)
MLFLOW_SPAN = st.fixed_dictionaries(
    {},
    optional={
        "span_id": IDS,
        "parent_span_id": IDS,
        "start_time_unix_nano": st.one_of(ODD_NUMBERS, JSON),
        "end_time_unix_nano": st.one_of(ODD_NUMBERS, JSON),
        "attributes": st.one_of(st.dictionaries(KEYS, ANY_VALUE.map(json.dumps), max_size=6), JSON),
        "status": JSON,
        "events": JSON,
        "context": JSON,
    },
)
ATTRIBUTE_VALUES = st.one_of(
    st.sampled_from(["LLM", "TOOL", "RETRIEVER", "user", "assistant", "tool", "x"]),
    st.text(max_size=8),
    JSON.map(json.dumps),
)
NEAR_VALID_ATTRS = st.dictionaries(
    KEYS, st.one_of(ATTRIBUTE_VALUES, ATTRIBUTE_VALUES, ODD_NUMBERS, JSON), min_size=1, max_size=8
)
SPAN_FIELDS = ["traceId", "spanId", "parentSpanId", "startTimeUnixNano", "endTimeUnixNano", "status", "events"]


def _near_valid_otlp(attrs: dict[str, Any], changed: dict[str, Any], n: int) -> dict[str, Any]:
    """A valid OTLP span (the ``n``-th of its trace), then ``changed`` fields put in."""
    values = [
        {"key": k, "value": {"intValue": v} if isinstance(v, int) else {"stringValue": str(v)}}
        for k, v in attrs.items()
    ]
    span = {
        "traceId": "4bf92f3577b34da6a3ce929d0e0e4736",
        "spanId": f"{n + 1:016x}",
        "parentSpanId": f"{n:016x}" if n else "",
        "startTimeUnixNano": str(T0 + n),
        "endTimeUnixNano": str(T0 + 10 + n),
        "attributes": values,
    }
    return span | changed


NEAR_VALID_OTLP = st.lists(
    st.tuples(NEAR_VALID_ATTRS, st.dictionaries(st.sampled_from(SPAN_FIELDS), ODD_NUMBERS, max_size=1)),
    min_size=1,
    max_size=4,
).map(
    lambda spans: {
        "resourceSpans": [{"scopeSpans": [{"spans": [_near_valid_otlp(a, c, n) for n, (a, c) in enumerate(spans)]}]}]
    }
)
NEAR_VALID_PHOENIX = st.lists(
    st.tuples(
        KINDS,
        NEAR_VALID_ATTRS,
        st.dictionaries(st.sampled_from(["start_time", "end_time", "parent_id"]), ODD_NUMBERS, max_size=1),
    ),
    min_size=1,
    max_size=4,
).map(
    lambda spans: [
        {"context": {"trace_id": "t", "span_id": f"s{n}"}, "parent_id": f"s{n - 1}" if n else None, "span_kind": kind}
        | {"start_time": f"2026-07-09T00:00:0{n}Z", "status_code": "OK", "attributes": {"input.value": "q"} | attrs}
        | changed
        for n, (kind, attrs, changed) in enumerate(spans)
    ]
)
DOCUMENTS = st.one_of(
    NEAR_VALID_OTLP,
    NEAR_VALID_PHOENIX,
    st.builds(lambda spans: {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}, st.lists(OTLP_SPAN, max_size=4)),
    st.builds(lambda rs: {"resourceSpans": rs}, JSON),
    st.lists(PHOENIX_SPAN, min_size=1, max_size=4),
    st.builds(lambda spans: {"data": spans, "next_cursor": None}, st.lists(PHOENIX_SPAN, min_size=1, max_size=3)),
    st.builds(
        lambda info, spans: {"info": info, "data": {"spans": spans}},
        st.one_of(st.just({"trace_id": "tr-1"}), JSON),
        st.lists(MLFLOW_SPAN, max_size=4),
    ),
    JSON,
)


def _read_or_data_error(doc: Any) -> list[dict[str, Any]] | None:
    """Records, or ``None`` after checking the DataError names the file and where, in one line."""
    try:
        records = trace_records(doc, source=SOURCE)
    except DataError as err:
        event(f"DataError, field {err.field}" if err.field else "DataError, no field")
        text = str(err)
        assert err.source == SOURCE and text.startswith(SOURCE), text
        assert "\n" not in text and len(text) < 1_000, text
        if json_shape(doc) == "traces":  # a trace file: the error says which span or place
            assert err.row is not None, text
        return None
    event(f"read: {len(records)} record(s)")
    return records


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS)
@example({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736"}]}]}]})
@example([{"context": {"trace_id": "t", "span_id": "s"}, "start_time": "9" * 400}])
@example([{"context": {"trace_id": "t", "span_id": "s"}, "start_time": 1, "status_code": ["ERROR"]}])
@example([{"context": {"trace_id": "t", "span_id": "s"}, "start_time": 1, "events": 5}])
@example(  # found: the error quoted a role of 1,000 characters in full
    {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            _near_valid_otlp(
                                {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "9" * 1000},
                                {},
                                0,
                            )
                        ]
                    }
                ]
            }
        ]
    }
)
@example(  # found: the error named an attribute of 1,000 characters in full
    {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            _near_valid_otlp({}, {}, 0)
                            | {"attributes": [{"key": "x" * 1000, "value": {"intValue": False}}]}
                        ]
                    }
                ]
            }
        ]
    }
)
def test_any_json_reads_as_rows_or_a_data_error_naming_file_and_span(doc: Any) -> None:
    records = _read_or_data_error(doc)
    for record in records or []:
        assert isinstance(record["input"], str)
        duration = record.get("actual_duration")
        assert duration is None or math.isfinite(duration)


# -- a valid trace, in any order and either format ------------------------------------------------

ROLES = st.sampled_from(["user", "assistant", "system", "tool"])
CALL_IDS = st.sampled_from([None, "c1", "c2", "c3"])
NAMES = st.sampled_from(["get_weather", "search", "audit"])
ARGS = st.sampled_from(['{"city": "Paris"}', '{"city": "Oslo"}', "{}", '{"q": 1}'])
CALL: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries({"id": CALL_IDS, "name": NAMES, "arguments": ARGS})
MESSAGE: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"role": ROLES, "content": st.one_of(st.none(), st.sampled_from(["hi", "Paris?", "18C", "done", ""]))},
    optional={"tool_calls": st.lists(CALL, min_size=1, max_size=2), "tool_call_id": CALL_IDS},
)


LATE = [2**62 + 1, 2**62 + 2]


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Abstract spans of one to three traces: ids, parents (the root, an earlier or later span, or
    one missing from the file: so loops and lost roots occur), distinct start times, kinds and
    the attributes of each kind."""
    out: list[dict[str, Any]] = []
    n_traces = draw(st.integers(1, 3))
    span_ids = draw(st.lists(st.integers(1, 2**64 - 1), min_size=n_traces, max_size=14, unique=True))
    starts = draw(st.lists(st.integers(1, 2**62), min_size=len(span_ids), max_size=len(span_ids), unique=True))
    for i, (sid, start) in enumerate(zip(span_ids, starts, strict=True)):
        trace = f"{(i % n_traces) + 1:032x}"
        parent = draw(st.one_of(st.none(), st.sampled_from(span_ids), st.integers(1, 2**64 - 1)))
        kind = draw(st.sampled_from(["LLM", "TOOL", "CHAIN", "RETRIEVER", "AGENT", "GUARDRAIL"]))
        attrs: dict[str, Any] = {"openinference.span.kind": kind}
        if draw(st.integers(0, 9)):  # most spans: a trace without any input is a DataError
            attrs["input.value"] = draw(st.sampled_from(["What is the weather?", '{"city": "Paris"}', "x"]))
        if draw(st.booleans()):
            attrs["output.value"] = draw(st.sampled_from(["18C", "done", '{"text": "ok"}']))
        if kind == "LLM":
            attrs["llm.model_name"] = draw(st.sampled_from(["m1", "m2"]))
            for prefix in ("llm.input_messages", "llm.output_messages"):
                for j, m in enumerate(draw(st.lists(MESSAGE, max_size=3))):
                    attrs[f"{prefix}.{j}.message.role"] = m["role"]
                    if m["content"] is not None:
                        attrs[f"{prefix}.{j}.message.content"] = m["content"]
                    for k, c in enumerate(m.get("tool_calls", [])):
                        at = f"{prefix}.{j}.message.tool_calls.{k}.tool_call"
                        attrs |= {f"{at}.function.name": c["name"], f"{at}.function.arguments": c["arguments"]}
                        if c["id"]:
                            attrs[f"{at}.id"] = c["id"]
                    if m.get("tool_call_id"):
                        attrs[f"{prefix}.{j}.message.tool_call_id"] = m["tool_call_id"]
        elif kind == "TOOL":
            attrs["tool.name"] = draw(NAMES)
            attrs["tool.parameters"] = draw(ARGS)
            if (call_id := draw(CALL_IDS)) is not None:
                attrs["tool.id"] = call_id
        elif kind == "RETRIEVER":
            attrs["retrieval.documents.0.document.content"] = "doc"
            attrs["retrieval.documents.0.document.id"] = draw(st.sampled_from(["d1", "d2"]))
        out.append(
            {
                "trace": trace,
                "span": f"{sid:016x}",
                "parent": None if parent is None else f"{parent:016x}",
                "start": start,
                "end": draw(  # some spans end together: after every start, at one of two times
                    st.one_of(st.none(), st.integers(start, start + 10**12), st.sampled_from(LATE))
                ),
                "error": draw(st.one_of(st.none(), st.sampled_from(["boom", "ValueError: no such city"]))),
                "attrs": attrs,
            }
        )
    return out


def _otlp(span: dict[str, Any]) -> dict[str, Any]:
    def value(v: Any) -> dict[str, Any]:
        return {"stringValue": v} if isinstance(v, str) else {"intValue": str(v)}

    return {
        "traceId": span["trace"],
        "spanId": span["span"],
        "parentSpanId": span["parent"] or "",
        "name": "span",
        "startTimeUnixNano": str(span["start"]),
        "endTimeUnixNano": str(span["end"] or ""),
        "status": {"code": 2, "message": span["error"]} if span["error"] else {"code": 1},
        "attributes": [{"key": k, "value": value(v)} for k, v in span["attrs"].items()],
    }


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    seconds, fraction = divmod(ns, 10**9)
    moment = datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction:09d}+00:00"


def _phoenix(span: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": "span",
        "context": {"trace_id": span["trace"], "span_id": span["span"]},
        "parent_id": span["parent"],
        "span_kind": span["attrs"]["openinference.span.kind"],
        "start_time": _iso(span["start"]),
        "end_time": _iso(span["end"]),
        "status_code": "ERROR" if span["error"] else "OK",
        "status_message": span["error"] or "",
        "attributes": {k: v for k, v in span["attrs"].items() if k != "openinference.span.kind"},
    }


def _records(doc: Any) -> dict[str, dict[str, Any]] | str:
    """The records by key, or the failure's field (the row it names includes the line, which
    depends on the order)."""
    try:
        return {r["key"]: r for r in trace_records(doc, source=SOURCE)}
    except DataError as err:
        return f"DataError {err.field}"


def _otlp_lines(spans: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """The spans as OTLP JSON lines: split at random into lines, each line into batches."""
    lines: list[dict[str, Any]] = []
    rest = [_otlp(s) for s in spans]
    while rest:
        cut = rng.randint(1, len(rest))
        batch, rest = rest[:cut], rest[cut:]
        half = rng.randint(0, len(batch))
        scopes = [{"spans": batch[:half]}, {"spans": batch[half:]}]
        lines.append({"resourceSpans": [{"scopeSpans": scopes[:1]}, {"scopeSpans": scopes[1:]}]})
    return lines


def _root(n: int, start: int, output: str) -> dict[str, Any]:
    attrs = {"openinference.span.kind": "CHAIN", "input.value": "q", "output.value": output}
    return {"trace": f"{1:032x}", "span": f"{n:016x}", "parent": None, "start": start, "end": 100, "error": None} | {
        "attrs": attrs
    }


#: Found by the property below once its spans could end at the same nanosecond (``LATE``): two
#: roots ending together gave the row the output of whichever came later in the file.
TWO_ROOTS_ENDING_TOGETHER = [_root(1, 1, "A"), _root(2, 2, "B")]


def test_two_roots_ending_together_give_the_same_answer_in_either_order() -> None:
    def output(spans: list[dict[str, Any]]) -> Any:
        (record,) = trace_records(
            {"resourceSpans": [{"scopeSpans": [{"spans": [_otlp(s) for s in spans]}]}]}, source=SOURCE
        )
        return record["actual_output"]

    assert output(TWO_ROOTS_ENDING_TOGETHER) == output(TWO_ROOTS_ENDING_TOGETHER[::-1]) == "B"


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces(), st.randoms(use_true_random=False), st.lists(st.integers(0, 13), max_size=3))
@example(TWO_ROOTS_ENDING_TOGETHER, random.Random(3), [])
def test_reading_is_invariant_to_span_order_and_to_the_format(
    spans: list[dict[str, Any]], rng: random.Random, twice: list[int]
) -> None:
    expected = _records([{"resourceSpans": [{"scopeSpans": [{"spans": [_otlp(s) for s in spans]}]}]}])
    event(expected if isinstance(expected, str) else f"read: {len(expected)} record(s)")
    shuffled = [*spans, *(spans[i] for i in twice if i < len(spans))]  # a batch sent again
    rng.shuffle(shuffled)
    assert _records(_otlp_lines(shuffled, rng)) == expected
    phoenix = [_phoenix(s) for s in shuffled]
    assert _records(phoenix) == expected
    assert _records({"data": phoenix, "next_cursor": None}) == expected


# -- the messages of an LLM span's input.value and output.value ------------------------------------

MESSAGE_WORDS = st.sampled_from(
    ["user", "assistant", "tool", "system", "human", "text", "tool_call", "tool_call_response", "robot", ""]
)
MESSAGE_KEYS = ["role", "content", "parts", "type", "id", "name", "arguments", "args", "response", "tool_calls"]
MESSAGE_LIKE = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(), st.text(max_size=6), MESSAGE_WORDS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from([*MESSAGE_KEYS, "tool_call_id", "function", "choices", "text"]), inner, max_size=5
        ),
    ),
    max_leaves=12,
)
PART = st.fixed_dictionaries(
    {"type": st.one_of(st.sampled_from(["text", "tool_call", "tool_call_response"]), MESSAGE_WORDS)},
    optional={
        k: st.one_of(st.text(max_size=6), MESSAGE_LIKE) for k in ("content", "id", "name", "arguments", "response")
    },
)
CALL_LIKE = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=4), MESSAGE_LIKE),
        "function": st.fixed_dictionaries(
            {}, optional={"name": st.one_of(NAMES, MESSAGE_LIKE), "arguments": MESSAGE_LIKE}
        ),
        "name": st.one_of(NAMES, MESSAGE_LIKE),
        "args": MESSAGE_LIKE,
    },
)
GOOD_ROLES = st.sampled_from(["user", "assistant", "tool", "system", "human", "ai"])
TEXT = st.text(max_size=8)
MESSAGE_DICT = st.fixed_dictionaries(
    {
        "role": st.one_of(GOOD_ROLES, GOOD_ROLES, GOOD_ROLES, MESSAGE_WORDS),
        "content": st.one_of(TEXT, TEXT, TEXT, st.none(), MESSAGE_LIKE),
    },
    optional={
        "parts": st.lists(PART, max_size=3),
        "tool_calls": st.one_of(st.lists(CALL_LIKE, max_size=2), MESSAGE_LIKE),
        "tool_call_id": st.one_of(st.text(max_size=4), MESSAGE_LIKE),
    },
)
VALUES = st.one_of(
    st.lists(MESSAGE_DICT, min_size=1, max_size=4),
    st.lists(MESSAGE_DICT, min_size=1, max_size=4).map(lambda ms: {"messages": ms}),
    MESSAGE_DICT.map(lambda m: {"choices": [{"message": m}]}),
    st.lists(MESSAGE_DICT, min_size=1, max_size=3),
    MESSAGE_LIKE,
)
CHAT_ROLES = {"system", "user", "assistant", "tool"}


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(VALUES, st.one_of(VALUES, st.text(max_size=10)))
@example([{"role": "user", "parts": 5}], None)
@example([{"role": "tool", "parts": [{"type": "tool_call_response", "id": 7, "response": {"a": 1}}]}], "{}")
@example([{"role": "assistant", "parts": [{"type": "tool_call", "name": None}]}], [])
@example({"messages": [{"role": "user", "content": "hi"}]}, {"choices": [{"message": {"role": "robot"}}]})
def test_llm_values_read_as_well_formed_messages_or_stay_text(inp: Any, out: Any) -> None:
    attrs = [
        {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}},
        {"key": "input.value", "value": {"stringValue": json.dumps(inp)}},
        {"key": "output.value", "value": {"stringValue": out if isinstance(out, str) else json.dumps(out)}},
    ]
    span = {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7", "startTimeUnixNano": "1"}
    (record,) = trace_records(
        {"resourceSpans": [{"scopeSpans": [{"spans": [span | {"attributes": attrs}]}]}]}, source=SOURCE
    )
    messages = record.get("messages", [])
    event("messages read" if messages else "left as text")
    for m in messages:
        assert m["role"] in CHAT_ROLES and (m["content"] is None or isinstance(m["content"], str))
        for c in m.get("tool_calls", []):
            assert isinstance(c["id"], str) and isinstance(c["function"]["name"], str) and c["function"]["name"]
            assert isinstance(c["function"]["arguments"], str)
    assert isinstance(record["input"], str)
