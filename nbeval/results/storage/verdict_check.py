"""Loading checks of the head-to-head verdicts a saved result holds.

A head-to-head evaluator (one that reports ``win_rate``, as ``pairwise`` does) files each
single-order verdict on the rows of both models it compares (``details["verdicts"]``), and
:mod:`nbeval.results.statistics.head_to_head` rates models from them. A verdict edited after saving could
rate a model the result never had, or give a win the judge never gave, so on load each verdict
must be what :class:`~nbeval.evaluators.judges.pairwise.Pairwise` writes:

* an object whose ``first`` and ``second`` are two different models that both have a row of this
  evaluator in the verdict's test case (the row's key), one of them the row's own model;
* its ``winner`` ``"A"``, ``"B"``, ``"tie"`` or null, its ``judge`` text or null;
* filed once per row, and on both models' rows alike (the same winner on each), where both rows'
  details can be read (details past their stored cap are cut and not JSON; such a row is skipped).

Anything else is a :class:`~nbeval.errors.DataError` naming the scores file, the row and
``details``. Only rows whose details mention ``verdicts`` are parsed, so the check costs little.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HEAD_TO_HEAD_METRIC", "check_verdicts"]

#: The metric a head-to-head evaluator reports; its rows' verdicts are checked.
HEAD_TO_HEAD_METRIC = "win_rate"
_WINNERS = ("A", "B", "tie", None)
_EDITED = "the saved head-to-head verdicts were changed after they were saved; save the result again"


def _verdicts(details: Any) -> list[Any] | None:
    """The ``verdicts`` list of a details JSON text; None when there is none or it cannot be read."""
    if not isinstance(details, str) or '"verdicts"' not in details:
        return None
    try:
        found = json.loads(details)
    except (ValueError, RecursionError):  # cut at its stored cap: not read by the arena either
        return None
    verdicts = found.get("verdicts") if isinstance(found, dict) else None
    return verdicts if isinstance(verdicts, list) else None


def _problem(v: Any, model: str, in_case: set[str]) -> str | None:
    """What is wrong with one verdict on ``model``'s row of a case whose models are ``in_case``."""
    if not isinstance(v, dict):
        return f"a verdict must be an object, got {type(v).__name__}"
    first, second = v.get("first"), v.get("second")
    for slot, name in (("first", first), ("second", second)):
        if not isinstance(name, str):
            return f"a verdict's {slot} must be a model key, got {name!r}"[:160]
        if name not in in_case:
            return f"a verdict names model {name!r}, which has no row of this evaluator in this test case"[:160]
    if first == second:
        return f"a verdict compares model {first!r} with itself"
    if model not in (first, second):
        return f"a verdict of {first!r} against {second!r} is filed on the row of model {model!r}, which is neither"
    if v.get("winner") not in _WINNERS:
        return f"a verdict's winner must be A, B, tie or null, got {v.get('winner')!r}"[:160]
    if v.get("judge") is not None and not isinstance(v.get("judge"), str):
        return f"a verdict's judge must be text or null, got {type(v.get('judge')).__name__}"
    return None


def check_verdicts(scores: pd.DataFrame, metrics: pd.DataFrame, path: Path, lines: Sequence[int] | None) -> None:
    """Check every head-to-head verdict in ``scores`` as the module says.

    ``lines`` are the file's line of each score (None: the row's position, for Parquet).
    """
    evaluators = set(metrics.loc[metrics["metric"] == HEAD_TO_HEAD_METRIC, "evaluator"].astype(str))
    if not evaluators:
        return
    source = str(path)
    for evaluator in sorted(evaluators):
        mine = scores[
            (scores["evaluator"].astype(str) == evaluator) & (scores["metric"].astype(str) == HEAD_TO_HEAD_METRIC)
        ]
        if mine.empty:
            continue
        positions = [int(p) for p in (scores.index.get_indexer(mine.index))]
        keys, models = mine["key"].astype(str).tolist(), mine["model_key"].astype(str).tolist()
        in_case: dict[str, set[str]] = {}
        for key, model in zip(keys, models, strict=True):
            in_case.setdefault(key, set()).add(model)
        rows: dict[tuple[str, str], tuple[int, list[Any]]] = {}
        for key, model, position, details in zip(keys, models, positions, mine["details"], strict=True):
            row = lines[position] if lines is not None else position + 1
            verdicts = _verdicts(details)
            if verdicts is None:
                continue
            for v in verdicts:
                why = _problem(v, model, in_case[key])
                if why:
                    raise DataError(f"{why}; {_EDITED}", source=source, row=row, field="details")
            rows[key, model] = (row, verdicts)
        _check_both_rows(rows, source)


def _check_both_rows(rows: dict[tuple[str, str], tuple[int, list[Any]]], source: str) -> None:
    """Check that each verdict is given once per row, and on both its models' rows with the same winner.

    Both rows are checked where both rows' verdicts could be read.
    """
    filed: dict[tuple[str, str], dict[tuple[str, str, Any], Any]] = {}
    for (key, model), (row, verdicts) in rows.items():
        winners: dict[tuple[str, str, Any], Any] = {}
        for v in verdicts:
            order = (v["first"], v["second"], v.get("judge"))
            if order in winners:
                msg = f"the verdict of {order[0]!r} (shown first) against {order[1]!r} is filed twice on this row"
                raise DataError(f"{msg}; {_EDITED}", source=source, row=row, field="details")
            winners[order] = v.get("winner")
        filed[key, model] = winners
    for (key, model), winners in filed.items():
        row = rows[key, model][0]
        for order, winner in winners.items():
            other = order[1] if order[0] == model else order[0]
            if (key, other) not in filed:
                continue  # the other row's details cannot be read: nothing to compare with
            other_row, theirs = rows[key, other][0], filed[key, other]
            if order not in theirs:
                msg = (
                    f"the verdict of {order[0]!r} (shown first) against {order[1]!r} is not on the row of "
                    f"{other!r} (row {other_row}), where the evaluator files it too"
                )
                raise DataError(f"{msg}; {_EDITED}", source=source, row=row, field="details")
            if theirs[order] != winner:
                msg = (
                    f"the verdict of {order[0]!r} (shown first) against {order[1]!r} names winner "
                    f"{winner!r} here and {theirs[order]!r} on row {other_row}"
                )
                raise DataError(f"{msg}; {_EDITED}", source=source, row=row, field="details")
