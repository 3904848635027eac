"""The conversation of a trace's spans, built in time linear in the spans and their messages.

The rule is written out in :mod:`nbeval.data.traces`. Each step of it asks a question of the
conversation so far: is this message in it already, which tool calls still wait for a result,
was this call asked for, which spans run inside a tool. Asked by scanning the conversation, a
trace of 8,000 spans took 12 s and one of 100,000 half an hour; ``_History`` keeps the
answers in indices updated as messages are added, so each question costs about one lookup.
Nothing here reads a file.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from typing import Any

from nbeval.data.spans import Span, ToolRun

__all__ = ["Call", "Message", "conversation", "sealed_spans", "tool_result"]

#: Spans whose insides are not part of the conversation: what a tool, a guardrail or an evaluator
#: does (its own LLM calls included) stays inside it. An LLM span inside another is the same call
#: seen by two instrumentations (a framework's and its client's) and is read once.
_SEALED_KINDS = frozenset({"TOOL", "GUARDRAIL", "EVALUATOR"})

#: A chat message and a tool call, as plain dicts in the OpenAI chat format.
Message = dict[str, Any]
Call = dict[str, Any]


def _norm_args(args: str) -> str:
    try:
        return json.dumps(json.loads(args), sort_keys=True, ensure_ascii=False)
    except (ValueError, RecursionError):
        return args


def _same_call(a: Call, b: Call) -> bool:
    if a["id"] is not None and b["id"] is not None:
        return bool(a["id"] == b["id"])
    fa, fb = a["function"], b["function"]
    return bool(fa["name"] == fb["name"] and _norm_args(fa["arguments"]) == _norm_args(fb["arguments"]))


def _same(a: Message, b: Message) -> bool:
    """Whether two messages are the same message logged twice (by two LLM spans, or by an LLM span and a TOOL span).

    Tool results compare by their call's id, tool calls by id or by name and arguments, everything
    else by role and text.
    """
    if a["role"] != b["role"]:
        return False
    if a["role"] == "tool" and a.get("tool_call_id") and b.get("tool_call_id"):
        return bool(a["tool_call_id"] == b["tool_call_id"])
    ca, cb = a.get("tool_calls", []), b.get("tool_calls", [])
    if ca or cb:
        return len(ca) == len(cb) and all(_same_call(x, y) for x, y in zip(ca, cb, strict=True))
    return bool(a["content"] == b["content"])


def _signature(c: Call) -> tuple[str, str]:
    return c["function"]["name"], _norm_args(c["function"]["arguments"])


class _Pending:
    """Tool calls waiting for their result, in the order they were asked.

    They are found by position, id, name, or name and arguments. Answered calls are dropped from
    each queue when next met, so every call is added and dropped once.
    """

    def __init__(self) -> None:
        self.waiting: dict[int, Call] = {}
        self.queues: dict[Any, deque[int]] = {}
        self.n = 0

    def add(self, call: Call) -> None:
        self.n += 1
        self.waiting[self.n] = call
        name, args = _signature(call)
        keys: list[Any] = ["all", ("name", name), ("args", name, args)]
        if call["id"] is None:
            keys += [("name", name, None), ("args", name, args, None)]
        else:
            keys.append(("id", call["id"]))
        for key in keys:
            self.queues.setdefault(key, deque()).append(self.n)

    def first(self, key: Any) -> int | None:
        """The number of the earliest waiting call filed under ``key``."""
        queue = self.queues.get(key)
        while queue and queue[0] not in self.waiting:
            queue.popleft()
        return queue[0] if queue else None

    def answer(self, key: Any) -> Call | None:
        """The earliest waiting call under ``key``, marked answered."""
        n = self.first(key)
        return None if n is None else self.waiting.pop(n)


class _History:
    """The conversation so far, with indices that answer the rule's questions in one lookup."""

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self.messages: list[Message] = []
        self.pending = _Pending()
        self.asked: set[str] = set()
        self.plain: set[tuple[str, Any]] = set()
        self.tool_ids: set[str] = set()
        self.tool_texts: set[Any] = set()
        self.tool_texts_without_id: set[Any] = set()
        self.by_first_call: dict[Any, list[Message]] = {}
        for m in messages:
            self.append(m)

    def append(self, m: Message) -> None:
        self.messages.append(m)
        calls = m.get("tool_calls", [])
        if m["role"] == "tool":
            call_id = m.get("tool_call_id")
            self.tool_texts.add(m["content"])
            if call_id:
                self.tool_ids.add(call_id)
            else:
                self.tool_texts_without_id.add(m["content"])
        elif calls:
            first = calls[0]
            self.by_first_call.setdefault(("sig", *_signature(first)), []).append(m)
            if first["id"] is not None:
                self.by_first_call.setdefault(("id", first["id"]), []).append(m)
        else:
            self.plain.add((m["role"], m["content"]))
        if m["role"] == "assistant":
            for c in calls:
                self.pending.add(c)
                if c["id"] is not None:
                    self.asked.add(c["id"])
        elif m["role"] == "tool":  # a result without a call id answers the first call still waiting
            call_id = m.get("tool_call_id")
            self.pending.answer(("id", call_id) if call_id else "all")

    def has(self, m: Message) -> bool:
        """Whether a message :func:`_same` as ``m`` is in the conversation."""
        calls = m.get("tool_calls", [])
        if m["role"] == "tool":
            call_id = m.get("tool_call_id")
            if call_id:
                return call_id in self.tool_ids or m["content"] in self.tool_texts_without_id
            return m["content"] in self.tool_texts
        if not calls:
            return (m["role"], m["content"]) in self.plain
        first = calls[0]
        found = list(self.by_first_call.get(("sig", *_signature(first)), []))
        if first["id"] is not None:  # a call with an id matches one with the same id, or one without id
            found = [h for h in found if h["tool_calls"][0]["id"] is None]
            found += self.by_first_call.get(("id", first["id"]), [])
        return any(_same(m, h) for h in found)

    def extended_by(self, messages: list[Message]) -> bool:
        """Whether ``messages`` start with the whole conversation."""
        history = self.messages
        return len(messages) >= len(history) and all(_same(h, m) for h, m in zip(history, messages, strict=False))

    def add_tool_run(self, run: ToolRun) -> None:
        """Add a TOOL span's call to the conversation, unless its messages already hold it.

        Only its result is added when an assistant message asked for it (by the call's id, else by
        the tool's name, preferring equal arguments) and no tool message answered it yet; nothing
        when one did; else the call and its result.
        """
        call: Call | None
        if run.id is not None and run.id in self.asked:
            call = self.pending.answer(("id", run.id))
            if call is None:
                return  # asked for and answered already
        else:
            name, args = run.name, _norm_args(run.arguments)
            loose = run.id is None  # a run with an id only takes a call that has none
            exact = self.pending.first(("args", name, args) if loose else ("args", name, args, None))
            key = ("args", name, args) if exact is not None else ("name", name)
            call = self.pending.answer(key if loose else (*key, None))
        result = tool_result(run)
        if call is None:
            call = {"id": run.id, "type": "function", "function": {"name": run.name, "arguments": run.arguments}}
            self.append({"role": "assistant", "content": None, "tool_calls": [call]})
        if call["id"] is not None:
            result["tool_call_id"] = call["id"]
        self.append(result)


