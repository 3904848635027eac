"""A run's usage totals (``result.meta["usage"]``) as a line of text for the report.

Every total is shown as ``name: value``, as it always was. A run with calls whose token usage was
unknown (``unknown_usage_calls``: the server reported counts no call can have) was not priced for
those calls, so its cost is shown as what it is, a lower bound, with how many calls it leaves out:
``cost: at least $0.4000 (usage unknown for 1 call)``, never as a precise total.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["UNKNOWN_KEY", "cost_text", "unknown_calls", "usage_line"]

#: The key of ``meta["usage"]`` counting the calls whose usage was unknown.
UNKNOWN_KEY = "unknown_usage_calls"


def unknown_calls(usage: Mapping[str, Any]) -> int:
    """How many calls ``usage`` says had unknown usage (0 when it says nothing, or nothing sensible)."""
    n = usage.get(UNKNOWN_KEY)
    if isinstance(n, bool) or not isinstance(n, (int, float)) or not math.isfinite(n):
        return 0
    return max(int(n), 0)


def cost_text(usage: Mapping[str, Any]) -> str:
    """Say the run's cost as text.

    Its value as recorded; with unknown usage, ``at least $X`` (or ``not known`` when no call was
    priced) and ``(usage unknown for N calls)``.
    """
    cost, unknown = usage.get("cost"), unknown_calls(usage)
    if not unknown:
        return str(cost)
    priced = isinstance(cost, (int, float)) and not isinstance(cost, bool) and math.isfinite(cost)
    bound = f"at least ${cost:.4f}" if priced else "not known"
    return f"{bound} (usage unknown for {unknown} call{'s' if unknown != 1 else ''})"


def usage_line(usage: Mapping[str, Any]) -> str:
    """Write ``name: value`` for each total of ``usage``.

    The cost is said as :func:`cost_text` says it (the count of unknown calls is said there, not
    twice).
    """
    unknown = unknown_calls(usage)
    parts = []
    for k, v in usage.items():
        if k == UNKNOWN_KEY:
            continue
        parts.append(f"{k}: {cost_text(usage) if k == 'cost' else v}")
    if unknown and "cost" not in usage:
        parts.append(f"cost: {cost_text(usage)}")
    return ", ".join(parts)
