"""Progress bars, and how often a run reports its progress.

The bars are ``tqdm.auto``'s: a widget in a kernel, text elsewhere, or nothing.

A run reports as its rows finish, not per chunk: every score in a small run (a 24-row run moves
24 times), about :data:`PROGRESS_STEPS` times over a large one, and at least every
:data:`PROGRESS_INTERVAL` seconds while rows finish (a slow judge still moves the bar), so a
callback that redraws costs a large run next to nothing (:class:`ProgressThrottle`).
"""

from __future__ import annotations

import time
from typing import Any

__all__ = ["PROGRESS_INTERVAL", "PROGRESS_STEPS", "ProgressThrottle", "progress_bar"]

#: A run reports its progress about this many times at most, counted in scores (plus the reports
#: :data:`PROGRESS_INTERVAL` asks for): a large run's callback costs no more than it did when it was
#: called once per chunk of 256 rows.
PROGRESS_STEPS = 100

#: Seconds between two reports at most, while rows finish.
PROGRESS_INTERVAL = 0.25


class ProgressThrottle:
    """Decide when a run of ``total`` scores reports its progress.

    It reports once ``step = total // steps`` (at least 1) more scores are finished, or ``interval``
    seconds after the last report, whichever comes first.
    """

    def __init__(self, total: int, *, steps: int = PROGRESS_STEPS, interval: float = PROGRESS_INTERVAL) -> None:
        self.step = max(1, int(total) // max(1, int(steps)))
        self.interval = interval
        self.done = -1
        """Scores finished at the last report (-1: none yet)."""
        self._last = time.monotonic()

    def due(self, done: int) -> bool:
        """Whether to report now that ``done`` scores are finished."""
        return done - max(self.done, 0) >= self.step or time.monotonic() - self._last >= self.interval

    def reported(self, done: int) -> bool:
        """Record a report of ``done`` scores; ``False`` when it would say nothing new."""
        self._last = time.monotonic()
        if done == self.done:
            return False
        self.done = done
        return True


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, enabled: bool, *, desc: str = "nbeval", unit: str = "score") -> Any:
    """A bar with ``update(n)`` and ``close()``; tqdm is imported only when one is shown.

    (tqdm redraws at most ten times a second, however often it is updated.)
    """
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False)
