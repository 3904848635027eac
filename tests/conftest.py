"""Shared test setup: offline, and nbeval's caches in a temporary folder."""

from __future__ import annotations

import os

# No test may reach the network or a model hub.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
for var in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
    os.environ.pop(var, None)

from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def _nbeval_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> None:
    os.environ["NBEVAL_CACHE_DIR"] = str(tmp_path_factory.mktemp("nbeval-cache"))


@pytest.fixture
def records() -> list[dict]:
    """Two models answering two test cases; the second case is a perturbation of the first."""
    return [
        {"key": "a", "input": "What is 2+2?", "expected_output": "4", "actual_output": "4", "model_key": "m1"},
        {"key": "b", "input": "what is two plus two", "expected_output": "4", "actual_output": "5", "model_key": "m1",
         "categories": ["perturbed"], "relationships": [{"type": "perturbation_source", "target": "a"}]},
        {"key": "a", "input": "What is 2+2?", "expected_output": "4", "actual_output": "four", "model_key": "m2"},
        {"key": "b", "input": "what is two plus two", "expected_output": "4", "actual_output": "4", "model_key": "m2",
         "categories": ["perturbed"], "relationships": [{"type": "perturbation_source", "target": "a"}]},
    ]


@pytest.fixture
def openai_server() -> Iterator[FakeOpenAIServer]:
    """A running fake OpenAI-compatible server on 127.0.0.1, answering "ok" until told otherwise."""
    with FakeOpenAIServer() as server:
        yield server
