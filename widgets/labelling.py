"""Human labels on judge verdicts: a person agrees or disagrees with each verdict of one test case.

The :class:`VerdictLabeller` lists, for one test case and one evaluator, every model's verdict
(``pass``/``fail`` from the ``passed`` column of the evaluator's primary metric, or the row's
``label`` for a classifying evaluator) beside the human label recorded for it. **Agree** records
the verdict as the label, **Disagree** records the opposite of a pass/fail verdict, and **Set**
records the label picked in the dropdown. Every click goes through ``result.set_labels``, so the
labels are data of the result (``result.labels``), saved and loaded with it, and they feed
``result.agreement(evaluator)``. Names, verdicts and labels are escaped.

**Next most uncertain** follows ``result.label_queue(evaluator)``
(:mod:`nbeval.results.statistics.label_queue`): it goes to the unlabelled verdict the judge is least sure of
(jurors disagreeing, a value near the threshold, an unrated row), and pressed again on one still
unlabelled it skips it for the next. With ``follow_queue`` ticked, each label recorded moves on to
the next most uncertain unlabelled verdict. The choice is made by :func:`next_to_label`, and
:func:`cases_by_queue` orders whole test cases the same way, both without a browser.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import pandas as pd

from nbeval.widgets.common import reports_errors, status_html
from nbeval.widgets.markup import esc

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = [
    "LABEL_COLUMNS",
    "QueueItem",
    "Verdict",
    "VerdictLabeller",
    "cases_by_queue",
    "evaluators_with_verdicts",
    "judge_verdicts",
    "label_choices",
    "next_to_label",
]

#: The columns of ``result.labels``.
LABEL_COLUMNS = ["key", "model_key", "evaluator", "label"]
_OPPOSITE = {"pass": "fail", "fail": "pass"}
_MUTED = "color:#777"


@dataclass(frozen=True)
class Verdict:
    """One model's verdict on one test case, and the human label recorded for it (if any)."""

    model_key: str
    verdict: str | None
    """``"pass"``/``"fail"``, a class label, or ``None`` when the row has none (skipped, error, ...)."""
    human: str | None


def _missing(v: Any) -> bool:
    """Whether ``v`` is a missing cell: ``None``, NaN or pandas' ``NA``."""
    return v is None or (isinstance(v, float) and v != v) or type(v).__name__ == "NAType"


def _verdict(passed: Any, label: Any) -> str | None:
    """Put the judge's verdict in words: ``"pass"`` or ``"fail"`` where it passed or failed, else its label.

    Gives ``None`` for no label, or for a label saying that the judge could not rate.
    """
    from nbeval.evaluators.base import UNRATED_LABELS

    if not _missing(passed):
        return "pass" if bool(passed) else "fail"
    if not _missing(label) and str(label) not in UNRATED_LABELS:
        return str(label)
    return None


def _primary_rows(result: EvaluationResult, evaluator: str) -> pd.DataFrame:
    """The score rows of ``evaluator``'s primary metric."""
    s = result.scores
    return s[(s["evaluator"] == evaluator) & (s["metric"] == result.primary_metric(evaluator))]


def _labels(result: EvaluationResult) -> pd.DataFrame:
    """The result's human labels (an empty table when it has none)."""
    labels = getattr(result, "labels", None)
    return labels if labels is not None else pd.DataFrame(columns=LABEL_COLUMNS)


def judge_verdicts(result: EvaluationResult, key: str, evaluator: str) -> list[Verdict]:
    """Every model's verdict from ``evaluator`` on test case ``key``, with its human label."""
    rows = _primary_rows(result, evaluator)
    rows = rows[rows["key"] == key]
    labels = _labels(result)
    mine = labels[(labels["key"] == key) & (labels["evaluator"] == evaluator)]
    human = {str(m): str(lab) for m, lab in zip(mine["model_key"], mine["label"], strict=True) if not _missing(lab)}
    order = [m for m in result.model_keys if m in set(rows["model_key"])]
    order += [m for m in dict.fromkeys(rows["model_key"]) if m not in order]
    by_model = {str(r.model_key): r for r in rows.itertuples(index=False)}
    return [Verdict(m, _verdict(by_model[m].passed, by_model[m].label), human.get(m)) for m in order]


