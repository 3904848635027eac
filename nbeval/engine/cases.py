"""Case-level scoring in the engine (see :mod:`nbeval.evaluators.case`).

A case-level evaluator's planned rows are grouped by test case (:func:`order_cases`), and one
:class:`CaseOutcome` drives a case's scoring through the same generator driver as a row's, then
files a :class:`~nbeval.results.outcome.RowOutcome` on each of its rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from nbeval.evaluators.base import Score
from nbeval.results.outcome import RowOutcome

if TYPE_CHECKING:
    from nbeval.data.model import Row
    from nbeval.evaluators.base import Evaluator

__all__ = ["CaseOutcome", "case_end", "order_cases"]


def order_cases(rows: Sequence[Row]) -> list[Row]:
    """Group ``rows`` (in dataset order) by test case.

    Each case's rows are together, in dataset order, and the cases in the order of their last row,
    the row that makes the case complete. The engine scores a case in the chunk holding that row, so
    rows of one case need not be adjacent in the dataset.
    """
    groups: dict[str, list[Row]] = {}
    last: dict[str, int] = {}
    for i, row in enumerate(rows):
        groups.setdefault(row.key, []).append(row)
        last[row.key] = i
    return [row for key in sorted(groups, key=last.__getitem__) for row in groups[key]]


def case_end(rows: Sequence[Row], start: int) -> int:
    """The end (exclusive) of the case starting at ``rows[start]`` in rows grouped by :func:`order_cases`."""
    end = start + 1
    while end < len(rows) and rows[end].key == rows[start].key:
        end += 1
    return end


class CaseOutcome:
    """What one case-level evaluator makes of one test case while it is driven.

    It stands for the case's :attr:`outcomes` (one ordinary :class:`RowOutcome` per row, sharing
    :attr:`warnings`) where the driver expects a row's outcome. Setting :attr:`score` (an error) or
    :attr:`skip_reason` (``cancelled``) sets it on every row; :meth:`settle` files what
    ``score_case`` returned.
    """

    def __init__(self, evaluator: Evaluator, rows: Sequence[Row]) -> None:
        self.evaluator = evaluator
        self.warnings: list[str] = []
        """The case's warnings, one list that every row's outcome shares."""
        self.outcomes = [RowOutcome(evaluator, row, warnings=self.warnings) for row in rows]
        """One :class:`RowOutcome` per row of the case, in order."""

    @property
    def score(self) -> Score | None:
        """The first row's score (``None`` until the case is scored)."""
        return self.outcomes[0].score if self.outcomes else None

    @score.setter
    def score(self, value: Score | None) -> None:
        for out in self.outcomes:
            out.score = None if value is None else replace(value)

    @property
    def skip_reason(self) -> str | None:
        """Why the case was not scored (``"cancelled"``), read from the first row; ``None`` while it was not skipped.

        Setting it sets every row's.
        """
        return self.outcomes[0].skip_reason if self.outcomes else None

    @skip_reason.setter
    def skip_reason(self, value: str | None) -> None:
        for out in self.outcomes:
            out.skip_reason = value

    def settle(self, value: Any) -> None:
        """File what ``score_case`` returned on the case's rows.

        Each model's :class:`Score` goes on its row; a row whose model has none gets an error naming
        it; anything but a mapping errors every row.
        """
        name = self.evaluator.name
        if not isinstance(value, Mapping):
            self.score = Score(
                {}, error=f"evaluator '{name}' returned {type(value).__name__}, not a mapping of model key to Score"
            )
            return
        models = {out.row.model_key for out in self.outcomes}
        stray = sorted(str(k) for k in value if k not in models)
        if stray:
            self.warnings.append(
                f"evaluator '{name}' returned scores for models not in this test case: {', '.join(stray)}"
            )
        for out in self.outcomes:
            model = out.row.model_key
            got = value.get(model)
            if isinstance(got, Score):
                out.score = got
            elif got is None:
                out.score = Score(
                    {}, error=f"evaluator '{name}' returned no score for model '{model}' on this test case"
                )
            else:
                out.score = Score(
                    {}, error=f"evaluator '{name}' returned {type(got).__name__} for model '{model}', not a Score"
                )
