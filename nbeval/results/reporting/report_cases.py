"""The report's case-first view and its appendix of every score.

Each test case is one folded block: its prompt and expected output, then each model's answer
with every evaluator's verdict on its primary metric and the rationale. The long table of every
score follows, folded, for those who want all of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from html import escape
from typing import TYPE_CHECKING, Any

from nbeval.results.reporting.numbers import format_value
from nbeval.results.reporting.report_markup import (
    Anchors,
    Facts,
    cell,
    fixed_table,
    missing,
    tally_text,
    verdict,
    within_budget,
)

if TYPE_CHECKING:
    from nbeval.data.model import Row
    from nbeval.results import EvaluationResult

__all__ = ["PROMPT_CHARS", "case_keys", "cases_section", "scores_section"]

#: How much of a prompt a folded case block shows on its one line.
PROMPT_CHARS = 140
#: The columns of the appendix table, with their widths.
_SCORE_HEAD = [
    ("key", "8%"),
    ("model_key", "9%"),
    ("evaluator", "11%"),
    ("metric", "9%"),
    ("value", "6%"),
    ("passed", "7%"),
    ("label", "9%"),
    ("rationale", ""),
    ("error", "9%"),
    ("skip_reason", "9%"),
]
_WRAPPED = ("rationale", "error")


def _one_line(text: Any, limit: int) -> str:
    words = " ".join(str(text or "").split())
    return cell(words if len(words) <= limit else words[: limit - 1].rstrip() + "…")


def _text(title: str, value: Any, cls: str = "") -> str:
    body = cell(value) if not missing(value) and str(value) != "" else "<span class='muted'>(none)</span>"
    return f"<div class='field {cls}'><div class='label'>{escape(title)}</div><div class='text'>{body}</div></div>"


def _answer(result: EvaluationResult, row: Row, scores: list[Any], anchors: Anchors) -> tuple[str, Counter[str]]:
    """One model's answer to a case, then each evaluator's verdict and rationale."""
    tally: Counter[str] = Counter()
    lines, skipped = [], []
    for s in scores:
        kind, badge = verdict(passed=s.passed, value=s.value, skipped=s.skipped, error=s.error, label=s.label)
        tally[kind] += 1
        link = f"<a href='#{anchors('ev', str(s.evaluator))}'>{cell(s.evaluator)}</a>"
        if kind == "skip":
            skipped.append(f"{link} <span class='muted'>({cell(s.skip_reason, 200)})</span>")
            continue
        why = [cell(s.rationale)] if not missing(s.rationale) else []
        if not missing(s.error):
            why.append(f"<span class='fail'>error: {cell(s.error)}</span>")
        lines.append(
            f"<tr class='v-{kind}'><td>{link}</td><td>{badge}</td><td class='text'>{'<br>'.join(why)}</td></tr>"
        )
    table = fixed_table([("evaluator", "24%"), ("verdict", "16%"), ("rationale", "")], lines, "answer-verdicts")
    skip_line = f"<p class='skipped'>skipped: {'; '.join(skipped)}</p>" if skipped else ""
    error = f"<p class='fail'>the answer could not be collected: {cell(row.error)}</p>" if row.error else ""
    marks = tally_text({k: n for k, n in tally.items() if k != "skip"}, html=True)
    return (
        f"<div class='answer'><div class='who'>{cell(result.label(row.model_key))} {marks}</div>"
        f"{error}{_text('Answer', row.actual_output)}{table if lines else ''}{skip_line}</div>",
        tally,
    )


def _case(
    result: EvaluationResult,
    key: str,
    rows: list[Row],
    by_row: dict[tuple[str, str], list[Any]],
    anchors: Anchors,
    open_: bool,
) -> str:
    first = rows[0]
    context = [c.text for c in first.context] if first.context else []
    ctx = ""
    if context:
        items = "".join(f"<li class='text'>{cell(t)}</li>" for t in context)
        ctx = (
            f"<details class='ctx'><summary>Retrieved context ({len(context)} chunks)</summary>"
            f"<ol>{items}</ol></details>"
        )
    answers, chips = [], []
    for row in rows:
        body, tally = _answer(result, row, by_row.get((key, str(row.model_key)), []), anchors)
        answers.append(body)
        fails = tally["fail"] + tally["error"] + tally["unrated"]
        chips.append(
            f"<span class='chip'>{cell(result.label(row.model_key))} <span class='pass'>{tally['pass']} ✓"
            f"</span> <span class='{'fail' if fails else 'muted'}'>{fails} ✗</span></span>"
        )
    return (
        f"<details class='case' id='{anchors('case', key)}'{' open' if open_ else ''}><summary>"
        f"<span class='key'>{cell(key)}</span> <span class='prompt'>{_one_line(first.input, PROMPT_CHARS)}</span>"
        f"<span class='chips'>{''.join(chips)}</span></summary><div class='body'>"
        f"{_text('Prompt', first.input)}{_text('Expected output', first.expected_output)}{ctx}"
        f"{''.join(answers)}</div></details>"
    )


def case_keys(result: EvaluationResult) -> list[str]:
    """The test case keys in the dataset's order."""
    return list(dict.fromkeys(str(r.key) for r in result.dataset.rows))


