"""A conversation as turns: the HTML the case view shows for a row's ``messages``.

:func:`conversation_html` draws one numbered turn per message (numbered from 1, as a judge's
rationale names "message 5"), the role named and tinted: system, user, assistant, tool. Each tool
call an assistant made is a collapsible block (``<details>``) with the tool's name, its call
number and id, and its arguments pretty-printed; arguments that are not valid JSON are shown as
written and flagged. Each tool result is a collapsible block naming the call it answers (matched by
``tool_call_id``: "result of call 2 · search, made in message 4"), and each call names the message
holding its result; a call with no result, or a result that answers no call, is flagged. Texts
past ``fold_chars`` show their start, the rest folded; every text is cut to ``max_chars``
first (:func:`nbeval.results.storage.limits.truncate_text`).

:func:`expected_calls_html` draws a row's ``expected_tool_calls`` as a reference list, and
:func:`shared_turns` counts the messages every model's conversation of a case shares (shown once,
above the models). Every text (content, names, ids, arguments) is escaped through
:func:`nbeval.widgets.markup.esc`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from nbeval.results.storage.limits import truncate_text
from nbeval.widgets.markup import esc

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = ["FOLD_CHARS", "MAX_MESSAGES", "conversation_html", "expected_calls_html", "shared_turns"]

#: Past this many characters (or ``_FOLD_LINES`` lines) a text shows its start, the rest folded.
FOLD_CHARS = 600
_FOLD_LINES = 12
#: How many messages a conversation shows (the rest are counted).
MAX_MESSAGES = 200
#: Tool calls and results up to this many characters start unfolded.
_OPEN_CHARS = 400
_NAME_CHARS = 200
#: Longer JSON results are shown as written (parsing megabytes to show 4,000 characters is waste).
_PRETTY_CHARS = 100_000

_MUTED = "color:#777"
_FLAG = "color:#b3261e;font-weight:600"
_PRE = "white-space:pre-wrap;word-break:break-word;margin:0"
_CODE = f"{_PRE};font-family:monospace;font-size:12px;background:#f6f8fa;padding:4px 6px;border-radius:3px"
_BOX = "margin:4px 0;padding:2px 6px;border:1px solid #ddd;border-radius:4px;background:#fffdf7"
_SUMMARY = "cursor:pointer;padding:2px 0"
#: role -> (background, border) of its turn
_TINT = {
    "system": ("#f3f3f3", "#9e9e9e"),
    "user": ("#eef4fc", "#4a7fc1"),
    "assistant": ("#eef8f0", "#3a7d44"),
    "tool": ("#fdf6e3", "#c9a227"),
}


def _name(value: Any) -> str:
    """A name shown in the view: escaped and cut short."""
    return esc(truncate_text(str(value), _NAME_CHARS))


def _folded(text: str, fold_chars: int, style: str = _PRE) -> str:
    """Escape ``text`` (already cut) and fold what runs past ``fold_chars`` or ``_FOLD_LINES`` lines.

    A long text shows its start, then the rest inside a ``<details>`` saying how much is folded.
    """
    lines = text.split("\n", _FOLD_LINES)
    if len(lines) > _FOLD_LINES:  # cut at the end of a line
        cut = min(len(text) - len(lines[-1]) - 1, fold_chars)
    elif len(text) > fold_chars:
        cut = fold_chars
    else:
        return f'<div style="{style}">{esc(text)}</div>'
    if cut == fold_chars:  # end the start at a word when one is near
        cut = max(text.rfind(" ", max(0, cut - 80), cut), text.rfind("\n", max(0, cut - 80), cut), 0) or cut
    head, rest = text[:cut], text[cut:].removeprefix("\n")
    return (
        f'<div style="{style}">{esc(head)}</div>'
        f'<details class="nbeval-fold"><summary style="{_SUMMARY};{_MUTED}">… {len(rest):,} more characters'
        f'</summary><div style="{style}">{esc(rest)}</div></details>'
    )


def _arguments(raw: Any) -> tuple[str, str | None]:
    """A call's arguments pretty-printed, and what is wrong with them (``None`` when valid)."""
    if not isinstance(raw, str):
        try:
            return json.dumps(raw, indent=2, ensure_ascii=False, sort_keys=True), None
        except (TypeError, ValueError):
            return str(raw), "arguments are not JSON"
    if not raw.strip():
        return "{}", None
    try:
        parsed = json.loads(raw)
    except (json.JSONDecodeError, RecursionError):
        return raw, "arguments are not valid JSON (shown as written)"
    shown = json.dumps(parsed, indent=2, ensure_ascii=False)
    return shown, None if isinstance(parsed, dict) else "arguments are not a JSON object"


