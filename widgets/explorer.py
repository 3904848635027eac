"""CaseExplorer: pick a test case (or click a heatmap cell) and read it across every model."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import traitlets

from nbeval.results import EvaluationResult
from nbeval.widgets.case_view import MAX_CHARS, case_html, case_rows
from nbeval.widgets.common import reports_errors, status_html
from nbeval.widgets.heatmaps import CASE_FOCUS, CASE_SELECTION, MODEL_FOCUS, heatmap
from nbeval.widgets.labelling import VerdictLabeller

__all__ = ["CaseExplorer"]


class CaseExplorer(w.VBox):
    """A heatmap of models × cases over the case's detail: prompt, expected output and context,
    every model's answer side by side, every metric, the rationales and any error.

    Choose the case in the dropdown, walk the cases with Previous / Next, or click a heatmap cell
    (the chart's ``case_select`` selection, observed from Python); the clicked model's column is
    highlighted. The heatmap highlights the case shown (its row, or the one cell clicked) through
    its ``case_focus`` and ``model_focus`` params, set from here. ``key`` and ``model_key`` hold
    the current choice; ``detail.value`` is the escaped HTML shown, each text in it cut to
    ``max_chars`` characters with a marker giving its full size.

    Below the case, ``labeller`` (a :class:`~nbeval.widgets.labelling.VerdictLabeller`, unless
    ``labelling=False``) shows each model's verdict beside its human label: Agree, Disagree or a
    picked label calls ``result.set_labels`` for that case, model and evaluator.
    """

    result = traitlets.Instance(EvaluationResult, allow_none=True)
    key = traitlets.Unicode("", help="the test case shown")
    model_key = traitlets.Unicode("", help="the model highlighted ('' for none)")

    def __init__(
        self,
        result: EvaluationResult | None = None,
        *,
        show_heatmap: bool = True,
        max_chars: int = MAX_CHARS,
        labelling: bool = True,
        **kwargs: Any,
    ) -> None:
        from nbeval.widgets.display import jupyter_chart

        self.max_chars = max_chars
        """How many characters of each text (answer, rationale, prompt, ...) a case shows."""
        self.evaluator_choice = w.Dropdown(description="Heatmap", options=[])
        self.case_choice = w.Dropdown(description="Case", options=[], layout=w.Layout(width="560px"))
        self.previous_button = w.Button(
            description="Previous", icon="arrow-left", tooltip="the case before", layout=w.Layout(width="110px")
        )
        self.next_button = w.Button(
            description="Next", icon="arrow-right", tooltip="the case after", layout=w.Layout(width="110px")
        )
        self.position = w.Label()
        self.chart = jupyter_chart(None) if show_heatmap else None
        self.detail = w.HTML(status_html("no result yet: run an evaluation"))
        self.labeller = VerdictLabeller() if labelling else None
        self.message = w.HTML()
        self.output = w.Output()
        self._rows: dict[str, list[Any]] = {}
        self._busy = False
        self._heatmap_keys: set[str] = set()
        top = [self.evaluator_choice, self.chart] if self.chart is not None else []
        below = [self.labeller] if self.labeller is not None else []
        walk = w.HBox([self.case_choice, self.previous_button, self.next_button, self.position])
        super().__init__([*top, walk, self.detail, *below, self.message, self.output], **kwargs)
        self.case_choice.observe(self._on_case, names=["value"])
        if self.chart is not None:
            self.chart.observe(self._keep_focus, names=["_params"])
        self.previous_button.on_click(lambda _: self.step(-1))
        self.next_button.on_click(lambda _: self.step(1))
        self.evaluator_choice.observe(self._on_evaluator, names=["value"])
        self.result = result
        self._update_walk()

    # -- reacting ----------------------------------------------------------------------------

    @traitlets.observe("result")
    def _on_result(self, change: dict[str, Any]) -> None:
        self._load(change["new"])

    @reports_errors
    def _load(self, result: EvaluationResult | None) -> None:
        self._busy = True
        try:
            self._rows = case_rows(result) if result is not None else {}
            options = []
            for i, (key, rows) in enumerate(self._rows.items(), 1):
                prompt = " ".join(str(rows[0].input or "")[:400].split())  # never split a 5 MB prompt
                options.append((f"{i}. {prompt[:80] + '…' if len(prompt) > 80 else prompt}", key))
            self.case_choice.options = options
            evaluators = result.evaluators if result is not None else []
            keep = self.evaluator_choice.value
            self.evaluator_choice.options = evaluators
            self.evaluator_choice.value = keep if keep in evaluators else (evaluators[0] if evaluators else None)
        finally:
            self._busy = False
        first = next(iter(self._rows), "")
        self.select(self.key if self.key in self._rows else first)
        self._draw_heatmap()  # after choosing the case: the heatmap starts with it highlighted
        self._render()  # the key may be unchanged while the result is new
        self._update_walk()

    def _on_case(self, change: dict[str, Any]) -> None:
        if not self._busy and change["new"] is not None:
            self.key = change["new"]

    def _on_evaluator(self, change: dict[str, Any]) -> None:
        if not self._busy:
            self._draw_heatmap()
            # label the evaluator whose heatmap is shown, when it has verdicts
            if self.labeller is not None and change["new"] in self.labeller.evaluator_choice.options:
                self.labeller.evaluator_choice.value = change["new"]

    @reports_errors
    def _draw_heatmap(self) -> None:
        if self.chart is None:
            return
        evaluator = self.evaluator_choice.value
        self._heatmap_keys = set()  # not known until drawn
        chart = heatmap(self.result, evaluator, focus=self._focus()) if self.result is not None and evaluator else None
        self.chart.chart = chart
        spec = self.chart.spec or {}
        self._heatmap_keys = {
            str(r["key"]) for rows in spec.get("datasets", {}).values() for r in rows if "key" in r and "model_key" in r
        }
        # A new chart brings new Selections and Params objects: observe the current ones.
        if hasattr(self.chart.selections, CASE_SELECTION):
            self.chart.selections.observe(self._on_click, names=[CASE_SELECTION])
        self._show_focus()

    def _focus(self) -> tuple[str, str]:
        """What the heatmap highlights: the case shown (when the heatmap has it) and the model."""
        if self.key and (self.key in self._heatmap_keys or not self._heatmap_keys):
            return self.key, self.model_key
        return "", ""

    def _show_focus(self) -> None:
        params = getattr(self.chart, "params", None) if self.chart is not None else None
        if params is None or not hasattr(params, CASE_FOCUS):
            return
        key, model_key = self._focus()
        setattr(params, CASE_FOCUS, key)
        setattr(params, MODEL_FOCUS, model_key)

    def _keep_focus(self, change: dict[str, Any]) -> None:
        # A view drawn afresh reports the focus its spec started with: put the current one back
        # (once the chart has copied the reported params, so that nothing ping-pongs).
        reported = change["new"] or {}
        if CASE_FOCUS in reported and (reported[CASE_FOCUS], reported.get(MODEL_FOCUS)) != self._focus():
            self._show_focus()

    def _on_click(self, change: dict[str, Any]) -> None:
        points = change["new"].value
        if points:
            self.select(points[0].get("key", self.key), points[0].get("model_key"))

    @traitlets.observe("key", "model_key")
    def _on_choice(self, change: dict[str, Any]) -> None:
        self._render()
        self._show_focus()
        self._update_walk()

    def _update_walk(self) -> None:
        keys = list(self._rows)
        at = keys.index(self.key) if self.key in keys else -1
        self.previous_button.disabled = at <= 0
        self.next_button.disabled = at < 0 or at >= len(keys) - 1
        self.position.value = f"case {at + 1} of {len(keys)}" if at >= 0 else ""

    # -- showing -----------------------------------------------------------------------------

    def step(self, by: int) -> None:
        """Show the case ``by`` places after the current one (before it when negative), staying
        within the list; the highlighted model is kept."""
        keys = list(self._rows)
        if not keys:
            return
        at = keys.index(self.key) if self.key in keys else 0
        self.select(keys[max(0, min(len(keys) - 1, at + by))], self.model_key or None)

    def select(self, key: str, model_key: str | None = None) -> None:
        """Show case ``key``, highlighting ``model_key``'s column when given."""
        with self.hold_trait_notifications():
            self.key = key
            self.model_key = model_key or ""
        if key in self._rows and self.case_choice.value != key:
            self._busy = True
            try:
                self.case_choice.value = key
            finally:
                self._busy = False

    @reports_errors
    def _render(self) -> None:
        if self.labeller is not None:
            self.labeller.show(self.result, self.key if self.result is not None else "")
        if self.result is None or not self.key:
            self.detail.value = status_html("no result yet: run an evaluation" if self.result is None else "no case")
            return
        self.detail.value = case_html(
            self.result, self.key, self.model_key or None, max_chars=self.max_chars, rows=self._rows
        )
