"""What chat calls cost and what became of them.

Failures, the plan of a batch before it is sent, usage totals, and the token estimates and prices
behind them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Union

from nbeval.chat.base import ChatReply

__all__ = [
    "CallPlan",
    "ChatFailure",
    "ChatResult",
    "PriceTable",
    "UsageTotals",
    "max_tokens_of",
    "unknown_usage_note",
    "with_cost",
]

#: ``{model name: (USD per 1k prompt tokens, USD per 1k completion tokens)}``.
PriceTable = Mapping[str, tuple[float, float]]
_MAX_TOKEN_PARAMS = ("max_tokens", "max_completion_tokens", "max_new_tokens")


@dataclass(frozen=True)
class ChatFailure:
    """A request that got no reply after every attempt."""

    error: str
    """What went wrong on the last attempt, and how many attempts were made."""
    attempts: int
    """Calls made for this request (0 when the run was cancelled before the first)."""
    status: int | None = None
    """The HTTP status of the last attempt, where there was one."""
    cancelled: bool = False
    """The batch was cancelled before this request got an answer (it was never sent, or was
    waiting to be retried): not the model's failure. Not counted in the usage totals' calls."""


#: What one chat call ends in: the model's reply, or the failure that stopped it.
ChatResult = Union[ChatReply, ChatFailure]


def _sum(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


@dataclass(frozen=True)
class CallPlan:
    """What a batch of requests would cost, worked out without calling anything."""

    calls: int
    """Requests in the batch."""
    cached: int
    """Requests the cache already answers."""
    to_call: int
    """Distinct requests that would be sent."""
    est_prompt_tokens: int
    """Rough prompt tokens of those calls (four characters per token)."""
    est_completion_tokens: int
    """Rough completion tokens: each call's ``max_tokens`` or the client's guess."""
    est_cost: float | None = None
    """Rough US dollars, when the model has a price."""
    est_batch_cost: float | None = None
    """The same calls through the Batch API (``batch=True``), when priced both ways
    (:func:`~nbeval.chat.batch_options.with_batch_cost`)."""

    def __add__(self, other: CallPlan) -> CallPlan:
        return CallPlan(
            self.calls + other.calls,
            self.cached + other.cached,
            self.to_call + other.to_call,
            self.est_prompt_tokens + other.est_prompt_tokens,
            self.est_completion_tokens + other.est_completion_tokens,
            _sum(self.est_cost, other.est_cost),
            _sum(self.est_batch_cost, other.est_batch_cost),
        )

    def __str__(self) -> str:
        cost = f", about ${self.est_cost:.4f}" if self.est_cost is not None else ""
        if self.est_cost is not None and self.est_batch_cost is not None:
            cost += f" one call at a time, ${self.est_batch_cost:.4f} with batch=True"
        return (
            f"{self.calls} chat requests: {self.cached} cached, {self.to_call} to call "
            f"(~{self.est_prompt_tokens} prompt + ~{self.est_completion_tokens} completion tokens{cost})"
        )


@dataclass(frozen=True)
class UsageTotals:
    """What a client has done so far. Tokens and cost count fresh calls only: cached replies are free."""

    calls: int = 0
    """Requests answered or failed (cached ones included)."""
    cached_calls: int = 0
    """Requests answered from the cache."""
    failed_calls: int = 0
    """Requests that got no reply."""
    attempts: int = 0
    """Calls actually made to the model, retries included."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    """US dollars spent, or ``None`` when no call had a known price. Calls whose usage is unknown
    are not priced: with any, this is a lower bound (see :attr:`unknown_usage_calls`)."""
    unknown_usage_calls: int = 0
    """Fresh calls whose reported token usage could not be true (negative, astronomical, not a
    number: :attr:`~nbeval.chat.base.Usage.known`): their tokens and cost are not in the totals."""

    def to_dict(self) -> dict[str, Any]:
        """The totals as a dict, as a run's ``meta["usage"]`` records them.

        ``unknown_usage_calls`` is there only when there were any, so a run without such calls
        records what it always did.
        """
        out = asdict(self)
        if not self.unknown_usage_calls:
            del out["unknown_usage_calls"]
        return out

    def counted(self, reply: ChatReply, copies: int, *, cached: bool) -> UsageTotals:
        """These totals with ``reply`` counted for ``copies`` identical requests.

        A cached reply answers every copy for free; a fresh one is one call, whose copies beyond the
        first count as cached.
        """
        if cached:
            return replace(self, calls=self.calls + copies, cached_calls=self.cached_calls + copies)
        known = reply.usage.known
        cost = self.cost if reply.cost is None else (self.cost or 0.0) + reply.cost
        return replace(
            self,
            calls=self.calls + copies,
            cached_calls=self.cached_calls + copies - 1,
            prompt_tokens=self.prompt_tokens + reply.usage.prompt_tokens,
            completion_tokens=self.completion_tokens + reply.usage.completion_tokens,
            cost=cost,
            unknown_usage_calls=self.unknown_usage_calls + (not known),
        )


def unknown_usage_note(model: str, where: str) -> str:
    """The warning a client gives, once, when ``model`` (at ``where``) reports usage that cannot be true."""
    return (
        f"{model} at {where} reported token usage no call can have (negative, astronomical or not a "
        "whole number): usage unknown for that call and any like it; they are not priced, and the "
        "run's cost is a lower bound (result.meta['usage']['unknown_usage_calls'] counts them)"
    )


def max_tokens_of(params: Mapping[str, Any], guess: int) -> int:
    """A call's completion-token cap (``max_tokens`` or its other names), else ``guess``."""
    for k in _MAX_TOKEN_PARAMS:
        if params.get(k):
            return int(params[k])
    return guess


def with_cost(reply: ChatReply, price: tuple[float, float] | None) -> ChatReply:
    """``reply`` with its cost in US dollars at ``price``.

    ``price`` is per 1k prompt and completion tokens. The reply is returned unchanged without a
    price or when its usage is unknown: a price times a count that cannot be true is no cost.
    """
    if price is None or not reply.usage.known:
        return reply
    cost = (reply.usage.prompt_tokens * price[0] + reply.usage.completion_tokens * price[1]) / 1000
    return replace(reply, cost=cost)
