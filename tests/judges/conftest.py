"""Fixtures for judge-evaluator tests: the fake OpenAI-compatible server as the judge."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAIServer

_ENV = ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")


@pytest.fixture(autouse=True)
def _no_judge_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


@pytest.fixture
def judge(openai_server: FakeOpenAIServer) -> dict[str, Any]:
    """``judge=`` settings pointing at the fake server."""
    return {"model": "judge-model", "base_url": openai_server.url, "api_key": "sk-judge-test-key-123456"}
