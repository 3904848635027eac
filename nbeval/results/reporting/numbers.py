"""How the summaries, the HTML report and the run diff write numbers and intervals."""

from __future__ import annotations

import math

__all__ = ["SHOWN_CI", "format_interval", "format_value"]

#: The confidence level of the intervals the summary and the HTML report show.
SHOWN_CI = 0.95


def format_value(value: float | None, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals; ``-`` where it is unknown (None or NaN)."""
    if _is_nan(value):
        return "-"
    return f"{value:.{digits}f}"


def format_interval(lo: float | None, hi: float | None, digits: int = 3) -> str:
    """An interval as ``[lo, hi]``; empty where it is unknown."""
    if _is_nan(lo) or _is_nan(hi):
        return ""
    return f"[{format_value(lo, digits)}, {format_value(hi, digits)}]"


def _is_nan(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
