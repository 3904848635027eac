"""The public modules of nbeval and its notebook kit, as the surface tests read them."""

from __future__ import annotations

import pkgutil


def public_modules() -> list[str]:
    """``nbeval``, ``nbeval.widgets`` and every module below them with no ``_``-prefixed part, sorted."""
    import nbeval
    import nbeval.widgets

    names = {"nbeval", "nbeval.widgets"}
    for pkg in (nbeval, nbeval.widgets):
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.add(info.name)
    return sorted(names)
