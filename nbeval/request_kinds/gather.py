"""The :class:`Gather` request: several requests asked at once.

It has no handler of its own: the engine spreads it into its parts (:func:`nbeval.engine.drive.drive`), each answered by
its kind's.
"""

from __future__ import annotations

from dataclasses import dataclass

from nbeval.runtime.handlers import Request

__all__ = ["Gather"]


@dataclass(frozen=True)
class Gather(Request):
    """Ask several requests at once, answered in the same round.

    Answer: a tuple with one item per request, in order: its answer, or the :class:`~nbeval.errors.ResourceError` that
    ended it, given rather than raised, so one failed call leaves the others' answers usable (a head-to-head case asks
    for every pair's verdicts together). An empty gather is answered ``()``.
    """

    #: The requests to ask together, in the order their answers come back in.
    requests: tuple[Request, ...]
