"""Whether a chat model is known to return log-probabilities, said without calling it.

Each kind of model answers differently (a local Hugging Face model reads them from its logits, an
OpenAI-compatible endpoint is asked for them, a Python function must return them), so this sits
above the model classes; what log-probabilities are is :mod:`nbeval.chat.logprobs`.
"""

from __future__ import annotations

from typing import Any

from nbeval.chat.callable_chat import CallableChat
from nbeval.chat.hf_chat import HFChat
from nbeval.chat.openai_chat import OpenAIChat

__all__ = ["logprob_support"]


def logprob_support(model: Any) -> tuple[str, str]:
    """Whether chat model ``model`` is known to return log-probabilities, without calling it.

    Returns ``("yes" | "asked" | "unknown", why)``. A local Hugging Face model: yes (read from its
    logits); an OpenAI-compatible endpoint: asked for, known only from its replies; a Python
    function or another model: unknown (it must return them).
    """
    name = getattr(model, "name", type(model).__name__)
    if isinstance(model, HFChat):
        return (
            "yes",
            f"the judge {name!r} is a local Hugging Face model: its log-probabilities are read from its logits",
        )
    if isinstance(model, OpenAIChat):
        where = model.base_url or "the OpenAI API"
        return "asked", (
            f"the judge {name!r} at {where} is asked for them (logprobs=true, top_logprobs); whether it "
            "returns them is known only from its replies: rows it answers without them are unrated (no_logprobs)"
        )
    if isinstance(model, CallableChat):
        return "unknown", (
            f"the judge {name!r} is a Python function: it must return a dict with 'logprobs' (it receives "
            "logprobs=True and top_logprobs when it takes **kwargs); rows it answers without them are "
            "unrated (no_logprobs)"
        )
    return "unknown", (
        f"the judge {name!r} ({type(model).__name__}) is not known to return log-probabilities; rows it "
        "answers without them are unrated (no_logprobs)"
    )
