"""Fixtures for the generation tests: a loopback judge (a real HTTP server on 127.0.0.1 that answers
the JSON schema it is sent), no judge from the environment, and a cache of each test's own."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.generation.loopback import SchemaJudge
from tests.support.fake_openai import FakeOpenAIServer


@pytest.fixture(autouse=True)
def _no_judge_from_env(no_judge_from_env: None) -> None:
    """Every test here: no judge from the environment, a cache of its own (tests/conftest.py)."""


@pytest.fixture
def schema_judge() -> SchemaJudge:
    return SchemaJudge()


@pytest.fixture
def server(schema_judge: SchemaJudge) -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(schema_judge) as s:
        yield s


@pytest.fixture
def judge(server: FakeOpenAIServer) -> dict[str, Any]:
    """``judge=`` settings pointing at the loopback server."""
    return {"model": "writer-model", "base_url": server.url, "api_key": "sk-generate-test-123456"}