def tool_result(run: ToolRun) -> Message:
    """The tool message of a run: its output, and why it failed when it did.

    The reason comes after what output the run wrote, unless that output says it already, so a
    reader of the conversation (a judge) sees the failure instead of an empty or partial result.
    """
    content = run.output
    if run.error is not None and (content is None or run.error not in content):
        error = run.error if run.error.lower().startswith("error") else f"Error: {run.error}"
        content = f"{content}\n\n{error}" if content and content.strip() else error
    return {"role": "tool", "content": content, "name": run.name}


def _with_ids(history: list[Message]) -> list[Message]:
    """Copies of the messages with every tool call given an id and every tool message linked to its call.

    A call the trace gave no id gets ``call_1``, ``call_2``...; a tool message without a call id
    answers the first call still waiting.
    """
    taken = {c["id"] for m in history for c in m.get("tool_calls", []) if c["id"] is not None}
    n = serial = 0
    out: list[Message] = []
    waiting: dict[int, str] = {}  # the calls without a result yet, numbered in the order made
    order: deque[int] = deque()
    by_id: dict[str, deque[int]] = {}
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
                serial += 1
                k = serial
                waiting[k] = c["id"]
                order.append(k)
                by_id.setdefault(c["id"], deque()).append(k)
            m["tool_calls"] = calls
        elif m["role"] == "tool":
            while order and order[0] not in waiting:
                order.popleft()
            if not m.get("tool_call_id") and order:
                m["tool_call_id"] = waiting[order[0]]
            queue = by_id.get(m.get("tool_call_id") or "")
            while queue and queue[0] not in waiting:
                queue.popleft()
            if queue:
                waiting.pop(queue.popleft())
        out.append(m)
    return out


