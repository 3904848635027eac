"""Where the notebook kit plugs its renderers into the core (as Altair's renderer registry does).

The core never imports :mod:`nbeval.widgets`. A renderer is registered by name, either by the kit
on import (:func:`register_renderer`) or through the ``nbeval.renderers`` entry-point group, which
is read the first time a renderer is asked for, so an installed kit renders without being
imported first. The names the core asks for:

* ``"mimebundle"``: ``fn(result) -> dict`` of MIME type to content, for notebook display;
* ``"report_charts"``: ``fn(result) -> str`` of inline SVG charts for the HTML report;
* ``"case_explorer"``: ``fn(result) -> widget``, what ``%nbeval explore`` shows.

Without a renderer the core falls back to plain text and HTML (no charts).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["ENTRY_POINT_GROUP", "get_renderer", "register_renderer", "unregister_renderer"]

#: The entry-point group through which an installed package (the notebook kit) provides renderers.
ENTRY_POINT_GROUP = "nbeval.renderers"

_RENDERERS: dict[str, Callable[..., Any]] = {}
_entry_points_read = False


def register_renderer(name: str, fn: Callable[..., Any]) -> None:
    """Use ``fn`` for the renderer ``name`` (replacing any earlier one)."""
    _RENDERERS[name] = fn


def unregister_renderer(name: str) -> None:
    """Forget the renderer ``name`` (nothing happens when there is none)."""
    _RENDERERS.pop(name, None)


def get_renderer(name: str) -> Callable[..., Any] | None:
    """The renderer registered as ``name``, or ``None``; installed entry points are read once."""
    _read_entry_points()
    return _RENDERERS.get(name)


def _read_entry_points() -> None:
    global _entry_points_read
    if _entry_points_read:
        return
    _entry_points_read = True
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _RENDERERS:
            continue
        try:
            _RENDERERS[ep.name] = ep.load()
        except Exception as exc:  # a kit that cannot load (a missing extra) leaves the plain fallbacks
            warnings.warn(
                f"nbeval renderer '{ep.name}' could not be loaded ({exc}); showing plain output", stacklevel=3
            )
