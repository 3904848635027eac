"""RunPanel with ``batch=True`` (issue 34): the message shows the provider's batch, its state and
counts, while the run waits; Cancel cancels the batch at the provider; a suite's answers are
collected through the Batch API too."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from nbeval.chat import OpenAIChat
from nbeval.widgets.run_panel import RunPanel
from tests.chat.test_batch import POLL, ROWS, judge_of, verdict
from tests.chat.test_collect import make_suite
from tests.support.fake_batch import FakeBatchServer


def _wait_for(predicate: Any, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.01)


def _messages(panel: RunPanel) -> list[str]:
    seen: list[str] = []
    panel.message.observe(lambda change: seen.append(change["new"]), names=["value"])
    return seen


def test_the_panel_shows_the_batch_and_cancel_cancels_it_at_the_provider(tmp_path: Path) -> None:
    with FakeBatchServer(verdict, delay=None) as server:  # the batch waits until cancelled
        panel = RunPanel(
            ROWS, ["safety"], judge=judge_of(server), cache=tmp_path / "c.sqlite", batch=True, batch_poll_s=POLL
        )
        seen = _messages(panel)
        panel.run_button.click()
        _wait_for(lambda: "batch batch_fake0001: in_progress, 0/6 done" in panel.message.value)
        assert "waiting for the provider" in panel.message.value and panel.done == 0
        assert server.cancels == []
        panel.cancel_button.click()
        result = panel.wait(30)
        assert server.cancels == ["batch_fake0001"]  # POST /v1/batches/batch_fake0001/cancel
        assert ("POST", "/v1/batches/batch_fake0001/cancel") in server.calls
    assert result is not None and result.meta["cancelled"]
    assert set(result.scores["skip_reason"]) == {"cancelled"}
    assert panel.progress.bar_style == "warning" and "cancelled" in panel.message.value
    cancelling = next(i for i, m in enumerate(seen) if "cancelling" in m)
    assert not any("waiting for the provider" in m for m in seen[cancelling:])  # Cancel's word stays


def test_a_suite_is_answered_through_the_batch_api_and_the_panel_says_so(tmp_path: Path) -> None:
    with FakeBatchServer(lambda rec: "Paris" if "France" in rec.last_content else "Lima", delay=0.3) as server:
        alpha = OpenAIChat("alpha", base_url=server.url, api_key="sk-test")
        panel = RunPanel(
            make_suite(),
            ["exact_match"],
            models={"alpha": alpha},
            cache=tmp_path / "c.sqlite",
            batch=True,
            batch_poll_s=POLL,
        )
        seen = _messages(panel)
        panel.run_button.click()
        result = panel.wait(30)
    assert result is not None and not result.meta["cancelled"]
    assert server.batch_creates == 1 and server.request_count == 0  # collected in one batch, nothing one by one
    assert [r.actual_output for r in panel.lab.dataset] == ["Paris", "Lima", "Lima"]
    assert any("waiting for the provider" in m and "batch batch_fake0001: in_progress" in m for m in seen)
    values = result.scores.set_index("key")["value"].to_dict()
    assert values == {"fr": 1.0, "pe": 1.0, "cl": 0.0}
