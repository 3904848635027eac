"""Scoring one row directly, for evaluators that answer at once."""

from __future__ import annotations

from nbeval.data.model import Row
from nbeval.evaluators.base import Evaluator, Score


def scored(evaluator: Evaluator, row: Row) -> Score:
    """``evaluator.score(row)`` for an evaluator that asks for nothing (no judge, no model): its
    :class:`Score`, never a generator of requests (which fails the test)."""
    score = evaluator.score(row)
    assert isinstance(score, Score), f"{evaluator.spec.id} asked for something instead of scoring: {score!r}"
    return score
