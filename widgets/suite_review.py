"""The SuiteBuilder's review mode: accept, edit or reject each generated test case.

A generated case (:mod:`nbeval.generation`) carries ``extra["generation"]`` with its ``kind``
(``single_hop``, ``multi_hop``...), ``persona``, ``chunk_ids`` and ``status``, and the chunk(s) it
was written from as its expected context. Review shows one case at a time, its question and
expected answer beside its source chunk(s), and records the decision in the case itself:

* **accept**: ``status`` becomes ``"accepted"``;
* **edit**: the prompt and/or expected answer are changed in place, then accepted; the case notes
  ``"edited": true`` and keeps what the generator wrote under ``"original"``;
* **reject**: the case leaves the suite and is kept aside, whole (its JSON, with
  ``status: "rejected"`` and the ``reason``), in ``suite.extra["rejected_cases"]``: exported and
  saved with the suite, and restorable (it comes back pending).

The functions of :mod:`~nbeval.widgets.suite_fields` do the work on the builder's case dicts
(testable without a browser), those below make the HTML; :class:`SuiteReview` is the thin widget
over them. Every case is reviewed on its own, perturbed copies of a generated case included (they
copy its ``generation`` record when they are made).
Keyboard: every button and text box is reached with Tab and pressed with Enter or Space.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from nbeval.data.model import TestCase, TestSuite
from nbeval.widgets.common import reports_errors, status_html
from nbeval.widgets.markup import esc, text_block
from nbeval.widgets.suite_fields import (
    REJECTED,
    STATUSES,
    case_kind,
    chunk,
    edited,
    generation,
    restored,
    review_counts,
    review_status,
    reviewed,
    set_aside,
    to_test_case,
)

if TYPE_CHECKING:
    from nbeval.widgets.suite_builder import SuiteBuilder

__all__ = [
    "SuiteReview",
    "case_header_html",
    "case_text_html",
    "chunks_html",
    "counts_html",
    "rejected_html",
    "review_card_html",
]

_BOX = "border:1px solid #ddd;border-radius:4px;padding:6px 10px;background:#fff"
_NOTHING = "No generated case to review here: nothing was generated, or every case was rejected."
_LABEL = "font-size:0.85em;color:#555;text-transform:uppercase;letter-spacing:0.04em;margin:6px 0 2px"


# -- HTML (every piece of text escaped) --------------------------------------------------------


def _meta(case: dict[str, Any]) -> str:
    """A generated case's line: its kind, persona and whether it was edited."""
    record = generation(case) or {}
    persona = record.get("persona") or next(
        (c.split(":", 1)[1] for c in case.get("categories", []) if c.startswith("persona:")), None
    )
    parts = [case_kind(case).replace("_", "-")] + ([f"persona: {persona}"] if persona else [])
    if record.get("edited"):
        parts.append("edited")
    return " · ".join(parts)


def case_header_html(case: dict[str, Any], number: int, total: int) -> str:
    """``Generated case 2 of 7 (multi-hop · persona: analyst) pending``."""
    status = review_status(case)
    colour = {"accepted": "#2e7d4f", "rejected": "#b3261e"}.get(status, "#8a6d00")
    return (
        f'<div style="margin-bottom:2px"><b>Generated case {number} of {total}</b> '
        f'<span style="color:#555">({esc(_meta(case))})</span> '
        f'<span style="color:{colour};font-weight:bold">{esc(status)}</span></div>'
    )


def case_text_html(case: dict[str, Any]) -> str:
    """The question and the expected answer."""
    return (
        f'<div style="{_LABEL}">Question</div>'
        f'<div style="{_BOX}">{text_block(case["prompt"], empty="(no prompt)")}</div>'
        f'<div style="{_LABEL}">Expected answer</div>'
        f'<div style="{_BOX}">{text_block(case["expected_output"], empty="(none)")}</div>'
    )


