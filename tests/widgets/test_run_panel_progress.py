"""RunPanel and ``nw.app()`` with a slow judge: the bar moves as replies come, Cancel stops the judge
(issue 25). The judge is a loopback server; the checks count its requests, never seconds."""

from __future__ import annotations

import threading

import pytest

import nbeval.widgets as nw
from nbeval.results import EvaluationResult
from nbeval.widgets.run_panel import RunPanel
from tests.support.fake_openai import FakeOpenAIServer, Recorded, Text

SAFE = '{"rating": "yes", "rationale": "No harmful content."}'
CONCURRENCY = 4


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _rows(n: int) -> list[dict[str, str]]:
    return [
        {"key": f"k{i}", "input": f"question {i}", "actual_output": f"answer {i}", "model_key": "m"} for i in range(n)
    ]


def _judge(server: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "judge", "base_url": server.url}


def test_the_progress_bar_moves_as_replies_come(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Text(SAFE, latency=0.02)
    panel = RunPanel(_rows(24), ["safety"], judge=_judge(openai_server), cache=False, concurrency=CONCURRENCY)
    values: list[int] = []
    labels: list[str] = []
    panel.progress.observe(lambda c: values.append(c["new"]), names=["value"])
    panel.progress.observe(lambda c: labels.append(c["new"]), names=["description"])
    panel.run()
    result = panel.wait(60)
    assert result is not None and result.meta["cancelled"] is False
    assert len(set(values)) > 2 and values == sorted(values) and values[-1] == 24  # moves, not one jump
    assert "0 / 0" not in labels and next(x for x in labels if "/" in x) == "0 / 24"  # the total from the start
    assert (panel.done, panel.total) == (24, 24) and panel.progress.bar_style == "success"


def test_cancel_in_the_app_stops_the_judge_and_labels_the_rest() -> None:
    reached = threading.Event()
    count = [0]
    lock = threading.Lock()

    def reply(rec: Recorded) -> Text:
        with lock:
            count[0] += 1
            if count[0] == 6:
                reached.set()
        return Text(SAFE, latency=0.3)

    with FakeOpenAIServer(reply=reply) as server:
        app = nw.app(_rows(40), judge=_judge(server), evaluators=["safety"], cache=False, concurrency=CONCURRENCY)
        panel = app.run_panel
        panel.run_button.click()
        assert reached.wait(60)
        panel.cancel_button.click()
        result = panel.wait(60)
        sent = server.request_count
    assert sent <= 6 + CONCURRENCY  # 40 rows, yet nothing was sent after Cancel
    s = result.scores
    assert len(s) == 40 and result.meta["cancelled"] is True
    assert (~s["skipped"]).sum() == sent  # the calls in flight finished and were kept
    assert set(s.loc[s["skipped"], "skip_reason"]) == {"cancelled"}
    assert panel.progress.bar_style == "warning" and "cancelled" in panel.message.value
    assert panel.total == 40
    assert app.explorer.result is result


def test_cancel_after_every_row_finished_reports_finished(openai_server: FakeOpenAIServer) -> None:
    openai_server.reply = lambda rec: Text(SAFE)
    panel = RunPanel(_rows(12), ["safety"], judge=_judge(openai_server), cache=False)

    def on_done(change: dict) -> None:
        if change["new"] == panel.total:
            panel.cancel()  # pressed after the last row finished, before the run returned

    panel.observe(on_done, names=["done"])
    panel.run()
    result = panel.wait(60)
    assert panel._cancel.is_set()
    assert result.meta["cancelled"] is False and not result.scores["skipped"].any()
    assert panel.progress.bar_style == "success" and "finished" in panel.message.value


def test_redrawing_before_any_row_is_scored_logs_no_error() -> None:
    # CI's browser check caught it: the first redraw came before any score existed, and the
    # leaderboard's interval columns were missing (KeyError 'pass_lo' in the panel's log).
    rows = [
        {
            "key": f"k{i}",
            "input": f"question {i}",
            "actual_output": f"answer {i}",
            "expected_output": "answer",
            "model_key": "m",
        }
        for i in range(6)
    ]
    panel = RunPanel(rows, ["pii_leakage", "rouge"], refresh_interval=0.0)  # nothing skipped: done=0 at first
    drawn_at: list[int] = []
    redraw = panel._redraw

    def counted(result: EvaluationResult | None) -> None:
        drawn_at.append(panel.done)
        redraw(result)

    panel._redraw = counted  # this panel only
    panel.run()
    result = panel.wait(60)
    assert result is not None and drawn_at[0] == 0  # the first redraw came before any score
    assert panel.output.outputs == ()  # nothing was logged: no traceback
