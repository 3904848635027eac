"""When to stop waiting on a batch that does not end.

A status nbeval does not know, or a batch still running well past its expiry.

The polling waits while a batch is ``validating``, ``in_progress``, ``finalizing`` or
``cancelling``, and reads it once it is ``completed``, ``failed``, ``expired`` or ``cancelled``.
Any other status (a provider's own ``ended``, a typo, a proxy's ``null``) would be waited on
forever; so would a batch the provider never expires. :class:`Watch` gives up on a batch whose
status nbeval does not know :data:`UNKNOWN_POLLS` polls in a row, and on one still waited on
:data:`EXPIRY_GRACE_S` after its expiry (the provider's ``expires_at``, else its ``created_at``
plus the completion window, else the time this run first saw it plus the window), each time
with a reason that names the batch and its status. It does no I/O and reads no clock: the
caller passes the time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone

from nbeval.chat.batch_api import TERMINAL, BatchState

__all__ = ["EXPIRY_GRACE_S", "UNKNOWN_POLLS", "WAITING", "Watch", "window_s"]

#: Statuses of a batch that is still going: the polling waits.
WAITING = frozenset({"validating", "in_progress", "finalizing", "cancelling"})

#: Polls in a row with a status nbeval does not know before it gives up on the batch.
UNKNOWN_POLLS = 3

#: Seconds past a batch's expiry after which a batch still waited on is given up (a provider
#: expires a batch at its window's end; an hour covers its own lag in saying so).
EXPIRY_GRACE_S = 3600.0

_WINDOW = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd])\s*", re.IGNORECASE)
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def window_s(window: str) -> float | None:
    """The seconds of a completion window such as ``"24h"``; ``None`` when it is not that shape."""
    match = _WINDOW.fullmatch(window)
    return float(match.group(1)) * _UNIT_S[match.group(2).lower()] if match else None


@dataclass
class Watch:
    """What the polling of one batch makes of the states it sees (sent with ``window``)."""

    window: str = "24h"
    since: float | None = None
    """When this run first saw the batch: its expiry's stand-in when the provider gives no time."""
    grace_s: float = EXPIRY_GRACE_S
    unknown_polls: int = UNKNOWN_POLLS
    unknown: int = 0
    """Polls in a row so far that saw a status nbeval does not know."""

    def give_up(self, state: BatchState, now: float) -> str | None:
        """Why to stop waiting on the batch, if it is time to.

        The batch is seen as ``state`` at ``now`` (seconds since the epoch); ``None`` to read it (it
        ended) or to wait on.
        """
        if state.status in TERMINAL:
            return None
        if state.status not in WAITING:
            self.unknown += 1
            if self.unknown >= self.unknown_polls:
                polls = "poll" if self.unknown == 1 else f"{self.unknown} polls in a row"
                return (
                    f"batch {state.id} reports the status {state.status!r} ({polls}), which nbeval does not know "
                    f"(it knows {', '.join(sorted(WAITING | TERMINAL))})"
                )
            return None
        self.unknown = 0
        due = self.due(state)
        if due is not None and now > due + self.grace_s:
            late = (now - due) / 3600
            return f"batch {state.id} is still {state.status!r} {late:.1f} h after it was due to expire ({_when(due)})"
        return None

    def due(self, state: BatchState) -> float | None:
        """When the batch should end at the latest.

        The provider's ``expires_at`` (no later than :attr:`since` plus the window), else its
        ``created_at`` (else :attr:`since`) plus the window; ``None`` when none is known.
        """
        span = window_s(self.window)
        span = span if span is not None else 86400.0  # a window nbeval cannot read: the providers' day
        if state.expires_at is not None:
            # A batch this run first saw at `since` was created no later, so it expires by `since`
            # plus its window: a later expires_at (1e30, or milliseconds taken for seconds) would
            # keep the run polling for ever.
            return state.expires_at if self.since is None else min(state.expires_at, self.since + span)
        start = state.created_at if state.created_at is not None else self.since
        return None if start is None else start + span


def _when(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    except (OverflowError, ValueError, OSError):  # a time the provider gave far outside the calendar
        return f"{seconds:.0f} s after 1970"
