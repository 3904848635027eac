"""One span's OpenInference attributes read into plain values, and a trace's spans made one record.

:mod:`nbeval.data.traces` decodes the files (OTLP JSON, MLflow traces) into :class:`Span`; this
module knows the OpenInference conventions and the rule that turns the spans of one trace into
one row record (the rule is written out in :mod:`nbeval.data.traces`). Nothing here reads a file.

Attribute names are OpenInference's: ``openinference.span.kind``,
``llm.input_messages.{i}.message.role`` / ``.content`` / ``.contents.{k}.message_content.text`` /
``.tool_calls.{j}.tool_call.id`` / ``.function.name`` / ``.function.arguments`` / ``.tool_call_id``
/ ``.name``, the same under ``llm.output_messages``, ``llm.model_name``, ``tool.name``,
``tool.id``, ``tool.parameters``, ``input.value``, ``output.value``,
``retrieval.documents.{i}.document.content`` / ``.id``, ``session.id``. A list of objects may be
flattened (``llm.input_messages.0.message.role``, as the conventions write it) or given as one
attribute holding a list of key-value lists; both read the same.

A value of the wrong type raises :class:`~nbeval.errors.DataError` naming the file, the span
(``trace <id> span <id>``) and the attribute.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nbeval.errors import DataError

__all__ = [
    "Span",
    "ToolRun",
    "as_text",
    "chat_message",
    "conversation",
    "span_from_attributes",
    "tool_arguments",
    "trace_record",
]

#: Role names other tools write, in the OpenAI chat format's names.
_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "model": "assistant",
    "tool": "tool",
    "function": "tool",
}

#: Spans whose insides are not part of the conversation: what a tool, a guardrail or an evaluator
#: does (its own LLM calls included) stays inside it. An LLM span inside another is the same call
#: seen by two instrumentations (a framework's and its client's) and is read once.
_SEALED_KINDS = frozenset({"TOOL", "GUARDRAIL", "EVALUATOR"})


@dataclass(slots=True)
class ToolRun:
    """A tool a TOOL span ran: the call's id (when the span names it), name, arguments (JSON
    text) and output."""

    id: str | None
    name: str
    arguments: str
    output: str | None


@dataclass(slots=True)
class Span:
    """What nbeval reads of one span, whatever file it came from."""

    trace_id: str
    span_id: str
    parent_id: str | None
    start: int
    """Start time, nanoseconds since the epoch."""
    end: int | None
    where: str
    """How errors name the span: ``trace <id> span <id>`` (and the line of a JSON-lines file)."""
    order: int = 0
    """Position in the file; orders spans that start at the same nanosecond."""
    kind: str = ""
    input_messages: list[dict[str, Any]] = field(default_factory=list)
    output_messages: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    tool: ToolRun | None = None
    documents: list[dict[str, Any]] = field(default_factory=list)
    input_value: str | None = None
    output_value: str | None = None
    session_id: str | None = None
    error: str | None = None
    """The status message of a span that ended in error (a default text when it gave none)."""


def _fail(msg: str, source: str, span: str, name: str) -> DataError:
    return DataError(msg, source=source, row=span, field=name)


def _text(v: Any, source: str, span: str, name: str) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise _fail(f"must be text (a stringValue), got {type(v).__name__}", source, span, name)


def as_text(v: Any) -> str | None:
    """A value shown as text: text as it is, anything else as JSON text."""
    if v is None or isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, default=str)


def _indexed(attrs: dict[str, Any], prefix: str) -> list[tuple[int, dict[str, Any]]]:
    """The objects of the list attribute ``prefix`` (flattened or whole), in index order, each a
    dict of the keys after ``prefix.{i}.``."""
    found: dict[int, dict[str, Any]] = {}
    whole = attrs.get(prefix)
    if isinstance(whole, list):
        for i, item in enumerate(whole):
            if isinstance(item, dict):
                found[i] = dict(item)
    head = prefix + "."
    cut = len(head)
    for key, value in attrs.items():
        if key.startswith(head):
            index, dot, rest = key[cut:].partition(".")
            if dot and index.isdigit():
                found.setdefault(int(index), {})[rest] = value
    return sorted(found.items())


def _messages(attrs: dict[str, Any], prefix: str, source: str, span: str) -> list[dict[str, Any]]:
    """The chat messages of ``llm.input_messages`` or ``llm.output_messages``, in the OpenAI format."""
    out = []
    for i, m in _indexed(attrs, prefix):
        at = f"{prefix}.{i}.message"
        role = m.get("message.role")
        if not isinstance(role, str) or role.lower() not in _ROLES:
            msg = f"unknown role {role!r}; a message's role must be system, user, assistant or tool"
            raise _fail(msg, source, span, f"{at}.role")
        content = _text(m.get("message.content"), source, span, f"{at}.content")
        if content is None:
            parts = [
                _text(p.get("message_content.text"), source, span, f"{at}.contents.{k}.message_content.text")
                for k, p in _indexed(m, "message.contents")
                if p.get("message_content.type", "text") == "text"
            ]
            content = "\n\n".join(p for p in parts if p is not None) if parts else None
        msg_out: dict[str, Any] = {"role": _ROLES[role.lower()], "content": content}
        calls = [_call(c, source, span, f"{at}.tool_calls.{j}.tool_call") for j, c in _indexed(m, "message.tool_calls")]
        if m.get("message.function_call_name") is not None:  # the older single function call
            legacy = {
                "tool_call.function.name": m["message.function_call_name"],
                "tool_call.function.arguments": m.get("message.function_call_arguments_json"),
            }
            calls.append(_call(legacy, source, span, f"{at}.function_call_name"))
        if calls and msg_out["role"] == "assistant":
            msg_out["tool_calls"] = calls
        if msg_out["role"] == "tool":
            call_id = _text(m.get("message.tool_call_id"), source, span, f"{at}.tool_call_id")
            if call_id:
                msg_out["tool_call_id"] = call_id
        name = m.get("message.name")
        if isinstance(name, str) and name:
            msg_out["name"] = name
        out.append(msg_out)
    return out


def _call(c: dict[str, Any], source: str, span: str, at: str) -> dict[str, Any]:
    """One tool call in the OpenAI shape. Arguments that are not valid JSON are kept as written:
    a model that wrote broken arguments made a mistake worth scoring, not a bad file."""
    name = c.get("tool_call.function.name")
    if not isinstance(name, str) or not name:
        raise _fail("a tool call needs its function's name (text)", source, span, f"{at}.function.name")
    args = c.get("tool_call.function.arguments")
    args = "{}" if args is None else as_text(args)
    call_id = c.get("tool_call.id")
    if call_id is not None and not isinstance(call_id, (str, int)):
        raise _fail(f"must be text, got {type(call_id).__name__}", source, span, f"{at}.id")
    return {
        "id": str(call_id) if call_id not in (None, "") else None,
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def chat_message(m: Any, source: str, span: str, at: str) -> dict[str, Any]:
    """A message already in the OpenAI chat format (as MLflow records them) checked and put in
    the shape :func:`_messages` gives."""
    if not isinstance(m, dict):
        raise _fail(f"a message must be an object with 'role', got {type(m).__name__}", source, span, at)
    role = m.get("role", m.get("type"))  # LangChain's message dicts give a type: human, ai...
    if not isinstance(role, str) or role.lower() not in _ROLES:
        msg = f"unknown role {role!r}; a message's role must be system, user, assistant or tool"
        raise _fail(msg, source, span, f"{at}.role")
    content = m.get("content")
    if isinstance(content, list):  # content parts: their text
        content = "\n\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    out: dict[str, Any] = {"role": _ROLES[role.lower()], "content": _text(content, source, span, f"{at}.content")}
    calls = m.get("tool_calls") or []
    if out["role"] == "assistant" and isinstance(calls, list) and calls:
        out["tool_calls"] = []
        for j, c in enumerate(calls):
            if not isinstance(c, dict):
                raise _fail("a tool call must be an object", source, span, f"{at}.tool_calls[{j}]")
            fn = c["function"] if isinstance(c.get("function"), dict) else c  # LangChain's: name, args, id
            flat = {"tool_call.id": c.get("id"), "tool_call.function.name": fn.get("name")}
            flat["tool_call.function.arguments"] = fn.get("arguments", fn.get("args"))
            out["tool_calls"].append(_call(flat, source, span, f"{at}.tool_calls[{j}]"))
    if out["role"] == "tool" and isinstance(m.get("tool_call_id"), str) and m["tool_call_id"]:
        out["tool_call_id"] = m["tool_call_id"]
    if isinstance(m.get("name"), str) and m["name"]:
        out["name"] = m["name"]
    return out


def _documents(attrs: dict[str, Any], source: str, span: str) -> list[dict[str, Any]]:
    out = []
    for i, d in _indexed(attrs, "retrieval.documents"):
        at = f"retrieval.documents.{i}.document"
        content = _text(d.get("document.content"), source, span, f"{at}.content")
        doc_id = d.get("document.id")
        if doc_id is not None and (isinstance(doc_id, bool) or not isinstance(doc_id, (str, int))):
            raise _fail(f"must be text or a whole number, got {type(doc_id).__name__}", source, span, f"{at}.id")
        if content is not None or doc_id is not None:
            out.append({"content": content, "doc_uri": None if doc_id is None else str(doc_id)})
    return out


def tool_arguments(value: Any, source: str, span: str, name: str) -> str:
    """A tool's arguments as JSON text: an object as it is, text only when it is valid JSON."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except (ValueError, RecursionError):
            msg = 'is not valid JSON; a tool\'s arguments must be JSON text such as \'{"city": "Paris"}\''
            raise _fail(msg, source, span, name) from None
        return value
    return as_text(value) or "{}"


