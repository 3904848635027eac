r"""What a request may set: the evaluator parameters the service leaves to its clients, and their bounds.

The service calls judges with its own key and loads models on its own host, so a request never
chooses where a call goes, what it carries or what gets loaded:

- parameters that choose a model, a device, a file or an endpoint (:data:`SERVER_PARAMS`) are refused;
- ``judge_params`` may hold only generation settings, each within bounds (:data:`JUDGE_PARAMS`):
  no ``extra_headers``, ``extra_query``, ``extra_body``, ``n``, ``service_tier`` or anything else;
- parameters that repeat judge calls per row (``parse_attempts``, ``strictness``) are capped
  (:data:`REPEAT_LIMITS`);
- evaluators that load a model (:func:`model_refusal`) run only when the server was started with
  that model (``embedder=``) or allowed to load models (``allow_models=True``);
- text that cannot be encoded as UTF-8 (a lone surrogate such as ``"\ud800"``) is refused in
  evaluator ids and parameters: they are names the service shows back to every client.

What the service answers about an error is said in its own terms (:func:`error_text`): a missing
judge is the server's configuration (``nbeval serve --judge``), not a request's ``judge=...``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "JUDGE_PARAMS",
    "REPEAT_LIMITS",
    "SERVER_PARAMS",
    "SERVICE_JUDGE_HELP",
    "error_text",
    "lone_surrogate",
    "model_refusal",
    "param_errors",
]

#: Evaluator parameters a client may not set: they choose a model, a device, a file or where to
#: send data (a client-chosen judge URL would receive the server's API key), or how a model is run.
SERVER_PARAMS = frozenset(
    {"judge", "embedder", "device", "model", "cross_encoder", "cache", "function", "fn", "batch_size"}
)
#: The judge's ``max_tokens`` cap unless the server sets another (``create_app(max_judge_tokens=...)``).
DEFAULT_MAX_TOKENS = 4096
#: ``judge_params`` a client may set: name -> (kind, lowest, highest); ``max_tokens``' highest is
#: the server's cap. Anything else (``extra_headers``, ``extra_query``, ``n``, ...) is refused.
JUDGE_PARAMS: dict[str, tuple[type, float, float]] = {
    "temperature": (float, 0.0, 2.0),
    "top_p": (float, 0.0, 1.0),
    "max_tokens": (int, 1, DEFAULT_MAX_TOKENS),
    "seed": (int, -(2**63), 2**63 - 1),
    "presence_penalty": (float, -2.0, 2.0),
    "frequency_penalty": (float, -2.0, 2.0),
}
#: Parameters that multiply the judge calls made per row, and the most a request may ask for
#: (the ragas evaluators' own default for ``parse_attempts`` is 4, for ``strictness`` 3).
REPEAT_LIMITS: dict[str, int] = {"parse_attempts": 4, "strictness": 5}

#: How a missing judge is given to the service, in place of the Python API's advice (``judge=...``):
#: the judge is the server's, chosen where it starts, never by a request.
SERVICE_JUDGE_HELP = (
    "A judge is the chat model that grades answers; this service calls its own, and a request cannot choose "
    "one (its evaluators' judge_params set only how the judge generates). Whoever runs the service gives it "
    "one when starting it: `nbeval serve --judge MODEL` (a model at OpenAI's API, hf:<name or path> for a "
    "local Hugging Face model or gguf:<path> for a local GGUF model), with `--judge-base-url URL` for an "
    "OpenAI-compatible server (e.g. "
    "http://localhost:11434/v1 for Ollama), or NBEVAL_JUDGE_MODEL, NBEVAL_JUDGE_BASE_URL and "
    "NBEVAL_JUDGE_API_KEY in its environment. Until then, ask only for evaluators that need no judge "
    "(GET /v1/evaluators: needs_judge is false)."
)
_PYTHON_ADVICE = re.compile(r"pass [a-z_]+=\.\.\. or ")


def error_text(exc: BaseException) -> str:
    """``exc``'s message for an HTTP client.

    Secrets are redacted, and a missing judge (:class:`~nbeval.errors.JudgeNotConfigured`) is
    explained as the server's configuration (:data:`SERVICE_JUDGE_HELP`) where the Python API would
    say ``judge=...``.
    """
    from nbeval.chat.secrets import redact
    from nbeval.errors import JudgeNotConfigured

    text = str(exc)
    if isinstance(exc, JudgeNotConfigured):
        from nbeval.chat.config import judge_help_text

        python_help = judge_help_text()
        text = _PYTHON_ADVICE.sub("", text)  # "pass model=... or set X" -> "set X"
        if python_help in text:
            text = text.replace("\n" + python_help, " " + python_help).replace(python_help, SERVICE_JUDGE_HELP)
        else:
            text = f"{text.rstrip().rstrip('.')}. {SERVICE_JUDGE_HELP}"
    return redact(text)


def lone_surrogate(value: Any) -> bool:
    """Whether ``value`` holds a lone surrogate code point.

    ``value`` is a string, or lists and dicts of them; such text is not valid UTF-8 once encoded.
    """
    return any(_bad(s) for s in _strings(value))


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _bad(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _number_error(name: str, value: Any, kind: type, lo: float, hi: float) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{name} must be a number, got {type(value).__name__}"
    if kind is int and not isinstance(value, int):
        return f"{name} must be a whole number, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} must be finite"
    if not lo <= value <= hi:
        return f"{name} must be between {lo:g} and {hi:g}, got {value!r}"
    return None


def param_errors(params: Mapping[str, Any], *, max_tokens: int = DEFAULT_MAX_TOKENS) -> list[tuple[str, str]]:
    """Why a request may not set ``params``, as ``(field, message)`` pairs.

    ``params`` are one evaluator's: ``judge_params`` beyond :data:`JUDGE_PARAMS` or its bounds
    (``max_tokens`` up to ``max_tokens``), repeat counts beyond :data:`REPEAT_LIMITS`. Empty when
    all is well.
    """
    errors: list[tuple[str, str]] = []
    jp = params.get("judge_params")
    if jp is not None:
        if not isinstance(jp, Mapping):
            errors.append(("judge_params", f"judge_params must be an object, got {type(jp).__name__}"))
        else:
            for name, value in jp.items():
                if name not in JUDGE_PARAMS:
                    errors.append(
                        (
                            f"judge_params.{name}",
                            f"judge_params.{name} is not a setting a request may "
                            f"choose; allowed: {', '.join(JUDGE_PARAMS)}",
                        )
                    )
                    continue
                kind, lo, hi = JUDGE_PARAMS[name]
                problem = _number_error(
                    f"judge_params.{name}", value, kind, lo, max_tokens if name == "max_tokens" else hi
                )
                if problem:
                    errors.append((f"judge_params.{name}", problem))
    for name, most in REPEAT_LIMITS.items():
        if name in params:
            problem = _number_error(name, params[name], int, 1, most)
            if problem:
                errors.append((name, problem))
    return errors


def model_refusal(spec: Any, *, has_embedder: bool, allow_models: bool) -> str | None:
    """Why the service will not run the evaluator ``spec``, if it will not.

    ``None`` when it may. One that loads a local model needs ``allow_models``; one that needs an
    embedder needs the server's own (``embedder=``) or ``allow_models``, so no request makes the
    server load or download a model.
    """
    resources = set(getattr(spec, "resources", ()))
    if allow_models:
        return None
    if "local_model" in resources:
        return (
            f"evaluator '{spec.id}' loads a local model, which this server does not do for requests "
            "(start it with --allow-models to allow that)"
        )
    if "embedder" in resources and not has_embedder:
        return (
            f"evaluator '{spec.id}' needs an embedding model and this server was started without one "
            "(start it with --allow-models to load the default)"
        )
    return None
