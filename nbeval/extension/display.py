"""Rich display of the data layer's objects, registered with IPython when the extension loads.

Datasets, suites, labs and plans show their counts, the fields present and a preview of the
first rows as HTML (every text escaped and cut to :data:`MAX_CHARS`), and a short text where
their ``repr`` would print every row. The formatters are registered by class name, so nothing
is imported until such an object is shown, and the data layer stays free of HTML.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "FORMATTERS",
    "MAX_CHARS",
    "PREVIEW_ROWS",
    "dataset_html",
    "install",
    "lab_html",
    "plan_html",
    "suite_html",
    "uninstall",
]

PREVIEW_ROWS = 5
"""Rows (or test cases) shown in a preview."""
MAX_CHARS = 120
"""Characters of each text shown in a preview cell."""

_STYLE = "font-family:var(--jp-ui-font-family,sans-serif);font-size:13px;border-collapse:collapse;margin-top:4px"
_CELL = "border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top;max-width:360px"


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _short(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(getattr(v, "content", v)) for v in value)
    text = " ".join(str(value).split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f'<th style="{_CELL}">{_esc(c)}</th>' for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{_esc(_short(v))}</td>' for v in row) + "</tr>" for row in rows
    )
    return f'<table style="{_STYLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _box(title: str, facts: str, fields: Sequence[str], table: str, more: int, unit: str) -> str:
    parts = [f'<div class="nbeval-preview"><b>{_esc(title)}</b>: {_esc(facts)}']
    if fields:
        parts.append(f'<div style="color:#555">fields: {_esc(", ".join(fields))}</div>')
    parts.append(table)
    if more > 0:
        parts.append(f'<div style="color:#777">… and {more} more {_esc(unit)}</div>')
    parts.append("</div>")
    return "".join(parts)


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


# -- datasets, suites, labs ---------------------------------------------------------------------

_DATASET_PREVIEW = ("key", "model_key", "input", "expected_output", "actual_output", "error")


def _dataset_facts(ds: Any) -> tuple[str, list[str]]:
    from nbeval.data.model import ROW_FIELDS

    facts = f"{_plural(len(ds), 'row')}, {_plural(len(ds.model_keys), 'model')}, {_plural(len(ds.keys), 'test case')}"
    return facts, [f for f in ROW_FIELDS if ds.has_field(f)]


def _dataset_table(ds: Any) -> str:
    columns = [c for c in _DATASET_PREVIEW if c in ("key", "input") or ds.has_field(c)]
    return _table(columns, ([getattr(r, c, None) for c in columns] for r in ds.rows[:PREVIEW_ROWS]))


def dataset_html(ds: Any) -> str:
    """An :class:`~nbeval.data.model.LlmDataset`: rows, models and test cases, fields present, first rows."""
    facts, fields = _dataset_facts(ds)
    return _box("LlmDataset", facts, fields, _dataset_table(ds), len(ds) - PREVIEW_ROWS, "rows")


_CASE_FIELDS = (
    "key",
    "prompt",
    "expected_output",
    "condition",
    "categories",
    "guidelines",
    "expected_context",
    "relationships",
)


def suite_html(suite: Any) -> str:
    """A :class:`~nbeval.data.model.TestSuite`: tests and test cases, fields present, first cases."""
    cases = suite.test_cases
    present = [f for f in _CASE_FIELDS if f == "key" or any(getattr(c, f) for c in cases)]
    extra = sorted({k for c in cases for k in c.extra})
    columns = [c for c in ("key", "prompt", "expected_output", "condition", "categories") if c in present]
    table = _table(
        columns, ([c.resolved_key if f == "key" else getattr(c, f) for f in columns] for c in cases[:PREVIEW_ROWS])
    )
    title = f"TestSuite {suite.name!r}" if suite.name else "TestSuite"
    facts = f"{_plural(len(suite.tests), 'test')}, {_plural(len(cases), 'test case')}"
    return _box(title, facts, present + extra, table, len(cases) - PREVIEW_ROWS, "test cases")


def lab_html(lab: Any) -> str:
    """A :class:`~nbeval.data.model.TestLab`: its models and its dataset's counts, fields and first rows."""
    facts, fields = _dataset_facts(lab.dataset)
    models = ", ".join(m.label for m in lab.models) or ", ".join(lab.dataset.model_keys)
    title = f"TestLab {lab.name!r}" if lab.name else "TestLab"
    return _box(
        title,
        f"{facts}; models: {models}",
        fields,
        _dataset_table(lab.dataset),
        len(lab.dataset) - PREVIEW_ROWS,
        "rows",
    )


def plan_html(plan: Any) -> str:
    """A :class:`~nbeval.engine.dry_run.Plan`: rows and skipped rows per evaluator, then the judge calls."""
    per_row = bool(plan.calls_per_row)
    columns = ["evaluator", "rows", "skipped", *(["judge calls/row"] if per_row else [])]
    rows = [
        [
            k,
            plan.rows[k],
            plan.skipped.get(k, 0),
            *([f"{plan.calls_per_row[k]:.1f}" if k in plan.calls_per_row else ""] if per_row else []),
        ]
        for k in plan.rows
    ]
    notes = str(plan).splitlines()[len(plan.rows) + 1 :]  # the lines under the table, as str(plan) words them
    body = "".join(f'<div style="color:#555">{_esc(line)}</div>' for line in notes)
    return f'<div class="nbeval-preview"><b>Plan</b> (dry run: nothing scored){_table(columns, rows)}{body}</div>'


# -- plain text, where the dataclass repr would print every row ----------------------------------


def _suite_text(suite: Any, p: Any, cycle: bool) -> None:
    name = f" {suite.name!r}" if suite.name else ""
    p.text(f"TestSuite{name}({_plural(len(suite.tests), 'test')}, {_plural(len(suite.test_cases), 'test case')})")


def _lab_text(lab: Any, p: Any, cycle: bool) -> None:
    name = f" {lab.name!r}" if lab.name else ""
    p.text(f"TestLab{name}({len(lab.models) or len(lab.dataset.model_keys)} models, {lab.dataset!r})")


def _plan_text(plan: Any, p: Any, cycle: bool) -> None:
    p.text(str(plan))


#: (MIME type, module, class name, formatter) registered by :func:`install`.
FORMATTERS: tuple[tuple[str, str, str, Callable[..., Any]], ...] = (
    ("text/html", "nbeval.data.model", "LlmDataset", dataset_html),
    ("text/html", "nbeval.data.model", "TestSuite", suite_html),
    ("text/html", "nbeval.data.model", "TestLab", lab_html),
    ("text/html", "nbeval.engine.dry_run", "Plan", plan_html),
    ("text/plain", "nbeval.data.model", "TestSuite", _suite_text),
    ("text/plain", "nbeval.data.model", "TestLab", _lab_text),
    ("text/plain", "nbeval.engine.dry_run", "Plan", _plan_text),
)


def install(ipython: Any) -> None:
    """Register :data:`FORMATTERS` with ``ipython``'s display formatter (by name: nothing is imported)."""
    formatters = ipython.display_formatter.formatters
    for mime, module, name, fn in FORMATTERS:
        formatters[mime].for_type_by_name(module, name, fn)


def uninstall(ipython: Any) -> None:
    """Remove :data:`FORMATTERS` from ``ipython``'s display formatter."""
    formatters = ipython.display_formatter.formatters
    for mime, module, name, fn in FORMATTERS:
        try:
            if formatters[mime].lookup_by_type(f"{module}.{name}") is fn:
                formatters[mime].pop(f"{module}.{name}")
        except KeyError:
            continue
