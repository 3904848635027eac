"""Any Python function as a chat model, so anything can be plugged in and tutorials run offline."""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from nbeval.chat.base import ChatError, ChatReply, Message, Usage, messages_to_prompt, normalize_messages
from nbeval.chat.deadline import call_with_deadline
from nbeval.chat.fingerprint import FunctionIdentity, callable_name
from nbeval.chat.usage_read import reported_cost
from nbeval.errors import BadArgumentType, BadParameter

__all__ = ["CallableChat"]

_PROMPT_NAMES = frozenset({"prompt", "text", "question", "query", "input", "s"})
_PROMPT_ANNOTATIONS = frozenset({str, "str"})


class CallableChat(FunctionIdentity):
    """Wrap ``fn`` as a chat model.

    ``fn`` receives either the list of messages (``[{"role": ..., "content": ...}, ...]``) or one
    prompt string. Which one is decided from its signature, never by trial calls (a trial could
    run side effects twice): the prompt string when its first parameter is named ``prompt``,
    ``text``, ``question``, ``query``, ``input`` or ``s``, or is annotated ``str``; the messages
    otherwise. ``takes="messages"`` or ``takes="prompt"`` forces the choice. The prompt string of
    a lone user message is its content; several messages are joined as ``Role: content`` blocks.

    ``fn`` returns the reply text, or a dict with ``text`` (or ``content``) and optionally
    ``usage`` (``{"prompt_tokens": .., "completion_tokens": ..}``), ``cost``, ``model`` and
    ``logprobs`` (per token ``{"token", "logprob", "top": [[token, logprob], ...]}``, or OpenAI's
    ``{"content": [...]}``; see :mod:`nbeval.chat.logprobs`), or a
    :class:`~nbeval.chat.base.ChatReply`. Generation parameters are passed as keyword arguments
    only when ``fn`` accepts ``**kwargs``. Token counts are zero unless ``fn`` reports them.

    Replies are cached like any model's, under a fingerprint of everything that decides what the
    function answers (see :mod:`nbeval.chat.fingerprint`): its code, defaults, the values its
    closure captured, a ``functools.partial``'s arguments, a callable object's state, and the
    plain-data globals it reads. Two configurations never share replies; the same configuration
    shares them across sessions. When some captured value cannot be fingerprinted (a lock, an open
    client...) the function is not cached, with one warning, unless ``cache_key=`` names the
    configuration (any value: a string such as ``"strict-v2"``); then replies are shared by calls
    with the same code and the same ``cache_key``, so change the key when the behaviour changes.
    A function whose behaviour depends on outside state (a file, a service) should be wrapped
    with ``cache=False``.

    A ``timeout`` is enforced by waiting on a helper thread: the call is abandoned (not stopped)
    when it runs over, and reported as a timeout.
    """

    identity_kind = "callable"

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        takes: Literal["messages", "prompt"] | None = None,
        cache: bool = True,
        cache_key: Any = None,
    ) -> None:
        if not callable(fn):
            msg = f"CallableChat needs a callable, got {type(fn).__name__}"
            raise BadArgumentType(msg)
        self.fn = fn
        self.name = name or callable_name(fn)
        self.takes = takes or _infer_takes(fn)
        if self.takes not in ("messages", "prompt"):
            msg = f"takes must be 'messages' or 'prompt', got {takes!r}"
            raise BadParameter(msg)
        self.cache = cache
        self.cache_key = cache_key
        self._kwargs = _accepts_kwargs(fn)

    def __repr__(self) -> str:
        return f"CallableChat({self.name!r}, takes={self.takes!r})"

    def chat(self, messages: Sequence[Message], *, timeout: float | None = None, **params: Any) -> ChatReply:
        """Call the wrapped function with ``messages`` and wrap what it returns as a reply.

        A function that takes text gets the prompt the messages make. The reply carries the call's
        latency. With ``timeout``, a call that runs longer fails.
        """
        msgs = normalize_messages(messages)
        arg: Any = msgs if self.takes == "messages" else messages_to_prompt(msgs)
        kwargs = params if self._kwargs else {}
        started = time.perf_counter()
        if timeout is None:
            out = self._call(arg, kwargs)
        else:
            out = call_with_deadline(lambda: self._call(arg, kwargs), timeout, self.name)
        return self._to_reply(out, time.perf_counter() - started)

    def _call(self, arg: Any, kwargs: Mapping[str, Any]) -> Any:
        try:
            return self.fn(arg, **kwargs)
        except ChatError:
            raise
        except (TimeoutError, ConnectionError) as e:
            msg = f"{self.name}: {type(e).__name__}: {e}"
            raise ChatError(msg, retryable=True) from e
        except Exception as e:
            msg = f"{self.name} raised {type(e).__name__}: {e}"
            raise ChatError(msg) from e

    def _to_reply(self, out: Any, duration: float) -> ChatReply:
        if isinstance(out, ChatReply):
            return out
        if isinstance(out, str):
            return ChatReply(text=out, usage=Usage(), model=self.name, duration_s=duration)
        if isinstance(out, Mapping) and ("text" in out or "content" in out):
            text = out.get("text", out.get("content"))
            cost, cost_known = reported_cost(out.get("cost"))
            return ChatReply(
                text="" if text is None else str(text),
                # a cost no call can have (-2000, NaN) makes the call's usage unknown, as bad counts do
                usage=Usage.from_any(out.get("usage")) if cost_known else Usage(known=False),
                model=str(out.get("model") or self.name),
                duration_s=duration,
                cost=cost,
                logprobs=out.get("logprobs"),
            )
        msg = (
            f"{self.name} returned {type(out).__name__}; a chat callable must return a string, "
            "a dict with 'text' (and optionally 'usage', 'cost', 'logprobs'), or a ChatReply"
        )
        raise ChatError(msg)


def _infer_takes(fn: Callable[..., Any]) -> str:
    try:
        params = [
            p
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):  # builtins without a signature
        return "messages"
    if not params:
        return "messages"
    first = params[0]
    if first.name.lower() in _PROMPT_NAMES or first.annotation in _PROMPT_ANNOTATIONS:
        return "prompt"
    return "messages"


def _accepts_kwargs(fn: Callable[..., Any]) -> bool:
    try:
        return any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return False
