"""What a judge given as a dict of settings may say, and whose each setting is.

``judge={"model": "llama3", "base_url": ..., "temperature": 0.1, "max_attempts": 2}`` mixes three
kinds of setting, and each must reach the one that uses it:

* the **model's** (:class:`~nbeval.chat.openai_chat.OpenAIChat`: ``model``, ``base_url``,
  ``api_key``, ``timeout``, ``default_headers``, ``default_query``; a local model's
  :class:`~nbeval.chat.hf_chat.HFChat` arguments), and ``name``, what results call it;
* **request fields** the endpoint is sent with every call (``temperature``, ``max_tokens``...,
  :data:`OPENAI_REQUEST_FIELDS`; a local model's generation parameters), and ``extra_body``, whose
  keys are sent as given, unchecked: the place for a field nbeval does not know (vLLM's ``top_k``);
* the **client's** (:data:`CLIENT_SETTINGS`: ``max_attempts``, ``concurrency``, ``timeout``):
  how the judge's calls are made. They are never sent; they apply to that judge's calls, over
  the run's own values (:func:`client_settings_of`).

Any other key is refused, with the closest known one: sent as a request field it would fail
every row at a real endpoint (a 400) while nothing said why.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Mapping
from typing import Any

from nbeval.chat.base import ChatModel
from nbeval.chat.gguf_chat import LOAD_SETTINGS, REQUEST_FIELDS
from nbeval.errors import EvaluatorError

__all__ = [
    "CLIENT_SETTINGS",
    "GGUF_MODEL_SETTINGS",
    "GGUF_PROVIDERS",
    "HF_MODEL_SETTINGS",
    "OPENAI_MODEL_SETTINGS",
    "OPENAI_REQUEST_FIELDS",
    "client_settings_of",
    "keep_client_settings",
    "split_judge_settings",
]

#: Settings of the client that makes a judge's calls, given in its dict: tries per call (retries
#: included), calls in flight at once, seconds a whole call may take.
CLIENT_SETTINGS: tuple[str, ...] = ("max_attempts", "concurrency", "timeout")

#: Settings of an OpenAI-compatible chat model (:class:`~nbeval.chat.openai_chat.OpenAIChat`),
#: ``provider`` and ``name`` included.
OPENAI_MODEL_SETTINGS = frozenset(
    {"provider", "type", "name", "model", "base_url", "api_key", "timeout", "default_headers", "default_query"}
    | {"structured_output"}
)

#: The chat-completions request fields a judge dict may set (OpenAI's API reference, and the
#: openai client's ``extra_headers``/``extra_query``/``extra_body``). A server's own extensions go
#: under ``extra_body``.
OPENAI_REQUEST_FIELDS = frozenset(
    {
        "audio",
        "frequency_penalty",
        "function_call",
        "functions",
        "logit_bias",
        "logprobs",
        "max_completion_tokens",
        "max_tokens",
        "metadata",
        "modalities",
        "n",
        "parallel_tool_calls",
        "prediction",
        "presence_penalty",
        "prompt_cache_key",
        "reasoning_effort",
        "response_format",
        "safety_identifier",
        "seed",
        "service_tier",
        "stop",
        "store",
        "temperature",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "user",
        "verbosity",
        "web_search_options",
        "extra_headers",
        "extra_query",
        "extra_body",
    }
)

#: Settings of a local Hugging Face chat model (:class:`~nbeval.chat.hf_chat.HFChat`) and the
#: generation parameters it uses.
HF_MODEL_SETTINGS = frozenset(
    {"provider", "type", "name", "model", "model_name_or_path", "device", "dtype", "token", "max_new_tokens"}
    | {"temperature", "top_p", "top_k", "do_sample", "repetition_penalty", "num_beams"}
)

_HF_PROVIDERS = ("hf", "huggingface", "transformers")

#: Settings of a local GGUF model (:class:`~nbeval.chat.gguf_chat.GGUFChat`): its load settings
#: and the llama.cpp request fields it takes.
GGUF_MODEL_SETTINGS = frozenset({"provider", "type", "name", "model", *LOAD_SETTINGS} | REQUEST_FIELDS)

#: The ``provider`` names of a local GGUF model.
GGUF_PROVIDERS = ("gguf", "llama.cpp", "llamacpp")


def split_judge_settings(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``settings`` (a judge's dict) as ``(model settings, client settings)``.

    The model settings are what the chat model is made from (its own settings and request
    fields); ``timeout`` is in both, since the model bounds its calls by it too. The client
    settings are checked (a whole number of at least 1 for ``max_attempts`` and ``concurrency``,
    a positive number of seconds for ``timeout``). :class:`~nbeval.errors.EvaluatorError` for a key
    that is none of these, with the closest known one.
    """
    provider = str(settings.get("provider", settings.get("type", "openai"))).lower()
    local = _hf(provider) or provider in GGUF_PROVIDERS
    if _hf(provider):
        known = HF_MODEL_SETTINGS
    elif provider in GGUF_PROVIDERS:
        known = GGUF_MODEL_SETTINGS
    else:
        known = OPENAI_MODEL_SETTINGS | OPENAI_REQUEST_FIELDS
    known = known | set(CLIENT_SETTINGS)
    for key in settings:
        if key not in known:
            raise EvaluatorError(_unknown(str(key), known, local))
    client = {k: _checked(k, settings[k]) for k in CLIENT_SETTINGS if settings.get(k) is not None}
    model = {k: v for k, v in settings.items() if k not in CLIENT_SETTINGS or (k == "timeout" and not local)}
    return model, client


