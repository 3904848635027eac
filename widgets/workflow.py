"""``nbeval.widgets.app()``: the four forms in one tabbed workflow."""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from nbeval.data.model import LlmDataset, TestSuite
from nbeval.widgets.explorer import CaseExplorer
from nbeval.widgets.picker import EvaluatorPicker
from nbeval.widgets.run_panel import RunPanel
from nbeval.widgets.suite_builder import SuiteBuilder

__all__ = ["TAB_TITLES", "NbevalApp", "answers_to_come", "app"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("NbevalApp", "app")

#: The titles of the app's four tabs, in order.
TAB_TITLES = ("1 · Suite", "2 · Evaluators", "3 · Run", "4 · Explore")


class NbevalApp(w.Tab):
    """Suite → Evaluators → Run → Explore.

    With ``data``, that is what runs, and the picker judges evaluators against it. Without it, the
    suite being built is what runs: the Run tab's Model field names the models that answer it
    (``models=`` fills it), and Run collects their answers, then evaluates. Until then the picker
    judges evaluators against the suite as it will be once answered (an answer to every case;
    retrieved context only once collected answers carry some), and Run says what is missing
    instead of starting. Choosing evaluators updates the run panel; a finished run fills the
    explorer and opens its tab.

    Args:
        data: What to evaluate: a lab, dataset, DataFrame, records or path; ``None`` runs the suite
            being built.
        suite: A suite to start the builder with; ``None`` starts an empty one.
        judge: The judge for judge-based evaluators (enables them in the picker, and is used by the
            runs).
        evaluators: Evaluator ids to tick at the start: one id or several.
        models: The models that answer the suite (what :func:`nbeval.collect` takes); they fill
            the Run tab's Model field.
        **evaluate_kwargs: Option keywords for the runs, as :func:`nbeval.evaluate` takes them.
    """

    def __init__(
        self,
        data: Any = None,
        *,
        suite: TestSuite | None = None,
        judge: Any = None,
        evaluators: Any = None,
        models: Any = None,
        **evaluate_kwargs: Any,
    ) -> None:
        self.suite_builder = SuiteBuilder(suite)
        self.picker = EvaluatorPicker(
            dataset=data if data is not None else answers_to_come(self.suite_builder.value), judge=judge
        )
        if evaluators:
            ids = [evaluators] if isinstance(evaluators, str) else list(evaluators)
            self.picker.select(*ids)
        if judge is not None:
            evaluate_kwargs["judge"] = judge
        self.run_panel = RunPanel(
            data if data is not None else self.suite_builder.value, self.picker.value, models=models, **evaluate_kwargs
        )
        self.explorer = CaseExplorer()
        super().__init__(children=[self.suite_builder, self.picker, self.run_panel, self.explorer], titles=TAB_TITLES)
        self._own_data = data is None
        self.suite_builder.observe(self._on_suite, names=["value"])
        self.picker.observe(self._on_evaluators, names=["value"])
        self.run_panel.observe(self._on_result, names=["result"])
        self.run_panel.observe(self._on_lab, names=["lab"])
        self.observe(self._on_tab, names=["selected_index"])

    def _on_suite(self, change: dict[str, Any]) -> None:
        """The suite changed: hand it to the run panel and the picker (when the app owns the data)."""
        if self._own_data:
            self.run_panel.data = change["new"]
            self.picker.dataset = answers_to_come(change["new"])

    def _on_lab(self, change: dict[str, Any]) -> None:
        """Answers were collected: let the picker see what they carry (the suite again when none)."""
        # collected answers show what they really carry (retrieved context, say); none: the suite again
        if self._own_data:
            lab = change["new"]
            self.picker.dataset = lab if lab is not None else answers_to_come(self.suite_builder.value)

    def _on_tab(self, change: dict[str, Any]) -> None:
        """The Run tab was opened: offer the notebook's functions defined since as models."""
        if change["new"] == 2:  # functions defined since: suggest them in the Model field
            self.run_panel.refresh_models()

    def _on_evaluators(self, change: dict[str, Any]) -> None:
        """The chosen evaluators changed: hand them to the run panel."""
        self.run_panel.evaluators = change["new"]

    def _on_result(self, change: dict[str, Any]) -> None:
        """A run finished: show its result in the explorer and switch to that tab."""
        if change["new"] is not None:
            self.explorer.result = change["new"]
            self.selected_index = 3


def answers_to_come(suite: TestSuite) -> LlmDataset | None:
    """Make ``suite`` into the dataset the picker should judge before its answers are collected.

    Args:
        suite: The suite being built.

    Returns:
        Its rows with a stand-in answer (every model answers every case), or ``None`` for a suite
        with no cases yet (nothing to judge against: only the judge requirement applies).
    """
    if not suite.test_cases:
        return None
    return LlmDataset([row.with_answer(actual_output="(answer to come)") for row in suite.to_dataset().rows])


def app(
    data: Any = None,
    *,
    suite: TestSuite | None = None,
    judge: Any = None,
    evaluators: Any = None,
    models: Any = None,
    **evaluate_kwargs: Any,
) -> NbevalApp:
    """Make the tabbed workflow: build a suite, pick evaluators, run, explore the cases.

    Args:
        data: What to evaluate (anything ``nbeval.evaluate`` reads); ``None`` runs the suite being
            built, answered by ``models``.
        suite: A suite to start the builder with; ``None`` starts an empty one.
        judge: The judge for judge-based evaluators (enables them in the picker).
        evaluators: Evaluator ids to tick at the start.
        models: The models that answer the suite (what :func:`nbeval.collect` takes, e.g.
            ``[my_rag]``); they can also be named in the Run tab's Model field.
        **evaluate_kwargs: The rest, which goes to :func:`nbeval.evaluate`.

    Returns:
        The app, a tab per step.
    """
    return NbevalApp(data, suite=suite, judge=judge, evaluators=evaluators, models=models, **evaluate_kwargs)