def label_choices(result: EvaluationResult, evaluator: str) -> list[str]:
    """List the labels a person may pick for ``evaluator``.

    Args:
        result: The evaluation result whose rows and labels are read.
        evaluator: Id of the evaluator being labelled.

    Returns:
        ``"pass"`` and ``"fail"``, then every class label its rows or earlier human labels use,
        sorted.
    """
    rows = _primary_rows(result, evaluator)
    found = [_verdict(None, lab) for lab in rows["label"].dropna().unique()]  # a few distinct labels
    labels = _labels(result)
    found += [str(lab) for lab in labels.loc[labels["evaluator"] == evaluator, "label"] if not _missing(lab)]
    return list(dict.fromkeys(["pass", "fail", *sorted({f for f in found if f is not None} - {"pass", "fail"})]))


def evaluators_with_verdicts(result: EvaluationResult) -> list[str]:
    """The evaluators some of whose rows carry a verdict (pass/fail or a class label)."""
    out = []
    for ev in result.evaluators:
        rows = _primary_rows(result, ev)
        if rows["passed"].notna().any() or any(
            _verdict(None, lab) is not None for lab in rows["label"].dropna().unique()
        ):
            out.append(ev)
    return out


@dataclass(frozen=True)
class QueueItem:
    """The next verdict to label: its case and model, how uncertain the judge is and why."""

    key: str
    model_key: str
    uncertainty: float
    why: str
    left: int
    """How many verdicts of the evaluator are still unlabelled (this one included)."""


def next_to_label(
    result: EvaluationResult,
    evaluator: str,
    *,
    skip: Collection[tuple[str, str]] = (),
    queue: pd.DataFrame | None = None,
) -> QueueItem | None:
    """Find the most uncertain unlabelled verdict of ``evaluator`` that is not skipped.

    It is the first row of ``result.label_queue(evaluator)`` (or of ``queue`` when given) whose
    ``(key, model_key)`` is not in ``skip``.

    Args:
        result: The evaluation result whose verdicts are labelled.
        evaluator: Id of the evaluator whose verdicts are labelled.
        skip: ``(key, model_key)`` pairs to pass over.
        queue: The label queue already computed; ``None`` asks ``result.label_queue`` for it.

    Returns:
        The verdict to label next, or ``None`` when there is none.
    """
    if queue is None:
        queue = result.label_queue(evaluator)
    for key, model_key, uncertainty, why in zip(
        queue["key"], queue["model_key"], queue["uncertainty"], queue["why"], strict=True
    ):
        if (str(key), str(model_key)) not in skip:
            return QueueItem(str(key), str(model_key), float(uncertainty), str(why), len(queue))
    return None


def cases_by_queue(
    result: EvaluationResult, evaluator: str, keys: Sequence[str] | None = None
) -> list[tuple[str, float | None]]:
    """Order test cases as ``result.label_queue(evaluator)`` does: the most uncertain first.

    A case comes in the place of its most uncertain unlabelled verdict, with that verdict's
    uncertainty; cases with nothing left to label come last, in their order, with ``None``.

    Args:
        result: The evaluation result whose cases are ordered.
        evaluator: Id of the evaluator whose verdicts are labelled.
        keys: The test-case keys to order; ``None`` takes every case, in dataset order.

    Returns:
        The cases, each with the uncertainty it was ordered by (``None`` for a case not ranked).
    """
    queue = result.label_queue(evaluator)
    first: dict[str, float] = {}
    for key, uncertainty in zip(queue["key"], queue["uncertainty"], strict=True):
        first.setdefault(str(key), float(uncertainty))
    order = list(dict.fromkeys(keys if keys is not None else (r.key for r in result.dataset.rows)))
    wanted = set(order)
    listed: list[tuple[str, float | None]] = [(k, u) for k, u in first.items() if k in wanted]
    return listed + [(k, None) for k in order if k not in first]


