"""``nbeval.widgets.app()``: the four forms in one tabbed workflow."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from nbeval.data.model import TestSuite
from nbeval.widgets.explorer import CaseExplorer
from nbeval.widgets.picker import EvaluatorPicker
from nbeval.widgets.run_panel import RunPanel
from nbeval.widgets.suite_builder import SuiteBuilder

__all__ = ["TAB_TITLES", "NbevalApp", "app"]

TAB_TITLES = ("1 · Suite", "2 · Evaluators", "3 · Run", "4 · Explore")


class NbevalApp(w.Tab):
    """Suite → Evaluators → Run → Explore.

    With ``data`` (a lab, dataset, DataFrame, records or path), that is what runs, and the picker
    judges evaluators against it. Without it, the suite being built is what runs (a suite has no
    answers yet, so evaluators that read answers are disabled, and Run says how to add them).
    Choosing evaluators updates the run panel; a finished run fills the explorer and opens its tab.
    """

    def __init__(self, data: Any = None, *, suite: TestSuite | None = None, judge: Any = None,
                 evaluators: Any = None, **evaluate_kwargs: Any) -> None:
        self.suite_builder = SuiteBuilder(suite)
        self.picker = EvaluatorPicker(dataset=data if data is not None else self.suite_builder.value, judge=judge)
        if evaluators:
            ids = [evaluators] if isinstance(evaluators, str) else list(evaluators)
            self.picker.select(*ids)
        if judge is not None:
            evaluate_kwargs["judge"] = judge
        self.run_panel = RunPanel(data if data is not None else self.suite_builder.value, self.picker.value,
                                  **evaluate_kwargs)
        self.explorer = CaseExplorer()
        super().__init__(children=[self.suite_builder, self.picker, self.run_panel, self.explorer],
                         titles=TAB_TITLES)
        self._own_data = data is None
        self.suite_builder.observe(self._on_suite, names=["value"])
        self.picker.observe(self._on_evaluators, names=["value"])
        self.run_panel.observe(self._on_result, names=["result"])

    def _on_suite(self, change: dict[str, Any]) -> None:
        if self._own_data:
            self.picker.dataset = change["new"]
            self.run_panel.data = change["new"]

    def _on_evaluators(self, change: dict[str, Any]) -> None:
        self.run_panel.evaluators = change["new"]

    def _on_result(self, change: dict[str, Any]) -> None:
        if change["new"] is not None:
            self.explorer.result = change["new"]
            self.selected_index = 3


def app(data: Any = None, *, suite: TestSuite | None = None, judge: Any = None, evaluators: Any = None,
        **evaluate_kwargs: Any) -> NbevalApp:
    """The tabbed workflow: build a suite, pick evaluators, run, explore the cases.

    ``data``: what to evaluate (anything ``nbeval.evaluate`` reads); ``suite``: a suite to start the
    builder with; ``judge``: the judge for judge-based evaluators (enables them in the picker);
    ``evaluators``: ids to tick at the start; the rest goes to :func:`nbeval.evaluate`.
    """
    return NbevalApp(data, suite=suite, judge=judge, evaluators=evaluators, **evaluate_kwargs)
