r"""The chat-model interface: messages in, a :class:`ChatReply` out.

Anything with a ``name``, a ``chat`` method and a ``cache_identity`` method is a chat model
(:class:`ChatModel` is a structural protocol). The implementations shipped with nbeval are
:class:`~nbeval.chat.openai_chat.OpenAIChat` (any OpenAI-compatible endpoint),
:class:`~nbeval.chat.hf_chat.HFChat` (a local Hugging Face causal LM),
:class:`~nbeval.chat.gguf_chat.GGUFChat` (a local GGUF model run by llama.cpp) and
:class:`~nbeval.chat.callable_chat.CallableChat` (any Python function).

A model signals a failed call by raising :class:`ChatError`; its ``retryable`` flag tells the
:class:`~nbeval.chat.client.ChatClient` whether trying again can help (rate limits, server errors,
timeouts, dropped connections) or not (a bad request, a wrong key).

Reply text that cannot be encoded (a lone surrogate, which a JSON ``\ud800`` escape or a Python
function can produce) is repaired the moment a :class:`ChatReply` is made, however it is made:
it becomes U+FFFD, the reply's :attr:`ChatReply.warnings` say so, and a
:class:`~nbeval.data.fields.DataWarning` is issued. Such a reply never breaks the cache, a run
or a save.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from nbeval.chat.logprobs import TokenLogprob, as_logprobs
from nbeval.chat.secrets import redact as _redact
from nbeval.chat.usage_read import reported_cost, token_count
from nbeval.data.fields import DataWarning
from nbeval.data.text import repair_text
from nbeval.errors import BadArgumentType, ResourceError

__all__ = [
    "MAX_REPLY_CHARS",
    "REPLY_REPAIRED",
    "ChatError",
    "ChatModel",
    "ChatReply",
    "Message",
    "TokenLogprob",
    "Usage",
    "cap_reply",
    "estimate_tokens",
    "messages_to_prompt",
    "normalize_messages",
    "redact",
]

#: The note a repaired reply carries in :attr:`ChatReply.warnings`.
REPLY_REPAIRED = (
    "the reply held text that cannot be encoded as UTF-8 (a lone surrogate such as '\\ud800'); "
    "it was repaired: replaced by U+FFFD"
)

#: The most characters of a reply kept (cached, parsed, shown): the results' ``MAX_STORED_CHARS``,
#: which this layer cannot import. A longer reply is cut, and says so in its warnings.
MAX_REPLY_CHARS = 20_000

#: One chat message: ``{"role": "system" | "user" | "assistant", "content": "..."}``.
Message = Mapping[str, str]


@dataclass(frozen=True)
class Usage:
    """Tokens spent by one call (zeros when the model does not report them)."""

    prompt_tokens: int = 0
    """Tokens read: the messages sent."""
    completion_tokens: int = 0
    """Tokens written: the reply."""
    known: bool = True
    """``False`` when the model reported counts no call can have (negative, astronomical, not a
    whole number: :mod:`nbeval.chat.usage_read`); the counts are then 0 and mean nothing, the call
    is not priced, and the run counts it among its ``unknown_usage_calls``."""

    def __post_init__(self) -> None:
        # however it was made (a custom model's Usage(-2000, 5) too): counts no call can have are unknown
        counts = (token_count(self.prompt_tokens), token_count(self.completion_tokens))
        if None in counts or not self.known:
            object.__setattr__(self, "prompt_tokens", 0)
            object.__setattr__(self, "completion_tokens", 0)
            object.__setattr__(self, "known", False)
        elif any(type(v) is not int for v in (self.prompt_tokens, self.completion_tokens)):
            object.__setattr__(self, "prompt_tokens", counts[0])  # 12.0 or numpy's 12: the int 12
            object.__setattr__(self, "completion_tokens", counts[1])

    @property
    def total_tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.known and other.known,
        )

    @classmethod
    def from_any(cls, value: Any) -> Usage:
        """A :class:`Usage` from ``None``, a ``Usage``, a mapping or an object with token attributes.

        Never raises: counts that cannot be true make it unknown (``known=False``).
        """
        if value is None:
            return cls()
        if isinstance(value, Usage):
            return value
        if isinstance(value, (str, bytes, int, float, Sequence)):  # no usage object: nothing to read
            return cls(known=False)
        get = value.get if isinstance(value, Mapping) else lambda k, d=None: getattr(value, k, d)
        prompt = get("prompt_tokens", None)
        completion = get("completion_tokens", None)
        # Some servers (and HF-style dicts) use input/output naming instead.
        prompt = get("input_tokens", None) if prompt is None else prompt
        completion = get("output_tokens", None) if completion is None else completion
        p, c = (0 if n is None else token_count(n) for n in (prompt, completion))  # not reported: 0
        return cls(known=False) if p is None or c is None else cls(p, c)


@dataclass(frozen=True)
class ChatReply:
    """A chat model's answer to one request."""

    text: str
    """The reply's text."""
    usage: Usage
    """Tokens spent by the call that produced it (for a cached reply: by the original call)."""
    model: str
    """The model that answered, as it names itself (the server's model name where it gives one)."""
    cached: bool = False
    """Whether this reply came from the on-disk cache rather than a fresh call."""
    duration_s: float = 0.0
    """Seconds the call took (for a cached reply: the original call's time)."""
    cost: float | None = None
    """US dollars the call cost, when a price is known (``None`` otherwise)."""
    warnings: tuple[str, ...] = ()
    """What nbeval repaired in the reply (kept with it in the cache), for the row's rationale."""
    logprobs: tuple[TokenLogprob, ...] | None = None
    """The log-probability of each generated token and of the most likely tokens at its position
    (see :mod:`nbeval.chat.logprobs`), when they were asked for (``logprobs=True``) and the model
    returned them; ``None`` otherwise. Kept with the reply in the cache. Given as OpenAI's
    ``{"content": [...]}`` or as a list of dicts, they are read into :class:`TokenLogprob` objects."""

    def __post_init__(self) -> None:
        cost, cost_known = reported_cost(self.cost)
        if not cost_known:  # a cost no call can have (-2000, NaN, 2e297): the call's usage is unknown
            object.__setattr__(self, "cost", None)
            object.__setattr__(self, "usage", Usage(known=False))
        elif cost is not None and type(self.cost) is not float:
            object.__setattr__(self, "cost", cost)
        if self.logprobs is not None and not (
            isinstance(self.logprobs, tuple) and all(isinstance(t, TokenLogprob) for t in self.logprobs)
        ):
            object.__setattr__(self, "logprobs", as_logprobs(self.logprobs))
        text = self.text if isinstance(self.text, str) else ("" if self.text is None else str(self.text))
        text, repaired = repair_text(text)
        if text is not self.text:
            object.__setattr__(self, "text", text)
        model, model_repaired = repair_text(str(self.model))
        if model_repaired:
            object.__setattr__(self, "model", model)
            repaired = True
        if repaired and REPLY_REPAIRED not in self.warnings:
            object.__setattr__(self, "warnings", (*self.warnings, REPLY_REPAIRED))
            warnings.warn(f"{self.model}: {REPLY_REPAIRED}", DataWarning, stacklevel=3)
        elif not isinstance(self.warnings, tuple):
            object.__setattr__(self, "warnings", tuple(self.warnings))


