"""ragas's usage telemetry: ragas's LLM factory, its own LLM client, prompts and metrics post
events to its makers' server (``ragas._analytics.track``) unless ``RAGAS_DO_NOT_TRACK`` is ``true``.

nbeval's path through ragas (:mod:`nbeval.evaluators.ragas.bridge`) uses none of the tracked
pieces, so an evaluation sends the judge what it needs and nothing to anyone else, telemetry on or
off. The tests that call ragas directly to compare with it run with telemetry off
(``tests/conftest.py``): no test reaches the network."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import nbeval
from tests.ragas.conftest import ROWS, ToyEmbedder, judge_for, ragas_llm, standin_server_reply
from tests.support.fake_openai import FakeOpenAIServer

analytics = pytest.importorskip("ragas._analytics")
AGENT_EVALUATORS = ["agent_goal_accuracy", "topic_adherence"]
RAGAS_FAMILY = ["faithfulness", "answer_relevancy", "context_precision", "context_recall", "answer_correctness"]


@pytest.fixture
def posts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The URLs ragas's telemetry posts to: recorded, never sent."""
    sent: list[str] = []

    def record(url: str, *args: Any, **kwargs: Any) -> None:
        sent.append(url)

    monkeypatch.setattr(analytics.requests, "post", record)
    return sent


@pytest.fixture
def telemetry_on(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``RAGAS_DO_NOT_TRACK`` unset, and ragas's cached reading of it forgotten, as for a user who
    never heard of it."""
    monkeypatch.delenv("RAGAS_DO_NOT_TRACK", raising=False)
    analytics.do_not_track.cache_clear()
    yield
    analytics.do_not_track.cache_clear()  # the next test reads the environment monkeypatch restores


def test_with_telemetry_on_ragas_itself_posts(telemetry_on: None, posts: list[str]) -> None:
    """What the tests below rely on: the recorder sees what ragas's own pieces send."""
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        ragas_llm(server)  # ragas's llm_factory reports its use
    analytics.track(analytics.IsCompleteEvent(event_type="probe"))
    assert posts and set(posts) == {analytics.USAGE_TRACKING_URL}


def test_nbevals_path_through_ragas_posts_nothing_even_with_telemetry_on(telemetry_on: None, posts: list[str]) -> None:
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        res = nbeval.evaluate(
            ROWS[:2], RAGAS_FAMILY, judge=judge_for(server), embedder=ToyEmbedder(), cache=False, progress=False
        )
    analytics._analytics_batcher.flush()  # what would be sent later from ragas's own thread
    assert res.scores["value"].notna().any()  # ragas really ran
    assert posts == []


def test_the_agents_evaluators_post_nothing_even_with_telemetry_on(telemetry_on: None, posts: list[str]) -> None:
    row = {
        "key": "k",
        "model_key": "m",
        "messages": [
            {"role": "user", "content": "Book a table for two."},
            {"role": "assistant", "content": "Booked a table for two at seven."},
        ],
        "expected_output": "A table for two is booked.",
        "reference_topics": ["restaurants"],
    }
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        res = nbeval.evaluate([row], AGENT_EVALUATORS, judge=judge_for(server), cache=False, progress=False)
        assert server.request_count > 0 and res.scores["value"].notna().any()
    analytics._analytics_batcher.flush()
    assert posts == []


def test_the_test_session_runs_ragas_with_telemetry_off(posts: list[str]) -> None:
    with FakeOpenAIServer(standin_server_reply, model="fake-judge") as server:
        ragas_llm(server)
    assert analytics.do_not_track() is True and posts == []
