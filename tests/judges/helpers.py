"""Small helpers shared by the judge tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbeval
from nbeval.evaluators.judges.core import JudgeEvaluator


def judge_evaluator(id: str, **params: Any) -> JudgeEvaluator:
    """``nbeval.evaluator(id, **params)``, which must be a judge (so its prompt and judge_params can be read)."""
    ev = nbeval.evaluator(id, **params)
    assert isinstance(ev, JudgeEvaluator), f"{id} is not a judge"
    return ev


def run(records: list[dict[str, Any]] | Path, evaluators: Any, judge: Any, **kw: Any) -> Any:
    """Evaluate ``records`` without progress bars or the reply cache (unless asked)."""
    kw.setdefault("cache", False)
    kw.setdefault("max_attempts", 2)
    return nbeval.evaluate(records, evaluators, judge=judge, progress=False, **kw)


def cell(result: Any, key: str, metric: str, column: str = "value", evaluator: str | None = None) -> Any:
    """One cell of the long score table."""
    s = result.scores
    s = s[(s["key"] == key) & (s["metric"] == metric)]
    if evaluator is not None:
        s = s[s["evaluator"] == evaluator]
    assert len(s) == 1, s
    value = s[column].iloc[0]
    try:
        import pandas as pd

        return None if pd.isna(value) else value
    except (TypeError, ValueError):
        return value
