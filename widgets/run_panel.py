"""RunPanel: run an evaluation in a worker thread, with progress, Cancel and a live leaderboard.

A button clicked while a notebook cell is busy is not handled until the cell ends, so the run
happens in a thread and the cell returns at once. The engine calls back (``on_progress``) with
the run's live result once it has planned the run (the total is known from the start) and then as
rows finish, each judge reply moving it (throttled by the engine for a large run: see
:class:`~nbeval.progress.ProgressThrottle`); the panel moves its progress bar each time and
redraws the leaderboard at most once per ``refresh_interval`` seconds, building the partial result
only then (the live result converts each finished row once, so a long run stays linear), and waits
at least four times as long as the last redraw took, so redrawing a big partial result never takes
more than about a fifth of the run (:class:`RedrawThrottle`). Cancel
sets the engine's ``cancel`` event: no judge call starts after it, the calls in flight finish and
their rows are scored, and the partial result (every other row marked ``cancelled``) is kept. A
run whose rows had all finished when Cancel came is reported as finished.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import ipywidgets as w
import traitlets

from nbeval.results import EvaluationResult
from nbeval.results.live import LiveResult
from nbeval.widgets.common import error_text, reports_errors, status_html

__all__ = ["RedrawThrottle", "RunPanel"]


class RedrawThrottle:
    """When a live view may redraw: at most once per ``interval`` seconds, and no sooner than
    ``cost_factor`` times the last redraw's duration after it ended, so redraws cost at most about
    ``1 / (1 + cost_factor)`` of a run however big the partial result grows."""

    def __init__(self, interval: float, cost_factor: float = 4.0) -> None:
        self.interval = interval
        self.cost_factor = cost_factor
        self.redraws = 0
        self._next = 0.0

    def due(self) -> bool:
        """Whether a redraw may happen now."""
        return time.monotonic() >= self._next

    def done(self, cost_s: float) -> None:
        """Record a redraw that took ``cost_s`` seconds and just ended."""
        self.redraws += 1
        self._next = time.monotonic() + max(self.interval - cost_s, self.cost_factor * cost_s)

    def reset(self) -> None:
        """Allow the next redraw at once (a new run)."""
        self.redraws, self._next = 0, 0.0


class RunPanel(w.VBox):
    """Evaluate ``data`` with ``evaluators`` (anything ``nbeval.evaluate`` accepts) on Run.

    ``evaluate_kwargs`` go to :func:`nbeval.evaluate` (``judge=``, ``embedder=``, ``cache=``...);
    the engine's own progress bar is off unless ``progress=True`` is given. ``.result`` holds the
    finished (or cancelled) result; ``.wait()`` blocks until the run ends (scripts and tests).
    """

    data = traitlets.Any(None, allow_none=True, help="what to evaluate")
    evaluators = traitlets.Any(None, allow_none=True, help="which evaluators")
    result = traitlets.Instance(EvaluationResult, allow_none=True, help="the last finished run's result")
    running = traitlets.Bool(False)
    done = traitlets.Int(0, help="scores finished so far")
    total = traitlets.Int(0, help="scores the run will make")
    refreshes = traitlets.Int(0, help="how many times the live leaderboard was redrawn")

    def __init__(self, data: Any = None, evaluators: Any = None, *, refresh_interval: float = 0.5,
                 **evaluate_kwargs: Any) -> None:
        clash = {"cancel", "on_progress", "dry_run"} & set(evaluate_kwargs)
        if clash:
            msg = f"RunPanel sets {', '.join(sorted(clash))} itself; leave it out"
            raise TypeError(msg)
        from nbeval.widgets.display import jupyter_chart

        self.evaluate_kwargs = {"progress": False, **evaluate_kwargs}
        self.refresh_interval = refresh_interval
        self.run_button = w.Button(description="Run", icon="play", button_style="primary")
        self.cancel_button = w.Button(description="Cancel", icon="stop", disabled=True)
        self.progress = w.IntProgress(value=0, min=0, max=1, description="", bar_style="info")
        self.message = w.HTML(status_html("ready"))
        self.board_evaluator = w.Dropdown(description="Leaderboard", options=[], style={"description_width": "initial"})
        self.board = w.HTML()
        self.chart = jupyter_chart(None)
        self.output = w.Output()
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._throttle = RedrawThrottle(refresh_interval)
        self._live: LiveResult | None = None
        self._drawing = False
        super().__init__([w.HBox([self.run_button, self.cancel_button, self.progress]), self.message,
                          self.board_evaluator, self.board, self.chart, self.output])
        self.data, self.evaluators = data, evaluators
        self.run_button.on_click(lambda _: self.run())
        self.cancel_button.on_click(lambda _: self.cancel())
        self.board_evaluator.observe(self._on_board_choice, names=["value"])

    def _on_board_choice(self, change: dict[str, Any]) -> None:
        if not self._drawing:
            self._redraw(self._live.result() if self._live is not None else self.result)

    # -- control -----------------------------------------------------------------------------

    @reports_errors
    def run(self) -> None:
        """Start the evaluation in a worker thread (no-op while one runs)."""
        if self.running:
            return
        if self.data is None or not self.evaluators:
            raise ValueError("nothing to run: give the panel data and at least one evaluator")
        self._cancel = threading.Event()
        self._live = None
        self._throttle.reset()
        self.done, self.total, self.refreshes = 0, 0, 0
        self.progress.bar_style, self.progress.value = "info", 0
        self.progress.description = "starting…"  # the engine reports the total once it has planned the run
        self.running = True
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.message.value = status_html("running…")
        self._thread = threading.Thread(target=self._work, name="nbeval-run", daemon=True)
        self._thread.start()

    def cancel(self) -> None:
        """Stop the run: no new judge call starts; the calls in flight finish and are kept."""
        if self.running:
            self._cancel.set()
            self.cancel_button.disabled = True
            self.message.value = status_html("cancelling: waiting for the calls in flight…")

    def wait(self, timeout: float | None = None) -> EvaluationResult | None:
        """Block until the run ends (or ``timeout`` seconds pass); return ``.result``."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.result

    # -- the worker --------------------------------------------------------------------------

    def _work(self) -> None:
        import nbeval

        result, failure = None, None
        started = time.perf_counter()
        try:
            result = nbeval.evaluate(self.data, self.evaluators, cancel=self._cancel,
                                     on_progress=self._on_progress, **self.evaluate_kwargs)
        except Exception as exc:
            # the panel must come back to a usable state whatever happens
            failure = exc
            self.output.append_stderr(error_text(exc) + "\n")
        try:
            if result is not None:
                self.result = result
                self._live = None
                self._redraw(result)
                cancelled = bool(result.meta.get("cancelled"))
                self.progress.bar_style = "warning" if cancelled else "success"
                how = "cancelled" if cancelled else "finished"
                self.message.value = status_html(
                    f"{how} in {time.perf_counter() - started:.1f} s: {self.done} of {self.total} scores; "
                    "the result is in .result", "info" if cancelled else "ok")
            else:
                self.progress.bar_style = "danger"
                self.message.value = status_html(f"the run failed: {error_text(failure)}", "error")
        finally:
            self.run_button.disabled, self.cancel_button.disabled = False, True
            self.running = False

    def _on_progress(self, live: LiveResult, done: int, total: int) -> None:
        self.total, self.done = total, done
        self.progress.max, self.progress.value = max(total, 1), done
        self.progress.description = f"{done} / {total}"
        self._live = live
        if self._throttle.due():
            started = time.monotonic()
            self._redraw(live.result())
            self._throttle.done(time.monotonic() - started)

    @reports_errors
    def _redraw(self, result: EvaluationResult | None) -> None:
        """Show ``result``'s summary and leaderboard (errors go to the log, never into the run)."""
        if result is None or not result.evaluators:
            return
        self.refreshes += 1
        from nbeval.widgets.charts import leaderboard_chart
        from nbeval.widgets.markup import summary_html

        if list(self.board_evaluator.options) != result.evaluators:
            self._drawing = True
            try:
                self.board_evaluator.options = result.evaluators
                if self.board_evaluator.value is None:
                    self.board_evaluator.value = result.evaluators[0]
            finally:
                self._drawing = False
        evaluator = self.board_evaluator.value or result.evaluators[0]
        self.board.value = summary_html(result)
        self.chart.chart = leaderboard_chart(result, evaluator)