@runtime_checkable
class ChatModel(Protocol):
    """What nbeval needs from a chat model. Implementations must be safe to call from threads."""

    name: str

    def chat(self, messages: Sequence[Message], *, timeout: float | None = None, **params: Any) -> ChatReply:
        """Answer ``messages``.

        ``params`` are generation parameters (``temperature``, ``max_tokens``...); ``timeout`` bounds the call in
        seconds where the model can honour it. Raise :class:`ChatError` when the call fails.
        """
        ...

    def cache_identity(self) -> str:
        """A string naming what answers (endpoint and model). Never contains a secret."""
        ...


class ChatError(ResourceError):
    """One chat call failed.

    ``retryable`` says whether the same request may succeed later; ``retry_after`` is the delay
    (seconds) the server asked for, if any; ``status`` the HTTP status where there was one;
    ``rate_limited`` marks 429 replies.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        rate_limited: bool = False,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.rate_limited = rate_limited


def normalize_messages(messages: Any) -> list[dict[str, str]]:
    """Messages as a list of plain ``{"role", "content"}`` dicts; a bare string is one user message."""
    if isinstance(messages, str):
        return [{"role": "user", "content": messages}]
    out: list[dict[str, str]] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "content" not in m:
            msg = f"message {i} must be a mapping with 'role' and 'content', got {m!r}"
            raise BadArgumentType(msg)
        out.append({**{str(k): v for k, v in m.items()}, "role": str(m.get("role", "user"))})
    return out


def messages_to_prompt(messages: Iterable[Message]) -> str:
    """Flatten messages into one prompt string.

    A lone user message becomes its content unchanged; otherwise each message is written as
    ``Role: content`` separated by blank lines.
    """
    msgs = list(messages)
    if len(msgs) == 1 and msgs[0].get("role", "user") == "user":
        return str(msgs[0]["content"])
    return "\n\n".join(f"{str(m.get('role', 'user')).capitalize()}: {m['content']}" for m in msgs)


def estimate_tokens(text: str) -> int:
    """A rough token count: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """Mask secrets and anything that looks like an API key in ``text``.

    The given ``secrets``, every secret registered in this process, and anything that looks like an
    API key are replaced by ``***`` (see :mod:`nbeval.chat.secrets`).
    """
    return _redact(text, secrets)


def cap_reply(reply: ChatReply, limit: int = MAX_REPLY_CHARS) -> ChatReply:
    """``reply`` with its text cut to ``limit`` characters, and a warning saying so, when longer."""
    if len(reply.text) <= limit:
        return reply
    note = f"judge reply cut to {limit:,} characters (of {len(reply.text):,}) before caching and parsing"
    return replace(reply, text=reply.text[:limit], warnings=(*reply.warnings, note))
