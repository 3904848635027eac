"""One span's OpenInference attributes read into plain values, and a trace's spans made one record.

:mod:`nbeval.data.traces` decodes the files (OTLP JSON, MLflow traces) and
:mod:`nbeval.data.phoenix_spans` Phoenix's span JSON into :class:`Span`; this module knows the
OpenInference conventions; :mod:`nbeval.data.span_conversation` and
:mod:`nbeval.data.trace_record` turn the spans of one trace into one row record (the rule is
written out in :mod:`nbeval.data.traces`). Nothing here reads a file.

Attribute names are OpenInference's: ``openinference.span.kind``,
``llm.input_messages.{i}.message.role`` / ``.content`` / ``.contents.{k}.message_content.text`` /
``.tool_calls.{j}.tool_call.id`` / ``.function.name`` / ``.function.arguments`` / ``.tool_call_id``
/ ``.name``, the same under ``llm.output_messages``, ``llm.model_name``, ``tool.name``,
``tool.id``, ``tool.parameters``, ``input.value``, ``output.value``,
``retrieval.documents.{i}.document.content`` / ``.id``, ``session.id`` (an LLM span without
``llm.input_messages`` and ``llm.output_messages``: :mod:`nbeval.data.span_messages`). A list of objects may be
flattened (``llm.input_messages.0.message.role``, as the conventions write it) or given as one
attribute holding a list of key-value lists; both read the same.

A value of the wrong type raises :class:`~nbeval.errors.DataError` naming the file, the span
(``trace <id> span <id>``) and the attribute.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from nbeval.data.span_fields import cut
from nbeval.errors import DataError

__all__ = [
    "Span",
    "ToolRun",
    "as_text",
    "chat_message",
    "span_from_attributes",
    "tool_arguments",
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


@dataclass(slots=True)
class ToolRun:
    """A tool a TOOL span ran.

    It holds the call's id (when the span names it), name, arguments (JSON text), output, and why
    it failed when its span ended in error.
    """

    id: str | None
    name: str
    arguments: str
    output: str | None
    error: str | None = None


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


#: The most digits a list index in an attribute's name may have.
_MAX_INDEX_DIGITS = 18


def _fail(msg: str, source: str, span: str, name: str) -> DataError:
    return DataError(msg, source=source, row=span, field=cut(name))


def _text(v: Any, source: str, span: str, name: str) -> str | None:
    if v is None or isinstance(v, str):
        return v
    raise _fail(f"must be text (a stringValue), got {type(v).__name__}", source, span, name)


def as_text(v: Any) -> str | None:
    """A value shown as text: text as it is, anything else as JSON text."""
    if v is None or isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False, default=str)


def _indexed(attrs: dict[str, Any], prefix: str, source: str, span: str) -> list[tuple[int, dict[str, Any]]]:
    """The objects of the list attribute ``prefix`` (flattened or whole), in index order.

    Each is a dict of the keys after ``prefix.{i}.``.
    """
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
                found.setdefault(_index(index, source, span, key), {})[rest] = value
    return sorted(found.items())


def _index(text: str, source: str, span: str, key: str) -> int:
    """A list index written in an attribute's name: ASCII digits, at most 18 of them.

    ``²`` and other scripts' digits pass ``str.isdigit`` but are not OpenInference's indices, and
    ``int()`` refuses text of more than 4,300 digits.
    """
    if text.isascii() and len(text) <= _MAX_INDEX_DIGITS:
        return int(text)
    shown = text if len(text) <= 20 else f"a number of {len(text)} digits"
    msg = f"{shown} is not a list index; an attribute's index is a whole number in ASCII digits (0, 1, 2...)"
    raise _fail(msg, source, span, key)


def _messages(attrs: dict[str, Any], prefix: str, source: str, span: str) -> list[dict[str, Any]]:
    """The chat messages of ``llm.input_messages`` or ``llm.output_messages``, in the OpenAI format."""
    out = []
    for i, m in _indexed(attrs, prefix, source, span):
        at = f"{prefix}.{i}.message"
        role = m.get("message.role")
        if not isinstance(role, str) or role.lower() not in _ROLES:
            msg = f"unknown role {cut(repr(role), 40)}; a message's role must be system, user, assistant or tool"
            raise _fail(msg, source, span, f"{at}.role")
        content = _text(m.get("message.content"), source, span, f"{at}.content")
        if content is None:
            parts = [
                _text(p.get("message_content.text"), source, span, f"{at}.contents.{k}.message_content.text")
                for k, p in _indexed(m, "message.contents", source, span)
                if p.get("message_content.type", "text") == "text"
            ]
            content = "\n\n".join(p for p in parts if p is not None) if parts else None
        msg_out: dict[str, Any] = {"role": _ROLES[role.lower()], "content": content}
        calls = [
            _call(c, source, span, f"{at}.tool_calls.{j}.tool_call")
            for j, c in _indexed(m, "message.tool_calls", source, span)
        ]
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
    """One tool call in the OpenAI shape.

    Arguments that are not valid JSON are kept as written: a model that wrote broken arguments made a mistake worth
    scoring, not a bad file.
    """
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
    """A message already in the OpenAI chat format (as MLflow records them), checked and put in shape.

    The shape is the one ``_messages`` gives.
    """
    if not isinstance(m, dict):
        raise _fail(f"a message must be an object with 'role', got {type(m).__name__}", source, span, at)
    role = m.get("role", m.get("type"))  # LangChain's message dicts give a type: human, ai...
    if not isinstance(role, str) or role.lower() not in _ROLES:
        msg = f"unknown role {cut(repr(role), 40)}; a message's role must be system, user, assistant or tool"
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
    for i, d in _indexed(attrs, "retrieval.documents", source, span):
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
    """Whether ``text`` is a JSON Schema of parameters rather than the arguments of one call.

    A schema is what the conventions allow ``tool.parameters`` to hold.
    """
    parsed = json.loads(text)
    return isinstance(parsed, dict) and parsed.get("type") == "object" and isinstance(parsed.get("properties"), dict)


def span_from_attributes(span: Span, attrs: dict[str, Any], name: str, source: str, kind: Any = None) -> Span:
    """``span`` filled from its decoded OpenInference ``attrs``.

    ``name`` is the span's name, the tool's name when ``tool.name`` is not given; ``kind`` is the
    span's kind where the format gives it beside the attributes, as Phoenix does
    (``openinference.span.kind`` wins).
    """
    where = span.where
    kind = attrs.get("openinference.span.kind") or kind
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
        span.tool = ToolRun(call, tool_name, args or "{}", span.output_value, span.error)
    elif span.kind == "RETRIEVER":
        span.documents = _documents(attrs, source, where)
    return span
