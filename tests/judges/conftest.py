"""Fixtures for judge-evaluator tests: the fake OpenAI-compatible server as the judge."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture(autouse=True)
def _no_judge_from_env(no_judge_from_env: None) -> None:
    """Every test here: no judge from the environment, a cache of its own (tests/conftest.py)."""


@pytest.fixture
def judge(openai_server: FakeOpenAIServer) -> dict[str, Any]:
    """``judge=`` settings pointing at the fake server."""
    return {"model": "judge-model", "base_url": openai_server.url, "api_key": "sk-judge-test-key-123456"}
