"""Case-level evaluators: one test case scored across every model's rows at once.

A row evaluator (:class:`~nbeval.evaluators.base.Evaluator`) sees one model's answer at a time.
Some questions need every model's answer to the same test case together: which answer is the
shortest, which of two answers a judge prefers (a head-to-head comparison). A
:class:`CaseEvaluator` is declared and registered like any evaluator (``spec`` in the class body,
``@register``); being a subclass of :class:`CaseEvaluator` is what makes it case-level. Instead of
:meth:`~nbeval.evaluators.base.Evaluator.score` it writes :meth:`CaseEvaluator.score_case`, which
receives the case's rows (one per model, in dataset order) and returns a :class:`Score` per model
key, or yields requests first, batched with every other evaluator's::

    @register
    class Shortest(CaseEvaluator):
        spec = EvaluatorSpec(id="shortest", family="custom", kind="score", inputs=("actual_output",),
                             metrics=(MetricSpec("shortest", primary=True),))

        def score_case(self, rows):
            best = min(len(r.actual_output) for r in rows)
            return {r.model_key: Score({"shortest": float(len(r.actual_output) == best)}) for r in rows}

What the engine does with it (:mod:`nbeval.engine`):

* Rows are planned one by one as for any evaluator: a row lacking an input (or beyond
  ``max_rows``) is skipped with its reason and is not shown to :meth:`~CaseEvaluator.score_case`;
  the case is scored with its other rows.
* A case is scored once every one of its rows is reached, in the chunk holding its last row
  (the rows of one case need not be adjacent in the dataset); its requests are answered in the
  same batched rounds as the rows' of every other evaluator.
* Each model's :class:`Score` is filed on that model's row as an ordinary outcome, so results,
  leaderboards, saving and loading are those of a row evaluator. A row whose model is missing from
  the returned mapping gets an error naming it; an exception in ``score_case`` (or a return value
  that is not a mapping) is an error on every row of the case; a cancelled case cancels every row.
* A dry run counts the requests of each case once; a run with ``scheduler=`` scores each case on
  the worker holding its last row.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, TypeGuard, Union

from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Evaluator, Score, ScoreResult
from nbeval.request_kinds import Request

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = ["CaseEvaluator", "CaseScoreResult", "is_case_level"]

#: What :meth:`CaseEvaluator.score_case` returns: model key to :class:`Score`, or a generator that
#: yields requests and returns that mapping.
CaseScoreResult = Union[Mapping[str, Score], Generator[Request, Any, Mapping[str, Score]]]


class CaseEvaluator(Evaluator):
    """Base class of case-level evaluators.

    Its :meth:`score_case` scores one test case across every model's rows (see the module's
    documentation).
    """

    def score_case(self, rows: list[Row]) -> CaseScoreResult:
        """Score one test case across every model's rows.

        Args:
            rows: The case's scorable rows, one per model, in dataset order.

        Returns:
            ``{model_key: Score}`` (a model left out gets an error on its row), or a generator that
            yields requests and then returns that mapping.

        Raises:
            NotImplementedError: Always, here; every subclass writes its own.
        """
        raise NotImplementedError

    def score(self, row: Row) -> ScoreResult:
        """Refuse to score a single row: a case-level evaluator scores whole test cases.

        Args:
            row: The row the caller wanted scored.

        Returns:
            Nothing; it always raises.

        Raises:
            EvaluatorError: Always, naming the evaluator and :meth:`score_case`.
        """
        msg = (
            f"evaluator '{self.id}' is case-level: the engine scores a whole test case with "
            "score_case(rows), not one row with score(row)"
        )
        raise EvaluatorError(msg)


def is_case_level(ev: Evaluator) -> TypeGuard[CaseEvaluator]:
    """Whether ``ev`` scores whole test cases (:class:`CaseEvaluator`) rather than single rows."""
    return isinstance(ev, CaseEvaluator)