def _hf(provider: str) -> bool:
    return provider in _HF_PROVIDERS


def _unknown(key: str, known: frozenset[str] | set[str], local: bool) -> str:
    close = difflib.get_close_matches(key, sorted(known), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    where = (
        "a local model takes only its own settings and generation parameters"
        if local
        else f'to send a field the endpoint knows and nbeval does not, put it under "extra_body": {{{key!r}: ...}}'
    )
    return (
        f"judge setting {key!r} is not known{hint}. The client's settings are {', '.join(CLIENT_SETTINGS)}; "
        f"{where}. Known settings: {', '.join(sorted(known))}"
    )


def _checked(key: str, value: Any) -> Any:
    """A client setting's value, or :class:`EvaluatorError` naming it."""
    if key == "timeout":
        number = float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else math.nan
        if not (math.isfinite(number) and number > 0):
            msg = f"judge setting 'timeout' is the seconds a whole call may take, a positive number; got {value!r}"
            raise EvaluatorError(msg)
        return number
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        msg = f"judge setting {key!r} must be a whole number of at least 1, got {value!r}"
        raise EvaluatorError(msg)
    return int(value)


def keep_client_settings(model: ChatModel, client: Mapping[str, Any]) -> ChatModel:
    """Attach ``client``, the client settings a judge's dict gave, to ``model``.

    ``model`` carries ``client`` for the run's client to apply (:func:`client_settings_of`). Returns
    ``model``.
    """
    if client:  # over the model's own (a GGUF model's concurrency is its parallel slots)
        own = getattr(model, "client_settings", None)
        merged = {**(own if isinstance(own, Mapping) else {}), **client}
        setattr(model, "client_settings", merged)  # noqa: B010  (not every ChatModel declares it)
    return model


def client_settings_of(model: Any) -> dict[str, Any]:
    """The client settings a judge's dict gave.

    See :data:`CLIENT_SETTINGS`: ``model`` is that dict, or the model made from it; ``{}`` for
    anything else.
    """
    if isinstance(model, Mapping):
        return split_judge_settings(model)[1]
    found = getattr(model, "client_settings", None)
    return dict(found) if isinstance(found, Mapping) else {}