def _is_schema(text: str) -> bool:
    """Whether ``text`` is a JSON Schema of parameters (what the conventions allow
    ``tool.parameters`` to hold) rather than the arguments of one call."""
    parsed = json.loads(text)
    return isinstance(parsed, dict) and parsed.get("type") == "object" and isinstance(parsed.get("properties"), dict)


def span_from_attributes(span: Span, attrs: dict[str, Any], name: str, source: str) -> Span:
    """``span`` filled from its decoded OpenInference ``attrs`` (``name``: the span's name, the
    tool's name when ``tool.name`` is not given)."""
    where = span.where
    kind = attrs.get("openinference.span.kind")
    span.kind = kind.upper() if isinstance(kind, str) else ""
    span.input_value = as_text(attrs.get("input.value"))
    span.output_value = as_text(attrs.get("output.value"))
    session = attrs.get("session.id")
    span.session_id = None if session in (None, "") else str(session)
    if span.kind == "LLM":
        span.input_messages = _messages(attrs, "llm.input_messages", source, where)
        span.output_messages = _messages(attrs, "llm.output_messages", source, where)
        span.model = _text(attrs.get("llm.model_name"), source, where, "llm.model_name") or None
    elif span.kind == "TOOL":
        tool_name = _text(attrs.get("tool.name"), source, where, "tool.name") or name
        call_id = attrs.get("tool.id", attrs.get("tool_call.id"))
        args: str | None = None
        if attrs.get("tool.parameters") is not None:
            args = tool_arguments(attrs["tool.parameters"], source, where, "tool.parameters")
            if span.input_value is not None and _is_schema(args):
                args = None
        if args is None and span.input_value is not None:
            try:
                args = tool_arguments(span.input_value, source, where, "input.value")
            except DataError:  # plain text given to the tool: the text as a JSON string
                args = json.dumps(span.input_value, ensure_ascii=False)
        call = None if call_id in (None, "") else str(call_id)
        span.tool = ToolRun(id=call, name=tool_name, arguments=args or "{}", output=span.output_value)
    elif span.kind == "RETRIEVER":
        span.documents = _documents(attrs, source, where)
    return span


