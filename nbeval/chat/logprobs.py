"""Log-probabilities of a reply's tokens: what :attr:`~nbeval.chat.base.ChatReply.logprobs` holds.

A reply's log-probabilities are one :class:`TokenLogprob` per generated token: the token's text,
its natural-log probability, and the most likely tokens at that position (``top``), each a
``(text, logprob)`` pair, most likely first. They are plain data (:meth:`TokenLogprob.to_dict`
gives ``{"token", "logprob", "top": [[text, logprob], ...]}``), kept with the reply in the cache.

:func:`as_logprobs` reads them from what endpoints and functions give: an OpenAI-compatible
chat completion's ``choices[0].logprobs`` (``{"content": [{"token", "logprob", "top_logprobs":
[{"token", "logprob"}, ...]}, ...]}``), the older completions shape (``tokens``,
``token_logprobs``, ``top_logprobs`` as one mapping per token), nbeval's own dicts, or
:class:`TokenLogprob` objects. ``None`` (or an empty ``content``) means the endpoint returned
none, which is not the same as a reply of no tokens.

The reader keeps the numbers as the endpoint wrote them; :func:`logprob_problem` says when those
at one position cannot be log-probabilities (a number above 0, alternatives whose probabilities add
up to more than 1), so that what scores from them can refuse them. Float rounding is no problem:
each probability, and their sum, may pass 1 by :data:`PROBABILITY_SLACK`.

:func:`nbeval.chat.judge_logprobs.logprob_support` says, without calling anything, whether a
chat model is known to return them (a dry run shows it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PROBABILITY_SLACK",
    "TokenLogprob",
    "as_logprobs",
    "logprob_problem",
    "logprobs_to_json",
]

#: How far above 1 a probability read from a reply (``exp(logprob)``), or the sum of those listed
#: at one position, may be and still count as rounding. Servers that round their logprobs to two
#: decimals are off by at most 0.5% per token; 1% also covers float32 sums of twenty alternatives.
#: A positive logprob of 0.7 (probability 2), or alternatives adding up to 10.5, are far outside.
PROBABILITY_SLACK = 0.01
_MAX_LOGPROB = math.log1p(PROBABILITY_SLACK)


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token: its text, its log-probability, and the most likely tokens there."""

    token: str
    """The token's text as the endpoint gives it (``" yes"``, ``"Yes"``, ``"4"``)."""
    logprob: float
    """Its natural-log probability (OpenAI writes ``-9999.0`` for "very unlikely")."""
    top: tuple[tuple[str, float], ...] = ()
    """The most likely tokens at this position, ``(text, logprob)``, as many as were asked for
    (``top_logprobs``) or fewer; empty when the endpoint gave only the chosen token's."""

    def to_dict(self) -> dict[str, Any]:
        """``{"token", "logprob", "top": [[text, logprob], ...]}``: JSON-able."""
        return {"token": self.token, "logprob": self.logprob, "top": [[t, lp] for t, lp in self.top]}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _pair(item: Any) -> tuple[str, float] | None:
    """A ``(text, logprob)`` from ``{"token", "logprob"}``, a pair, or an object with those attributes."""
    if isinstance(item, Mapping):
        token, lp = item.get("token"), item.get("logprob")
    elif isinstance(item, (list, tuple)) and len(item) == 2:
        token, lp = item
    else:
        token, lp = getattr(item, "token", None), getattr(item, "logprob", None)
    number = _number(lp)
    if token is None or number is None:
        return None
    return str(token), number


def _top(value: Any) -> tuple[tuple[str, float], ...]:
    if isinstance(value, Mapping):  # the completions shape: {text: logprob}
        items: Iterable[Any] = value.items()
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        return ()
    pairs = [p for p in (_pair(i) for i in items) if p is not None]
    return tuple(sorted(pairs, key=lambda p: -p[1]))


def _token(item: Any) -> TokenLogprob | None:
    if isinstance(item, TokenLogprob):
        return item
    pair = _pair(item)
    if pair is None:
        return None
    if isinstance(item, Mapping):
        top = item.get("top", item.get("top_logprobs"))
    else:
        top = getattr(item, "top", getattr(item, "top_logprobs", None))
    return TokenLogprob(pair[0], pair[1], _top(top))


def as_logprobs(value: Any) -> tuple[TokenLogprob, ...] | None:
    """The per-token log-probabilities in ``value``, if it holds any.

    See the module's docstring. ``None`` when it holds none: ``None``, an empty list,
    ``{"content": null}``, or a shape not understood.
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        if "content" in value:  # OpenAI chat completions
            return as_logprobs(value.get("content"))
        if "tokens" in value and "token_logprobs" in value:  # OpenAI completions (legacy)
            tokens, lps = value.get("tokens") or [], value.get("token_logprobs") or []
            tops = value.get("top_logprobs") or [None] * len(tokens)
            items = [{"token": t, "logprob": lp, "top": top} for t, lp, top in zip(tokens, lps, tops, strict=False)]
            return as_logprobs(items)
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        return None
    tokens = [_token(item) for item in value]
    if not tokens or any(t is None for t in tokens):
        return None
    return tuple(t for t in tokens if t is not None)


def logprobs_to_json(logprobs: Sequence[TokenLogprob]) -> list[dict[str, Any]]:
    """``logprobs`` as JSON-able dicts (what :func:`as_logprobs` reads back)."""
    return [t.to_dict() for t in logprobs]


def logprob_problem(token: TokenLogprob) -> str | None:
    """Why the numbers at ``token``'s position cannot be log-probabilities, if they cannot.

    One of them is not a number or is above 0 (beyond :data:`PROBABILITY_SLACK`), or the
    probabilities listed there (each alternative, and the written token when it is not among them)
    add up to more than 1 (beyond the same slack), or the written token is listed there at another
    probability (beyond the same slack); ``None`` when they can. ``-inf`` is probability 0, and
    OpenAI's ``-9999.0`` next to it: both are fine.
    """
    for text, lp in ((token.token, token.logprob), *token.top):
        if math.isnan(lp) or lp > _MAX_LOGPROB:  # checked before exp(): +1000 would overflow
            return f"the token {text!r} has log-probability {lp:g}, which is no probability (a logprob is at most 0)"
    written = math.exp(token.logprob)
    at = [math.exp(lp) for text, lp in token.top if text == token.token]
    if at and all(abs(p - written) > PROBABILITY_SLACK for p in at):  # one token, two probabilities
        return f"the written token {token.token!r} has probability {written:.4g} but is listed at {at[0]:.4g}"
    listed = {text for text, _ in token.top}
    probs = [math.exp(lp) for _, lp in token.top]
    if token.token not in listed:
        probs.append(math.exp(token.logprob))
    mass = math.fsum(probs)
    if mass > 1 + PROBABILITY_SLACK:
        return f"the probabilities of the {len(probs)} tokens listed add up to {mass:.4g}, more than 1"
    return None