def cases_section(facts: Facts) -> tuple[str, list[str]]:
    """Render every test case, case first, and return the keys of the cases shown.

    Each case shows its prompt, expected output, each model's answer, verdicts and rationales. The
    keys are those of the cases that fit the budget, which other parts may link to.
    """
    result, anchors, primary = facts.result, facts.anchors, facts.primary
    by_key: dict[str, list[Row]] = {}
    for r in result.dataset.rows:
        by_key.setdefault(str(r.key), []).append(r)
    order = {ev: i for i, ev in enumerate(result.evaluators)}
    by_row: dict[tuple[str, str], list[Any]] = {}
    for s in primary.itertuples(index=False):
        by_row.setdefault((str(s.key), str(s.model_key)), []).append(s)
    for scores in by_row.values():
        scores.sort(key=lambda s: order.get(str(s.evaluator), len(order)))

    def blocks() -> Iterator[str]:
        for i, (key, rows) in enumerate(by_key.items()):
            yield _case(result, key, rows, by_row, anchors, open_=i == 0)

    kept, note = within_budget(blocks(), len(by_key), "cases")
    html = (
        "<section id='cases'><h2>Cases</h2><p class='meta'>One block per test case (click to open): the prompt, "
        "the expected output, then each model's answer with each evaluator's verdict on its primary metric and "
        f"the rationale. ✓ passes, ✗ fails or errors.</p>{note}{''.join(kept)}</section>"
    )
    return html, list(by_key)[: len(kept)]


def scores_section(result: EvaluationResult) -> str:
    """The long table (every metric of every row), folded."""
    scores = result.scores
    columns = [c for c, _ in _SCORE_HEAD]

    def rows() -> Iterator[str]:
        for rec in scores[columns].itertuples(index=False):
            cells = []
            for c, v in zip(columns, rec, strict=True):
                if c == "value":
                    cells.append(f"<td class='num'>{'' if missing(v) else format_value(float(v))}</td>")
                else:
                    attr = " class='text'" if c in _WRAPPED else ""
                    cells.append(f"<td{attr}>{cell(v)}</td>")
            yield f"<tr>{''.join(cells)}</tr>"

    if scores.empty:
        return "<section id='scores'><h2>Scores</h2><p class='muted'>none</p></section>"
    kept, note = within_budget(rows(), len(scores), "scores")
    return (
        "<section id='scores'><h2>Scores</h2><p class='meta'>The long table: every metric of every row "
        f"({len(scores):,} scores), as result.scores has it.</p>{note}<details class='all-scores'><summary>"
        f"Show all {len(kept):,} scores</summary>{fixed_table(_SCORE_HEAD, kept, 'scores')}</details></section>"
    )
