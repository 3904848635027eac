"""Module attributes loaded on first access (PEP 562), so importing a package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Make the ``__getattr__`` and ``__dir__`` of a package that imports its exports lazily.

    Each public name of ``exports`` is imported from its module the first time it is used, then kept
    in ``namespace`` (the package globals) of ``package``.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            msg = f"module '{package}' has no attribute '{name}'"
            raise AttributeError(msg)
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", exports))

    return __getattr__, __dir__