def _json_text(text: Any) -> str | None:
    """``text`` pretty-printed when it is JSON of an object or a list, else ``None``."""
    if not isinstance(text, str) or len(text) > _PRETTY_CHARS or text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, RecursionError):
        return None


def _details(summary: str, body: str, *, is_open: bool, attrs: str) -> str:
    """A foldable ``<details>`` box with ``summary`` as its title (open when ``is_open``)."""
    return (
        f'<details{" open" if is_open else ""} {attrs} style="{_BOX}">'
        f'<summary style="{_SUMMARY}">{summary}</summary>{body}</details>'
    )


class _Calls:
    """The tool calls of a whole conversation, numbered and matched with their results.

    It records each call's number, the message that made it, and which message answers it (by
    ``tool_call_id``).
    """

    def __init__(self, messages: Sequence[dict[str, Any]]) -> None:
        self.number: dict[str, int] = {}  # call id -> call number (first of a repeated id)
        self.name: dict[str, str] = {}
        self.made_in: dict[str, int] = {}  # call id -> message number
        self.answered_in: dict[str, int] = {}  # call id -> message number of its first result
        n = 0
        for i, m in enumerate(messages, 1):
            for c in m.get("tool_calls", ()) if m.get("role") == "assistant" else ():
                n += 1
                cid = c.get("id") or ""
                if cid and cid not in self.number:
                    self.number[cid], self.made_in[cid] = n, i
                    self.name[cid] = str(c.get("function", {}).get("name", "?"))
            cid = m.get("tool_call_id") if m.get("role") == "tool" else None
            if cid and cid in self.number and cid not in self.answered_in and self.made_in[cid] < i:
                self.answered_in[cid] = i


def _call_html(c: dict[str, Any], number: int, calls: _Calls, max_chars: int, fold_chars: int) -> str:
    """Render one tool call as a foldable HTML block.

    The block shows the call's number, function and id, its arguments (flagged when they are not a
    JSON object), and which message answered it.
    """
    fn = c.get("function", {})
    cid = str(c.get("id") or "")
    shown, problem = _arguments(fn.get("arguments", "{}"))
    shown = truncate_text(shown, max_chars)
    answered = calls.answered_in.get(cid)
    parts = [f"<b>call {number}</b> · <code>{_name(fn.get('name', '?'))}</code>"]
    if cid:
        parts.append(f'<span style="{_MUTED}">id {_name(cid)}</span>')
    if problem:
        parts.append(f'<span style="{_FLAG}">⚠ {esc(problem)}</span>')
    if answered is not None:
        parts.append(f'<span style="{_MUTED}">→ result in message {answered}</span>')
    else:
        parts.append(f'<span style="{_FLAG}">no result</span>')
    attrs = f'class="nbeval-call" data-call-id="{esc(cid)}" data-call="{number}"'
    return _details(" ".join(parts), _folded(shown, fold_chars, _CODE), is_open=len(shown) <= _OPEN_CHARS, attrs=attrs)


def _result_html(m: dict[str, Any], at: int, calls: _Calls, body: str, size: int) -> str:
    """A tool result as HTML, headed by the call it answers, or flagged when it answers no earlier call."""
    cid = str(m.get("tool_call_id") or "")
    tool = m.get("name") or calls.name.get(cid)
    if cid in calls.number and calls.made_in[cid] < at:
        head = f"<b>result of call {calls.number[cid]}</b> · <code>{_name(tool or '?')}</code>"
        head += f' <span style="{_MUTED}">made in message {calls.made_in[cid]} · id {_name(cid)}</span>'
    else:
        why = f"answers no earlier call (id {cid})" if cid else "names no call (no tool_call_id)"
        head = f"<b>result</b>{f' · <code>{_name(tool)}</code>' if tool else ''}"
        head += f' <span style="{_FLAG}">⚠ {esc(why)}</span>'
    head += f' <span style="{_MUTED}">· {size:,} characters</span>'
    attrs = f'class="nbeval-result" data-answers="{esc(cid)}"'
    return _details(head, body, is_open=size <= _OPEN_CHARS, attrs=attrs)