class _VerdictRow(w.HBox):
    """One model's verdict, its human label and the buttons that set the label."""

    def __init__(self, verdict: Verdict, model_name: str, choices: list[str], *, current: bool = False) -> None:
        self.verdict = verdict
        self.current = current
        self.info = w.HTML(layout=w.Layout(width="420px"))
        self.agree_button = w.Button(
            description="Agree",
            icon="check",
            layout=w.Layout(width="90px"),
            disabled=verdict.verdict is None,
            tooltip="record the judge's verdict as the human label",
        )
        self.disagree_button = w.Button(
            description="Disagree",
            icon="times",
            layout=w.Layout(width="100px"),
            disabled=verdict.verdict not in _OPPOSITE,
            tooltip="record the opposite of a pass/fail verdict",
        )
        self.label_choice = w.Dropdown(
            options=choices, value=verdict.human if verdict.human in choices else None, layout=w.Layout(width="130px")
        )
        self.set_button = w.Button(
            description="Set", layout=w.Layout(width="60px"), tooltip="record the label picked on the left"
        )
        self.info.value = self._info_html(model_name)
        super().__init__([self.info, self.agree_button, self.disagree_button, self.label_choice, self.set_button])

    def _info_html(self, model_name: str) -> str:
        """The row's line: the model, the judge's verdict and the human label, marked as agreeing or not."""
        v = self.verdict
        verdict = esc(v.verdict) if v.verdict is not None else f'<span style="{_MUTED}">no verdict</span>'
        if v.human is None:
            human = f'<span style="{_MUTED}">not labelled</span>'
        else:
            mark = "" if v.verdict is None else (" ✓" if v.human == v.verdict else " ✗")
            human = f"<b>{esc(v.human)}</b>{mark}"
        style = ' style="background:#fff8dc"' if self.current else ""
        return f"<div{style}><b>{esc(model_name)}</b>: judge <code>{verdict}</code> · human {human}</div>"


