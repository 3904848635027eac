"""Shared pieces of the RAGAS-family tests: a loopback judge, ragas called directly, a toy embedder.

Values are compared with ragas's own metric classes run directly (``ascore``) against the same
loopback server, which answers with the rule-based stand-in (:mod:`nbeval.evaluators.ragas.standin`)
or with replies a test scripts. The toy embedder gives exactly the same vectors to both sides, so
embedding-based metrics can be compared to 1e-9 too; one test uses the real packaged MiniLM.
"""

from __future__ import annotations

import asyncio
import json
import re
import zlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from nbeval.evaluators.ragas.standin import standin_reply
from tests.support.fake_openai import FakeOpenAIServer, Recorded

pytest.importorskip("ragas")

DIM = 16


def toy_vector(text: str) -> np.ndarray:
    """A bag of hashed words, L2-normalised (never zero: one slot counts every text)."""
    v = np.zeros(DIM, dtype=np.float64)
    for w in re.findall(r"\w+", text.lower()):
        v[zlib.crc32(w.encode()) % (DIM - 1)] += 1.0
    v[DIM - 1] += 1.0
    return v / np.linalg.norm(v)


class ToyEmbedder:
    """nbeval's embedder form: ``encode(texts)`` -> one row per text."""

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.stack([toy_vector(t) for t in texts])


def toy_ragas_embeddings() -> Any:
    """The same vectors behind ragas's own embeddings interface, for ragas run directly."""
    from ragas.embeddings.base import BaseRagasEmbedding

    class ToyRagasEmbeddings(BaseRagasEmbedding):
        def embed_text(self, text: str, **kw: Any) -> list[float]:
            return toy_vector(text).tolist()

        async def aembed_text(self, text: str, **kw: Any) -> list[float]:
            return self.embed_text(text)

    return ToyRagasEmbeddings()


def standin_server_reply(rec: Recorded) -> str:
    return standin_reply(rec.messages)


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as s:
        yield s


def judge_for(server: FakeOpenAIServer) -> Any:
    """nbeval's judge on the loopback server (no retries, so counts are exact)."""
    from nbeval.chat import OpenAIChat

    return OpenAIChat("fake-judge", base_url=server.url, api_key="sk-test")


def ragas_llm(server: FakeOpenAIServer) -> Any:
    """ragas's own LLM on the same server, built as ragas's docs say (llm_factory + AsyncOpenAI)."""
    from openai import AsyncOpenAI
    from ragas.llms.base import llm_factory

    return llm_factory("fake-judge", client=AsyncOpenAI(base_url=server.url, api_key="sk-test", max_retries=0))


def direct(metric: Any, samples: list[dict[str, Any]]) -> list[float]:
    """ragas's value for each sample, computed by ragas alone, one after another in one event loop
    (ragas's async OpenAI client belongs to the loop it first ran in)."""

    async def run() -> list[float]:
        return [float((await metric.ascore(**inputs)).value) for inputs in samples]

    return asyncio.run(run())


def bodies(server: FakeOpenAIServer) -> list[str]:
    """Every request body the server saw, as canonical JSON (sorted, so order does not matter)."""
    return sorted(json.dumps(r.body, sort_keys=True) for r in server.requests)


ROWS: list[dict[str, Any]] = [
    {
        "key": "paris",
        "model_key": "m",
        "input": "What is the capital of France?",
        "expected_output": "Paris is the capital of France. It lies on the Seine.",
        "actual_output": "The capital of France is Paris. Paris has ten million cats.",
        "context": [
            "Paris is the capital and largest city of France.",
            "Lyon is a city in France.",
            "The Seine flows through Paris.",
        ],
    },
    {
        "key": "hamlet",
        "model_key": "m",
        "input": "Who wrote Hamlet?",
        "expected_output": "William Shakespeare wrote Hamlet around 1600.",
        "actual_output": "I don't know who wrote it.",
        "context": ["Hamlet is a tragedy written by William Shakespeare.", "It was written around 1600."],
    },
    {
        "key": "water",
        "model_key": "m",
        "input": "At what temperature does water boil at sea level?",
        "expected_output": "Water boils at 100 degrees Celsius at sea level.",
        "actual_output": "Water boils at 100 degrees Celsius at sea level. Salt water boils slightly higher.",
        "context": ["Cooking pasta needs salted water.", "At sea level water boils at 100 degrees Celsius."],
    },
]
