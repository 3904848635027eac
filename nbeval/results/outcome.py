"""What one evaluator made of one row: the record the engine hands to the result."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from nbeval.evaluators.base import BOOL_METRICS

if TYPE_CHECKING:
    from nbeval.data.model import Row
    from nbeval.evaluators.base import Evaluator, Score

__all__ = ["RowOutcome", "unknown_metrics_error"]


@dataclass
class RowOutcome:
    """What one evaluator made of one row (scored, errored or skipped).

    A score with a value under a name that is not one of the evaluator's metrics (a typo such as
    ``{"okk": 1.0}`` for the metric ``ok``) would come out as no value at all; it becomes an error
    on this row instead, naming the unknown key and the metrics (see :func:`unknown_metrics_error`),
    whoever sets :attr:`score` (the engine, a Dask worker, the client filing a worker's answers).
    """

    evaluator: Evaluator
    row: Row
    score: Score | None = None
    skip_reason: str | None = None
    warnings: list[str] = field(default_factory=list)

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "score" and value is not None and "evaluator" in self.__dict__:
            value = _checked(self.evaluator, value)
        super().__setattr__(name, value)


def unknown_metrics_error(evaluator: Evaluator, keys: Any) -> str | None:
    """Why a score with values under ``keys`` cannot be filed for ``evaluator`` (``None``: it can)."""
    spec = evaluator.spec
    metrics = [m.name for m in spec.metrics]
    # a bool evaluator whose declaration narrows the bool metrics still scores with bool_score,
    # which reports all five
    allowed = set(metrics) | (set(BOOL_METRICS) if spec.kind == "bool" else set())
    unknown = [str(k) for k in keys if k not in allowed]
    if not unknown:
        return None
    return (
        f"evaluator '{evaluator.name}' scored {', '.join(map(repr, unknown))}, which "
        f"{'is not one of its metrics' if len(unknown) == 1 else 'are not among its metrics'}; "
        f"its metrics are {', '.join(map(repr, metrics))}"
    )


def _checked(evaluator: Evaluator, score: Score) -> Score:
    values = getattr(score, "values", None)
    if not isinstance(values, dict):
        return score
    error = unknown_metrics_error(evaluator, values)
    if error is None:
        return score
    if score.error:
        error = f"{error}; {score.error}"
    return replace(score, values={}, label=None, error=error)
