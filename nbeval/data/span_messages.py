"""The chat messages of an LLM span that carries its exchange only in ``input.value`` and ``output.value``.

Some instrumentations write no ``llm.input_messages`` / ``llm.output_messages``: the request and
the reply are JSON text in ``input.value`` and ``output.value`` (OpenInference's own fixture
``openinference_client_span_input_output_only.json`` is such a span). Read from them:

* the input: a list of messages, or an object with ``messages`` (a chat request). A message is
  in the OpenAI chat format (``role``, ``content``, ``tool_calls``, ``tool_call_id``) or in the
  OpenTelemetry GenAI format (``role`` and ``parts``: ``{"type": "text", "content"}``,
  ``{"type": "tool_call", "id", "name", "arguments"}``, ``{"type": "tool_call_response", "id",
  "response"}``; other parts, such as reasoning, are left out);
* the output: a list of messages or one message (either format), a chat completion
  (``choices[0].message``), an object with a text ``text`` (``{"text", "finish_reason"}``), or
  plain text: the assistant's reply.

Only an input that holds messages makes an exchange: a prompt in plain text, or JSON of another
shape, leaves the span without messages (as before), since a free-form ``input.value`` is not a
conversation. A value that looks like messages but does not read as them (an unknown role, content
of the wrong type) is left as text the same way. Nothing here reads a file.
"""

from __future__ import annotations

import json
from typing import Any

from nbeval.data.spans import Span, as_text, chat_message
from nbeval.errors import DataError

__all__ = ["Message", "messages_from_values"]

#: A chat message as a plain dict in the OpenAI chat format (``role``, ``content``, maybe ``tool_calls``).
Message = dict[str, Any]


def _parsed(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _is_message(m: Any) -> bool:
    return (
        isinstance(m, dict) and isinstance(m.get("role"), str) and ("content" in m or "parts" in m or "tool_calls" in m)
    )


def _openai(m: dict[str, Any]) -> list[Message]:
    """One message in the OpenAI shape (a GenAI message with several tool responses: several)."""
    parts = m.get("parts")
    if not isinstance(parts, list):
        return [m]
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[Message] = []
    for p in parts:
        if not isinstance(p, dict):
            continue
        kind = p.get("type")
        if kind == "text" and isinstance(p.get("content"), str):
            texts.append(p["content"])
        elif kind == "tool_call":
            calls.append({"id": p.get("id"), "function": {"name": p.get("name"), "arguments": p.get("arguments")}})
        elif kind == "tool_call_response":
            result: Message = {"role": "tool", "content": as_text(p.get("response"))}
            if isinstance(p.get("id"), str) and p["id"]:
                result["tool_call_id"] = p["id"]
            results.append(result)
    if results and m["role"] == "tool":
        return results
    out: Message = {"role": m["role"], "content": "\n\n".join(texts) if texts else None}
    if calls:
        out["tool_calls"] = calls
    return [out, *results]


def _messages(value: Any) -> list[Message] | None:
    """``value`` as a list of messages in the OpenAI shape, or ``None`` when it holds none."""
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, dict) and _is_message(value):
        value = [value]
    if not isinstance(value, list) or not value or not all(_is_message(m) for m in value):
        return None
    return [x for m in value for x in _openai(m)]


def _reply(text: str | None) -> list[Message]:
    """The assistant's messages in ``output.value``."""
    if text is None:
        return []
    value = _parsed(text)
    found = _messages(value)
    if found is not None:
        return found
    if isinstance(value, dict):
        choices = value.get("choices")
        first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        if _is_message(first.get("message")):
            return [first["message"]]
        if isinstance(value.get("text"), str):
            return [{"role": "assistant", "content": value["text"]}]
        return []  # JSON of another shape: no reply read from it
    if isinstance(value, list):
        return []
    return [{"role": "assistant", "content": value if isinstance(value, str) else text}]


def messages_from_values(span: Span, source: str) -> Span:
    """``span`` given the messages of its ``input.value`` and ``output.value``, when it is an LLM span without any.

    They are read only where its input holds some (see the module docstring).
    """
    if span.kind != "LLM" or span.input_messages or span.output_messages:
        return span
    asked = _messages(_parsed(span.input_value))
    if asked is None:
        return span
    try:
        span.input_messages = [chat_message(m, source, span.where, f"input.value[{i}]") for i, m in enumerate(asked)]
        span.output_messages = [
            chat_message(m, source, span.where, f"output.value[{i}]") for i, m in enumerate(_reply(span.output_value))
        ]
    except DataError:  # JSON that only looks like messages: the values stay text, as any other
        span.input_messages, span.output_messages = [], []
    return span
