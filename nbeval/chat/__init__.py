"""Chat models: the judge that grades, and the evaluated models that answer.

One small interface (:class:`ChatModel`: messages in, :class:`ChatReply` out) with four
implementations, and :class:`ChatClient`, which asks one model many things at once with bounded
concurrency, timeouts, retries, an on-disk cache and token/cost accounting::

    from nbeval.chat import ChatClient
    client = ChatClient("gpt-4o-mini", concurrency=8)          # or my_function, "hf:gpt2", "gguf:model.gguf"
    replies = client.run_many([([{"role": "user", "content": "Hi"}], {"temperature": 0})])
    client.usage_totals()

Importing this package is cheap: ``openai``, ``transformers`` and ``torch`` load on first use.
"""

from __future__ import annotations

from nbeval.chat.base import ChatError, ChatModel, ChatReply, Usage
from nbeval.chat.cache import ChatCache, default_cache_path
from nbeval.chat.callable_chat import CallableChat
from nbeval.chat.client import CallPlan, ChatClient, ChatFailure, ChatResult, UsageTotals
from nbeval.chat.collect import PendingLab, RagFunction, collect
from nbeval.chat.config import judge_help_text, resolve_chat_model
from nbeval.chat.gguf_chat import GGUFChat
from nbeval.chat.hf_chat import HFChat
from nbeval.chat.logprobs import TokenLogprob
from nbeval.chat.openai_chat import OpenAIChat

__all__ = [
    "CallPlan",
    "CallableChat",
    "ChatCache",
    "ChatClient",
    "ChatError",
    "ChatFailure",
    "ChatModel",
    "ChatReply",
    "ChatResult",
    "GGUFChat",
    "HFChat",
    "OpenAIChat",
    "PendingLab",
    "RagFunction",
    "TokenLogprob",
    "Usage",
    "UsageTotals",
    "collect",
    "default_cache_path",
    "judge_help_text",
    "resolve_chat_model",
]
