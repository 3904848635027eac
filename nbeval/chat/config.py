"""Turning what a user passes as ``judge=`` (or ``models=[...]``) into a chat model."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal, overload

from nbeval.chat.base import ChatModel
from nbeval.errors import EvaluatorError, JudgeNotConfigured

__all__ = ["judge_configured", "judge_from_env", "judge_help_text", "resolve_chat_model"]

_ENV_MODEL = "NBEVAL_JUDGE_MODEL"
_ENV_BASE_URL = "NBEVAL_JUDGE_BASE_URL"
_HF_PREFIX = "hf:"
_GGUF_PREFIX = "gguf:"


def judge_help_text() -> str:
    """How to configure a judge, for error messages and ``nbeval evaluators``."""
    return (
        "A judge is the chat model that grades answers. Configure one in any of these ways:\n"
        "  * environment: NBEVAL_JUDGE_MODEL=<model name>, plus NBEVAL_JUDGE_BASE_URL=<url of an\n"
        "    OpenAI-compatible server, e.g. http://localhost:11434/v1 for Ollama> and\n"
        "    NBEVAL_JUDGE_API_KEY=<key> (OPENAI_API_KEY is used when that is unset);\n"
        '  * argument: nbeval.evaluate(..., judge="gpt-4o-mini") or\n'
        '    judge={"model": "llama3", "base_url": "http://localhost:11434/v1"}, or per\n'
        '    evaluator: nbeval.evaluator("safety", judge=...); "hf:<name or path>" runs a local\n'
        '    Hugging Face model, "gguf:<path to a .gguf file>" a local GGUF model (llama.cpp);\n'
        "  * Python: judge=my_function, where my_function(messages) or my_function(prompt)\n"
        "    returns the reply text (handy offline and in tests)."
    )


def judge_configured(judge: Any = None) -> bool:
    """Whether a judge is configured: ``judge`` is given, or the environment names one.

    The one rule every caller uses (the catalogue's "(needs a judge)" marks, the evaluator
    picker, the run's resources), the same that :func:`resolve_chat_model` applies to ``None``:
    ``NBEVAL_JUDGE_MODEL`` or ``NBEVAL_JUDGE_BASE_URL`` is set. ``OPENAI_API_KEY`` alone does
    not configure a judge: spending money must be asked for. Nothing is built or contacted, so
    a configuration that is incomplete (a base URL without a model name) counts as configured
    and reports what it lacks when the judge is first used.
    """
    return judge is not None or bool(os.environ.get(_ENV_MODEL) or os.environ.get(_ENV_BASE_URL))


def judge_from_env() -> ChatModel | None:
    """The judge the environment configures (``NBEVAL_JUDGE_*``), or ``None`` when it names none.

    ``OPENAI_API_KEY`` alone does not configure a judge: spending money must be asked for.
    """
    if not judge_configured():
        return None
    named = os.environ.get(_ENV_MODEL, "").strip()
    if named.startswith((_HF_PREFIX, _GGUF_PREFIX)):  # a local model: the base URL is for the endpoints beside it
        return _resolve(named)
    from nbeval.chat.openai_chat import OpenAIChat

    return OpenAIChat()


@overload
def resolve_chat_model(spec: Any, *, required: Literal[True], device: str | None = None) -> ChatModel: ...
@overload
def resolve_chat_model(spec: Any, *, required: bool = False, device: str | None = None) -> ChatModel | None: ...


def resolve_chat_model(spec: Any, *, required: bool = False, device: str | None = None) -> ChatModel | None:
    """A chat model from ``spec``.

    ``spec`` may be ``None`` (the environment's judge, else ``None``), a model name (an
    OpenAI-compatible model at ``NBEVAL_JUDGE_BASE_URL``, or a local Hugging Face model when
    written ``"hf:<name or path>"``), a dict of keyword arguments (``{"model": ..., "base_url":
    ..., "api_key": ..., "timeout": ..., **request fields}``; ``"provider": "hf"`` for a local
    model; ``max_attempts``, ``concurrency`` and ``timeout`` are kept on the model for the client
    that calls it, never sent; any other key is refused: see :mod:`nbeval.chat.judge_settings`),
    a chat model, a :class:`~nbeval.chat.client.ChatClient` (its model) or a callable
    (wrapped in :class:`~nbeval.chat.callable_chat.CallableChat`). With ``required=True`` a
    missing judge raises :class:`~nbeval.errors.JudgeNotConfigured` with :func:`judge_help_text`.
    ``device`` places a local Hugging Face model (``"cpu"``, ``"cuda"``, ``"cuda:1"``; ``None``:
    CUDA when available) unless its settings name one.
    """
    model = _resolve(spec, device)
    if model is None and required:
        raise JudgeNotConfigured("no judge model is configured.\n" + judge_help_text())
    return model


def _resolve(spec: Any, device: str | None = None) -> ChatModel | None:
    if spec is None:
        return judge_from_env()
    if isinstance(spec, str):
        if not spec.strip():
            msg = "a judge model name cannot be empty.\n" + judge_help_text()
            raise JudgeNotConfigured(msg)
        if spec.startswith(_HF_PREFIX):
            from nbeval.chat.hf_chat import HFChat

            return HFChat(spec[len(_HF_PREFIX) :], device=device)
        if spec.startswith(_GGUF_PREFIX):
            from nbeval.chat.gguf_chat import GGUFChat

            return GGUFChat(spec[len(_GGUF_PREFIX) :])
        from nbeval.chat.openai_chat import OpenAIChat

        return OpenAIChat(spec)
    if isinstance(spec, Mapping):
        return _from_settings(spec, device)
    inner = getattr(spec, "model", None)
    if hasattr(spec, "run_many") and isinstance(inner, ChatModel):
        return inner  # a ChatClient
    if isinstance(spec, ChatModel):
        return spec
    if callable(spec):
        from nbeval.chat.callable_chat import CallableChat

        return CallableChat(spec)
    msg = (
        f"cannot use a {type(spec).__name__} as a chat model; give a model name, a dict of "
        "settings, a chat model object or a function.\n" + judge_help_text()
    )
    raise EvaluatorError(msg)


def _from_settings(spec: Mapping[str, Any], device: str | None) -> ChatModel:
    """The chat model a judge's dict of settings describes.

    It carries the client settings the dict gave (``max_attempts``, ``concurrency``, ``timeout``:
    never sent; see :mod:`nbeval.chat.judge_settings`, which refuses a key it does not know).
    """
    from nbeval.chat.judge_settings import GGUF_PROVIDERS, keep_client_settings, split_judge_settings

    provider = str(spec.get("provider", spec.get("type", "openai"))).lower()
    if provider not in ("openai", "openai-compatible", "hf", "huggingface", "transformers", *GGUF_PROVIDERS):
        msg = f"unknown chat model provider {provider!r}; use 'openai', 'hf' or 'gguf'"
        raise EvaluatorError(msg)
    kwargs, client = split_judge_settings(spec)
    kwargs.pop("provider", None)
    kwargs.pop("type", None)
    name = kwargs.pop("name", None)
    model: ChatModel
    if provider in ("hf", "huggingface", "transformers"):
        from nbeval.chat.hf_chat import HFChat

        path = kwargs.pop("model_name_or_path", None) or kwargs.pop("model", None)
        kwargs.setdefault("device", device)
        model = HFChat(path, **kwargs)
    elif provider in GGUF_PROVIDERS:
        from nbeval.chat.gguf_chat import GGUFChat

        path = kwargs.pop("model", None)
        if not isinstance(path, str | os.PathLike):
            msg = 'a GGUF judge\'s settings need "model": the path of a .gguf file or "<owner>/<repo>/<file>.gguf"'
            raise EvaluatorError(msg)
        model = GGUFChat(path, **kwargs)
    else:
        from nbeval.chat.openai_chat import OpenAIChat

        model = OpenAIChat(**kwargs)
    if name is not None:  # what results and juries call this judge
        model.name = str(name)
    return keep_client_settings(model, client)
