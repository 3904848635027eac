"""The row fields an evaluator may read, and the value a scoring function receives for each.

They are the names a declaration's inputs and a scoring function's parameters are checked against.
Checking the names where an evaluator is declared makes a typo (``actual_ouput``) an error at
import, naming the bad input and the fields there are, instead of a run whose every row is skipped
as missing that input.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from nbeval.data.conversation import CONVERSATION_FIELDS
from nbeval.data.fields import ROW_FIELDS
from nbeval.errors import EvaluatorError

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = ["FUNCTION_FIELDS", "INPUT_FIELDS", "check_inputs", "close_match_hint", "field_value"]

#: Every field of a row, by the name an evaluator declares among its inputs.
INPUT_FIELDS: tuple[str, ...] = (*ROW_FIELDS, *CONVERSATION_FIELDS)

#: The row fields a scoring function (``@nbeval.scorer``, ``pipeline(fn=...)``) may take by
#: parameter name; ``row`` takes the whole row.
FUNCTION_FIELDS: tuple[str, ...] = (
    "input",
    "expected_output",
    "actual_output",
    "context",
    "expected_context",
    "guidelines",
    "categories",
    "output_condition",
    "relationships",
    "corpus",
    "key",
    "model_key",
    "actual_duration",
    "cost",
)


def close_match_hint(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for the known name closest to ``name``, or ``""`` for none."""
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def check_inputs(id: str, names: Iterable[str], what: str = "input") -> None:
    """Raise :class:`EvaluatorError` when a name of ``names`` is not a row field.

    The error names the bad name (the ``what`` of evaluator ``id``), the closest field and every
    field there is.
    """
    for name in names:
        if name not in INPUT_FIELDS:
            msg = (
                f"evaluator '{id}': {what} '{name}' is not a row field{close_match_hint(name, INPUT_FIELDS)}; "
                f"declare row fields only: {', '.join(INPUT_FIELDS)}"
            )
            raise EvaluatorError(msg)


def field_value(row: Row, name: str) -> Any:
    """Give the value a scoring function receives for its parameter ``name``.

    ``name`` is one of :data:`FUNCTION_FIELDS`, or ``row``: the value is the whole row for ``row``,
    the chunk texts for ``context`` and ``expected_context``, the row's attribute otherwise.
    """
    if name == "row":
        return row
    if name in ("context", "expected_context"):
        return [c.text for c in getattr(row, name)]
    return getattr(row, name)
