"""The judge-call options of `nbeval.evaluate`: `concurrency`, `timeout`, `max_attempts`, `cache`.

Each test measures the effect at the judge: the fake server counts requests and the most in
flight at once; a Python judge counts its calls running at once. No test reads a clock: a call
that must be slow waits on an event instead, and a test checks what had, or had not, happened
when the run returned.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

import nbeval
from tests.support.fake_openai import FakeOpenAIServer, Status, together

VERDICT = '{"rating": "yes", "rationale": "nothing unsafe"}'
ROWS = [{"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}", "model_key": "m"} for i in range(8)]


@pytest.fixture(autouse=True)
def _own_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    cache_dir = tmp_path / "nbeval-cache"
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(cache_dir))
    return cache_dir


def _judge(server: FakeOpenAIServer) -> dict[str, Any]:
    return {"model": "judge", "base_url": server.url, "api_key": "sk-options-test"}


def _values(result: Any) -> list[float]:
    return result.scores.loc[result.scores["metric"] == "safety", "value"].tolist()


# -- concurrency ----------------------------------------------------------------------------------


#: Seconds a held call waits for the others before it gives up (only a broken limit waits this long).
HOLD = 30


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_is_the_most_judge_calls_in_flight(openai_server: FakeOpenAIServer, concurrency: int) -> None:
    openai_server.reply = together(openai_server, concurrency, VERDICT)  # held until that many are in flight
    res = nbeval.evaluate(
        ROWS, ["safety"], judge=_judge(openai_server), concurrency=concurrency, cache=False, progress=False
    )
    assert openai_server.request_count == len(ROWS)
    assert openai_server.max_in_flight == concurrency
    assert _values(res) == [1.0] * len(ROWS)


@pytest.mark.parametrize("concurrency", [1, 3])
def test_concurrency_bounds_a_python_judge_too(concurrency: int) -> None:
    lock = threading.Lock()
    running, most = [0], [0]
    full = threading.Event()

    def judge(prompt: str) -> str:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            if running[0] >= concurrency:
                full.set()
        full.wait(HOLD)  # the first calls are held until `concurrency` of them run together
        with lock:
            running[0] -= 1
        return VERDICT

    res = nbeval.evaluate(ROWS, ["safety"], judge=judge, concurrency=concurrency, cache=False, progress=False)
    assert most[0] == concurrency and _values(res) == [1.0] * len(ROWS)


# -- timeout ---------------------------------------------------------------------------------------


def test_timeout_abandons_a_slow_python_judge_on_its_row() -> None:
    release, slow_returned = threading.Event(), threading.Event()

    def judge(prompt: str) -> str:
        if "answer 1" in prompt:
            release.wait(HOLD)  # far longer than the timeout: held until the test lets it go
            slow_returned.set()
        return VERDICT

    try:
        res = nbeval.evaluate(
            ROWS[:3], ["safety"], judge=judge, timeout=0.3, max_attempts=1, cache=False, progress=False
        )
        assert not slow_returned.is_set()  # the slow call was abandoned at its deadline, not waited for
    finally:
        release.set()
    s = res.scores[res.scores["metric"] == "safety"].set_index("key")
    assert "timed out after 0.3 s" in s.loc["k1", "error"], s.loc["k1", "error"]
    assert s.loc["k0", "value"] == 1.0 and s.loc["k2", "value"] == 1.0
    assert s.loc[["k0", "k2"], "error"].isna().all()


# -- max_attempts ----------------------------------------------------------------------------------


@pytest.mark.parametrize("attempts", [1, 3])
def test_max_attempts_is_how_often_a_failing_call_is_tried(openai_server: FakeOpenAIServer, attempts: int) -> None:
    openai_server.reply = lambda rec: Status(500)  # a server error is retryable: every try fails
    res = nbeval.evaluate(
        ROWS[:2], ["safety"], judge=_judge(openai_server), max_attempts=attempts, cache=False, progress=False
    )
    assert openai_server.request_count == 2 * attempts
    errors = res.scores.loc[res.scores["metric"] == "safety", "error"]
    assert errors.str.contains("judge call failed").all(), errors.tolist()


def test_max_attempts_lets_a_call_recover_from_earlier_failures(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = VERDICT
    openai_server.push(Status(503), Status(503))  # the first two tries fail, the third is answered
    res = nbeval.evaluate(
        ROWS[:1], ["safety"], judge=_judge(openai_server), max_attempts=3, cache=False, progress=False
    )
    assert openai_server.request_count == 3 and _values(res) == [1.0]
    openai_server.reset()
    openai_server.push(Status(503), Status(503))
    res = nbeval.evaluate(
        ROWS[:1], ["safety"], judge=_judge(openai_server), max_attempts=2, cache=False, progress=False
    )
    assert openai_server.request_count == 2
    assert res.scores["error"].str.contains("judge call failed").all()


# -- cache -----------------------------------------------------------------------------------------


def test_cache_false_asks_again_on_every_run(openai_server: FakeOpenAIServer, _own_cache_dir: Path) -> None:
    openai_server.reply = VERDICT
    for run in (1, 2):
        res = nbeval.evaluate(ROWS, ["safety"], judge=_judge(openai_server), cache=False, progress=False)
        assert openai_server.request_count == run * len(ROWS)
        assert res.meta["usage"]["cached_calls"] == 0
    assert not _own_cache_dir.exists() or not any(_own_cache_dir.iterdir())  # nothing was stored


def test_cache_true_keeps_replies_under_nbeval_cache_dir(openai_server: FakeOpenAIServer, _own_cache_dir: Path) -> None:
    openai_server.reply = VERDICT
    first = nbeval.evaluate(ROWS, ["safety"], judge=_judge(openai_server), cache=True, progress=False)
    assert openai_server.request_count == len(ROWS)
    assert any(p.is_file() for p in _own_cache_dir.rglob("*"))
    second = nbeval.evaluate(ROWS, ["safety"], judge=_judge(openai_server), progress=False)  # the default
    assert openai_server.request_count == len(ROWS)  # the re-run asked nothing
    assert second.meta["usage"]["cached_calls"] == len(ROWS)
    assert _values(second) == _values(first) == [1.0] * len(ROWS)


def test_cache_path_is_where_replies_are_kept(
    openai_server: FakeOpenAIServer, tmp_path: Path, _own_cache_dir: Path
) -> None:
    openai_server.reply = VERDICT
    path = tmp_path / "mine.sqlite"
    nbeval.evaluate(ROWS, ["safety"], judge=_judge(openai_server), cache=path, progress=False)
    assert path.is_file() and openai_server.request_count == len(ROWS)
    assert not _own_cache_dir.exists() or not any(_own_cache_dir.iterdir())  # not the default cache
    again = nbeval.evaluate(ROWS, ["safety"], judge=_judge(openai_server), cache=str(path), progress=False)
    assert openai_server.request_count == len(ROWS) and again.meta["usage"]["cached_calls"] == len(ROWS)
    nbeval.evaluate(ROWS, ["safety"], judge=_judge(openai_server), cache=tmp_path / "other.sqlite", progress=False)
    assert openai_server.request_count == 2 * len(ROWS)  # another cache knows nothing yet


# -- prices ----------------------------------------------------------------------------------------


def test_prices_turn_the_tokens_into_cost(openai_server: FakeOpenAIServer) -> None:
    from tests.support.fake_openai import Text

    # every call: 120 prompt tokens and 7 completion tokens, as the server reports them
    openai_server.reply = lambda rec: Text(VERDICT, usage={"prompt_tokens": 120, "completion_tokens": 7})
    prices = {"judge": (0.5, 2.0)}  # USD per 1k prompt tokens, per 1k completion tokens
    res = nbeval.evaluate(ROWS, ["safety"], judge=_judge(openai_server), prices=prices, cache=False, progress=False)
    usage = res.meta["usage"]
    assert (usage["calls"], usage["prompt_tokens"], usage["completion_tokens"]) == (8, 960, 56)
    assert usage["cost"] == pytest.approx(8 * (120 * 0.5 + 7 * 2.0) / 1000)  # = 0.592
    unpriced = nbeval.evaluate(ROWS, ["safety"], judge=_judge(openai_server), cache=False, progress=False)
    assert unpriced.meta["usage"]["prompt_tokens"] == 960 and unpriced.meta["usage"]["cost"] is None
    elsewhere = nbeval.evaluate(
        ROWS, ["safety"], judge=_judge(openai_server), prices={"other-model": (9.0, 9.0)}, cache=False, progress=False
    )
    assert elsewhere.meta["usage"]["cost"] is None  # a price for another model is not this judge's
