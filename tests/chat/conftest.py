"""Fixtures for chat-layer tests: an isolated environment and the fake OpenAI-compatible server."""

from __future__ import annotations

from pathlib import Path

import pytest

_ENV = (
    "NBEVAL_JUDGE_MODEL",
    "NBEVAL_JUDGE_BASE_URL",
    "NBEVAL_JUDGE_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "XDG_CACHE_HOME",
)


@pytest.fixture(autouse=True)
def _isolated_chat_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No judge from the outside world, and a cache directory private to the test."""
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    cache_dir = tmp_path / "nbeval-cache"
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(cache_dir))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return cache_dir


@pytest.fixture
def cache_path(tmp_path: Path) -> Path:
    """A fresh SQLite cache file path."""
    return tmp_path / "chat-cache" / "chat.sqlite"
