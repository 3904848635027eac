"""The head-to-head comparisons of one test case: each pair of models, both orders, both rationales.

A head-to-head evaluator (``pairwise``) files every single-order verdict on the rows of the two
models it compared (``details["verdicts"]``). :func:`pairs_html` groups a case's verdicts by pair
and shows, per pair, who was shown as A and as B in each order, the winner the judge named and its
rationale, and whether the two orders agree (a pair whose orders disagree is marked
*inconsistent*: the judge followed the slot, not the answers). The answers themselves are the
case view's columns above it. Every text is escaped (:mod:`nbeval.widgets.markup`).
"""

from __future__ import annotations

import json
from typing import Any

from nbeval.widgets.markup import esc, text_block

__all__ = ["pairs_html"]

_CELL = "vertical-align:top;padding:4px 8px;border-top:1px solid #e4e4e4;max-width:520px"
_HEAD = "text-align:left;padding:4px 8px;color:#555;font-weight:600"
_FLAG = {True: ("consistent", "#3a7d44"), False: ("inconsistent", "#b3261e"), None: ("one order unrated", "#777")}


def _verdicts(details: Any) -> list[dict[str, Any]]:
    """The pairwise verdicts kept in a score's details JSON (none when it holds none or cannot be read)."""
    try:
        found = json.loads(details).get("verdicts") if isinstance(details, str) else None
    except (ValueError, AttributeError):
        return []
    return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []


def _points(v: dict[str, Any], model: str) -> float | None:
    """Score a verdict for ``model``: 1 for a win, 0.5 for a tie, 0 for a loss.

    Gives ``None`` for a verdict with no winner.
    """
    winner = v.get("winner")
    if winner not in ("A", "B", "tie"):
        return None
    if winner == "tie":
        return 0.5
    return 1.0 if (v.get("first") if winner == "A" else v.get("second")) == model else 0.0


def pairs_html(label: Any, details: Any, answers: dict[str, Any], *, max_chars: int) -> str:
    """Render the head-to-head comparisons of one case as HTML, pair by pair.

    Each pair shows the two answers side by side, then each order's verdict and rationale, and
    whether the two orders agree.

    Args:
        label: Names a model: ``label(model_key)`` gives the name shown.
        details: The case's rows' ``details``, one JSON text per row.
        answers: Each model's answer, by model key.
        max_chars: How many characters of each text are shown before it is cut.

    Returns:
        The HTML of the comparisons; empty when the rows hold no verdicts.
    """
    pairs: dict[tuple[str, str], dict[tuple[str, str], dict[str, Any]]] = {}
    for d in details:
        for v in _verdicts(d):
            first, second = str(v.get("first")), str(v.get("second"))
            a, b = sorted((first, second))
            pairs.setdefault((a, b), {})[first, second] = v
    blocks = []
    for (a, b), orders in pairs.items():
        rows = []
        for (first, second), v in orders.items():
            winner = v.get("winner")
            named = {"A": label(first), "B": label(second), "tie": "tie"}.get(str(winner), "unrated")
            why = v.get("rationale") if winner in ("A", "B", "tie") else v.get("error") or v.get("rationale")
            rows.append(
                f'<tr><td style="{_CELL}">A: {esc(label(first))}<br>B: {esc(label(second))}</td>'
                f'<td style="{_CELL}"><b>{esc(named)}</b></td>'
                f'<td style="{_CELL}">{text_block(why, max_chars=max_chars)}</td></tr>'
            )
        both = list(orders.values())
        agree = None
        if len(both) == 2 and all(_points(v, a) is not None for v in both):
            agree = _points(both[0], a) == _points(both[1], a)
        flag, colour = _FLAG[agree] if len(both) == 2 else ("asked in one order", "#777")
        side_by_side = "".join(
            f'<td style="{_CELL};width:50%"><div style="{_HEAD}">{esc(label(m))}</div>'
            f"{text_block(answers.get(m), max_chars=max_chars)}</td>"
            for m in (a, b)
        )
        blocks.append(
            f'<div style="margin:6px 0"><b>{esc(label(a))}</b> vs <b>{esc(label(b))}</b> '
            f'<span style="color:{colour}">({flag})</span>'
            f'<table style="border-collapse:collapse;width:100%"><tr>{side_by_side}</tr></table>'
            f'<table style="border-collapse:collapse"><thead><tr><th style="{_HEAD}">shown</th>'
            f'<th style="{_HEAD}">judged better</th><th style="{_HEAD}">rationale</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>"
        )
    return "".join(blocks)
