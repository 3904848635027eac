"""A result's head-to-head verdicts, and the arena fit made from them.

A head-to-head evaluator (``pairwise``) files on each model's row every single-order verdict the
model took part in (``details["verdicts"]``: ``first``, ``second``, ``winner`` A/B/tie/None,
``judge``). Each verdict is on two rows, its two models'; :func:`verdicts_of` reads each once
(per case, first slot, second slot and judge) and leaves out the unrated ones, and
:func:`arena_fit` fits :mod:`nbeval.results.arena` to them once per result, evaluator and
bootstrap setting, so ``result.arena()``, ``result.head_to_head()`` and
``result.position_bias()`` share one bootstrap.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from nbeval.errors import BadParameter
from nbeval.results.arena import ARENA_RESAMPLES, ARENA_SEED, ArenaFit, Verdict, fit_arena

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ahead_messages", "arena_fit", "has_verdicts", "head_to_head_evaluators", "verdicts_of"]

_OUTCOME = {"A": "first", "B": "second", "tie": "tie"}


def _details(scores: pd.DataFrame, evaluator: str) -> Any:
    rows = scores[(scores["evaluator"] == evaluator) & scores["details"].notna()]
    return zip(rows["key"].astype(str), rows["details"], strict=True)


def _read(details: Any) -> list[dict[str, Any]]:
    try:
        found = json.loads(details).get("verdicts") if isinstance(details, str) else None
    except (ValueError, AttributeError):  # details of another evaluator's shape
        return []
    return [v for v in found if isinstance(v, dict)] if isinstance(found, list) else []


def verdicts_of(scores: pd.DataFrame, evaluator: str) -> list[Verdict]:
    """Every rated single-order verdict of ``evaluator`` in the long score table, once each."""
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Verdict] = []
    for key, details in _details(scores, evaluator):
        for v in _read(details):
            outcome = _OUTCOME.get(str(v.get("winner")))
            first, second, judge = str(v.get("first")), str(v.get("second")), str(v.get("judge") or "judge")
            if outcome is None or (key, first, second, judge) in seen or first == second:
                continue
            seen.add((key, first, second, judge))
            out.append(Verdict(case_id=key, first=first, second=second, outcome=outcome, judge=judge))  # type: ignore[arg-type]
    return out


def has_verdicts(scores: pd.DataFrame, evaluator: str) -> bool:
    """Whether ``evaluator`` filed head-to-head verdicts (rated or not) in the score table."""
    return any("verdicts" in str(d) and _read(d) for _, d in _details(scores, evaluator))


def arena_fit(
    result: Any, evaluator: str, *, n_boot: int = ARENA_RESAMPLES, seed: int = ARENA_SEED, level: float = 0.95
) -> ArenaFit:
    """The arena fit of ``result``'s ``evaluator`` verdicts, made once and kept on the result."""
    result.check_evaluator(evaluator)
    cache: dict[tuple[str, int, int, float], ArenaFit] = result.__dict__.setdefault("_arena_fits", {})
    key = (evaluator, n_boot, seed, level)
    if key not in cache:
        scores = result.scores
        if not has_verdicts(scores, evaluator):
            msg = (
                f"evaluator '{evaluator}' filed no head-to-head verdicts; ratings come from a comparison "
                "evaluator such as 'pairwise' (nbeval.evaluate(..., ['pairwise'], judge=...))"
            )
            raise BadParameter(msg)
        cache[key] = fit_arena(verdicts_of(scores, evaluator), n_boot=n_boot, seed=seed, level=level)
    return cache[key]


def head_to_head_evaluators(result: Any) -> list[str]:
    """The evaluators of ``result`` that filed head-to-head verdicts (those reporting ``win_rate``)."""
    metrics = result.metrics
    named = metrics.loc[metrics["metric"] == "win_rate", "evaluator"].astype(str)
    return [ev for ev in dict.fromkeys(named) if has_verdicts(result.scores, ev)]


def ahead_messages(result: Any, evaluator: str) -> list[tuple[str, str, float, float, float]]:
    """``(model_a, model_b, p, lo, hi)`` for each pair where ``model_a`` is ahead: the interval of
    its chance of being preferred lies wholly above one half (the interval of the strengths'
    difference excludes zero)."""
    h2h = arena_fit(result, evaluator).head_to_head_table()
    return [
        (str(a), str(b), float(p), float(lo), float(hi))
        for a, b, p, lo, hi in zip(
            h2h["model_a"], h2h["model_b"], h2h["p_a_beats_b"], h2h["lo"], h2h["hi"], strict=True
        )
        if lo > 0.5
    ]