def _turn(m: dict[str, Any], at: int, calls: _Calls, call_numbers: Iterable[int], max_chars: int, fold: int) -> str:
    """Render one message of the conversation as an HTML turn tinted by role.

    The turn shows the message's text (a JSON tool result pretty-printed, long text folded) and the
    tool calls it made.
    """
    role = str(m.get("role", "?"))
    bg, border = _TINT.get(role, ("#fff", "#ccc"))
    who = role + (f" ({m['name']})" if m.get("name") and role != "tool" else "")
    content = m.get("content")
    text = truncate_text(content, max_chars) if isinstance(content, str) else None
    pretty = _json_text(content) if role == "tool" else None
    if pretty is not None:  # a JSON result, pretty-printed
        body = _folded(truncate_text(pretty, max_chars), fold, _CODE)
    elif text:
        body = _folded(text, fold)
    else:
        body = f'<span style="{_MUTED}">(no text)</span>' if not m.get("tool_calls") else ""
    if role == "tool":
        body = _result_html(m, at, calls, body, len(content or ""))
    calls_html = "".join(
        _call_html(c, n, calls, max_chars, fold) for c, n in zip(m.get("tool_calls", ()), call_numbers, strict=False)
    )
    return (
        f'<div class="nbeval-turn" data-message="{at}" data-role="{esc(role)}" '
        f'style="display:flex;gap:6px;margin:3px 0;align-items:flex-start">'
        f'<div style="min-width:22px;text-align:right;{_MUTED};font-size:12px;padding-top:4px" '
        f'title="message {at}">{at}</div>'
        f'<div style="flex:1;min-width:0;background:{bg};border-left:3px solid {border};'
        f'border-radius:4px;padding:3px 8px">'
        f'<div style="font-size:11px;font-weight:600;color:{border};text-transform:uppercase">{_name(who)}</div>'
        f"{body}{calls_html}</div></div>"
    )


def conversation_html(
    messages: Sequence[dict[str, Any]],
    *,
    start: int = 0,
    stop: int | None = None,
    max_chars: int = 4000,
    fold_chars: int = FOLD_CHARS,
    max_messages: int = MAX_MESSAGES,
) -> str:
    """Render the messages ``messages[start:stop]`` as HTML, one numbered turn each.

    Numbers count from the conversation's first message, so ``start=3`` begins at message 4; tool
    calls and results are linked across the whole conversation. At most ``max_messages`` are
    drawn; each text is cut to ``max_chars`` and folded past ``fold_chars``.

    Args:
        messages: The whole conversation, one dict per message (``role``, ``content``, and
            ``tool_calls`` or ``tool_call_id`` where there are tool calls).
        start: Index of the first message drawn.
        stop: Index past the last message drawn; ``None`` draws to the end.
        max_chars: How many characters of each text are shown before it is cut.
        fold_chars: Past this many characters a text shows its start, the rest folded.
        max_messages: How many messages are drawn at most; the rest are counted.

    Returns:
        The HTML of the turns, with a note counting the messages left out.
    """
    calls = _Calls(messages)
    first_call = 1 + sum(len(m.get("tool_calls", ())) for m in messages[:start] if m.get("role") == "assistant")
    end = len(messages) if stop is None else min(stop, len(messages))
    shown = list(enumerate(messages, 1))[start : min(end, start + max_messages)]
    turns = []
    n = first_call
    for at, m in shown:
        k = len(m.get("tool_calls", ())) if m.get("role") == "assistant" else 0
        turns.append(_turn(m, at, calls, range(n, n + k), max_chars, fold_chars))
        n += k
    left = end - start - len(shown)
    if left > 0:
        turns.append(f'<div style="{_MUTED}">… and {left:,} more messages</div>')
    return f'<div class="nbeval-conversation">{"".join(turns)}</div>'


def expected_calls_html(calls: Sequence[dict[str, Any]], *, max_chars: int = 4000) -> str:
    """Render the reference tool calls of a row as a numbered HTML list.

    Each call (``{"name": ..., "arguments": {...}}``) is listed with its arguments pretty-printed.

    Args:
        calls: The expected tool calls; ``[]`` says that no tool call is expected.
        max_chars: How many characters of each call's arguments are shown before they are cut.

    Returns:
        The HTML list, or a note that no tool call is expected when ``calls`` is empty.
    """
    if not calls:
        return f'<span style="{_MUTED}">none: no tool call is expected</span>'
    items = []
    for c in calls:
        shown = truncate_text(_arguments(c.get("arguments", {}))[0], max_chars)
        items.append(
            f'<li class="nbeval-expected-call" style="margin:2px 0"><code>{_name(c.get("name", "?"))}</code>'
            f'<div style="{_CODE}">{esc(shown)}</div></li>'
        )
    return f'<ol style="margin:0;padding-left:22px">{"".join(items)}</ol>'


def shared_turns(rows: Iterable[Row]) -> int:
    """Count the leading messages that every row with a conversation shares.

    The count stops at each conversation's last user message (what the case asks, before any model
    answered).

    Args:
        rows: The rows of one test case, one per model.

    Returns:
        How many leading messages all conversations share; 0 when no row has messages.
    """
    convs = [r.messages for r in rows if r.messages]
    if not convs:
        return 0
    limit = min(max((i + 1 for i, m in enumerate(c) if m.get("role") == "user"), default=0) for c in convs)
    n = 0
    while n < limit and all(c[n] == convs[0][n] for c in convs):
        n += 1
    return n