def chunks_html(case: dict[str, Any]) -> str:
    """The source chunk(s) the case was written from (its expected context), with their document and id."""
    ids = (generation(case) or {}).get("chunk_ids") or []
    parts = []
    for i, c in enumerate(case.get("expected_context", [])):
        ch = chunk(c)
        cid = str(ids[i]) if i < len(ids) and ids[i] else ""
        # a chunk id names its document already (``doc_uri#n``): show it alone
        where = cid if ch.doc_uri and cid.startswith(ch.doc_uri) else " · ".join(x for x in (ch.doc_uri, cid) if x)
        source = f'<div style="color:#555;font-size:0.85em">{esc(where)}</div>' if where else ""
        parts.append(f'<div style="{_BOX};margin-bottom:6px">{source}{text_block(ch.text)}</div>')
    n = len(parts)
    return f'<div style="{_LABEL}">Source chunk{"s" * (n != 1)} ({n})</div>' + (
        "".join(parts) or f'<div style="{_BOX}">{text_block(None, empty="(no source chunk recorded)")}</div>'
    )


def review_card_html(case: dict[str, Any] | None, number: int, total: int) -> str:
    """Render one generated case as one piece of HTML, as the review shows it.

    Its question and expected answer (left) stand beside its source chunk(s) (right).

    Args:
        case: The generated case, as a form dict; ``None`` when there is none to review.
        number: The case's number among the generated cases, from 1.
        total: How many generated cases there are.

    Returns:
        The HTML of the card, or a note that there is nothing to review.
    """
    if case is None:
        return status_html(_NOTHING)
    return (
        f'<div class="nbeval-review-card">{case_header_html(case, number, total)}'
        '<div style="display:flex;gap:12px;align-items:flex-start">'
        f'<div style="flex:1;min-width:0">{case_text_html(case)}</div>'
        f'<div style="flex:1;min-width:0;max-height:320px;overflow:auto">{chunks_html(case)}</div></div></div>'
    )


def counts_html(counts: dict[str, dict[str, int]]) -> str:
    """The counts per kind, as a small table."""
    if not counts:
        return ""
    cell = "padding:1px 10px;text-align:right"
    head = "".join(f'<th style="{cell}">{s}</th>' for s in STATUSES)
    rows = "".join(
        f'<tr><td style="padding:1px 10px">{esc(kind.replace("_", "-"))}</td>'
        + "".join(f'<td style="{cell}">{n[s]}</td>' for s in STATUSES)
        + "</tr>"
        for kind, n in counts.items()
    )
    return f'<table style="border-collapse:collapse"><tr><th></th>{head}</tr>{rows}</table>'


def rejected_html(entries: list[dict[str, Any]]) -> str:
    """The rejected cases, numbered as :meth:`SuiteReview.restore` takes them, with their reasons."""
    if not entries:
        return ""
    items = "".join(
        f"<li>{esc(' '.join(str(e['case'].get('prompt', '')).split())[:90])}"
        f' <span style="color:#b3261e">— {esc(e["case"].get("generation", {}).get("reason") or "no reason given")}'
        "</span></li>"
        for e in entries
    )
    return f'<div><b>Rejected, kept aside ({len(entries)})</b><ol style="margin:2px 0">{items}</ol></div>'


# -- the widget --------------------------------------------------------------------------------


