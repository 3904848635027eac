"""How to batch chat calls and what a batched call costs.

How to batch is a :class:`BatchOptions`
(``evaluate(batch=True, batch_poll_s=..., batch_discount=...)``); a batched call costs a price's own
batch part, else the synchronous price less the discount (:func:`batch_price`). :func:`batch_cost`
and :func:`with_batch_cost` price a dry run's calls both ways.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from nbeval.errors import BadParameter

if TYPE_CHECKING:
    from nbeval.chat.accounting import CallPlan

__all__ = [
    "DEFAULT_DISCOUNT",
    "DEFAULT_POLL_S",
    "PENDING",
    "BatchOptions",
    "batch_cost",
    "batch_options",
    "batch_price",
    "still_running",
    "with_batch_cost",
]

#: Seconds between two polls of a batch at first; the wait grows by half each poll.
DEFAULT_POLL_S = 10.0

#: The share of the synchronous price a batched call saves when ``prices`` gives no batch price.
DEFAULT_DISCOUNT = 0.5


@dataclass
class BatchOptions:
    """How to batch: polling, discount, completion window and status reports.

    ``poll_s`` seconds between polls at first (growing by half each poll, up to 30 times as long and
    at most 5 minutes), the ``discount`` of a batched call's price where ``prices`` gives no batch
    price (0.5: half price), the provider's ``completion_window``, and ``on_status(text)``, told the
    batches' states and counts as they change (a progress bar's text).
    """

    poll_s: float = DEFAULT_POLL_S
    discount: float = DEFAULT_DISCOUNT
    completion_window: str = "24h"
    on_status: Callable[[str], None] | None = None
    max_lines: int = 50_000
    """Requests per batch at most (the provider's limit); more are split into several batches."""
    max_bytes: int = 190 * 2**20
    """Bytes of a batch's input file at most (the provider's limit is 200 MB)."""
    collect: Callable[[list[Any]], None] | None = None
    """Where a partitioned run's worker hands the requests the cache does not hold, instead of
    sending them: the run's client sends every worker's in one batch per model and round
    (:mod:`nbeval.engine.dask_batches`); such a request is answered :data:`PENDING` meanwhile."""
    failed: Mapping[str, str] = field(default_factory=dict)
    """With ``collect``: the cache keys whose batch answered with an error, and that error (the
    request is answered with it rather than handed on again)."""

    def __post_init__(self) -> None:
        if not self.poll_s > 0:
            msg = f"batch_poll_s must be a positive number of seconds, got {self.poll_s!r}"
            raise BadParameter(msg)
        if not 0 <= self.discount <= 1:
            msg = f"batch_discount is the share of the price saved, from 0 to 1; got {self.discount!r}"
            raise BadParameter(msg)


#: The error a request waiting for a partitioned run's batch is answered with meanwhile.
PENDING = "waiting for the run's batch"


def batch_options(batch: Any, poll_s: float | None = None, discount: float | None = None) -> BatchOptions | None:
    """The batch options that ``batch=`` and its settings ask for.

    ``batch`` is ``True``/``False`` or a :class:`BatchOptions`; ``None`` when nothing is batched.
    """
    if isinstance(batch, BatchOptions):
        opts = replace(batch)  # the run sets its own on_status: the caller's options stay as they are
    elif batch is None or batch is False:
        return None
    elif batch is True:
        opts = BatchOptions()
    else:
        msg = f"batch must be True or False, got {batch!r}"
        raise BadParameter(msg)
    if poll_s is not None:
        opts = replace(opts, poll_s=float(poll_s))
    if discount is not None:
        opts = replace(opts, discount=float(discount))
    return opts


def batch_price(price: Sequence[float] | None, discount: float = DEFAULT_DISCOUNT) -> tuple[float, float] | None:
    """The price of a batched call, in USD per 1k prompt and completion tokens.

    A price's own batch part (``(p, c, batch_p, batch_c)``), else the price less ``discount``.
    """
    if price is None:
        return None
    if len(price) >= 4:
        return float(price[2]), float(price[3])
    return float(price[0]) * (1 - discount), float(price[1]) * (1 - discount)


def batch_cost(
    prices: Any, model_name: str, prompt_tokens: int, completion_tokens: int, discount: float = DEFAULT_DISCOUNT
) -> float | None:
    """The cost in USD of tokens sent to ``model_name`` in a batch.

    ``prompt_tokens`` and ``completion_tokens`` at ``prices`` (``{model: (p, c)}`` or
    ``(p, c, batch_p, batch_c)``: a name matches a key exactly, else by the longest key it starts
    with, as the client prices a call); ``None`` when it has no price.
    """
    table = dict(prices or {})
    if not table or not model_name:
        return None
    key = (
        model_name
        if model_name in table
        else max((k for k in table if model_name.startswith(k)), key=len, default=None)
    )
    price = batch_price(table[key], discount) if key is not None else None
    return None if price is None else (prompt_tokens * price[0] + completion_tokens * price[1]) / 1000


def with_batch_cost(client: Any, plan: CallPlan, discount: float | None = None) -> CallPlan:
    """``plan`` with what its calls would cost batched.

    ``plan`` is ``client``'s :class:`~nbeval.chat.accounting.CallPlan`; what its calls to make cost
    batched goes in ``est_batch_cost``: at the price's batch part, else less ``discount`` (0.5 when
    ``None``). A model with no Batch API (a function, a local model) is called one by one even with
    ``batch=True``: its batched cost is its full price. Unpriced, the plan is returned as it is.
    """
    if plan.est_cost is None:
        return plan
    from nbeval.chat.openai_chat import OpenAIChat

    cost = None
    if isinstance(getattr(client, "model", None), OpenAIChat):
        name = getattr(client.model, "name", "")
        cost = batch_cost(
            client.prices,
            name,
            plan.est_prompt_tokens,
            plan.est_completion_tokens,
            DEFAULT_DISCOUNT if discount is None else discount,
        )
    return replace(plan, est_batch_cost=plan.est_cost if cost is None else cost)


def still_running(batch_ids: Sequence[str], again: str) -> str:
    """The message for the batches Ctrl-C leaves running in a batched run.

    It names the ``batch_ids`` still running at the provider, and says how to pick them up
    (``again``: "running the same command again") or cancel them.
    """
    one = len(batch_ids) == 1
    it = "it" if one else "them"
    return (
        f"batch{'' if one else 'es'} {', '.join(batch_ids)} {'is' if one else 'are'} still running at the provider, "
        f"and billed; {again} picks {it} up (nothing is sent twice), or cancel {it} at the provider "
        f"(its Batch API: POST .../batches/{batch_ids[0] if one else 'ID'}/cancel)"
    )
