"""Agent traces read into rows: OTLP JSON with OpenInference attributes, Phoenix's span JSON, MLflow trace JSON.

Files read:

* **OTLP JSON**, as the OpenTelemetry collector's file exporter writes it (one
  ``{"resourceSpans": [...]}`` object per line, ``.jsonl``) or as one such object (``.json``);
  OpenInference exporters write the same shape. Field names in
  lowerCamelCase or snake_case; ``traceId`` / ``spanId`` as hex (the collector) or base64 (the
  protobuf JSON mapping); times as nanoseconds, in text or numbers; attribute values as
  ``{"stringValue"|"intValue"|"doubleValue"|"boolValue"|"arrayValue"|"kvlistValue"|"bytesValue": ...}``.
  The spans of one trace may be spread over several lines. Times are at most 2**64 - 1 ns.
* **Phoenix's span JSON** (its REST API's and Python client's ``v1.Span``: ``context.trace_id``,
  ``span_kind``, ISO 8601 times, plain attribute values): a list of spans, one a line, or the
  REST answer ``{"data": [...]}`` (see :mod:`nbeval.data.phoenix_spans`). Its ids are kept as text.
* **MLflow trace JSON**, ``{"info": {...}, "data": {"spans": [...]}}`` (one, or a list of them):
  attributes are JSON text; ``mlflow.spanType``, ``mlflow.spanInputs``, ``mlflow.spanOutputs``
  and ``mlflow.chat.messages`` are read, and OpenInference attributes where an autologger wrote
  them (they win). The row's key is MLflow's trace id (``tr-...``); the session is the trace's
  ``mlflow.trace.session`` metadata.

**One record per trace** (spans grouped by trace id, in the order the traces first appear). A
trace with several root spans (spans without a parent; when an export lost the root, spans
whose parent is missing) still gives one record: its input comes from the earliest root, its
output from the root that ends last, and its duration runs from the first root's start to the
last root's end. A span given twice (a batch sent again) counts once. Each record holds:

* ``key`` and ``trace_id``: the trace id (32 hex digits, lower case; MLflow's id for MLflow);
* ``messages``: the conversation in the OpenAI chat format, built by the rule below;
* ``input``: the last user message with text, else the root span's ``input.value``;
* ``actual_output``: the assistant's last text after that user message, else the root span's
  ``output.value``;
* ``context``: the documents of every RETRIEVER span (``retrieval.documents``), in time order,
  as ``{"content", "doc_uri"}`` with the document id as ``doc_uri``;
* ``model_key``: the ``llm.model_name`` of the LLM spans when they name exactly one model;
* ``actual_duration``: the root span's duration in seconds (none, with a warning, when it ends before it starts);
* ``error``: the root span's status message when it ended in error (else its ``exception``
  event's type and message);
* ``tool_errors``: ``"<tool>: <why>"`` for each TOOL span that ended in error, wherever it ran,
  when any did (a failed tool is worth knowing even when the agent went on and the root succeeded);
* ``session_id`` (when a span has ``session.id``) and ``span_count``.

**The conversation.** The LLM and TOOL spans are taken in order of start time; spans inside a
TOOL, GUARDRAIL or EVALUATOR span are skipped (what a tool does inside, its own LLM calls
included, is not part of the conversation), and so is an LLM span inside another LLM span (one
call seen by two instrumentations). Then, span by span:

An LLM span without ``llm.input_messages`` and ``llm.output_messages`` takes them from JSON in its
``input.value`` and ``output.value`` (OpenAI or OpenTelemetry GenAI messages; see
:mod:`nbeval.data.span_messages`).

1. an LLM span whose input messages start with the whole conversation so far (the usual case:
   each call is sent the history) makes the conversation its input messages plus its output
   messages, so the latest call's view wins;
2. an LLM span whose input does not (a framework that logs only the new turn, or a call that
   left some history out) adds its input messages that are not in the conversation yet, then
   its output messages;
3. a TOOL span whose call an assistant message asked for (same ``tool.id``, else the same tool
   name, preferring equal arguments) adds the tool message with its ``output.value`` (a span that
   ended in error without output: ``Error: <why>``) when no tool message answered that call
   yet; a TOOL span no assistant asked for (a tool the code called itself) adds an assistant
   message with the call and the tool message. The call's
   name is ``tool.name`` (else the span's name); its arguments are ``tool.parameters``, which
   must be JSON, unless it holds a JSON Schema (the conventions allow the parameters' definition
   there) and ``input.value`` is given; else ``input.value`` (text that is not JSON becomes a
   JSON string).

Messages count as the same when tool results answer the same call id, tool calls have the same
ids (or, without ids, the same names and arguments), and other messages have the same role and
text. Tool calls without an id get ``call_1``, ``call_2``... and tool messages without a call id
are linked to the first call still waiting for its result.

Every problem raises :class:`~nbeval.errors.DataError` naming the file, the span (as
``trace <id> span <id>``, and the line of a ``.jsonl`` file) or the place in the file before the
ids are known (``resourceSpans[1].scopeSpans[1].spans[3]``), and the field or attribute; odd
numbers included (``²`` or thousands of digits as a list index, a time past 2**64). The rule runs
in time linear in the spans (:mod:`nbeval.data.span_conversation`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nbeval.data.jsonio import _parse_json, json_shape, load_json
from nbeval.data.phoenix_spans import phoenix_spans
from nbeval.data.span_fields import cut, error_of, nanos, shown, span_id, start_time
from nbeval.data.span_messages import messages_from_values
from nbeval.data.spans import Span, as_text, chat_message, span_from_attributes
from nbeval.data.trace_record import trace_record
from nbeval.data.trace_shapes import is_phoenix_export
from nbeval.errors import DataError

__all__ = ["is_trace_file", "read_traces", "trace_records"]

_VALUE_KINDS = {
    "stringValue": "s",
    "string_value": "s",
    "bytesValue": "s",
    "bytes_value": "s",
    "intValue": "i",
    "int_value": "i",
    "doubleValue": "d",
    "double_value": "d",
    "boolValue": "b",
    "bool_value": "b",
    "arrayValue": "a",
    "array_value": "a",
    "kvlistValue": "k",
    "kvlist_value": "k",
}
_VALUE_HELP = (
    "an attribute value must be an object with one of stringValue, intValue, doubleValue, boolValue, "
    'arrayValue, kvlistValue or bytesValue, e.g. {"stringValue": "text"}'
)


def _get(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _value(v: Any, source: str, where: str, name: str) -> Any:
    """One OTLP ``AnyValue`` as a plain value."""
    if v is None or (isinstance(v, dict) and not v):
        return None
    if isinstance(v, dict) and len(v) == 1:
        ((k, x),) = v.items()
        kind = _VALUE_KINDS.get(k)
        if kind == "s" and isinstance(x, str):
            return x
        if kind in ("i", "d") and isinstance(x, (int, float, str)) and not isinstance(x, bool):
            try:
                return int(x) if kind == "i" else float(x)
            except (ValueError, OverflowError):
                pass
        if kind == "b" and isinstance(x, bool):
            return x
        if kind == "a" and isinstance(x, dict) and isinstance(x.get("values", []), list):
            return [_value(y, source, where, f"{name}[{i}]") for i, y in enumerate(x.get("values", []))]
        if kind == "k" and isinstance(x, dict):
            return _attributes(x.get("values", []), source, where, f"{name}.")
        if kind is not None:
            msg = f"{k} holds {shown(x)}, which is not a valid {k}"
            if kind == "i":
                msg += ' (a whole number, in text or not: {"intValue": "42"})'
            raise DataError(msg, source=source, row=where, field=cut(name))
    raise DataError(_VALUE_HELP, source=source, row=where, field=cut(name))


def _attributes(items: Any, source: str, where: str, prefix: str = "") -> dict[str, Any]:
    """A list of OTLP ``{"key", "value"}`` pairs as a dict (a key given twice: the last wins)."""
    if items is None:
        return {}
    if not isinstance(items, list):
        msg = 'must be a list of {"key": ..., "value": {...}} objects'
        raise DataError(msg, source=source, row=where, field=cut(f"{prefix}attributes" if not prefix else prefix[:-1]))
    out: dict[str, Any] = {}
    for i, kv in enumerate(items):
        if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
            msg = 'each attribute must be an object {"key": "name", "value": {...}} with a text key'
            raise DataError(msg, source=source, row=where, field=cut(f"{prefix}attributes[{i}]"))
        key = kv["key"]
        out[key] = _value(kv.get("value"), source, where, prefix + key)
    return out


def _name(sp: dict[str, Any]) -> str:
    name = sp.get("name")
    return name if isinstance(name, str) else ""


def _status_error(sp: dict[str, Any], status: Any, code_key: str, message_key: str, events: list[Any]) -> str | None:
    """Why the span ended in error, from its status and its ``exception`` event.

    The status is ``{"code", "message"}`` (MLflow 2: ``status_code`` and ``status_message`` on the
    span).
    """
    holder = status if isinstance(status, dict) else sp
    return error_of(holder.get(code_key), holder.get(message_key), events)


def _events(items: Any, attributes: Any) -> list[dict[str, Any]]:
    """A span's ``exception`` events with their attributes as a dict.

    ``attributes`` reads them as the format writes them; an event that cannot be read is left out,
    since it only adds a reason.
    """
    out = []
    for event in items if isinstance(items, list) else []:
        if isinstance(event, dict) and event.get("name") == "exception":
            try:
                out.append({"name": "exception", "attributes": attributes(event.get("attributes"))})
            except DataError:
                continue
    return out


class _Traces:
    """Spans collected by trace, in the order traces first appear, then made records."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.spans: dict[str, list[Span]] = {}
        self.meta: dict[str, tuple[str | None, str | None]] = {}
        self.order = 0

    def add(self, doc: Any, at: str) -> None:
        """The spans of one parsed document; ``at`` says where it is in the file (" (line 3)")."""
        if json_shape(doc) != "traces" or not isinstance(doc, dict):
            msg = (
                'is neither an OTLP trace export ({"resourceSpans": [...]}), an MLflow trace '
                '({"info": {...}, "data": {"spans": [...]}}) nor a Phoenix span ({"context": {"trace_id", '
                '"span_id"}, "span_kind", ...}); give one of them per line or a list of them'
            )
            raise DataError(msg, source=self.source, row=at.strip(" ()") or "1")
        try:
            if is_phoenix_export(doc):
                for span in phoenix_spans(doc, self.source, at):
                    self._put(span)
            elif "info" in doc and "data" in doc:
                self._mlflow(doc, at)
            else:
                self._otlp(doc, at)
        except RecursionError:  # values nested thousands deep: a broken or hostile file
            msg = "is nested too deeply to be a trace (values inside values, thousands of levels)"
            raise DataError(msg, source=self.source, row=at.strip(" ()") or "1") from None

    def _put(self, span: Span) -> None:
        self.order += 1
        span.order = self.order
        self.spans.setdefault(span.trace_id, []).append(span)

    def _otlp(self, doc: dict[str, Any], at: str) -> None:
        resource_spans = _get(doc, "resourceSpans", "resource_spans")
        if not isinstance(resource_spans, list):
            raise DataError("must be a list", source=self.source, row=at.strip(" ()") or "1", field="resourceSpans")
        for i, rs in enumerate(resource_spans, 1):
            scopes = _get(rs, "scopeSpans", "scope_spans") if isinstance(rs, dict) else None
            if isinstance(rs, dict) and scopes is None:  # exporters from before OTLP 0.15
                scopes = _get(rs, "instrumentationLibrarySpans", "instrumentation_library_spans") or []
            if not isinstance(scopes, list):
                where = f"resourceSpans[{i}]{at}"
                raise DataError("must be an object with a list 'scopeSpans'", source=self.source, row=where)
            for j, ss in enumerate(scopes, 1):
                spans = ss.get("spans") if isinstance(ss, dict) else None
                if not isinstance(spans, list):
                    where = f"resourceSpans[{i}].scopeSpans[{j}]{at}"
                    raise DataError("must be an object with a list 'spans'", source=self.source, row=where)
                for k, sp in enumerate(spans, 1):
                    self._put(self._otlp_span(sp, f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]{at}", at))

    def _otlp_span(self, sp: Any, place: str, at: str) -> Span:
        source = self.source
        if not isinstance(sp, dict):
            raise DataError(f"a span must be an object, got {type(sp).__name__}", source=source, row=place)
        trace = span_id(_get(sp, "traceId", "trace_id"), 16, source, place, "traceId")
        own = span_id(_get(sp, "spanId", "span_id"), 8, source, place, "spanId")
        where = f"trace {trace} span {own}{at}"
        parent = _get(sp, "parentSpanId", "parent_span_id")
        events = _events(sp.get("events"), lambda items: _attributes(items, source, where))
        span = Span(
            trace_id=trace,
            span_id=own,
            parent_id=None if parent in (None, "") else span_id(parent, 8, source, where, "parentSpanId"),
            start=start_time(_get(sp, "startTimeUnixNano", "start_time_unix_nano"), source, where, "startTimeUnixNano"),
            end=nanos(_get(sp, "endTimeUnixNano", "end_time_unix_nano"), source, where, "endTimeUnixNano"),
            where=where,
            error=_status_error(sp, sp.get("status"), "code", "message", events),
        )
        span = span_from_attributes(span, _attributes(sp.get("attributes"), source, where), _name(sp), source)
        return messages_from_values(span, source)

    def _mlflow(self, doc: dict[str, Any], at: str) -> None:
        source = self.source
        place = at.strip(" ()") or "1"
        info, data = doc["info"], doc["data"]
        key = info.get("trace_id", info.get("request_id")) if isinstance(info, dict) else None
        if not isinstance(key, str) or not key:
            raise DataError("an MLflow trace needs its id (text)", source=source, row=place, field="info.trace_id")
        spans = data.get("spans") if isinstance(data, dict) else None
        if not isinstance(spans, list):
            raise DataError("must be a list of spans", source=source, row=f"trace {cut(key)}{at}", field="data.spans")
        metadata = info.get("trace_metadata", info.get("request_metadata"))
        session = metadata.get("mlflow.trace.session") if isinstance(metadata, dict) else None
        self.meta[key] = (key, session if isinstance(session, str) and session else None)
        for k, sp in enumerate(spans, 1):
            self._put(self._mlflow_span(sp, key, at, f"trace {cut(key)} spans[{k}]{at}"))

    def _mlflow_span(self, sp: Any, key: str, at: str, place: str) -> Span:
        source = self.source
        if not isinstance(sp, dict):
            raise DataError(f"a span must be an object, got {type(sp).__name__}", source=source, row=place)
        context: dict[str, Any] = sp["context"] if isinstance(sp.get("context"), dict) else {}  # MLflow 2's spans
        own = span_id(sp.get("span_id", context.get("span_id")), 8, source, place, "span_id")
        where = f"trace {cut(key)} span {own}{at}"
        parent = sp.get("parent_span_id", sp.get("parent_id"))
        raw = sp.get("attributes") or {}
        if not isinstance(raw, dict):
            raise DataError("must be an object of attributes", source=source, row=where, field="attributes")
        attrs = {k: _unjson(v) for k, v in raw.items()}
        kind = attrs.get("openinference.span.kind") or attrs.get("mlflow.spanType")
        attrs["openinference.span.kind"] = "LLM" if kind == "CHAT_MODEL" else kind
        inputs, outputs = attrs.get("mlflow.spanInputs"), attrs.get("mlflow.spanOutputs")
        attrs.setdefault("input.value", as_text(inputs))
        attrs.setdefault("output.value", as_text(outputs))
        status = sp.get("status")
        events = _events(sp.get("events"), lambda items: items if isinstance(items, dict) else {})
        span = Span(
            trace_id=key,
            span_id=own,
            parent_id=None if parent in (None, "") else span_id(parent, 8, source, where, "parent_span_id"),
            start=start_time(
                sp.get("start_time_unix_nano", sp.get("start_time")), source, where, "start_time_unix_nano"
            ),
            end=nanos(sp.get("end_time_unix_nano", sp.get("end_time")), source, where, "end_time_unix_nano"),
            where=where,
            error=_status_error(sp, status, "code", "message", events)
            if isinstance(status, dict)
            else _status_error(sp, None, "status_code", "status_message", events),
        )
        span = span_from_attributes(span, attrs, _name(sp), source)
        _mlflow_native(span, attrs, inputs, outputs, source)
        return messages_from_values(span, source)

    def records(self) -> list[dict[str, Any]]:
        out = []
        for trace_id, spans in self.spans.items():
            key, session = self.meta.get(trace_id, (trace_id, None))
            out.append(trace_record(spans, key=key or trace_id, source=self.source, session_id=session))
        return out


def _unjson(value: Any) -> Any:
    """An MLflow attribute (JSON text) parsed; text that is not JSON as it is."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _mlflow_native(span: Span, attrs: dict[str, Any], inputs: Any, outputs: Any, source: str) -> None:
    """What MLflow's own attributes say, where OpenInference attributes did not say it."""
    where = span.where
    if span.kind == "LLM" and not span.input_messages and not span.output_messages:
        chat = attrs.get("mlflow.chat.messages")
        if isinstance(chat, list):  # the whole exchange, reply included
            span.input_messages = [
                chat_message(m, source, where, f"mlflow.chat.messages[{i}]") for i, m in enumerate(chat)
            ]
        else:
            asked = inputs.get("messages") if isinstance(inputs, dict) else None
            if isinstance(asked, list):
                span.input_messages = [
                    chat_message(m, source, where, f"mlflow.spanInputs.messages[{i}]") for i, m in enumerate(asked)
                ]
            choices = outputs.get("choices") if isinstance(outputs, dict) else None
            if isinstance(choices, list) and choices and isinstance(choices[0], dict) and "message" in choices[0]:
                span.output_messages = [
                    chat_message(choices[0]["message"], source, where, "mlflow.spanOutputs.choices[0].message")
                ]
            elif isinstance(outputs, dict) and "role" in outputs:
                span.output_messages = [chat_message(outputs, source, where, "mlflow.spanOutputs")]
    if span.kind == "LLM" and span.model is None:
        asked_model = inputs.get("model") if isinstance(inputs, dict) else None
        model = attrs.get("mlflow.llm.model", asked_model)
        span.model = model if isinstance(model, str) and model else None
    if span.kind == "RETRIEVER" and not span.documents and isinstance(outputs, list):
        for doc in outputs:  # MLflow's Document: page_content, metadata.doc_uri, id
            if isinstance(doc, dict):
                meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
                uri = meta.get("doc_uri", doc.get("id"))
                content = doc.get("page_content", doc.get("content"))
                if content is not None or uri is not None:
                    span.documents.append({"content": as_text(content), "doc_uri": as_text(uri)})


def trace_records(data: Any, *, source: str) -> list[dict[str, Any]]:
    """Row records, one per trace, from parsed trace JSON.

    The JSON is one OTLP export object, an MLflow trace, or a list of them (the lines of a
    JSON-lines file). See the module docstring for the rule.
    """
    traces = _Traces(source)
    if isinstance(data, list):
        for n, doc in enumerate(data, 1):
            traces.add(doc, f" (item {n})")
    else:
        traces.add(data, "")
    return traces.records()


def read_traces(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Row records, one per trace, from an OTLP JSON or JSON-lines file or an MLflow trace file.

    A ``.jsonl`` file is read a line at a time: each line's spans are read and its JSON let go before the next, so a
    large export is never held as text and parsed objects at once.
    """
    name = os.fspath(path)
    if not name.lower().endswith(".jsonl"):
        data, name = load_json(name)
        return trace_records(data, source=name)
    _readable(name)
    traces = _Traces(name)
    with open(name, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if raw.strip():
                text = _decode(raw, lineno, name)
                try:  # the plain parser first: exporters write strict JSON, and it is faster
                    doc = json.loads(text)
                except (ValueError, RecursionError):  # jsonio's says what is wrong, or reads trailing commas
                    doc = _parse_json(text, name, row=lineno)
                traces.add(doc, f" (line {lineno})")
    if not traces.spans:
        raise DataError("the file holds no spans; export the traces again", source=name)
    return traces.records()


def _readable(name: str) -> None:
    p = Path(name)
    if not p.exists():
        raise DataError("file not found", source=name)
    if p.is_dir():
        raise DataError("is a folder, not a file; give the path of a JSON or JSONL trace file", source=name)


def _decode(raw: bytes, lineno: int, name: str) -> str:
    try:
        return raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text: byte 0x{raw[exc.start]:02x} at line {lineno} cannot be decoded; save the file as UTF-8"
        raise DataError(msg, source=name) from None


def is_trace_file(path: str | os.PathLike[str]) -> bool:
    """Whether the JSON-lines file at ``path`` holds traces, judged from its first line.

    ``False`` when that line cannot be read: the readers of rows then say what is wrong.
    """
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    return json_shape(json.loads(raw.decode("utf-8-sig"))) == "traces"
    except (OSError, ValueError, RecursionError):
        return False
    return False
