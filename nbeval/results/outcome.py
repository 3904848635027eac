"""What one evaluator made of one row: the record the engine hands to the result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbeval.data.model import Row
    from nbeval.evaluators.base import Evaluator, Score

__all__ = ["RowOutcome"]


@dataclass
class RowOutcome:
    """What one evaluator made of one row (scored, errored or skipped)."""

    evaluator: Evaluator
    row: Row
    score: Score | None = None
    skip_reason: str | None = None
    warnings: list[str] = field(default_factory=list)