def sealed_spans(spans: list[Span]) -> set[str]:
    """The ids of the spans inside a tool, a guardrail or an evaluator, and of LLM spans inside another LLM span.

    One walk up from each span, stopping at the first ancestor already known, so a trace costs
    time linear in its spans however deep it nests. A loop of parents (a broken file) ends the walk
    where it closes.
    """
    by_id = {s.span_id: s for s in spans}
    # Per span: whether an ancestor is a sealed kind, and whether an ancestor is an LLM span.
    known: dict[str, tuple[bool, bool]] = {}
    for span in spans:
        path: list[Span] = []
        on_path: set[str] = set()
        node: Span | None = span
        while node is not None and node.span_id not in known and node.span_id not in on_path:
            path.append(node)
            on_path.add(node.span_id)
            node = by_id.get(node.parent_id) if node.parent_id else None
        if node is not None and node.span_id in on_path:  # a loop: each member's ancestors are the others
            loop = path[path.index(node) :]
            sealed_n = sum(s.kind in _SEALED_KINDS for s in loop)
            llm_n = sum(s.kind == "LLM" for s in loop)
            for s in loop:
                known[s.span_id] = (sealed_n - (s.kind in _SEALED_KINDS) > 0, llm_n - (s.kind == "LLM") > 0)
            path = path[: path.index(node)]
            node = loop[0]
        above = (False, False)
        if node is not None:
            up = known[node.span_id]
            above = (up[0] or node.kind in _SEALED_KINDS, up[1] or node.kind == "LLM")
        for s in reversed(path):
            known[s.span_id] = above
            above = (above[0] or s.kind in _SEALED_KINDS, above[1] or s.kind == "LLM")
    return {s.span_id for s in spans if known[s.span_id][0] or (s.kind == "LLM" and known[s.span_id][1])}


def conversation(spans: list[Span]) -> list[Message]:
    """The conversation of a trace's spans (in time order), by the rule in :mod:`nbeval.data.traces`."""
    sealed = sealed_spans(spans)
    history = _History()
    for span in spans:
        if span.kind not in ("LLM", "TOOL") or span.span_id in sealed:
            continue
        if span.kind == "LLM" and (span.input_messages or span.output_messages):
            if history.extended_by(span.input_messages):
                history = _History([*span.input_messages, *span.output_messages])
            else:  # each input message checked against the conversation before this span
                new = [m for m in span.input_messages if not history.has(m)]
                for m in [*new, *span.output_messages]:
                    history.append(m)
        elif span.tool is not None:
            history.add_tool_run(span.tool)
    return _with_ids(history.messages)
