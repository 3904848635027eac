"""RunPanel: a worker-thread run with progress, a working Cancel and a throttled live leaderboard."""

from __future__ import annotations

import itertools
import time

import pytest

import nbeval
from nbeval.widgets.run_panel import RunPanel


def _slow_records(n: int) -> list[dict]:
    return [{"key": f"k{i}", "input": f"q{i}", "actual_output": "a", "model_key": "m"} for i in range(n)]


def _wait_for(predicate, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting")
        time.sleep(0.005)


def test_run_fills_result_progress_and_leaderboard(wrecords):
    panel = RunPanel(wrecords, ["w_overlap"])
    assert panel.cancel_button.disabled and not panel.run_button.disabled
    panel.run_button.click()
    result = panel.wait(30)
    assert result is panel.result and not panel.running
    agg = result.aggregates.set_index(["model_key", "metric"])["value"]
    assert agg[("m1", "overlap")] == 1.0 and agg[("m2", "overlap")] == 0.25 and agg[("m3", "overlap")] == 1.0
    assert (panel.done, panel.total) == (12, 12) and panel.progress.value == 12
    assert panel.progress.bar_style == "success" and "finished" in panel.message.value
    assert "w_overlap.overlap" in panel.board.value and panel.refreshes >= 1
    assert panel.chart.chart is not None
    assert panel.chart.spec["hconcat"][0]["layer"][0]["encoding"]["y"]["sort"] == ["m1", "m3", "m2"]
    assert panel.cancel_button.disabled and not panel.run_button.disabled
    assert panel.board_evaluator.options == ("w_overlap",) and panel.board_evaluator.value == "w_overlap"


def test_cancel_works_while_it_runs():
    panel = RunPanel(_slow_records(300), ["w_slow"], chunk_rows=1)  # ~6 s if nobody cancels
    started = time.perf_counter()
    panel.run_button.click()
    _wait_for(lambda: panel.done >= 3)
    assert panel.running and not panel.cancel_button.disabled
    panel.cancel_button.click()
    result = panel.wait(30)
    assert time.perf_counter() - started < 5.0  # all 300 rows would take 6 s or more
    assert result.meta["cancelled"] is True
    skipped = result.scores[result.scores["skipped"]]
    assert len(skipped) > 0 and set(skipped["skip_reason"]) == {"cancelled"}
    assert panel.done < panel.total == 300
    assert panel.progress.bar_style == "warning" and "cancelled" in panel.message.value


def test_leaderboard_refresh_is_throttled():
    panel = RunPanel(_slow_records(60), [nbeval.evaluator("w_slow", delay=0.01)], chunk_rows=1, refresh_interval=0.25)
    stamps: list[float] = []
    panel.observe(lambda _: stamps.append(time.monotonic()), names=["refreshes"])
    panel.run()
    panel.wait(30)
    assert panel.done == 60
    # 60 batches, yet live redraws are at least 0.25 s apart (the last one, for the final result, may be sooner)
    assert 2 <= len(stamps) < 60
    gaps = [b - a for a, b in itertools.pairwise(stamps[:-1])]
    assert all(g >= 0.24 for g in gaps), gaps


def test_a_failed_run_reports_and_recovers(wrecords):
    panel = RunPanel(wrecords, ["w_judged"])
    panel.run()
    assert panel.wait(30) is None
    assert "needs a judge" in panel.message.value
    assert panel.output.outputs[-1]["name"] == "stderr"
    assert not panel.running and not panel.run_button.disabled and panel.progress.bar_style == "danger"


def test_nothing_to_run_says_so():
    panel = RunPanel()
    panel.run_button.click()
    assert "nothing to run" in panel.message.value and not panel.running


def test_the_panel_owns_cancel_and_progress_callbacks(wrecords):
    with pytest.raises(TypeError, match="cancel"):
        RunPanel(wrecords, ["w_overlap"], cancel=None)


def test_a_live_redraw_shows_the_partial_result(wrecords):
    """The engine hands the panel its live result; a redraw shows what is finished so far."""
    from nbeval.engine import plan_run, run_chunk

    state = plan_run(wrecords, ["w_overlap"])
    run_chunk(state, 3)  # the 'capital' rows; 'colour' (no expected output) and m3's 'river' were skipped at once
    panel = RunPanel(wrecords, ["w_overlap"], refresh_interval=0.0)
    panel._on_progress(state.live, state.done, state.total)
    assert (panel.done, panel.total) == (7, 12) and panel.progress.description == "7 / 12"
    assert panel.refreshes == 1 and "14 scores" in panel.board.value  # 7 rows x 2 metrics
    assert panel.chart.spec["hconcat"][0]["layer"][0]["encoding"]["y"]["sort"] == ["m1", "m2", "m3"]
    run_chunk(state, 100)
    panel.board_evaluator.value = None  # choosing again redraws from the live result, now complete
    panel.board_evaluator.value = "w_overlap"
    assert "24 scores" in panel.board.value


def test_redraws_wait_four_times_their_own_cost(monkeypatch: pytest.MonkeyPatch):
    # A clock we move by hand: a redraw that took 0.2 s is not repeated for 0.8 s even with interval 0.1.
    from nbeval.widgets import run_panel

    now = [100.0]
    monkeypatch.setattr(run_panel.time, "monotonic", lambda: now[0])
    throttle = run_panel.RedrawThrottle(0.1)
    assert throttle.due()
    throttle.done(0.2)
    now[0] += 0.79
    assert not throttle.due()
    now[0] += 0.02
    assert throttle.due()
    throttle.done(0.01)  # a cheap redraw: the interval governs
    now[0] += 0.08
    assert not throttle.due()
    now[0] += 0.02
    assert throttle.due() and throttle.redraws == 2
    throttle.reset()
    assert throttle.due() and throttle.redraws == 0