class SuiteReview(w.VBox):
    """Review mode over a :class:`~nbeval.widgets.SuiteBuilder`'s generated cases.

    The case under review is the builder's selected one (the form below shows it too); :meth:`accept`, :meth:`edit` and
    :meth:`reject` move on to the next pending case.

    Args:
        builder: The suite builder whose generated cases are reviewed.
        **kwargs: Passed on to :class:`ipywidgets.VBox`.
    """

    def __init__(self, builder: SuiteBuilder, **kwargs: Any) -> None:
        self.builder = builder
        self.output, self.message = builder.output, w.HTML()
        self.counts_view, self.header, self.rejected_view = w.HTML(), w.HTML(), w.HTML()
        self.text, self.chunks = w.HTML(), w.HTML()
        tip = " (Tab to reach, Enter to press)"
        self.accept_button = w.Button(
            description="Accept", icon="check", button_style="success", tooltip="keep it" + tip
        )
        self.edit_button = w.Button(description="Edit", icon="pencil", tooltip="change the question or answer" + tip)
        self.reject_button = w.Button(
            description="Reject", icon="times", button_style="danger", tooltip="set it aside" + tip
        )
        self.reason = w.Text(placeholder="why (optional)", description="Reason", layout=w.Layout(width="260px"))
        self.previous_button = w.Button(
            description="Previous", icon="arrow-left", tooltip="previous generated case" + tip
        )
        self.next_button = w.Button(description="Next", icon="arrow-right", tooltip="next generated case" + tip)
        self.prompt_box = w.Textarea(placeholder="the question", layout=w.Layout(width="98%", height="90px"))
        self.expected_box = w.Textarea(placeholder="the expected answer", layout=w.Layout(width="98%", height="90px"))
        self.save_button = w.Button(description="Save and accept", icon="check", button_style="success")
        self.cancel_button = w.Button(description="Cancel", icon="undo")
        self.restore_index = w.BoundedIntText(
            value=1, min=1, max=1, description="Case no.", layout=w.Layout(width="160px")
        )
        self.restore_button = w.Button(
            description="Restore", icon="undo", tooltip="bring a rejected case back, pending"
        )
        label = f'<div style="{_LABEL}">{{}}</div>'
        self.editor = w.VBox(
            [
                w.HTML(label.format("Question (editing)")),
                self.prompt_box,
                w.HTML(label.format("Expected answer")),
                self.expected_box,
                w.HBox([self.save_button, self.cancel_button]),
            ],
            layout=w.Layout(display="none"),
        )
        half = {"flex": "1", "min_width": "0"}
        self.card = w.HBox(
            [
                w.VBox([self.text, self.editor], layout=w.Layout(**half)),
                w.Box([self.chunks], layout=w.Layout(max_height="340px", overflow="auto", **half)),
            ],
            layout=w.Layout(grid_gap="12px", align_items="flex-start"),
        )
        self.restore_row = w.HBox([self.restore_index, self.restore_button])
        buttons = (self.accept_button, self.edit_button, self.reason, self.reject_button)
        self.actions = w.HBox([*buttons, self.previous_button, self.next_button])
        hint = w.HTML(
            '<span style="color:#777">Keyboard: Tab moves between the buttons, Enter or Space presses one.</span>'
        )
        kwargs.setdefault("layout", w.Layout(border="1px solid #c8c8c8", padding="6px 10px", margin="4px 0 8px"))
        super().__init__(
            [
                w.HTML(
                    "<b>Review generated cases</b>: accept, edit or reject each; rejected ones are kept "
                    "aside with the suite and can be restored."
                ),
                self.counts_view,
                self.header,
                self.card,
                self.actions,
                hint,
                self.message,
                self.rejected_view,
                self.restore_row,
            ],
            **kwargs,
        )
        self.add_class("nbeval-review")
        self.accept_button.on_click(lambda _: self.accept())
        self.edit_button.on_click(lambda _: self._open_editor())
        self.reject_button.on_click(lambda _: self.reject(self.reason.value.strip() or None))
        self.previous_button.on_click(lambda _: self.previous())
        self.next_button.on_click(lambda _: self.next())
        self.save_button.on_click(
            lambda _: self.edit(prompt=self.prompt_box.value, expected_output=self.expected_box.value)
        )
        self.cancel_button.on_click(lambda _: self._close_editor())
        self.restore_button.on_click(lambda _: self.restore(self.restore_index.value - 1))
        builder.observe(lambda _: self.refresh(), names=["cases", "index"])
        if review_status(self.current or {}) != "pending" or generation(self.current or {}) is None:
            first = self._find(-1, pending=True)
            self._go(first if first is not None else self._find(-1))
        self.refresh()

    # -- what is under review ------------------------------------------------------------------

    @property
    def current(self) -> dict[str, Any] | None:
        """The case under review (the builder's selected case), as the builder holds it."""
        b = self.builder
        return b.cases[b.index] if 0 <= b.index < len(b.cases) else None

    @property
    def rejected(self) -> list[dict[str, Any]]:
        """The rejected cases kept aside (``suite.extra["rejected_cases"]``)."""
        entries: list[dict[str, Any]] = self.builder._extra.get(REJECTED, [])
        return entries

    def counts(self) -> dict[str, dict[str, int]]:
        """Per kind (``single_hop``...): ``{"pending": n, "accepted": n, "rejected": n}``."""
        return review_counts(self.builder.cases, self.rejected)

    def _generated(self) -> list[int]:
        """The indices of the builder's generated cases."""
        return [i for i, c in enumerate(self.builder.cases) if generation(c) is not None]

    def _find(self, start: int, *, pending: bool = False, step: int = 1, wrap: bool = False) -> int | None:
        """The next (``step=-1``: previous) generated case after index ``start``; ``pending``: pending ones only."""
        order = self._generated()[:: 1 if step > 0 else -1]
        ok = [i for i in order if not pending or review_status(self.builder.cases[i]) == "pending"]
        after = [i for i in ok if (i > start if step > 0 else i < start)]
        return after[0] if after else (ok[0] if wrap and ok else None)

    def _go(self, index: int | None) -> None:
        """Show the case at ``index`` in the builder (nothing for ``None``)."""
        if index is not None:
            self.builder._select(index)

    # -- actions -------------------------------------------------------------------------------

    def next(self) -> None:
        """Show the next generated case (whatever its status)."""
        self._close_editor()
        self._go(self._find(self.builder.index))

    def previous(self) -> None:
        """Show the previous generated case."""
        self._close_editor()
        self._go(self._find(self.builder.index, step=-1))

    def _replace(self, case: dict[str, Any]) -> None:
        """Put ``case`` in place of the case shown."""
        b = self.builder
        b.cases = [case if i == b.index else c for i, c in enumerate(b.cases)]
        b._show_case()
        b._rebuild()

    def _after_action(self, done: str) -> None:
        """Go to the next pending case after an action, and say what was done and how many are left.

        The action is accepting, rejecting or editing.
        """
        self._close_editor()
        target = self._find(self.builder.index, pending=True, wrap=True)
        self._go(target)
        self.refresh()
        left = sum(n["pending"] for n in self.counts().values())
        self.message.value = status_html(f"{done}; {left} pending" if left else f"{done}; every case is reviewed", "ok")

    def _reviewable(self) -> dict[str, Any] | None:
        """The case shown when it was generated; otherwise ``None``, saying there is nothing to review."""
        case = self.current
        if case is None or generation(case) is None:
            self.message.value = status_html("the selected case was not generated: nothing to review", "error")
            return None
        return case

    @reports_errors
    def accept(self) -> None:
        """Accept the case under review and move on to the next pending one."""
        case = self._reviewable()
        if case is not None:
            self._replace(reviewed(case, "accepted"))
            self._after_action("accepted")

    @reports_errors
    def edit(self, prompt: str | None = None, expected_output: str | None = None) -> None:
        """Change the question and/or expected answer of the case under review, then accept it.

        Args:
            prompt: The new question; ``None`` keeps it. An empty question is refused.
            expected_output: The new expected answer; ``None`` keeps it.
        """
        case = self._reviewable()
        if case is None:
            return
        if prompt is not None and not prompt.strip():
            self.message.value = status_html("the question cannot be empty", "error")
            return
        self._replace(edited(case, prompt=prompt, expected_output=expected_output))
        self._after_action("edited and accepted")

    @reports_errors
    def reject(self, reason: str | None = None) -> None:
        """Set the case under review aside (with ``reason``) and move on to the next pending one.

        Args:
            reason: Why the case is rejected; ``None`` for no reason.
        """
        case = self._reviewable()
        if case is None:
            return
        b, at = self.builder, self.builder.index
        entry = set_aside(case, reason, at)  # raises (and keeps everything) when its condition does not parse
        b._extra = {**b._extra, REJECTED: [*self.rejected, entry]}
        b.cases = [c for i, c in enumerate(b.cases) if i != at]
        self.reason.value = ""
        target = self._find(at - 1, pending=True, wrap=True)  # from where the case was
        b._select(target if target is not None else min(at, len(b.cases) - 1))
        b._rebuild()
        self._after_action("rejected (kept aside)")

    @reports_errors
    def restore(self, which: int | str = -1) -> None:
        """Bring a rejected case back, pending, where it was.

        Args:
            which: Its position among :attr:`rejected` (the last one by default), or its key.
        """
        entries = list(self.rejected)
        if isinstance(which, str):
            keys = [TestCase.from_dict(e["case"], source=REJECTED).resolved_key for e in entries]
            at = keys.index(which) if which in keys else len(entries)
        else:
            at = which
        if not -len(entries) <= at < len(entries):
            self.message.value = status_html(f"no rejected case {which!r} to restore", "error")
            return
        entry = entries.pop(at)
        b = self.builder
        b._extra = {**b._extra, REJECTED: entries}
        if not entries:
            b._extra.pop(REJECTED)
        case = restored(entry)
        at = min(int(entry.get("position", len(b.cases))), len(b.cases))  # where it was, as near as can be
        b.cases = [*b.cases[:at], case, *b.cases[at:]]
        b._select(at)
        b._rebuild()
        self.refresh()
        self.message.value = status_html("restored: pending again", "ok")

    def reviewed_suite(self) -> TestSuite:
        """Give the suite to evaluate: every case except the generated ones not accepted.

        The generated cases left out are the pending ones and, already aside, the rejected ones.
        Cases written by hand are kept.

        Returns:
            A copy of the builder's suite holding the cases kept.

        Raises:
            ValueError: While the builder's suite has a problem (see its ``error``).
        """
        b = self.builder
        b._rebuild()
        if b.error:
            msg = f"the suite has a problem: {b.error}"
            raise ValueError(msg)
        suite = copy.deepcopy(b.value)
        for test in suite.tests:
            test.test_cases = []
        for c in b.cases:
            if generation(c) is None or review_status(c) == "accepted":
                suite.tests[min(c.get("test", 0), len(suite.tests) - 1)].test_cases.append(to_test_case(c))
        suite.extra.pop(REJECTED, None)
        return suite

    # -- the view ------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Redraw the counts, the case under review and the rejected list."""
        case = self.current if generation(self.current or {}) else None
        generated = self._generated()
        number = generated.index(self.builder.index) + 1 if case is not None else 0
        if case is None:
            self.header.value = status_html(
                "The selected case was written by hand: Next goes to the generated ones." if generated else _NOTHING
            )
            self.text.value = self.chunks.value = ""
        else:
            self.header.value = case_header_html(case, number, len(generated))
            self.text.value, self.chunks.value = case_text_html(case), chunks_html(case)
        self.counts_view.value = counts_html(self.counts())
        for button in (self.accept_button, self.edit_button, self.reject_button):
            button.disabled = case is None
        self.previous_button.disabled = self._find(self.builder.index, step=-1) is None
        self.next_button.disabled = self._find(self.builder.index) is None
        entries = self.rejected
        self.rejected_view.value = rejected_html(entries)
        self.restore_row.layout.display = None if entries else "none"
        self.restore_index.max = max(len(entries), 1)

    def _open_editor(self) -> None:
        """Open the editor on the case shown's prompt and expected answer."""
        case = self._reviewable()
        if case is not None:
            self.prompt_box.value, self.expected_box.value = case["prompt"], case["expected_output"]
            self.editor.layout.display, self.text.layout.display = None, "none"
            self.actions.layout.display = "none"  # Save and accept, or Cancel, first

    def _close_editor(self) -> None:
        """Close the editor and show the case and its actions again."""
        self.editor.layout.display, self.text.layout.display, self.actions.layout.display = "none", None, None
