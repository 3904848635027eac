"""``text_matching``: the answer (and the retrieved context) must satisfy the row's condition.

The condition language lives in :mod:`nbeval.data.conditions`; this module only applies a parsed
condition to a row. Conditions come from datasets, so a regular expression in one of them may
backtrack catastrophically: every search is bounded (:data:`SEARCH_TIMEOUT`) and a search that
runs out turns into that row's error, never a hang and never a stopped run. Such a row is
*unrated* (label ``timed_out``, ``parse_failures`` 1, ``pass``/``fail`` not measured): it could
not be checked, which is not the same as failing. A row whose answer fails is still a fail when
only its context could not be checked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nbeval.errors import ConditionError, RegexTimeout
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, Score, bool_metric_specs, bool_score
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.conditions import Condition
    from nbeval.data.model import Row

__all__ = [
    "CONTEXT_JOINER",
    "SEARCH_TIMEOUT",
    "TextMatching",
    "UncheckableRow",
    "check_condition",
    "context_text",
    "row_condition",
    "wants_context",
]

#: Seconds one regular-expression search may run. Kept well under a second so that even a row
#: whose answer and context both hit a pathological pattern is settled quickly.
SEARCH_TIMEOUT = 0.5

#: How retrieved chunks are joined before a condition is checked against them: a blank line, so
#: a string operand never matches across the seam of two chunks by accident.
CONTEXT_JOINER = "\n\n"


class UncheckableRow(Exception):
    """A row's condition could not be applied (malformed, or a search ran out of time).

    ``label`` is what happened, one of :data:`~nbeval.evaluators.base.UNRATED_LABELS`:
    ``timed_out`` or ``unchecked``.
    """

    def __init__(self, message: str, label: str = "unchecked") -> None:
        super().__init__(message)
        self.label = label


def context_text(row: Row) -> str | None:
    """Join the row's retrieved chunks with :data:`CONTEXT_JOINER`.

    ``None`` when there is no chunk with text; a chunk given only by its document name has nothing
    to check.
    """
    texts = [c.content for c in row.context if c.content is not None]
    return CONTEXT_JOINER.join(texts) if texts else None


def row_condition(row: Row) -> Condition | None:
    """The row's parsed condition; a malformed one raises :class:`UncheckableRow`."""
    try:
        return row.condition
    except ConditionError as exc:
        raise UncheckableRow(f"the condition does not parse: {exc}") from None


def check_condition(condition: Condition, text: str, what: str) -> tuple[bool, str]:
    """Check ``condition`` on ``text``, giving ``(satisfied, explanation)``.

    ``what`` names the text (``answer``, ``context``) in the error raised when a search runs out of
    time.
    """
    try:
        return condition.check(text, timeout=SEARCH_TIMEOUT)
    except RegexTimeout as exc:
        raise UncheckableRow(f"could not check the {what}: {exc}", "timed_out") from None


def wants_context(evaluator: Evaluator) -> bool:
    """Tell whether ``evaluator`` checks retrieved context.

    That is its ``evaluate_retrieved_context`` parameter, on by default; evaluators without the
    parameter always do.
    """
    return bool(evaluator.params.get("evaluate_retrieved_context", True))


@register
class TextMatching(Evaluator):
    """Pass a row whose answer, and retrieved context where it has some, satisfy its condition.

    The joined context is checked where the row has retrieved context. The rationale says which
    operands were found.
    """

    spec = EvaluatorSpec(
        id="text_matching",
        family="deterministic",
        kind="bool",
        inputs=("actual_output", "output_condition"),
        optional_inputs=("context",),
        description=(
            "The answer must satisfy the test case's condition (strings, regexp(), AND/OR/NOT). When the "
            "row has retrieved context, the joined context is checked against the condition too."
        ),
        metrics=bool_metric_specs(
            None,
            {
                "pass": "share of rows that passed",
                "fail": "share of rows that failed",
                "retrieval_failures": "share of rows whose retrieved context failed the condition",
                "generation_failures": "share of rows whose answer failed the condition",
                "parse_failures": "share of rows that could not be checked",
            },
        ),
    )

    def score(self, row: Row) -> Score:
        """Check the row's condition on the answer and on the joined retrieved context.

        A condition that does not parse, or a search that runs out of time on the answer, leaves
        the row unrated; one on the context leaves it unrated unless the answer failed.
        """
        try:
            condition = row_condition(row)
            if condition is None:  # the engine skips such rows; guard direct calls
                raise UncheckableRow("the row has no condition")
            answer_ok, answer_why = check_condition(condition, row.actual_output or "", "answer")
        except UncheckableRow as exc:
            return bool_score(None, None, rationale=str(exc), error=str(exc), unrated=exc.label)
        context = context_text(row) if wants_context(self) else None
        context_ok, context_why, unchecked = None, None, None
        if context is not None:
            try:
                context_ok, context_why = check_condition(condition, context, "retrieved context")
            except UncheckableRow as exc:
                unchecked = exc
        rationale = f"answer: {answer_why}"
        if context_why is not None:
            rationale += f" | context: {context_why}"
        elif unchecked is not None:
            rationale += f" | context: {unchecked}"
        details = {"answer": answer_ok, "context": context_ok}
        return bool_score(
            answer_ok,
            context_ok,
            rationale=rationale,
            details=details,
            error=None if unchecked is None else str(unchecked),
            unrated=unchecked.label if unchecked is not None else "unchecked",
            context_unrated=unchecked is not None,
        )
