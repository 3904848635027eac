"""Replies constrained to a judge's verdict: the shape a judge declares, and who is sent it.

A judge evaluator declares the shape of its reply as a :class:`VerdictSchema`: a JSON object with
the judge's reason first and its verdict after (``{"rationale": ..., "rating": "yes" | "no"}``),
named as the judge's prompt names them, the verdict's vocabulary (the rating words, a number's
range, the pairwise winner) written into the JSON schema. Its requests carry it
(:attr:`~nbeval.request_kinds.chat.Chat.verdict`), and each chat model decides what it does with
it, through one method, ``structured_request(verdict)``, which returns the request fields to add
(or ``None``: none):

* a local GGUF model (:class:`~nbeval.chat.gguf_chat.GGUFChat`) always decodes under the schema
  (llama.cpp turns it into a grammar), so its reply cannot be anything but such an object, and
  its ``max_tokens`` is bounded by the shape (:attr:`VerdictSchema.max_tokens`);
* an OpenAI-compatible endpoint (:class:`~nbeval.chat.openai_chat.OpenAIChat`) is sent it as
  ``response_format`` (``json_schema``, strict) where it is known to honour one: OpenAI's own API
  by default, any other server when its settings say ``structured_output=True``; never an unknown
  server by default. A server that refuses the format (an HTTP 400, 422 or 5xx to a request that
  carried one) is asked again without it, once per model, so an unsupported format never costs a
  row;
* any other model (a Python function, a Hugging Face model) is asked as before.

The request fields added are part of the reply cache's key like any other, so a model that is not
sent the schema keeps the cache it had. The reply parsers stay as they were: they read such an
object as they read any JSON reply, and remain the fallback for every judge that answers in text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "REASON_CHARS",
    "VerdictSchema",
    "choice_verdict",
    "index_list_verdict",
    "number_verdict",
    "response_format",
    "structured_params",
    "without_length_limits",
]

#: The most characters a constrained reason may have (about three sentences).
REASON_CHARS = 600


@dataclass(frozen=True)
class VerdictSchema:
    """The shape of a judge's reply: a JSON object, its reason first, then its verdict.

    ``schema_json`` is the JSON schema as text (so the request stays hashable and immutable);
    :attr:`schema` reads it. ``max_tokens`` is the most tokens a reply of this shape can take.
    """

    name: str
    """The schema's name (``response_format.json_schema.name``): letters, digits, ``_`` and ``-``."""
    schema_json: str
    max_tokens: int

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON schema of the reply object."""
        return dict(json.loads(self.schema_json))


def _verdict(
    name: str, fields: Mapping[str, Mapping[str, Any]], reason_chars: int, reason_key: str = "reason"
) -> VerdictSchema:
    """An object with ``reason_key`` (at most ``reason_chars`` characters) then ``fields``, all required."""
    properties: dict[str, Any] = {reason_key: {"type": "string", "maxLength": reason_chars}}
    properties.update({k: dict(v) for k, v in fields.items()})
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    # a token is at least one byte of text and a character at most four: twice the characters
    # plus the keys and punctuation bounds any reply of this shape a tokenizer can write
    return VerdictSchema(name, json.dumps(schema, sort_keys=False), 2 * reason_chars + 24 * len(properties) + 32)


def choice_verdict(
    key: str, words: tuple[str, ...], *, reason_key: str = "reason", reason_chars: int = REASON_CHARS
) -> VerdictSchema:
    """A reason under ``reason_key``, then one of ``words`` under ``key`` (``{"reason": ..., "rating": "yes"}``)."""
    return _verdict(f"{key}_choice", {key: {"type": "string", "enum": list(words)}}, reason_chars, reason_key)


def number_verdict(
    key: str,
    low: float | None = None,
    high: float | None = None,
    *,
    whole: bool = False,
    reason_key: str = "reason",
    reason_chars: int = REASON_CHARS,
) -> VerdictSchema:
    """A reason and a number under ``key``, within ``[low, high]`` where given; ``whole``: an integer.

    A fractional number with both bounds is one of the hundredths between them (an ``enum``):
    llama.cpp's grammars hold integers to their range but not fractions (a local model asked for
    a number from 0 to 1 wrote 4.5555), and a list of values holds everywhere.
    """
    spec: dict[str, Any] = {"type": "integer" if whole else "number"}
    if low is not None:
        spec["minimum"] = low
    if high is not None:
        spec["maximum"] = high
    if not whole and low is not None and high is not None and 0 <= (high - low) * 100 <= _MAX_STEPS:
        steps = round((high - low) * 100)
        spec = {"type": "number", "enum": [_tidy(low + k / 100) for k in range(steps + 1)]}
    return _verdict(f"{key}_number", {key: spec}, reason_chars, reason_key)


#: The most hundredths a bounded fraction's ``enum`` lists.
_MAX_STEPS = 1000


def _tidy(value: float) -> float | int:
    """``value`` rounded to hundredths, and a whole number written as one (``1``, not ``1.0``)."""
    rounded = round(value, 2)
    return int(rounded) if rounded == int(rounded) else rounded


def index_list_verdict(
    key: str, count: int, *, reason_key: str = "reason", reason_chars: int = REASON_CHARS
) -> VerdictSchema:
    """A reason and a list of distinct whole numbers from 1 to ``count`` under ``key``."""
    spec = {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": max(count, 1)}, "maxItems": count}
    return _verdict(f"{key}_list", {key: spec}, reason_chars + 8 * count, reason_key)


def response_format(verdict: VerdictSchema, *, length_limits: bool = True) -> dict[str, Any]:
    """OpenAI's ``response_format`` asking for ``verdict``'s object (``json_schema``, strict).

    ``length_limits=False`` drops ``maxLength`` and ``maxItems``, which OpenAI's strict mode does
    not take.
    """
    schema = verdict.schema if length_limits else without_length_limits(verdict.schema)
    return {"type": "json_schema", "json_schema": {"name": verdict.name, "schema": schema, "strict": True}}


def without_length_limits(schema: Any) -> Any:
    """``schema`` without ``maxLength``/``minLength``/``maxItems``/``minItems``, at any depth."""
    if isinstance(schema, Mapping):
        drop = ("maxLength", "minLength", "maxItems", "minItems")
        return {k: without_length_limits(v) for k, v in schema.items() if k not in drop}
    if isinstance(schema, list):
        return [without_length_limits(v) for v in schema]
    return schema


def structured_params(model: Any, params: Mapping[str, Any], verdict: VerdictSchema | None) -> dict[str, Any] | None:
    """The request's ``params`` with what ``model`` is sent to answer in ``verdict``'s shape.

    ``None`` when nothing changes: no verdict, a model without ``structured_request``, a model that
    answers ``None`` to it, or a ``response_format`` the caller set (``judge_params``), which wins.
    A ``max_tokens`` the caller set wins too.
    """
    if verdict is None or "response_format" in params:
        return None
    ask = getattr(model, "structured_request", None)
    extra = ask(verdict) if callable(ask) else None
    if not extra:
        return None
    return {**dict(extra), **dict(params)}
