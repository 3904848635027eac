"""Reading one token count from what a server or a function reports as a call's usage.

A count must be a whole number from 0 to :data:`MAX_CALL_TOKENS`: an integer (numpy's too), a
float with no fraction (``50.0``) or digits as text (``"50"``). Anything else (a negative number, half a token,
``NaN``, infinity, ``2e297``, ``true``, a word, a list) is not a count that any call can have: the
usage it is part of is *unknown*, never priced, never added to a run's tokens as if it were true
(see :attr:`nbeval.chat.base.Usage.known`). A count that is absent or ``null`` means the server
did not report it, which :meth:`~nbeval.chat.base.Usage.from_any` reads as 0, as before.

A cost a Python function reports for its call (:func:`reported_cost`) must likewise be a finite
number from 0 to :data:`MAX_CALL_COST` US dollars; another makes the call's usage unknown.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any

__all__ = ["MAX_CALL_COST", "MAX_CALL_TOKENS", "reported_cost", "token_count"]

#: The most tokens one call can report for its prompt or its reply: ten times the longest
#: context window of any model today (about 10 million tokens), so that no real call is refused
#: and a count such as 2e297, which would price a run at more money than exists, is.
MAX_CALL_TOKENS = 100_000_000
#: The most US dollars one call can report having cost: :data:`MAX_CALL_TOKENS` at about the
#: dearest price per token of any model today ($600 per million). More is no call's cost.
MAX_CALL_COST = 100_000.0


def token_count(value: Any) -> int | None:
    """``value`` as a token count, if it can be one.

    ``None`` when it cannot be one (see the module's docstring; an absent count is the caller's to
    read as 0). Never raises.
    """
    if isinstance(value, bool):  # a bool is an int to Python, but true is no count
        return None
    if isinstance(value, str):
        text = value.strip()
        digits = text.lstrip("0") or "0"
        # ASCII digits only ("٣" is a digit to Python); more than 9 is past the cap, and int() of
        # thousands of digits raises
        ok = text.isascii() and text.isdigit() and len(digits) <= 9
        value = int(digits) if ok else None
    elif isinstance(value, Integral):  # numpy's integers too
        value = int(value)
    elif isinstance(value, Real):
        number = float(value)
        value = int(number) if math.isfinite(number) and number.is_integer() else None
    else:
        return None
    return value if value is not None and 0 <= value <= MAX_CALL_TOKENS else None


def reported_cost(value: Any) -> tuple[float | None, bool]:
    """A cost a function reported for its call, and whether a call can have it.

    ``(None, True)`` when none was reported, ``(dollars, True)`` for a finite number from 0 to
    :data:`MAX_CALL_COST`, ``(None, False)`` for anything else (-2000, ``NaN``, ``"abc"``, 2e297).
    Never raises.
    """
    if value is None:
        return None, True
    if isinstance(value, bool) or not isinstance(value, Real):
        return None, False
    number = float(value)
    return (number, True) if math.isfinite(number) and 0 <= number <= MAX_CALL_COST else (None, False)
