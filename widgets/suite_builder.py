"""SuiteBuilder: a form to write a test suite by hand.

It adds, edits, duplicates and deletes test cases; reviews generated ones; perturbs them; and
imports and exports suite JSON.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as w
import traitlets

from nbeval.data.model import Test, TestCase, TestSuite
from nbeval.errors import ConditionError
from nbeval.widgets.common import reports_errors, status_html
from nbeval.widgets.suite_fields import (
    CHUNK_SPLIT,
    FIELDS,
    case_dict,
    chunk,
    condition_feedback,
    content_key,
    to_test_case,
)

if TYPE_CHECKING:
    from nbeval.widgets.suite_review import SuiteReview

__all__ = ["SuiteBuilder"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("SuiteBuilder",)

_DISABLED_TEXT = "#9a9a9a"  # the labels of disabled fields
_DISABLED_BACKGROUND = "#f0f0f0"  # behind disabled fields


class SuiteBuilder(w.VBox):
    """A form over a :class:`~nbeval.TestSuite`.

    ``.value`` is the suite as it stands (a new object after every valid edit, so ``observe(..., names=["value"])`` sees
    each change).

    Lists are edited as text: categories comma-separated, guidelines one per line, expected
    context chunks separated by a blank line. The condition is parsed as you type.

    ``review=True`` (or :meth:`review`) opens the review of generated cases above the form
    (:mod:`~nbeval.widgets.suite_review`).

    Args:
        suite: The suite to edit; ``None`` starts an empty one.
        review: Whether to open the review of generated cases above the form at once.
        judge: The model the LLM perturbators ask (``llm_jailbreak``...; ``None``: the
            environment's judge), as in :func:`nbeval.perturb`.
        **kwargs: Passed on to :class:`ipywidgets.VBox`.
    """

    value = traitlets.Instance(TestSuite)
    cases: traitlets.List[dict[str, Any]] = traitlets.List(help="the test cases being edited, as plain dicts")
    tests: traitlets.List[dict[str, Any]] = traitlets.List(
        help="per test: key, documents, extra (cases keep their test's index)"
    )
    index = traitlets.Int(-1, help="the selected case (-1: none)")
    condition_error = traitlets.Unicode("", help="why the selected case's condition does not parse")
    condition_position = traitlets.Int(-1, help="where it stops parsing (0-based; -1: it parses)")
    error = traitlets.Unicode("", help="what keeps the suite from being valid ('' when it is)")

    def __init__(
        self, suite: TestSuite | None = None, *, review: bool = False, judge: Any = None, **kwargs: Any
    ) -> None:
        self._loading, self.judge = False, judge
        self.reviewer: SuiteReview | None = None
        self.review_box = w.VBox([])
        self.review_button = w.Button(description="Review", icon="check-square", tooltip="review generated cases")
        self.name = w.Text(description="Suite", placeholder="suite name")
        self.cases_list = w.Select(options=[], rows=8, layout=w.Layout(width="340px"))
        self.add_button = w.Button(description="Add", icon="plus")
        self.duplicate_button = w.Button(description="Duplicate", icon="copy")
        self.delete_button = w.Button(description="Delete", icon="trash", button_style="danger")
        self.key_field = w.Text(description="Key", placeholder="derived from the content when blank")
        self.prompt = w.Textarea(description="Prompt", continuous_update=False, layout=w.Layout(width="98%"))
        self.expected_output = w.Textarea(description="Expected", continuous_update=False, layout=w.Layout(width="98%"))
        self.condition = w.Text(
            description="Condition",
            continuous_update=True,
            layout=w.Layout(width="98%"),
            placeholder='"Paris" AND NOT regexp("Lyon|Nice")',
        )
        self.condition_status = w.HTML()
        self.categories = w.Text(description="Categories", placeholder="comma-separated", continuous_update=False)
        self.guidelines = w.Textarea(
            description="Guidelines", placeholder="one per line", continuous_update=False, layout=w.Layout(width="98%")
        )
        self.expected_context = w.Textarea(
            description="Exp. context",
            continuous_update=False,
            placeholder="chunks separated by a blank line",
            layout=w.Layout(width="98%"),
        )
        self.path = w.Text(description="File", placeholder="suite.json")
        self.load_button = w.Button(description="Load", icon="folder-open")
        self.save_button = w.Button(description="Save", icon="save")
        self.upload = w.FileUpload(accept=".json", multiple=False, description="Import")
        self.export_button = w.Button(description="Export JSON", icon="download")
        from nbeval.perturbation.registry import perturbator_ids

        self.perturbators = w.SelectMultiple(
            options=perturbator_ids(), rows=4, description="Perturb", layout=w.Layout(width="300px")
        )
        self.intensity = w.Dropdown(options=["low", "medium", "high"], value="low", description="Intensity")
        self.seed = w.IntText(value=0, description="Seed", layout=w.Layout(width="160px"))
        self.perturb_button = w.Button(
            description="Perturb",
            icon="random",
            tooltip="add perturbed copies of every case (linked to their originals)",
        )
        self.dry_run_button = w.Button(
            description="Dry run", icon="calculator", tooltip="count the model calls of the llm_ perturbators"
        )
        self.json_text = w.Textarea(layout=w.Layout(width="98%", height="160px", display="none"))
        self.message = w.HTML()
        self.output = w.Output()
        self.editor_hint = w.HTML()
        self.editor = w.VBox(
            [
                self.editor_hint,
                self.key_field,
                self.prompt,
                self.expected_output,
                self.condition,
                self.condition_status,
                self.categories,
                self.guidelines,
                self.expected_context,
            ],
            layout=w.Layout(flex="1"),
        )
        self._placeholders = {f: self._field(f).placeholder for f in FIELDS}
        buttons = w.HBox([self.add_button, self.duplicate_button, self.delete_button, self.review_button])
        io = w.HBox([self.path, self.load_button, self.save_button, self.upload, self.export_button])
        perturb_row = w.HBox(
            [self.perturbators, w.VBox([self.intensity, self.seed, w.HBox([self.perturb_button, self.dry_run_button])])]
        )
        left = w.VBox([self.cases_list, buttons])
        super().__init__(
            [
                self.name,
                self.review_box,
                w.HBox([left, self.editor]),
                perturb_row,
                io,
                self.message,
                self.json_text,
                self.output,
            ],
            **kwargs,
        )
        self._wire()
        self.set_suite(suite if suite is not None else TestSuite())
        if review:
            self.review()

    # -- wiring ------------------------------------------------------------------------------

    def _wire(self) -> None:
        """Connect the buttons, lists and fields to what they do."""
        self.cases_list.observe(self._on_pick, names=["value"])
        self.add_button.on_click(lambda _: self.add_case())
        self.duplicate_button.on_click(lambda _: self.duplicate_case())
        self.delete_button.on_click(lambda _: self.delete_case())
        self.load_button.on_click(lambda _: self.load(self.path.value))
        self.save_button.on_click(lambda _: self.save(self.path.value))
        self.export_button.on_click(lambda _: self._show_export())
        self.perturb_button.on_click(
            lambda _: self.perturb(list(self.perturbators.value), self.intensity.value, self.seed.value)
        )
        self.dry_run_button.on_click(
            lambda _: self.perturb(list(self.perturbators.value), self.intensity.value, self.seed.value, dry_run=True)
        )
        self.review_button.on_click(lambda _: self.review())
        self.upload.observe(self._on_upload, names=["value"])
        self.name.observe(lambda _: self._rebuild(), names=["value"])
        for field in FIELDS:
            self._field(field).observe(lambda change, f=field: self._on_edit(f, change["new"]), names=["value"])

    def _field(self, name: str) -> w.Text | w.Textarea:
        """The text widget editing case field ``name``."""
        widget: w.Text | w.Textarea = self.key_field if name == "key" else getattr(self, name)
        return widget

    def _on_pick(self, change: dict[str, Any]) -> None:
        """A case was picked in the list: show it in the form."""
        if not self._loading and change["new"] is not None:
            self.index = change["new"]
            self._show_case()

    @reports_errors
    def _on_edit(self, field: str, text: str) -> None:
        """Store an edited field's text in the case shown, checking a condition as it is typed.

        Lists are split at commas, lines or blank lines.
        """
        if field == "condition":
            self.condition_error, self.condition_position, self.condition_status.value = condition_feedback(text)
        if self._loading or not 0 <= self.index < len(self.cases):
            return
        cases = copy.deepcopy(self.cases)
        case = cases[self.index]
        if field == "categories":
            case[field] = [c.strip() for c in text.split(",") if c.strip()]
        elif field == "guidelines":
            case[field] = [g.strip() for g in text.splitlines() if g.strip()]
        elif field == "expected_context":
            known = {chunk(c).text: c for c in case[field]}  # an unchanged chunk keeps its doc_uri
            case[field] = [known.get(t.strip(), t.strip()) for t in CHUNK_SPLIT.split(text) if t.strip()]
        elif field == "key":
            case[field] = text.strip() or None
        else:
            case[field] = text
        self.cases = cases
        self._rebuild()

    # -- editing -----------------------------------------------------------------------------

    def _show_case(self) -> None:
        """Fill the form from the case shown (or empty and disable it when there is none)."""
        has = 0 <= self.index < len(self.cases)
        self._enable_fields(has)
        self.duplicate_button.disabled = self.delete_button.disabled = not has
        self.perturb_button.disabled = not self.cases
        case = (
            self.cases[self.index]
            if has
            else {
                "key": None,
                "prompt": "",
                "expected_output": "",
                "condition": "",
                "categories": [],
                "guidelines": [],
                "expected_context": [],
            }
        )
        self._loading = True
        try:
            self.key_field.value = case["key"] or ""
            self.prompt.value = case["prompt"]
            self.expected_output.value = case["expected_output"]
            self.condition.value = case["condition"]
            self.categories.value = ", ".join(case["categories"])
            self.guidelines.value = "\n".join(case["guidelines"])
            self.expected_context.value = "\n\n".join(chunk(c).text for c in case["expected_context"])
        finally:
            self._loading = False
        self.condition_error, self.condition_position, self.condition_status.value = condition_feedback(
            case["condition"]
        )

    def _enable_fields(self, on: bool) -> None:
        """Enable the fields, or disable them so that they look disabled.

        Disabled fields get greyed labels and background, and a placeholder and a hint say to add a
        case first (a disabled empty box otherwise looks like one waiting for text).
        """
        for name in FIELDS:
            widget = self._field(name)
            widget.disabled = not on
            widget.placeholder = self._placeholders[name] if on else "add a case to start"
            widget.style.text_color = None if on else _DISABLED_TEXT
            widget.style.background = None if on else _DISABLED_BACKGROUND
        if on:
            self.editor.remove_class("nbeval-disabled")
            self.editor_hint.value = ""
        else:
            self.editor.add_class("nbeval-disabled")
            where = "pick one in the list or " if self.cases else ""
            self.editor_hint.value = status_html(
                f"No test case to edit yet: {where}Add a case to start (the fields below stay disabled until then)."
            )

    def _select(self, index: int) -> None:
        """Show the case at ``index``."""
        self.index = index
        self._refresh_list()
        self._show_case()

    @reports_errors
    def add_case(self, **fields: Any) -> None:
        """Add a case after the selected one and select it.

        Args:
            **fields: The new case's fields, such as ``prompt=``; names that are not fields of a
                case are ignored, and the case is empty without them.
        """
        case = case_dict(TestCase(prompt=""))
        case.update({k: v for k, v in fields.items() if k in case})
        in_range = 0 <= self.index < len(self.cases)
        case["test"] = self.cases[self.index]["test"] if in_range else max(len(self.tests) - 1, 0)
        if not self.tests:
            self.tests = [{"key": None, "documents": [], "extra": {}}]
        at = self.index + 1 if 0 <= self.index < len(self.cases) else len(self.cases)
        self.cases = [*self.cases[:at], case, *self.cases[at:]]
        self._select(at)
        self._rebuild()

    @reports_errors
    def duplicate_case(self) -> None:
        """Copy the selected case; the copy gets a key of its own (``<key>-copy``, ``-copy2``...)."""
        if not 0 <= self.index < len(self.cases):
            return
        case = copy.deepcopy(self.cases[self.index])
        base = (case["key"] or content_key(case)) + "-copy"
        taken = {c["key"] for c in self.cases}
        case["key"] = next(
            k for k in (base if n == 1 else f"{base}{n}" for n in range(1, len(taken) + 2)) if k not in taken
        )
        self.cases = [*self.cases[: self.index + 1], case, *self.cases[self.index + 1 :]]
        self._select(self.index + 1)
        self._rebuild()

    @reports_errors
    def delete_case(self) -> None:
        """Remove the selected case and select its neighbour."""
        if not 0 <= self.index < len(self.cases):
            return
        self.cases = [c for i, c in enumerate(self.cases) if i != self.index]
        self._select(min(self.index, len(self.cases) - 1))
        self._rebuild()

    def review(self) -> SuiteReview:
        """Open the review of generated cases (accept, edit, reject) above the form.

        Returns:
            The reviewer shown above the form (the same one on every call).
        """
        from nbeval.widgets.suite_review import SuiteReview

        if self.reviewer is None:
            self.reviewer = SuiteReview(self)
            self.review_box.children = (self.reviewer,)
        return self.reviewer

    def reviewed_suite(self) -> TestSuite:
        """Give the suite less the generated cases not accepted.

        Returns:
            The suite as :meth:`SuiteReview.reviewed_suite` makes it.
        """
        return self.review().reviewed_suite()

    @reports_errors
    def perturb(self, perturbators: Any, intensity: str = "low", seed: int = 0, dry_run: bool = False) -> Any:
        """Add perturbed copies of every case, linked to their originals.

        The copies come from :func:`nbeval.perturb`, with the same expected output and condition as
        their originals. Perturbed cases are not perturbed again. The LLM perturbators ask the
        builder's ``judge``. Nothing happens, and ``message`` says why, when no perturbator is given
        or the suite has a problem.

        Args:
            perturbators: Ids of the perturbators to apply.
            intensity: How strongly to perturb: ``"low"``, ``"medium"`` or ``"high"``.
            seed: Seed of the perturbators' random choices.
            dry_run: Whether to only count the model calls: it shows and returns their
                :class:`~nbeval.perturbation.PerturbationPlan` and changes nothing.

        Returns:
            The plan with ``dry_run=True``; ``None`` otherwise.
        """
        import warnings

        from nbeval.perturbation import perturb, perturbed_count

        if not perturbators:
            self.message.value = status_html("choose at least one perturbator", "error")
            return
        self._rebuild()
        if self.error:  # perturbing the last valid suite would drop the drafts: refuse, touch nothing
            self.message.value = status_html(f"{self.error}: fix it or clear it, then Perturb", "error")
            return
        original = self.value
        if dry_run:
            plan = perturb(original, perturbators, intensity=intensity, seed=seed, judge=self.judge, dry_run=True)
            self.message.value = status_html(f"dry run, nothing called or changed:\n{plan}")
            return plan
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            suite = perturb(original, perturbators, intensity=intensity, seed=seed, judge=self.judge)
        made = perturbed_count(suite) - perturbed_count(original)
        self._insert_after_tests(
            [t.test_cases[len(o.test_cases) :] for t, o in zip(suite.tests, original.tests, strict=True)]
        )
        notes = "; ".join(str(c.message) for c in caught)
        self.message.value = status_html(
            f"added {made} perturbed case{'s' * (made != 1)}" + (f" ({notes})" if notes else "")
        )
        return None

    def _insert_after_tests(self, new: list[list[TestCase]]) -> None:
        """Put ``new[ti]`` after test ``ti``'s last case, leaving the cases being edited as they are.

        A case's dict is kept as typed: no round trip through :class:`TestCase`.
        """
        last = len(self.tests) - 1
        cases: list[dict[str, Any]] = list(self.cases)
        for ti in reversed(range(len(new))):
            if not new[ti]:
                continue
            at = max((i + 1 for i, c in enumerate(cases) if min(c.get("test", 0), last) == ti), default=len(cases))
            cases[at:at] = [{**case_dict(tc), "test": ti} for tc in new[ti]]
        selected = self.cases[self.index] if 0 <= self.index < len(self.cases) else None
        self.cases = cases
        self._select(next((i for i, c in enumerate(cases) if c is selected), 0 if cases else -1))
        self._rebuild()

    def _refresh_list(self) -> None:
        """Relist the cases, each as its number and the start of its prompt, keeping the selection."""
        labels = []
        for i, c in enumerate(self.cases):
            prompt = " ".join(c["prompt"].split())
            labels.append((f"{i + 1}. {prompt[:48] + '…' if len(prompt) > 48 else prompt or '(no prompt)'}", i))
        self._loading = True
        try:
            self.cases_list.options = labels
            self.cases_list.value = self.index if 0 <= self.index < len(labels) else None
        finally:
            self._loading = False

    # -- the suite ---------------------------------------------------------------------------

    def _rebuild(self) -> None:
        """Make ``value`` from the cases; on a problem keep the last valid suite and set ``error``."""
        self._refresh_list()
        problems, tests = (
            [],
            [Test(key=t["key"], documents=list(t["documents"]), extra=dict(t["extra"])) for t in self.tests]
            or [Test()],
        )
        seen: dict[str, int] = {}
        for i, case in enumerate(self.cases, 1):
            try:
                tc = to_test_case(case)
            except ConditionError as exc:
                problems.append(f"case {i}: the condition does not parse ({getattr(exc, 'reason', exc)})")
                continue
            if tc.resolved_key in seen:
                problems.append(f"cases {seen[tc.resolved_key]} and {i} have the same key '{tc.resolved_key}'")
            seen.setdefault(tc.resolved_key, i)
            tests[min(case.get("test", 0), len(tests) - 1)].test_cases.append(tc)
        self.error = "; ".join(problems)
        self.message.value = (
            status_html(self.error, "error")
            if problems
            else status_html(f"{len(self.cases)} test case{'s' * (len(self.cases) != 1)}")
        )
        if not any("condition" in p for p in problems):
            self.value = TestSuite(
                name=self.name.value, description=self._description, tests=tests, extra=dict(self._extra)
            )

    def set_suite(self, suite: TestSuite) -> None:
        """Replace everything being edited by ``suite``.

        Args:
            suite: The suite to edit from now on; it counts as saved.
        """
        self._description, self._extra = suite.description, dict(suite.extra)
        self.tests = [{"key": t.key, "documents": list(t.documents), "extra": dict(t.extra)} for t in suite.tests]
        self.cases = [{**case_dict(tc), "test": ti} for ti, t in enumerate(suite.tests) for tc in t.test_cases]
        self._loading = True
        self.name.value = suite.name
        self._loading = False
        self._select(0 if self.cases else -1)
        self._rebuild()
        self._mark_saved()

    def _mark_saved(self) -> None:
        """Remember the suite as saved, so that later edits count as unsaved."""
        self._saved = (self.name.value, copy.deepcopy(self.cases))
        self._pending_load: tuple[Any, ...] | None = None

    @property
    def unsaved(self) -> bool:
        """Whether the cases or the name changed since the suite was loaded or saved."""
        return (self.name.value, self.cases) != self._saved

    def to_json(self) -> dict[str, Any]:
        """Give the suite as JSON data.

        Returns:
            The suite's JSON data, as ``TestSuite.to_json`` makes it.

        Raises:
            ValueError: While the suite has a problem (see ``error``).
        """
        self._rebuild()
        if self.error:
            msg = f"the suite cannot be exported yet: {self.error}"
            raise ValueError(msg)
        return self.value.to_json()

    def export_json(self) -> str:
        """Give the suite as JSON text (what :meth:`save` writes).

        Returns:
            The suite's JSON, indented.

        Raises:
            ValueError: While the suite has a problem (see ``error``).
        """
        return json.dumps(self.to_json(), indent=2, ensure_ascii=False)

    @reports_errors
    def load(self, source: Any, discard: bool = False) -> bool:
        """Load a suite from a path, JSON text or parsed dict (``TestSuite.from_json``).

        It replaces the cases being edited. While they have changes not saved it refuses once and
        says so; loading the same source again with nothing edited in between (or ``discard=True``)
        replaces them.

        Args:
            source: A path to a suite file, JSON text or parsed JSON data.
            discard: Whether to replace changes not saved without asking first.

        Returns:
            ``True`` when the suite was loaded, ``False`` when it refused; ``None`` after an error.

        Raises:
            ValueError: When ``source`` is blank text. Like any error of this method, it is shown in
                ``message`` and ``output`` rather than propagated.
        """
        if isinstance(source, str) and not source.strip():
            raise ValueError("give a file name or JSON text to load")
        state = (source, self.name.value, copy.deepcopy(self.cases))
        if self.unsaved and not discard and self._pending_load != state:
            self._pending_load = state
            n = len(self.cases)
            self.message.value = status_html(
                f"not loaded: this would replace the {n} case{'s' * (n != 1)} being edited, which have changes "
                "not saved. Save them first, or load again to discard them.",
                "error",
            )
            return False
        self.set_suite(TestSuite.from_json(source))
        return True

    @reports_errors
    def save(self, path: str | Path) -> None:
        """Write the suite's JSON to ``path``.

        Args:
            path: The file to write.

        Raises:
            ValueError: When ``path`` is blank, or the suite has a problem. Like any error of this
                method, it is shown in ``message`` and ``output`` rather than propagated.
        """
        if not str(path).strip():
            raise ValueError("give a file name to save to")
        Path(path).write_text(self.export_json(), encoding="utf-8")
        self._mark_saved()
        self.message.value = status_html(f"saved {len(self.cases)} test cases to {path}", "ok")

    @reports_errors
    def _show_export(self) -> None:
        """Show the suite's JSON in the export box."""
        self.json_text.value = self.export_json()
        self.json_text.layout.display = None

    @reports_errors
    def _on_upload(self, change: dict[str, Any]) -> None:
        """Load the uploaded suite file."""
        files = change["new"]
        if not files:
            return
        content = files[0]["content"]
        if not self.load(bytes(content).decode("utf-8")):
            self.upload.value = ()  # so that choosing the same file again imports it
