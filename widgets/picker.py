"""EvaluatorPicker: the catalogue by family; tick, tune and get configured evaluators."""

from __future__ import annotations

import json
from typing import Any

import ipywidgets as w
import traitlets

from nbeval.chat.config import judge_configured
from nbeval.data.model import LlmDataset, TestSuite
from nbeval.evaluators.base import COMMON_PARAMS, EvaluatorSpec, Param
from nbeval.widgets.common import error_text, reports_errors, status_html
from nbeval.widgets.markup import esc

__all__ = ["FAMILY_ORDER", "EvaluatorPicker", "EvaluatorRow", "FamilySections", "unusable_reasons"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("EvaluatorPicker",)

#: Families shown first, in this order; any other family follows alphabetically.
FAMILY_ORDER = ("deterministic", "embedding", "judge", "ragas", "model", "custom")


def _as_dataset(data: Any) -> LlmDataset | None:
    """``data`` as a dataset, for checking which evaluators it can feed (``None`` stays ``None``)."""
    if data is None or isinstance(data, LlmDataset):
        return data
    if isinstance(data, TestSuite):
        return data.to_dataset()
    from nbeval.engine import to_dataset

    return to_dataset(data)[0]


def unusable_reasons(spec: EvaluatorSpec, dataset: LlmDataset | None, judge: Any = None) -> list[str]:
    """Why ``spec`` cannot run on ``dataset`` with ``judge`` (empty when it can)."""
    reasons = []
    if dataset is not None:
        missing = [name for name in spec.inputs if not dataset.has_field(name)]
        if missing:
            reasons.append(f"the data has no {', '.join(missing)}")
    if spec.needs_judge and not judge_configured(judge):
        reasons.append("needs a judge: pass judge=... or set NBEVAL_JUDGE_MODEL")
    return reasons


def _param_widget(param: Param) -> w.Widget:
    """The input for ``param``, chosen by its declared type (its description as the tooltip)."""
    layout = w.Layout(width="320px")
    common: dict[str, Any] = {"description": param.name, "tooltip": param.description or None}
    boxed: dict[str, Any] = {**common, "layout": layout, "style": {"description_width": "140px"}}
    kind, default = param.type, param.default
    if kind is bool:
        return w.Checkbox(value=bool(default), indent=False, **common)
    if kind is int and isinstance(default, int):
        return w.IntText(value=default, **boxed)
    if kind is float and isinstance(default, (int, float)):
        return w.FloatText(value=default, **boxed)
    if param.choices and default in param.choices:
        return w.Dropdown(options=list(param.choices), value=default, **boxed)
    if kind is str:
        return w.Text(value="" if default is None else str(default), placeholder="text", **boxed)
    text = "" if default is None else json.dumps(default)
    return w.Text(value=text, placeholder=f"JSON {param.type_name} (blank: default)", **boxed)


def _param_value(param: Param, widget: w.Widget) -> Any:
    """What ``widget`` (made by :func:`_param_widget`) says ``param`` is."""
    value = widget.value
    if not isinstance(widget, w.Text) or param.type is str:
        return value
    if not value.strip():
        return param.default
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value  # a bare word for a parameter that is not only text


class EvaluatorRow(w.VBox):
    """One catalogue entry: a checkbox, what it reads and reports, and (when ticked) its settings."""

    def __init__(self, spec: EvaluatorSpec) -> None:
        self.spec = spec
        self.checkbox = w.Checkbox(description=spec.id, indent=False, layout=w.Layout(width="auto"))
        metrics = ", ".join(
            f"{m.name}{' (primary)' if m is spec.primary else ''}: {m.direction} is better" for m in spec.metrics
        )
        inputs = ", ".join(spec.inputs) or "nothing"
        optional = f" (optional: {', '.join(spec.optional_inputs)})" if spec.optional_inputs else ""
        description = spec.description if len(spec.description) <= 240 else spec.description[:240] + "…"
        self.info = w.HTML(
            f'<div style="font-size:90%;color:#444;margin-left:24px">{esc(description)}<br>'
            f"<b>reads</b> {esc(inputs + optional)} · <b>reports</b> {esc(metrics)}</div>"
        )
        self.reason = w.HTML()
        default = spec.primary.threshold
        self.threshold = w.Text(
            description="threshold",
            placeholder="" if default is None else f"{default:g}",
            layout=w.Layout(width="220px"),
        )
        self.params = {p.name: _param_widget(p) for p in spec.params.declared if p.name not in COMMON_PARAMS}
        self.settings = w.VBox(
            [self.threshold, *self.params.values()], layout=w.Layout(margin="0 0 0 24px", display="none")
        )
        super().__init__([self.checkbox, self.info, self.reason, self.settings])
        self.checkbox.observe(self._toggle, names=["value"])

    def _toggle(self, change: dict[str, Any]) -> None:
        """Show the row's settings while it is checked."""
        self.settings.layout.display = None if change["new"] else "none"

    def set_reasons(self, reasons: list[str]) -> None:
        """Disable (and untick) the row when there are reasons, and show them."""
        self.checkbox.disabled = bool(reasons)
        if reasons:
            self.checkbox.value = False
        self.reason.value = status_html("unavailable: " + "; ".join(reasons), "error") if reasons else ""

    @property
    def disabled(self) -> bool:
        """Whether the row's checkbox is disabled (the evaluator cannot run here)."""
        return self.checkbox.disabled

    def configured_params(self) -> dict[str, Any]:
        """Read the row's settings that differ from the evaluator's defaults.

        Returns:
            The parameters that differ from the defaults, by name (``threshold`` included when given).

        Raises:
            ValueError: When the threshold typed is not a number.
        """
        out: dict[str, Any] = {}
        text = self.threshold.value.strip()
        if text:
            try:
                out["threshold"] = float(text)
            except ValueError:
                msg = f"{self.spec.id}: threshold must be a number, not {text!r}"
                raise ValueError(msg) from None
        for name, widget in self.params.items():
            value = _param_value(self.spec.params.param(name), widget)
            if value != self.spec.params[name]:
                out[name] = value
        return out


class FamilySections(w.VBox):
    """One collapsible section per family, each opened and closed on its own.

    An ipywidgets ``Accordion`` keeps one section open at a time, so each family is an accordion
    of one. ``sections[i]`` is family ``families[i]``'s accordion, ``groups[i]`` the box of its
    rows. Setting ``selected_index`` opens that family and leaves the others as they are.

    Args:
        families: The families' names, in the order shown.
        groups: Each family's box of rows, in the order of ``families``.
    """

    def __init__(self, families: list[str], groups: list[w.VBox]) -> None:
        self.families = list(families)
        self.groups = list(groups)
        self.sections = [
            w.Accordion(children=[g], titles=(f"{f} ({len(g.children)})",))
            for f, g in zip(families, groups, strict=True)
        ]
        super().__init__(self.sections)

    @property
    def titles(self) -> tuple[str, ...]:
        """Each family's title: its name and how many evaluators it has."""
        return tuple(s.titles[0] for s in self.sections)

    @property
    def open_families(self) -> list[str]:
        """The families whose sections are open, in catalogue order."""
        return [f for f, s in zip(self.families, self.sections, strict=True) if s.selected_index == 0]

    @property
    def selected_index(self) -> int | None:
        """The first open family's index (``None`` when all are closed)."""
        return next((i for i, s in enumerate(self.sections) if s.selected_index == 0), None)

    @selected_index.setter
    def selected_index(self, index: int | None) -> None:
        if index is None:
            for section in self.sections:
                section.selected_index = None
        else:
            self.sections[index].selected_index = 0


class EvaluatorPicker(w.VBox):
    """A widget to tick, tune and get configured evaluators from the catalogue, grouped by family.

    Each family is one collapsible section (``accordion``, a :class:`FamilySections`: several can
    be open at once). Evaluators the dataset cannot feed, or that need a judge when none is
    configured, are disabled with the reason shown. ``.value`` is the list of configured evaluators
    (``nbeval.evaluator(id, **params)``) for the ticked, usable entries.

    Args:
        dataset: The data to evaluate, which decides which evaluators are usable: a dataset, a
            test suite or anything the engine turns into a dataset; ``None`` checks no inputs.
        judge: The judge the run will use; ``None`` counts on the one configured
            (``NBEVAL_JUDGE_MODEL``), if any.
        **kwargs: Passed on to :class:`ipywidgets.VBox`.
    """

    value: traitlets.List[Any] = traitlets.List(help="configured evaluators, in catalogue order")
    selected = traitlets.List(traitlets.Unicode(), help="ids of the ticked evaluators")
    errors = traitlets.Dict(help="per ticked id: why it could not be configured")
    dataset = traitlets.Any(None, allow_none=True, help="the data to evaluate (decides what is usable)")
    judge = traitlets.Any(None, allow_none=True, help="the judge the run will use, if any")

    def __init__(self, dataset: Any = None, judge: Any = None, **kwargs: Any) -> None:
        from nbeval.evaluators.registry import catalogue

        self.message = w.HTML()
        self.output = w.Output()
        specs = list(catalogue().values())
        families = sorted(
            {s.family for s in specs},
            key=lambda f: (FAMILY_ORDER.index(f) if f in FAMILY_ORDER else len(FAMILY_ORDER), f),
        )
        self.rows: dict[str, EvaluatorRow] = {}
        groups = []
        for family in families:
            rows = [EvaluatorRow(s) for s in specs if s.family == family]
            self.rows.update({r.spec.id: r for r in rows})
            groups.append(w.VBox(rows))
        self.accordion = FamilySections(families, groups)
        super().__init__([self.accordion, self.message, self.output], **kwargs)
        for row in self.rows.values():
            row.checkbox.observe(lambda _: self._update(), names=["value"])
            row.threshold.observe(lambda _: self._update(), names=["value"])
            for widget in row.params.values():
                widget.observe(lambda _: self._update(), names=["value"])
        self.judge = judge
        self.dataset = dataset
        self._check_usable()

    @traitlets.observe("dataset", "judge")
    def _on_context(self, change: dict[str, Any]) -> None:
        """The data or the judge changed: check again which evaluators can run."""
        if hasattr(self, "rows"):
            self._check_usable()

    @reports_errors
    def _check_usable(self) -> None:
        """Disable each row whose evaluator cannot run on the data or without a judge, with the reasons."""
        dataset = _as_dataset(self.dataset)
        for row in self.rows.values():
            row.set_reasons(unusable_reasons(row.spec, dataset, self.judge))
        self._update()

    def select(self, *ids: str, **params: dict[str, Any]) -> None:
        """Tick evaluators by id, setting the parameters given for them.

        For example ``picker.select("rouge", bleu={"threshold": 0.3})`` ticks ``rouge`` and ``bleu``
        and sets ``bleu``'s threshold.

        Args:
            *ids: Ids of the evaluators to tick with their settings as they are.
            **params: Per evaluator id to tick, the settings to give it (``threshold`` or its
                parameters), by name.

        Raises:
            KeyError: When an id is not in the catalogue.
        """
        for id in [*ids, *params]:
            if id not in self.rows:
                msg = f"no evaluator '{id}' in the catalogue"
                raise KeyError(msg)
            row = self.rows[id]
            for name, value in params.get(id, {}).items():
                if name == "threshold":
                    row.threshold.value = f"{value:g}"
                else:
                    row.params[name].value = (
                        value
                        if not isinstance(row.params[name], w.Text) or isinstance(value, str)
                        else json.dumps(value)
                    )
            row.checkbox.value = True

    def _update(self) -> None:
        """Build the checked evaluators with their settings into ``value``.

        A row whose settings fail says why, and the message counts both.
        """
        from nbeval.evaluators.registry import evaluator

        chosen, errors, ids = [], {}, []
        for id, row in self.rows.items():
            if not row.checkbox.value or row.disabled:
                continue
            ids.append(id)
            try:
                chosen.append(evaluator(id, **row.configured_params()))
            except Exception as exc:
                # a bad setting or a missing implementation: say so on the row
                errors[id] = error_text(exc)
            row.reason.value = status_html(errors[id], "error") if id in errors else ""
        self.selected, self.errors, self.value = ids, errors, chosen
        n = len(chosen)
        text = f"{n} evaluator{'s' * (n != 1)} chosen" + (f"; {len(errors)} with a problem" if errors else "")
        self.message.value = status_html(text, "error" if errors else "info")