# -- a trace's spans as one record --------------------------------------------------------------


def _norm_args(args: str) -> str:
    try:
        return json.dumps(json.loads(args), sort_keys=True, ensure_ascii=False)
    except (ValueError, RecursionError):
        return args


def _same_call(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a["id"] is not None and b["id"] is not None:
        return bool(a["id"] == b["id"])
    fa, fb = a["function"], b["function"]
    return bool(fa["name"] == fb["name"] and _norm_args(fa["arguments"]) == _norm_args(fb["arguments"]))


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two messages are the same message logged twice (by two LLM spans, or by an LLM
    span and a TOOL span): tool results by their call's id, tool calls by id or by name and
    arguments, everything else by role and text."""
    if a["role"] != b["role"]:
        return False
    if a["role"] == "tool" and a.get("tool_call_id") and b.get("tool_call_id"):
        return bool(a["tool_call_id"] == b["tool_call_id"])
    ca, cb = a.get("tool_calls", []), b.get("tool_calls", [])
    if ca or cb:
        return len(ca) == len(cb) and all(_same_call(x, y) for x, y in zip(ca, cb, strict=True))
    return bool(a["content"] == b["content"])


def _extends(history: list[dict[str, Any]], messages: list[dict[str, Any]]) -> bool:
    """Whether ``messages`` starts with the whole of ``history``."""
    return len(messages) >= len(history) and all(_same(h, m) for h, m in zip(history, messages, strict=False))


def _pending_calls(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of ``history`` that no tool message answers yet, in order (a tool message
    without a call id answers the first call still waiting)."""
    pending: list[dict[str, Any]] = []
    for m in history:
        if m["role"] == "assistant":
            pending.extend(m.get("tool_calls", []))
        elif m["role"] == "tool" and pending:
            call_id = m.get("tool_call_id")
            hit = next((c for c in pending if c["id"] == call_id), None) if call_id else pending[0]
            if hit is not None:
                pending.remove(hit)
    return pending


def _add_tool_run(history: list[dict[str, Any]], run: ToolRun) -> None:
    """A TOOL span's call added to the conversation: only its result when an assistant message
    asked for it (by the call's id, else by the tool's name, preferring equal arguments) and no
    tool message answered it yet; nothing when one did; else the call and its result."""
    pending = _pending_calls(history)
    asked = [c for m in history if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    if run.id is not None and any(c["id"] == run.id for c in asked):
        call = next((c for c in pending if c["id"] == run.id), None)
        if call is None:
            return  # asked for and answered already
    else:
        same = [c for c in pending if c["function"]["name"] == run.name and (run.id is None or c["id"] is None)]
        wanted = _norm_args(run.arguments)
        call = next((c for c in same if _norm_args(c["function"]["arguments"]) == wanted), same[0] if same else None)
    if call is None:
        call = {"id": run.id, "type": "function", "function": {"name": run.name, "arguments": run.arguments}}
        history.append({"role": "assistant", "content": None, "tool_calls": [call]})
    result: dict[str, Any] = {"role": "tool", "content": run.output, "name": run.name}
    if call["id"] is not None:
        result["tool_call_id"] = call["id"]
    history.append(result)


def _with_ids(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of the messages with every tool call given an id (``call_1``, ``call_2``... where
    the trace gave none) and every tool message linked to the call it answers."""
    taken = {c["id"] for m in history for c in m.get("tool_calls", []) if c["id"] is not None}
    n = 0
    out: list[dict[str, Any]] = []
    pending: list[str] = []
    for m in history:
        m = dict(m)
        if "tool_calls" in m:
            calls = []
            for c in m["tool_calls"]:
                c = {**c, "function": dict(c["function"])}
                while c["id"] is None:
                    n += 1
                    c["id"] = f"call_{n}" if f"call_{n}" not in taken else None
                calls.append(c)
                pending.append(c["id"])
            m["tool_calls"] = calls
        elif m["role"] == "tool":
            if not m.get("tool_call_id") and pending:
                m["tool_call_id"] = pending[0]
            if m.get("tool_call_id") in pending:
                pending.remove(m["tool_call_id"])
        out.append(m)
    return out


def conversation(spans: list[Span]) -> list[dict[str, Any]]:
    """The conversation of a trace's spans (in time order), by the rule in :mod:`nbeval.data.traces`."""
    by_id = {s.span_id: s for s in spans}
    history: list[dict[str, Any]] = []
    for span in spans:
        if span.kind not in ("LLM", "TOOL") or _sealed(span, by_id):
            continue
        if span.kind == "LLM" and (span.input_messages or span.output_messages):
            if _extends(history, span.input_messages):
                history = [*span.input_messages, *span.output_messages]
            else:
                history += [m for m in span.input_messages if not any(_same(m, h) for h in history)]
                history += span.output_messages
        elif span.tool is not None:
            _add_tool_run(history, span.tool)
    return _with_ids(history)


def _sealed(span: Span, by_id: dict[str, Span]) -> bool:
    """Whether ``span`` runs inside a tool, a guardrail or an evaluator, or is an LLM call inside
    another LLM call."""
    seen = {span.span_id}
    parent = by_id.get(span.parent_id) if span.parent_id else None
    while parent is not None and parent.span_id not in seen:
        if parent.kind in _SEALED_KINDS or (span.kind == "LLM" and parent.kind == "LLM"):
            return True
        seen.add(parent.span_id)
        parent = by_id.get(parent.parent_id) if parent.parent_id else None
    return False


def _roots(spans: list[Span]) -> list[Span]:
    """The spans without a parent; where a partial export lost the root, those whose parent is not
    in the file; failing both (a loop of parents), the first span."""
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if s.parent_id is None] or [s for s in spans if s.parent_id not in ids]
    return roots or spans[:1]


def trace_record(
    spans: list[Span], *, key: str, source: str, session_id: str | None = None, trace_id: str | None = None
) -> dict[str, Any]:
    """The row record of one trace's ``spans`` (see :mod:`nbeval.data.traces` for the rule)."""
    unique: dict[str, Span] = {}
    for s in spans:  # a span exported twice (a retried batch) counts once
        unique.setdefault(s.span_id, s)
    ordered = sorted(unique.values(), key=lambda s: (s.start, s.order))
    roots = _roots(ordered)
    first, last = roots[0], max(roots, key=lambda s: (s.end or s.start, s.order))
    messages = conversation(ordered)
    prompt = next((m["content"] for m in reversed(messages) if m["role"] == "user" and m["content"]), None)
    prompt = prompt or first.input_value
    if prompt is None:
        msg = (
            "the trace has no user message in its LLM spans and its root span no 'input.value'; "
            "nbeval needs one of them as the row's input"
        )
        raise DataError(msg, source=source, row=first.where, field="input.value")
    after = messages[max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1) + 1 :]
    answer = next((m["content"] for m in reversed(after) if m["role"] == "assistant" and m["content"]), None)
    record: dict[str, Any] = {"key": key, "input": prompt, "actual_output": answer or last.output_value}
    models = {s.model for s in ordered if s.kind == "LLM" and s.model}
    if len(models) == 1:
        record["model_key"] = models.pop()
    if messages:
        record["messages"] = messages
    context = [d for s in ordered if s.kind == "RETRIEVER" for d in s.documents]
    if context:
        record["context"] = context
    ends = [s.end for s in roots if s.end]
    if ends:
        record["actual_duration"] = (max(ends) - min(s.start for s in roots)) / 1e9
    if first.error is not None or last.error is not None:
        record["error"] = first.error or last.error
    record["trace_id"] = trace_id or first.trace_id
    session = session_id or next((s.session_id for s in [*roots, *ordered] if s.session_id), None)
    if session:
        record["session_id"] = session
    record["span_count"] = len(ordered)
    return record
