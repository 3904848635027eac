"""Objects that installed packages offer through an entry-point group (evaluators, perturbators)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["plugins"]


def plugins(group: str, what: str) -> Iterator[Any]:
    """Load each object of an entry-point group, skipping the ones that fail.

    Each object of entry-point ``group`` is loaded; one that fails to load is skipped with a warning
    naming it (``what``: "plugin", "perturbator plugin"), since a broken plugin must not break
    nbeval.
    """
    from importlib.metadata import entry_points

    for ep in entry_points(group=group):
        try:
            yield ep.load()
        except Exception as exc:
            import warnings

            warnings.warn(f"nbeval {what} '{ep.name}' failed to load: {exc}", stacklevel=3)
