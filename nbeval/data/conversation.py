"""Conversations and tool calls on a row: checked, put in one shape, and read back.

A row may carry ``messages``, the conversation in the OpenAI chat format. Messages written in
LangChain's or LangGraph's dict forms are accepted too and put in the same shape:

* roles ``system``/``developer``, ``user``/``human``, ``assistant``/``ai``, ``tool``/``function``
  become ``system``, ``user``, ``assistant`` and ``tool``;
* content is text (a list of content parts keeps its text parts, joined by blank lines) or ``None``;
* an assistant's ``tool_calls`` become ``{"id", "type": "function", "function": {"name",
  "arguments"}}`` with ``arguments`` as JSON text (LangChain's ``{"name", "args", "id"}`` too).
  Arguments that are not valid JSON are kept as written: a model that wrote broken arguments made
  a mistake worth scoring, not a bad file;
* a tool message keeps its ``tool_call_id`` (and ``name`` when given).

``expected_tool_calls`` are the reference calls, each ``{"name", "arguments": {...}}`` (the
OpenAI shape and LangChain's ``args`` are accepted); their arguments must be a JSON object, since
a reference is written by a person. ``[]`` says that no tool call is expected (the agent must not
call one) and is kept apart from ``None``, none given, in every reader and writer.
``reference_topics`` are the topics the assistant may talk about.

Every problem is a :class:`~nbeval.errors.DataError` naming the source, the row and the field
down to the message and call (``messages[3].tool_calls[1].function.name``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from nbeval.errors import DataError

__all__ = [
    "CONVERSATION_FIELDS",
    "EMPTY_IS_A_VALUE",
    "NO_CALL_EXPECTED",
    "case_conversation",
    "check_messages",
    "check_tool_calls",
    "conversation_parts",
    "conversation_prompt",
    "earlier_turns",
    "final_answer",
    "last_text",
    "render_messages",
    "tool_call_arguments",
    "tool_calls_made",
]

#: The row fields of a conversation, written to files only when a row has them.
CONVERSATION_FIELDS = ("messages", "expected_tool_calls", "reference_topics")
#: Row fields whose empty list is a value, not a missing one: ``expected_tool_calls: []`` says that
#: no tool call is expected, so "the agent must not call a tool" can be tested; ``None`` is "not given".
EMPTY_IS_A_VALUE = frozenset({"expected_tool_calls"})
#: How a judge is shown ``expected_tool_calls: []`` (an empty block would read as "none given").
NO_CALL_EXPECTED = "(none: no tool call is expected)"

_ROLES = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "ai": "assistant",
    "tool": "tool",
    "function": "tool",
}


def _fail(msg: str, source: str, row: Any, field: str) -> DataError:
    return DataError(msg, source=source, row=row, field=field)


def _parse_json_text(value: Any, source: str, row: Any, field: str) -> Any:
    """A list given as JSON text (a CSV cell) parsed; anything else as it is."""
    if isinstance(value, str) and value.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise _fail("is text that is not valid JSON; give a list", source, row, field) from None
    return value


def check_messages(value: Any, source: str, row: Any, field: str = "messages") -> list[dict[str, Any]]:
    """``value`` as a conversation in the OpenAI chat format (see the module docstring); ``[]`` when absent."""
    value = _parse_json_text(value, source, row, field)
    if value is None or (isinstance(value, float) and value != value):
        return []
    if isinstance(value, dict) and isinstance(value.get("messages"), list):  # a chat request
        value = value["messages"]
    if not isinstance(value, (list, tuple)):
        msg = f"must be a list of chat messages ({{'role': ..., 'content': ...}}), got {type(value).__name__}"
        raise _fail(msg, source, row, field)
    return [_message(m, source, row, f"{field}[{i}]") for i, m in enumerate(value, 1)]


def _message(m: Any, source: str, row: Any, where: str) -> dict[str, Any]:
    if not isinstance(m, dict):
        msg = f"a message must be an object with 'role' and 'content', got {type(m).__name__}"
        raise _fail(msg, source, row, where)
    if "role" not in m and isinstance(m.get("data"), dict):  # LangChain's messages_to_dict
        m = {**m["data"], "type": m.get("type")}
    raw_role = m.get("role", m.get("type"))
    role = _ROLES.get(raw_role.lower()) if isinstance(raw_role, str) else None
    if role is None:
        msg = f"unknown role {raw_role!r}; use system, user, assistant or tool"
        raise _fail(msg, source, row, f"{where}.role")
    out: dict[str, Any] = {"role": role, "content": _content(m.get("content"), source, row, f"{where}.content")}
    if role == "assistant":
        calls = m.get("tool_calls")
        if calls is None and isinstance(m.get("additional_kwargs"), dict):
            calls = m["additional_kwargs"].get("tool_calls")
        if calls:
            if not isinstance(calls, list):
                raise _fail("must be a list of tool calls", source, row, f"{where}.tool_calls")
            out["tool_calls"] = [_made_call(c, source, row, f"{where}.tool_calls[{j}]") for j, c in enumerate(calls, 1)]
    if role == "tool":
        call_id = m.get("tool_call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise _fail("must be text", source, row, f"{where}.tool_call_id")
        if call_id:
            out["tool_call_id"] = call_id
    name = m.get("name")
    if isinstance(name, str) and name:
        out["name"] = name
    return out


def _content(value: Any, source: str, row: Any, where: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts: keep the text ones
        texts = []
        for part in value:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n\n".join(texts)
    raise _fail(f"must be text or a list of content parts, got {type(value).__name__}", source, row, where)


def _made_call(c: Any, source: str, row: Any, where: str) -> dict[str, Any]:
    """A tool call an assistant made, in the OpenAI shape with ``arguments`` as JSON text."""
    if not isinstance(c, dict):
        raise _fail(f"a tool call must be an object, got {type(c).__name__}", source, row, where)
    fn: dict[str, Any] = c["function"] if isinstance(c.get("function"), dict) else c
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise _fail("a tool call needs its tool's name", source, row, f"{where}.function.name")
    args = fn.get("arguments", fn.get("args"))
    if args is None:
        args = "{}"
    elif not isinstance(args, str):
        try:
            args = json.dumps(args, ensure_ascii=False, sort_keys=True)
        except (TypeError, ValueError):
            msg = "arguments must be JSON text or a JSON object"
            raise _fail(msg, source, row, f"{where}.function.arguments") from None
    call_id = c.get("id")
    return {
        "id": call_id if isinstance(call_id, str) else "",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def check_tool_calls(
    value: Any, source: str, row: Any, field: str = "expected_tool_calls"
) -> list[dict[str, Any]] | None:
    """Reference tool calls checked and put in the shape ``[{"name", "arguments": {...}}]``.

    ``[]`` when none is expected, ``None`` when none were given (``None`` or NaN, an empty cell).
    """
    value = _parse_json_text(value, source, row, field)
    if value is None or (isinstance(value, float) and value != value):
        return None
    if isinstance(value, dict):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise _fail(f"must be a list of tool calls, got {type(value).__name__}", source, row, field)
    out = []
    for i, c in enumerate(value, 1):
        where = f"{field}[{i}]"
        if not isinstance(c, dict):
            raise _fail(f"a tool call must be an object with 'name', got {type(c).__name__}", source, row, where)
        fn: dict[str, Any] = c["function"] if isinstance(c.get("function"), dict) else c
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise _fail("a tool call needs its tool's name", source, row, f"{where}.name")
        args = fn.get("arguments", fn.get("args"))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except (json.JSONDecodeError, RecursionError):
                raise _fail("arguments are text that is not valid JSON", source, row, f"{where}.arguments") from None
        if args is None:
            args = {}
        if not isinstance(args, dict):
            msg = f"arguments must be a JSON object of argument names, got {type(args).__name__}"
            raise _fail(msg, source, row, f"{where}.arguments")
        out.append({"name": name, "arguments": args})
    return out


def conversation_parts(row: Any) -> dict[str, Any]:
    """The conversation fields ``row`` has, by name.

    ``messages`` and ``reference_topics`` when not empty, ``expected_tool_calls`` when given (``[]``
    too: no call is expected). What files and the fingerprint keep of a row's conversation; ``{}``
    for a row without one.
    """
    parts = {}
    for name in CONVERSATION_FIELDS:
        value = getattr(row, name)
        if value or (name in EMPTY_IS_A_VALUE and value is not None):
            parts[name] = value
    return parts


def case_conversation(given: Any, prompt: str | None, source: str, row: Any) -> list[dict[str, Any]]:
    """A test case's conversation so far (its ``messages``), ending with its prompt as the last user message.

    The prompt is added when the messages stop before it; ``[]`` for a case that is a single prompt.
    """
    msgs = check_messages(given, source, row)
    if msgs and prompt and not (msgs[-1]["role"] == "user" and msgs[-1]["content"] == prompt):
        msgs.append({"role": "user", "content": prompt})
    return msgs


def tool_call_arguments(call: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The arguments of a call in the OpenAI shape as a dict, and whether they were valid JSON of an object.

    Broken arguments come back as ``{}``.
    """
    raw = call.get("function", {}).get("arguments", "{}")
    if isinstance(raw, dict):
        return raw, True
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except (json.JSONDecodeError, RecursionError, AttributeError):
        return {}, False
    return (parsed, True) if isinstance(parsed, dict) else ({}, False)