class VerdictLabeller(w.VBox):
    """Agree / Disagree with each model's verdict on one test case, or set a label.

    :meth:`show` picks the result and test case; ``evaluator_choice`` the evaluator (only those
    with verdicts are offered). ``rows`` holds one row per model, each with ``agree_button``,
    ``disagree_button``, ``label_choice`` and ``set_button``; a click calls
    ``result.set_labels`` with one row and redraws.

    ``queue_button`` (:meth:`next_uncertain`) goes to the most uncertain unlabelled verdict of
    the evaluator (``result.label_queue``), skipping the one shown when it is still unlabelled;
    with ``follow_queue`` ticked, every label recorded goes on to the next. Going somewhere calls
    ``on_goto(key, model_key)`` (the :class:`~nbeval.widgets.explorer.CaseExplorer` selects the
    case), or shows that case here when it is ``None``.

    Args:
        **kwargs: Passed on to :class:`ipywidgets.VBox`.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.result: EvaluationResult | None = None
        self.key = ""
        self.model_key = ""
        """The model whose verdict is the one to label (highlighted); '' for none."""
        self.on_goto: Callable[[str, str], None] | None = None
        self.evaluator_choice = w.Dropdown(description="Label", options=[], layout=w.Layout(width="360px"))
        self.queue_button = w.Button(
            description="Next most uncertain",
            icon="forward",
            layout=w.Layout(width="190px"),
            tooltip="the unlabelled verdict the judge is least sure of (result.label_queue)",
        )
        self.follow_queue = w.Checkbox(
            value=False, description="after a label, go to the next most uncertain", indent=False
        )
        self.queue_info = w.HTML()
        self.rows: list[_VerdictRow] = []
        self.box = w.VBox()
        self.message = w.HTML()
        self.output = w.Output()
        self._busy = False
        self._skipped: set[tuple[str, str]] = set()
        hint = w.HTML(
            f'<div style="{_MUTED}">Your verdict on each answer: agree or disagree with the '
            "judge, or pick a label and press Set (result.labels).</div>"
        )
        top = w.HBox([self.evaluator_choice, self.queue_button, self.follow_queue])
        super().__init__([hint, top, self.queue_info, self.box, self.message, self.output], **kwargs)
        self.layout.display = "none"  # hidden until a result with verdicts is shown
        self.evaluator_choice.observe(self._on_evaluator, names=["value"])
        self.queue_button.on_click(lambda _: self.next_uncertain())

    @reports_errors
    def show(self, result: EvaluationResult | None, key: str, model_key: str = "") -> None:
        """Show the verdicts of test case ``key`` in ``result``, ``model_key``'s highlighted.

        Args:
            result: The evaluation result to label; ``None`` shows nothing.
            key: The test-case key of the case shown.
            model_key: The model whose verdict is highlighted; ``""`` for none.
        """
        new_result = result is not self.result
        self.result, self.key, self.model_key = result, key, model_key
        if new_result:
            self._skipped = set()
            self.queue_info.value = ""
            evaluators = evaluators_with_verdicts(result) if result is not None else []
            keep = self.evaluator_choice.value
            self._busy = True
            try:
                self.evaluator_choice.options = evaluators
                self.evaluator_choice.value = keep if keep in evaluators else (evaluators[0] if evaluators else None)
            finally:
                self._busy = False
        self._draw()

    def _on_evaluator(self, change: dict[str, Any]) -> None:
        """Another evaluator was chosen: start its queue afresh and redraw."""
        if not self._busy:
            self._skipped = set()
            self.queue_info.value = ""
            self._draw()

    @reports_errors
    def next_uncertain(self) -> QueueItem | None:
        """Go to the most uncertain unlabelled verdict of the chosen evaluator, past the one shown.

        The verdict shown, when still unlabelled, is skipped until every other one was seen.

        Returns:
            The verdict gone to; ``None`` when every verdict is labelled or there is nothing to label.
        """
        evaluator = self.evaluator_choice.value
        if self.result is None or not evaluator:
            self.message.value = status_html("no verdicts to label", "error")
            return None
        queue = self.result.label_queue(evaluator)
        if ((queue["key"] == self.key) & (queue["model_key"] == self.model_key)).any():
            self._skipped.add((self.key, self.model_key))
        return self.go_next(queue)

    def go_next(self, queue: pd.DataFrame | None = None) -> QueueItem | None:
        """Go to the most uncertain unlabelled verdict that is not skipped.

        When only skipped verdicts are left, the skipped ones start over.

        Args:
            queue: The label queue already computed; ``None`` asks ``result.label_queue`` for it.

        Returns:
            The verdict gone to; ``None``, said in ``queue_info``, when every one is labelled.
        """
        evaluator = str(self.evaluator_choice.value)
        if self.result is None:
            return None
        if queue is None:
            queue = self.result.label_queue(evaluator)
        item = next_to_label(self.result, evaluator, skip=self._skipped, queue=queue)
        if item is None and self._skipped:  # every one left was skipped: start over
            self._skipped = set()
            item = next_to_label(self.result, evaluator, queue=queue)
        if item is None:
            self.queue_info.value = status_html(f"every verdict of {evaluator} is labelled", "ok")
            return None
        self.queue_info.value = (
            f'<div style="{_MUTED}">most uncertain unlabelled verdict ({item.left} left to label): '
            f"<b>{esc(item.model_key)}</b> on <b>{esc(item.key)}</b>, "
            f"uncertainty {item.uncertainty:.2f}: {esc(item.why)}</div>"
        )
        if self.on_goto is not None:
            self.on_goto(item.key, item.model_key)
        else:
            self.show(self.result, item.key, item.model_key)
        return item

    @reports_errors
    def _draw(self) -> None:
        """Draw one row per model's verdict on the case shown, their buttons wired to record a label.

        The labeller is hidden when no evaluator has verdicts.
        """
        evaluator = self.evaluator_choice.value
        self.layout.display = None if self.evaluator_choice.options else "none"
        if self.result is None or not self.key or not evaluator:
            self.rows = []
            self.box.children = []
            return
        from nbeval.widgets.tables import model_names

        names = model_names(self.result)
        choices = label_choices(self.result, evaluator)
        self.rows = [
            _VerdictRow(v, names.get(v.model_key, v.model_key), choices, current=v.model_key == self.model_key)
            for v in judge_verdicts(self.result, self.key, evaluator)
        ]
        for row in self.rows:
            row.agree_button.on_click(lambda _b, r=row: self._record(r, r.verdict.verdict))
            row.disagree_button.on_click(lambda _b, r=row: self._record(r, _OPPOSITE.get(r.verdict.verdict or "")))
            row.set_button.on_click(lambda _b, r=row: self._record(r, r.label_choice.value))
        self.box.children = self.rows

    @reports_errors
    def _record(self, row: _VerdictRow, label: str | None) -> None:
        """Store ``label`` as the human label of ``row``'s verdict in the result.

        It then says so, redraws, and goes to the next unlabelled case when following the queue.
        """
        if self.result is None or not label:
            self.message.value = status_html("pick a label first", "error")
            return
        evaluator = self.evaluator_choice.value
        self.result.set_labels(
            pd.DataFrame(
                [{"key": self.key, "model_key": row.verdict.model_key, "evaluator": evaluator, "label": label}],
                columns=LABEL_COLUMNS,
            )
        )
        self.message.value = status_html(f"labelled {row.verdict.model_key} on {self.key} ({evaluator}): {label}", "ok")
        self._draw()
        if self.follow_queue.value:
            self.go_next()
