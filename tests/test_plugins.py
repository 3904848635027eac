"""Entry-point plugins: a broken one is skipped with a warning naming it; the others load."""

from __future__ import annotations

import importlib.metadata
from typing import Any

import pytest

from nbeval._plugins import plugins


class _EP:
    def __init__(self, name: str, obj: Any) -> None:
        self.name, self._obj = name, obj

    def load(self) -> Any:
        if isinstance(self._obj, Exception):
            raise self._obj
        return self._obj


def test_a_broken_plugin_is_skipped_with_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    eps = [_EP("broken", ImportError("no module named zzz")), _EP("good", "the object")]
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: eps if group == "g" else [])
    with pytest.warns(UserWarning, match="nbeval plugin 'broken' failed to load: no module named zzz"):
        assert list(plugins("g", "plugin")) == ["the object"]
