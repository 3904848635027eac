"""How one configured evaluator runs, as a typed, frozen value: :class:`EvaluatorSettings`.

An evaluator's ``params`` stay the record of what the user configured (saved with results, shown
by ``repr``); the engine reads the settings instead, by attribute (``ev.settings.judge``,
``ev.settings.max_rows``), never by looking up parameter names. A change is a copy
(:meth:`EvaluatorSettings.with_judge`, ``dataclasses.replace``), so seating a jury or aligning a
judge leaves the evaluator the user holds as it was.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["EvaluatorSettings", "ScoreMode"]

#: How a judge's rating becomes a value: the rating it wrote, or its expected value from log-probabilities.
ScoreMode = Literal["sampled", "expected"]


@dataclass(frozen=True)
class EvaluatorSettings:
    """What the engine needs to know of one configured evaluator.

    That is its thresholds, its row limit, the judge and embedder it brings of its own, and how
    its judge's ratings are read.
    """

    thresholds: Mapping[str, float | None]
    """Each metric's threshold (a read-only mapping): the declared default or the ``threshold=`` given."""
    max_rows: int | None = None
    """The most rows scored per model (the rest are skipped), or ``None`` for all."""
    judge: Any = None
    """The evaluator's own judge (a chat model, a model name, a :class:`~nbeval.evaluators.jury.Jury`),
    or ``None`` to ask the run's."""
    embedder: Any = None
    """The evaluator's own embedder, or ``None`` to use the run's."""
    score_mode: ScoreMode | None = None
    """``"sampled"`` or ``"expected"`` for a judge that takes ``score_mode=``; ``None`` for any other."""

    def __post_init__(self) -> None:
        # a copy the caller cannot change afterwards, and that nobody can change through us
        object.__setattr__(self, "thresholds", MappingProxyType(dict(self.thresholds)))

    def __reduce__(self) -> tuple[Any, ...]:
        # a mappingproxy does not pickle: a Dask worker's copy gets the thresholds as a dict
        return (_settings, (dict(self.thresholds), self.max_rows, self.judge, self.embedder, self.score_mode))

    def own(self, resource: str) -> Any:
        """Give the evaluator's own ``resource`` (``"judge"`` or ``"embedder"``).

        It is ``None`` when the evaluator uses the run's (or needs no such resource).
        """
        if resource == "judge":
            return self.judge
        if resource == "embedder":
            return self.embedder
        return None

    def with_judge(self, judge: Any) -> EvaluatorSettings:
        """These settings asking ``judge`` instead."""
        return replace(self, judge=judge)

    def with_thresholds(self, thresholds: Mapping[str, float | None]) -> EvaluatorSettings:
        """These settings with ``thresholds`` instead."""
        return replace(self, thresholds=thresholds)

    @property
    def expects(self) -> bool:
        """Whether ratings are read as expected values from the judge's log-probabilities."""
        return self.score_mode == "expected"


def _settings(
    thresholds: dict[str, float | None], max_rows: int | None, judge: Any, embedder: Any, score_mode: Any
) -> EvaluatorSettings:
    return EvaluatorSettings(thresholds, max_rows, judge, embedder, score_mode)
