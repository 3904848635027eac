"""Red-team findings on judge calls (issue 35): a judge's own ``timeout`` bounds every call, and a
huge judge reply is cut before it is cached or parsed."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbeval
from tests.support.fake_openai import Drip, FakeOpenAIServer

ROWS = [{"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}"} for i in range(2)]


@pytest.fixture(autouse=True)
def _no_judge_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))


@pytest.mark.timeout(60)  # without the judge's timeout each try would drip for minutes
@pytest.mark.parametrize("run_timeout", [None, 120])  # the judge's own setting wins over the run's
def test_the_judges_own_timeout_bounds_every_call(openai_server: FakeOpenAIServer, run_timeout: float | None) -> None:
    openai_server.reply = lambda rec: Drip("Rating: yes", interval=1.0)
    judge = {"model": "judge", "base_url": openai_server.url, "timeout": 0.5}
    res = nbeval.evaluate(
        ROWS, ["safety"], judge=judge, timeout=run_timeout, max_attempts=2, cache=False, progress=False
    )
    errors = list(res.scores["error"])
    assert len(errors) == len(ROWS)
    assert all("timed out after 0.5 s" in e and "gave up after 2 attempts" in e for e in errors), errors
    assert openai_server.request_count == 2 * len(ROWS)


def test_a_huge_judge_reply_is_cut_before_it_is_cached_and_the_row_says_so(
    openai_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    from nbeval.chat import ChatCache
    from nbeval.chat.base import MAX_REPLY_CHARS
    from nbeval.results.storage.limits import MAX_STORED_CHARS

    assert MAX_REPLY_CHARS == MAX_STORED_CHARS  # the chat layer cannot import the results' cap
    huge = "Rating: yes\n" + "x" * (4 * MAX_REPLY_CHARS)  # far over the cap (a red team sent 64 MiB)
    openai_server.reply = huge
    path = tmp_path / "replies.sqlite"
    judge = {"model": "judge", "base_url": openai_server.url}
    res = nbeval.evaluate(ROWS[:1], ["safety"], judge=judge, cache=path, progress=False)
    row = res.scores.iloc[0]
    assert row["label"] == "yes" or row["value"] == 1.0, row.to_dict()
    # this run parsed the whole reply; what the row keeps is capped, with the original size
    assert "[truncated:" in row["rationale"], row["rationale"][-200:]
    cache = ChatCache(path)
    stored = [r[0] for r in cache._connection().execute("SELECT text FROM replies")]
    assert len(stored) == 1 and len(stored[0]) <= MAX_REPLY_CHARS
    # read back from the cache, the row still says why its rationale is short
    again = nbeval.evaluate(ROWS[:1], ["safety"], judge=judge, cache=path, progress=False)
    assert openai_server.request_count == 1
    assert f"judge reply cut to {MAX_REPLY_CHARS:,} characters" in again.scores.iloc[0]["rationale"]
