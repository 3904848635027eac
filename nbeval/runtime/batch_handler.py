"""A round's judge calls through the endpoints' Batch APIs (``evaluate(..., batch=True)``).

The engine drives evaluators in rounds (:func:`~nbeval.engine.drive.drive`): a round's requests are
every row's next question, and a row's next question may depend on the answer to its last (ragas's
faithfulness extracts statements, then asks about each). So a batched run sends one batch per
model *per round*: the round's :class:`~nbeval.request_kinds.Chat` requests the cache does not hold, for
every model at once (:func:`~nbeval.chat.batch.run_batches`), waits for them, hands the answers
on, and the next round's questions make the next batch. An evaluator that asks three questions in
sequence takes three batches, one after the other.

Each answer is handed on as :class:`~nbeval.runtime.builtin.ChatHandler` hands on a synchronous
reply: a failed request as its row's error, a cancelled one as :class:`RequestCancelled`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nbeval.runtime.builtin import chat_arrival, chat_groups
from nbeval.runtime.handlers import Round

if TYPE_CHECKING:
    from nbeval.chat.client import ChatResult
    from nbeval.runtime.resources import Resources

__all__ = ["answer_batched"]


def answer_batched(resources: Resources, items: list[tuple[int, Any]], rnd: Round) -> None:
    """Answer a round's chat ``items`` (position in the round, request) in batches, per model."""
    from nbeval.chat.batch import run_batches

    jobs: list[tuple[Any, list[Any], Callable[[int, ChatResult], None]]] = []
    groups: list[list[tuple[int, Any]]] = []
    for client, group in chat_groups(resources, items, rnd):
        jobs.append((client, [r for _, r in group], chat_arrival(rnd, group)))
        groups.append(group)
    if not jobs:
        return
    results = run_batches(jobs, resources.batch, cancel=rnd.cancel)
    for group, (_, _, arrived), replies in zip(groups, jobs, results, strict=True):
        for j, reply in enumerate(replies):
            if rnd.answers[group[j][0]] is None:  # not handed on as it came: hand it on now
                arrived(j, reply)
