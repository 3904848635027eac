"""Progress bars: ``tqdm.auto`` (a widget in a kernel, text elsewhere), or nothing."""

from __future__ import annotations

from typing import Any

__all__ = ["progress_bar"]


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, enabled: bool, *, desc: str = "nbeval", unit: str = "score") -> Any:
    """A bar with ``update(n)`` and ``close()``; tqdm is imported only when one is shown."""
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False)
