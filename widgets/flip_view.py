"""A flipped case of a run diff: the same test case and model in both runs, side by side.

:func:`flip_html` shows, for one ``(key, model_key)`` row of a :class:`~nbeval.results.runs.diff.RunDiff`,
the test case (from the later run), then two columns, *before* and *after*: the answer, and for
each evaluator the two runs share, its primary value (tinted by pass/fail) and its rationale, the
evaluators whose verdict flipped first. :class:`FlipExplorer` lists every flip of a diff in a
drop-down and shows the chosen one. Both runs are read whole once (a folder with its dataset).
Every text is escaped (:mod:`nbeval.widgets.markup`) and cut to ``max_chars``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nbeval.results.storage.limits import truncate_text
from nbeval.widgets.markup import _passed, esc, text_block, value_cell

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult
    from nbeval.results.runs.diff import RunDiff

__all__ = ["FlipExplorer", "flip_html"]
# What nbeval.widgets hands out from here (read from this source; see widgets/__init__.py).
_KIT_EXPORTS = ("FlipExplorer",)

_CELL = "vertical-align:top;padding:4px 8px;border-top:1px solid #e4e4e4;width:45%"
_HEAD = "text-align:left;vertical-align:top;padding:4px 8px;color:#555;font-weight:600;white-space:nowrap"
_MUTED = "color:#777"


def _row(result: EvaluationResult, key: str, model_key: str) -> Any:
    """The dataset row of ``key`` and ``model_key`` in ``result`` (``None`` when it has none)."""
    return next((r for r in result.dataset.rows if r.key == key and r.model_key == model_key), None)


def _score(result: EvaluationResult, key: str, model_key: str, evaluator: str) -> Any:
    """Find the score row of ``evaluator``'s primary metric for ``key`` and ``model_key``.

    Gives ``None`` when there is none.
    """
    s = result.scores
    hit = s[(s["key"] == key) & (s["model_key"] == model_key) & (s["evaluator"] == evaluator)]
    metric = result.primary_metric(evaluator)
    hit = hit[hit["metric"] == metric]
    return None if hit.empty else hit.iloc[0]


def _verdict(r: Any, max_chars: int) -> str:
    """Render a run's verdict on the row as HTML.

    The value is tinted by pass or fail, with the rationale (or the error) below it; a row without
    a verdict says why there is none.
    """
    if r is None:
        return f'<span style="{_MUTED}">not scored in this run</span>'
    if bool(r["skipped"]):
        return f'<span style="{_MUTED}">skipped: {esc(r["skip_reason"])}</span>'
    value = value_cell(r["value"], _passed(r["passed"]))
    why = r["rationale"] if isinstance(r["rationale"], str) else r["error"]
    text = text_block(truncate_text(why, max_chars) if isinstance(why, str) else None)
    return f"<div>{value}</div>{text}"


def flip_html(
    diff: RunDiff,
    key: str,
    model_key: str,
    *,
    max_chars: int = 4000,
    results: tuple[EvaluationResult, EvaluationResult] | None = None,
) -> str:
    """Render one row of both runs side by side as HTML.

    It shows the case, the two answers, and each shared evaluator's primary value and rationale
    (the flipped evaluators first).

    Args:
        diff: The diff of the two runs.
        key: The test-case key of the row.
        model_key: The model of the row.
        max_chars: How many characters of each text are shown before it is cut.
        results: The two runs, before and after, already read; ``None`` reads them from ``diff``.

    Returns:
        The HTML of the row, or a short note when neither run has it.
    """
    before, after = results if results is not None else diff.results()
    row_b, row_a = _row(before, key, model_key), _row(after, key, model_key)
    case = row_a or row_b
    if case is None:
        return f'<div style="{_MUTED}">no row {esc(key)} / {esc(model_key)} in either run</div>'
    flipped = set(diff.flips.loc[(diff.flips["key"] == key) & (diff.flips["model_key"] == model_key), "evaluator"])
    shared = [e for e in after.evaluators if e in set(before.evaluators)]
    order = sorted(shared, key=lambda e: e not in flipped)
    lines = [
        (
            "answer",
            text_block(truncate_text(row_b.actual_output or "", max_chars) if row_b else None),
            text_block(truncate_text(row_a.actual_output or "", max_chars) if row_a else None),
        )
    ]
    for ev in order:
        name = f"{ev} (flipped)" if ev in flipped else ev
        lines.append(
            (
                name,
                _verdict(_score(before, key, model_key, ev), max_chars),
                _verdict(_score(after, key, model_key, ev), max_chars),
            )
        )
    body = "".join(
        f'<tr><th style="{_HEAD}">{esc(name)}</th><td style="{_CELL}">{b}</td><td style="{_CELL}">{a}</td></tr>'
        for name, b, a in lines
    )
    heads = [diff.runs[0] or "before", diff.runs[1] or "after"]
    return (
        f'<div class="nbeval-flip"><div style="{_MUTED}">test case {esc(key)}, model {esc(model_key)}</div>'
        f'<div style="margin:4px 0"><b>prompt</b>{text_block(truncate_text(case.input or "", max_chars))}</div>'
        f'<div style="margin:4px 0"><b>expected output</b>'
        f"{text_block(truncate_text(case.expected_output or '', max_chars) or None)}</div>"
        f'<table style="border-collapse:collapse;width:100%"><thead><tr><th></th>'
        f'<th style="{_HEAD}">before: {esc(heads[0])}</th><th style="{_HEAD}">after: {esc(heads[1])}</th></tr>'
        f"</thead><tbody>{body}</tbody></table></div>"
    )


class FlipExplorer:
    """Every flipped row of a diff in a drop-down; the chosen one shown with :func:`flip_html`.

    Both runs are read whole once, when the explorer is made. ``widget`` is the view to display
    (the explorer displays as it too).

    Args:
        diff: The diff of two runs whose flipped rows are listed.
        max_chars: How many characters of each text are shown before it is cut.
    """

    def __init__(self, diff: RunDiff, *, max_chars: int = 4000) -> None:
        import ipywidgets as w

        self.diff, self.max_chars = diff, max_chars
        self._results = diff.results()
        flips = diff.flips.drop_duplicates(["key", "model_key"])
        options = [
            (f"{k} · {m} · {e}: {c}", (str(k), str(m)))
            for k, m, e, c in zip(flips["key"], flips["model_key"], flips["evaluator"], flips["change"], strict=True)
        ]
        self.picker = w.Dropdown(options=options, description="flipped", layout=w.Layout(width="70%"))
        self.view = w.HTML()
        self.picker.observe(lambda _: self._show(), names="value")
        self.widget = w.VBox([self.picker, self.view])
        self._show()

    def select(self, key: str, model_key: str) -> None:
        """Show the row ``(key, model_key)`` (flipped or not).

        Args:
            key: The test-case key of the row.
            model_key: The model of the row.
        """
        self.view.value = flip_html(self.diff, key, model_key, max_chars=self.max_chars, results=self._results)

    def _show(self) -> None:
        """Show the flip picked in the list, or say that none flipped."""
        if self.picker.value is None:
            self.view.value = f'<div style="{_MUTED}">no verdict flipped between the two runs</div>'
            return
        self.select(*self.picker.value)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)
