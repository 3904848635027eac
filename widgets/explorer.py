"""CaseExplorer: pick a test case (or click a heatmap cell) and read it across every model."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import traitlets

from nbeval.errors import BadParameter, EvaluatorError
from nbeval.results import EvaluationResult
from nbeval.widgets.case_view import MAX_CHARS, case_html, case_rows
from nbeval.widgets.common import reports_errors, status_html
from nbeval.widgets.heatmaps import CASE_FOCUS, CASE_SELECTION, MODEL_FOCUS, heatmap
from nbeval.widgets.jury_view import cases_by_disagreement, jury_evaluators
from nbeval.widgets.labelling import VerdictLabeller, cases_by_queue, evaluators_with_verdicts, next_to_label

__all__ = ["ORDERS", "CaseExplorer", "case_order", "order_evaluators"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("CaseExplorer",)

#: How the CaseExplorer can list its cases, and what each order is called in its dropdown.
ORDERS = {
    "dataset": "dataset order",
    "disagreement": "most juror disagreement",
    "label_queue": "label queue (most uncertain)",
}
_NOTE = {"disagreement": "disagreement", "label_queue": "uncertainty"}


def _check_order(order: str) -> None:
    """Raise :class:`~nbeval.errors.BadParameter` unless ``order`` is one of :data:`ORDERS`."""
    if order not in ORDERS:
        msg = f"unknown case order {order!r}; use one of {', '.join(map(repr, ORDERS))}"
        raise BadParameter(msg)


def order_evaluators(result: EvaluationResult, order: str) -> list[str]:
    """List the evaluators that ``result``'s cases can be ordered by in ``order``.

    They are those run with a jury for ``disagreement``, those with verdicts for ``label_queue``,
    none for ``dataset``.

    Args:
        result: The evaluation result whose evaluators are listed.
        order: A key of :data:`ORDERS`.

    Returns:
        The ids of the evaluators ``order`` can use, in the result's order.
    """
    if order == "disagreement":
        return jury_evaluators(result)
    if order == "label_queue":
        return evaluators_with_verdicts(result)
    return []


def case_order(
    result: EvaluationResult, order: str, evaluator: str | None = None, keys: list[str] | None = None
) -> tuple[list[tuple[str, float | None]], str]:
    """Put the cases ``keys`` in ``order`` and say which evaluator ordered them.

    The orders are:

    * ``"dataset"``: as they are.
    * ``"disagreement"``: the most juror disagreement on ``evaluator`` first
      (:func:`~nbeval.widgets.jury_view.cases_by_disagreement`); by default the first evaluator
      run with a jury.
    * ``"label_queue"``: the case of the most uncertain unlabelled verdict first
      (:func:`~nbeval.widgets.labelling.cases_by_queue`); by default the first evaluator with
      verdicts.

    Args:
        result: The evaluation result whose cases are ordered.
        order: A key of :data:`ORDERS`.
        evaluator: Id of the evaluator to order by; ``None`` takes the first one ``order`` can use.
        keys: The test-case keys to order; ``None`` takes every case of the result.

    Returns:
        The cases, each with the number it was ordered by (``None`` for dataset order, or a case
        not ranked), and the id of the evaluator used (``""`` for dataset order).

    Raises:
        BadParameter: When ``order`` is not a key of :data:`ORDERS`.
        EvaluatorError: When no evaluator was given and none of the result's can be used for
            ``order``, or the evaluator was not run with a jury (for ``"disagreement"``).
        KeyError: When ``evaluator`` is not in the result (a :class:`~nbeval.errors.NotFound`).
    """
    _check_order(order)
    keys = keys if keys is not None else list(dict.fromkeys(r.key for r in result.dataset.rows))
    if order == "dataset":
        return [(k, None) for k in keys], ""
    choices = order_evaluators(result, order)
    if evaluator is None:
        if not choices:
            what = "was run with a jury" if order == "disagreement" else "has verdicts to label"
            msg = f"cannot order the cases by {ORDERS[order]}: no evaluator of this result {what}"
            raise EvaluatorError(msg)
        evaluator = choices[0]
    result.check_evaluator(evaluator)
    if order == "disagreement":
        return cases_by_disagreement(result, evaluator, keys), evaluator
    return cases_by_queue(result, evaluator, keys), evaluator


class CaseExplorer(w.VBox):
    """A widget that shows one test case across every model, under a heatmap of models × cases.

    The case's detail is its prompt, expected output and context, every model's answer side by
    side, every metric, the rationales and any error.

    Choose the case in the dropdown, walk the cases with Previous / Next, or click a heatmap cell
    (the chart's ``case_select`` selection, observed from Python); the clicked model's column is
    highlighted. The heatmap highlights the case shown (its row, or the one cell clicked) through
    its ``case_focus`` and ``model_focus`` params, set from here. ``key`` and ``model_key`` hold
    the current choice; ``detail.value`` is the escaped HTML shown, each text in it cut to
    ``max_chars`` characters with a marker giving its full size.

    Below the case, ``labeller`` (a :class:`~nbeval.widgets.labelling.VerdictLabeller`, unless
    ``labelling=False``) shows each model's verdict beside its human label: Agree, Disagree or a
    picked label calls ``result.set_labels`` for that case, model and evaluator. Its **Next most
    uncertain** button goes to the unlabelled verdict the judge is least sure of
    (``result.label_queue``), selecting its case and highlighting its model.

    ``order`` lists the cases in dataset order (``"dataset"``), the most juror disagreement on
    ``evaluator`` first (``"disagreement"``, for an evaluator run with a jury) or the case of the
    most uncertain unlabelled verdict first (``"label_queue"``, which also makes each label go on
    to the next most uncertain verdict); see :func:`case_order`. The ``order_choice`` dropdown and
    :meth:`order_by` change it; the list is made when the order is chosen (or a result loaded)
    and keeps its order while labels are added.

    Args:
        result: The evaluation result to explore; ``None`` shows an empty explorer until one is set.
        show_heatmap: Whether the heatmap of models × cases is shown above the case.
        max_chars: How many characters of each text (answer, rationale, prompt, ...) a case shows.
        labelling: Whether the :class:`~nbeval.widgets.labelling.VerdictLabeller` is shown below
            the case.
        order: How the cases are listed at first: a key of :data:`ORDERS`.
        evaluator: Id of the evaluator ``order`` ranks by; ``None`` takes the first one it can use.
        **kwargs: Passed on to :class:`ipywidgets.VBox`.

    Raises:
        BadParameter: When ``order`` is not a key of :data:`ORDERS`.
        EvaluatorError: When the cases cannot be put in ``order`` by ``evaluator``.
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
        order: str = "dataset",
        evaluator: str | None = None,
        **kwargs: Any,
    ) -> None:
        from nbeval.widgets.display import jupyter_chart

        self.max_chars = max_chars
        """How many characters of each text (answer, rationale, prompt, ...) a case shows."""
        self.evaluator_choice = w.Dropdown(description="Heatmap", options=[])
        self.case_choice = w.Dropdown(description="Case", options=[], layout=w.Layout(width="560px"))
        self.order_choice = w.Dropdown(
            description="Order", options=[(v, k) for k, v in ORDERS.items()], layout=w.Layout(width="330px")
        )
        self.order_evaluator_choice = w.Dropdown(description="of", options=[], layout=w.Layout(width="260px"))
        self.order = "dataset"
        """How the cases are listed: a key of :data:`ORDERS`."""
        self.order_evaluator = ""
        """The evaluator the cases are ordered by ('' for dataset order)."""
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
        self._keys: list[str] = []  # the cases in the order listed
        self._busy = False
        self._heatmap_keys: set[str] = set()
        top = [self.evaluator_choice, self.chart] if self.chart is not None else []
        below = [self.labeller] if self.labeller is not None else []
        walk = w.HBox([self.case_choice, self.previous_button, self.next_button, self.position])
        ordering = w.HBox([self.order_choice, self.order_evaluator_choice])
        super().__init__([*top, ordering, walk, self.detail, *below, self.message, self.output], **kwargs)
        self.case_choice.observe(self._on_case, names=["value"])
        if self.chart is not None:
            self.chart.observe(self._keep_focus, names=["_params"])
        self.previous_button.on_click(lambda _: self.step(-1))
        self.next_button.on_click(lambda _: self.step(1))
        self.evaluator_choice.observe(self._on_evaluator, names=["value"])
        self.order_choice.observe(self._on_order, names=["value"])
        self.order_evaluator_choice.observe(self._on_order, names=["value"])
        if self.labeller is not None:
            self.labeller.on_goto = self.select
        _check_order(order)
        self._order_options: dict[str, list[str]] = {}  # order -> the evaluators it can use
        self.result = result
        if order != "dataset":
            self.order_by(order, evaluator)  # raises for an evaluator without a jury (or verdicts)
        self._update_walk()

    # -- reacting ----------------------------------------------------------------------------

    @traitlets.observe("result")
    def _on_result(self, change: dict[str, Any]) -> None:
        """A new result was set: show its cases and evaluators."""
        self._load(change["new"])

    @reports_errors
    def _load(self, result: EvaluationResult | None) -> None:
        """Fill the case list and the evaluator choice from ``result``.

        The evaluator chosen is kept when the new result has it too.
        """
        self._busy = True
        try:
            self._rows = case_rows(result) if result is not None else {}
            self._list_cases(self._ordered(result))
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
        """A case was picked in the list: show it."""
        if not self._busy and change["new"] is not None:
            self.key = change["new"]

    def _on_evaluator(self, change: dict[str, Any]) -> None:
        """Another evaluator was chosen: redraw the heatmap, and label that evaluator's verdicts when it has some."""
        if not self._busy:
            self._draw_heatmap()
            # label the evaluator whose heatmap is shown, when it has verdicts
            if self.labeller is not None and change["new"] in self.labeller.evaluator_choice.options:
                self.labeller.evaluator_choice.value = change["new"]

    @reports_errors
    def _draw_heatmap(self) -> None:
        """Draw the per-case heatmap of the chosen evaluator, and note which cases it shows.

        Past its cell limit the heatmap shows the hardest cases only.
        """
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
        """Point the heatmap's focus params at the case (and model) shown."""
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
        """A heatmap cell was clicked: show that case and model."""
        points = change["new"].value
        if points:
            self.select(points[0].get("key", self.key), points[0].get("model_key"))

    @traitlets.observe("key", "model_key")
    def _on_choice(self, change: dict[str, Any]) -> None:
        """The case or model shown changed: redraw the detail, the focus and the walk buttons."""
        self._render()
        self._show_focus()
        self._update_walk()

    def _update_walk(self) -> None:
        """Enable the walk buttons where there is a case to go to, and say which case of how many this is."""
        keys = self._keys
        at = keys.index(self.key) if self.key in keys else -1
        self.previous_button.disabled = at <= 0
        self.next_button.disabled = at < 0 or at >= len(keys) - 1
        self.position.value = f"case {at + 1} of {len(keys)}" if at >= 0 else ""

    # -- ordering ----------------------------------------------------------------------------

    def _ordered(self, result: EvaluationResult | None) -> list[tuple[str, float | None]]:
        """List the cases of ``result`` in the current order.

        When the new result cannot be ordered so, they come in dataset order, and ``message`` says so.
        """
        keys = list(self._rows)
        self._order_options = {o: order_evaluators(result, o) for o in ORDERS} if result is not None else {}
        if result is None or self.order == "dataset":
            return [(k, None) for k in keys]
        try:
            ordered, self.order_evaluator = case_order(result, self.order, self.order_evaluator or None, keys)
        except (EvaluatorError, KeyError) as exc:
            self.message.value = status_html(f"cases in dataset order: {exc}", "error")
            self.order, self.order_evaluator = "dataset", ""
            return [(k, None) for k in keys]
        return ordered

    def _list_cases(self, ordered: list[tuple[str, float | None]]) -> None:
        """Fill the case dropdown (``_busy`` must be set) and the order dropdowns."""
        self._keys = [k for k, _ in ordered]
        note = _NOTE.get(self.order)
        options = []
        for i, (key, number) in enumerate(ordered, 1):
            prompt = " ".join(str(self._rows[key][0].input or "")[:400].split())  # never split a 5 MB prompt
            ranked = f"({note} {number:.2f}) " if note and number is not None else ""
            options.append((f"{i}. {ranked}{prompt[:80] + '…' if len(prompt) > 80 else prompt}", key))
        self.case_choice.options = options
        self.case_choice.value = self.key if self.key in self._keys else None
        self.order_choice.options = [(v, k) for k, v in ORDERS.items() if k == "dataset" or self._order_options.get(k)]
        self.order_choice.value = self.order
        choices = self._order_options.get(self.order, [])
        self.order_evaluator_choice.options = choices
        self.order_evaluator_choice.value = self.order_evaluator if self.order_evaluator in choices else None
        self.order_evaluator_choice.layout.display = None if choices else "none"

    def order_by(self, order: str = "dataset", evaluator: str | None = None) -> None:
        """List the cases in ``order`` of ``evaluator`` and show the first.

        For ``"label_queue"`` the first is the most uncertain unlabelled verdict, its model
        highlighted, and each label then goes on to the next. The heatmap and the labeller switch
        to ``evaluator``. With no result yet, the order is kept and applied when a result comes.

        Args:
            order: ``"dataset"``, ``"disagreement"`` or ``"label_queue"``; see :func:`case_order`.
            evaluator: Id of the evaluator to order by; ``None`` takes the first one ``order`` can use.

        Raises:
            EvaluatorError: When ``evaluator`` was not run with a jury (for ``"disagreement"``).
            BadParameter: When ``order`` is unknown.
        """
        _check_order(order)
        if self.result is None:  # applied when a result comes
            self.order, self.order_evaluator = order, evaluator or ""
            return
        ordered, used = case_order(self.result, order, evaluator, list(self._rows))
        self.order, self.order_evaluator = order, used
        self._busy = True
        try:
            self._list_cases(ordered)
        finally:
            self._busy = False
        if used and used in (self.evaluator_choice.options or ()) and self.evaluator_choice.value != used:
            self.evaluator_choice.value = used  # the heatmap and the labeller follow
        if self.labeller is not None:
            if used in self.labeller.evaluator_choice.options:
                self.labeller.evaluator_choice.value = used
            self.labeller.follow_queue.value = order == "label_queue"
        if order == "label_queue" and self.labeller is not None and self.labeller.evaluator_choice.value == used:
            item = self.labeller.go_next()  # selects its case here, and says why it is uncertain
        else:
            item = next_to_label(self.result, used) if order == "label_queue" else None
            if item is not None:
                self.select(item.key, item.model_key)
        if item is None and self._keys:
            self.select(self._keys[0])
        self._update_walk()

    @reports_errors
    def _on_order(self, change: dict[str, Any]) -> None:
        """Another case order was chosen: apply it, or show the error and put the order in force back."""
        if self._busy:
            return
        order = self.order_choice.value
        evaluator = self.order_evaluator_choice.value if order == self.order else None
        try:
            self.order_by(order, evaluator)
        except Exception:
            self._busy = True
            try:  # show the order still in force
                self.order_choice.value = self.order
                self.order_evaluator_choice.value = self.order_evaluator or None
            finally:
                self._busy = False
            raise
        self.message.value = ""

    # -- showing -----------------------------------------------------------------------------

    def step(self, by: int) -> None:
        """Show the case ``by`` places after the current one, staying within the list.

        The highlighted model is kept.

        Args:
            by: How many places to move: forward when positive, back when negative.
        """
        keys = self._keys
        if not keys:
            return
        at = keys.index(self.key) if self.key in keys else 0
        self.select(keys[max(0, min(len(keys) - 1, at + by))], self.model_key or None)

    def select(self, key: str, model_key: str | None = None) -> None:
        """Show case ``key``, highlighting ``model_key``'s column when given.

        Args:
            key: The test-case key of the case to show.
            model_key: The model whose column is highlighted; ``None`` highlights none.
        """
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
        """Draw the detail of the case shown (and the labeller's rows for it), or say why there is none."""
        if self.labeller is not None:
            self.labeller.show(self.result, self.key if self.result is not None else "", self.model_key)
        if self.result is None or not self.key:
            self.detail.value = status_html("no result yet: run an evaluation" if self.result is None else "no case")
            return
        self.detail.value = case_html(
            self.result, self.key, self.model_key or None, max_chars=self.max_chars, rows=self._rows
        )