def tool_calls_made(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every tool call of the assistant's messages, in order, as the OpenAI-shaped call."""
    return [c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls", ())]


def last_text(messages: Sequence[dict[str, Any]], role: str) -> str | None:
    """The text of the last message of ``role`` that has some (``None`` when none has)."""
    for m in reversed(messages):
        if m.get("role") == role and m.get("content"):
            text: str = m["content"]
            return text
    return None


def final_answer(messages: Sequence[dict[str, Any]]) -> str | None:
    """The assistant's answer to the last user message: its last text after that message.

    ``None`` when it has said nothing since, e.g. a conversation still waiting for a reply.
    """
    return last_text(messages[_last_user_index(messages) + 1 :], "assistant")


def _last_user_index(messages: Sequence[dict[str, Any]]) -> int:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)


def earlier_turns(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages before the last user message: what was said before the question judged."""
    return list(messages[: max(_last_user_index(messages), 0)])


def conversation_prompt(messages: Sequence[dict[str, Any]]) -> str | None:
    """The conversation up to and including its last user message, as the text a row's key is derived from.

    Every model answering the same conversation so shares the key. ``None`` without a user message.
    """
    last = _last_user_index(messages)
    if last < 0:
        return None
    return json.dumps(
        [[m.get("role"), m.get("content")] for m in messages[: last + 1]], ensure_ascii=False, separators=(",", ":")
    )


def render_messages(messages: Sequence[dict[str, Any]], *, numbered: bool = False) -> str:
    """A conversation as plain text for a judge or a person.

    One block per message, tool calls with their arguments, tool results named by their tool.
    """
    names = {c.get("id"): c["function"]["name"] for c in tool_calls_made(messages) if c.get("id")}
    blocks = []
    for i, m in enumerate(messages, 1):
        role = m["role"]
        head = f"[{i}] {role}" if numbered else role
        if role == "tool":
            tool = m.get("name") or names.get(m.get("tool_call_id")) or "?"
            head += f" (result of {tool})"
        text = m.get("content") or ""
        lines = [f"{head}: {text}" if text else f"{head}:"]
        for c in m.get("tool_calls", ()):
            lines.append(f"  calls {c['function']['name']}({c['function']['arguments']})")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
