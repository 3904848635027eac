"""A result's head-to-head verdicts, and the arena fit made from them.

A head-to-head evaluator (``pairwise``) files on each model's row every single-order verdict the
model took part in (``details["verdicts"]``: ``first``, ``second``, ``winner`` A/B/tie/None,
``judge``: None for the run's judge, which the result's run facts name). Each verdict is on two
rows, its two models'; :func:`verdicts_of` reads each once
(per case, first slot, second slot and judge) and leaves out the unrated ones, and
:func:`arena_fit` fits :mod:`nbeval.results.statistics.arena` to them once per result, evaluator and
bootstrap setting, so ``result.arena()``, ``result.head_to_head()`` and
``result.position_bias()`` share one bootstrap.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbeval.errors import BadParameter
from nbeval.results.statistics.arena import ARENA_RESAMPLES, ARENA_SEED, DEFAULT_JUDGE, ArenaFit, Verdict, fit_arena

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "AHEAD_ALPHA",
    "ahead_rows",
    "arena_fit",
    "bias_sentence",
    "case_tallies",
    "has_verdicts",
    "head_to_head_evaluators",
    "rating_text",
    "run_judge_name",
    "verdicts_of",
]

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


def verdicts_of(scores: pd.DataFrame, evaluator: str, run_judge: str = DEFAULT_JUDGE) -> list[Verdict]:
    """Collect every rated single-order verdict of ``evaluator`` in the long score table, once each.

    A verdict without a judge was given by the run's judge, named ``run_judge``.
    """
    seen: set[tuple[str, str, str, str]] = set()
    out: list[Verdict] = []
    for key, details in _details(scores, evaluator):
        for v in _read(details):
            outcome = _OUTCOME.get(str(v.get("winner")))
            first, second, judge = str(v.get("first")), str(v.get("second")), str(v.get("judge") or run_judge)
            if outcome is None or (key, first, second, judge) in seen or first == second:
                continue
            seen.add((key, first, second, judge))
            out.append(Verdict(case_id=key, first=first, second=second, outcome=outcome, judge=judge))  # type: ignore[arg-type]
    # a fixed order, so the fit and its seeded bootstrap do not depend on the dataset's row order
    return sorted(out, key=lambda v: (v.case_id, v.first, v.second, v.judge))


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
        verdicts = verdicts_of(scores, evaluator, run_judge_name(result))
        cache[key] = fit_arena(verdicts, n_boot=n_boot, seed=seed, level=level)
    return cache[key]


def run_judge_name(result: Any) -> str:
    """Name the run's judge as the result records it (``result.record.run.judge.model``).

    Else ``"judge"``: the judge of the verdicts a pairwise evaluator without a judge of its own
    gave.
    """
    record = getattr(result, "record", None)
    run = getattr(record, "run", None)
    name = run.judge_model if run is not None else None
    return name if name else DEFAULT_JUDGE


def head_to_head_evaluators(result: Any) -> list[str]:
    """The evaluators of ``result`` that filed head-to-head verdicts (those reporting ``win_rate``)."""
    metrics = result.metrics
    named = metrics.loc[metrics["metric"] == "win_rate", "evaluator"].astype(str)
    return [ev for ev in dict.fromkeys(named) if has_verdicts(result.scores, ev)]


#: The significance level of an "ahead" claim (after Holm's adjustment over the pairs).
AHEAD_ALPHA = 0.05


def case_tallies(verdicts: Sequence[Verdict]) -> dict[tuple[str, str], tuple[int, int]]:
    """Count, per pair of models, the test cases each of the two won.

    Per pair ``(a, b)`` (``a < b``): in how many test cases ``a`` took more of the pair's verdicts
    than ``b`` (a tie counting half to each), and in how many ``b`` did; level cases left out. The
    case, not the verdict, is the unit: its two orders are one judgement, not two.
    """
    points: dict[tuple[str, str, str], float] = {}
    for v in verdicts:
        a, b = sorted((v.first, v.second))
        won = 0.5 if v.outcome == "tie" else float((v.first if v.outcome == "first" else v.second) == a)
        key = (a, b, v.case_id)
        points[key] = points.get(key, 0.0) + won - 0.5
    tallies: dict[tuple[str, str], tuple[int, int]] = {}
    for (a, b, _), margin in points.items():
        ahead_a, ahead_b = tallies.get((a, b), (0, 0))
        tallies[a, b] = (ahead_a + (margin > 0), ahead_b + (margin < 0))
    return tallies


def ahead_rows(result: Any, evaluator: str) -> list[tuple[str, str, float, float, float, int, float]]:
    """List the pairs where one model is ahead of the other, by the arena and by a sign test.

    ``(model_a, model_b, p, lo, hi, cases, p_holm)`` for each pair where ``model_a`` is ahead of
    ``model_b``: both the arena's interval of its chance of being preferred lies wholly above one
    half, and an exact sign test over the test cases where one of the two took more of the pair's
    verdicts is significant after Holm's adjustment over every pair compared (so one case, or a few,
    never makes a model "ahead", however consistent the judge was).
    """
    from nbeval.results.statistics.stats import holm, mcnemar_exact

    h2h = arena_fit(result, evaluator).head_to_head_table()
    tallies = case_tallies(verdicts_of(result.scores, evaluator, run_judge_name(result)))
    pairs = list(zip(h2h["model_a"].astype(str), h2h["model_b"].astype(str), strict=True))
    counts = [tallies.get((min(a, b), max(a, b)), (0, 0)) for a, b in pairs]
    signs = [mcnemar_exact(x, y) for x, y in counts]  # the two-sided sign test of x against y
    adjusted: list[float] = [float(q) for q in holm(signs)] if signs else []
    out = []
    for (a, b), p, lo, hi, (x, y), p_holm in zip(
        pairs, h2h["p_a_beats_b"], h2h["lo"], h2h["hi"], counts, adjusted, strict=True
    ):
        if lo > 0.5 and p_holm < AHEAD_ALPHA:
            out.append((a, b, float(p), float(lo), float(hi), int(x + y), float(p_holm)))
    return out


def rating_text(rating: float, lo: float, hi: float) -> str:
    """Write an arena rating with its interval for people, ``"1123 [1050, 1190]"``.

    A rating that no verdict informs (NaN) says so rather than printing ``nan``.
    """
    import math

    if math.isnan(rating):
        return "no rating (no verdict bears on it)"
    if math.isnan(lo) or math.isnan(hi):
        return f"{rating:.0f} [no interval]"
    return f"{rating:.0f} [{lo:.0f}, {hi:.0f}]"


def bias_sentence(row: Any) -> str:
    """Say one judge's row of ``position_bias()`` in words, for the summary and the report.

    How often its decisive verdicts chose the first answer, its fitted first-slot term and how often
    the two orders of a pair agreed, each said plainly where it cannot be measured (no decisive
    verdict, a judge that always chose one slot, pairs asked in one order only).
    """
    import math

    rate, beta, agree = float(row.first_slot_rate), float(row.beta), float(row.consistency)
    parts = [
        "no decisive verdict (only ties)"
        if math.isnan(rate)
        else f"{rate:.0%} of decisive verdicts chose the first answer"
    ]
    if math.isinf(beta):
        parts.append(f"it always chose the {'first' if beta > 0 else 'second'} slot, so its verdicts rate no model")
    elif not math.isnan(beta):
        parts.append(f"fitted first-slot term {beta:.2f}")
    parts.append(
        "no pair was asked in both orders" if math.isnan(agree) else f"the two orders agreed on {agree:.0%} of pairs"
    )
    return f"judge {row.judge}: " + "; ".join(parts)
