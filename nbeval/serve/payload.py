"""A result as plain JSON for the service: the long table of scores and one leaderboard per evaluator."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["plain", "result_payload"]


def plain(value: Any) -> Any:
    """``value`` with only JSON types left: NaN and pandas' ``<NA>`` become ``None``, numpy
    scalars Python ones, tuples lists; dict keys become strings."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if type(value).__module__ == "numpy" and hasattr(value, "item"):
        value = value.item()
    if type(value).__name__ == "NAType" or (isinstance(value, float) and not math.isfinite(value)):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def result_payload(result: EvaluationResult) -> dict[str, Any]:
    """``{"scores": [...], "leaderboards": {...}, "meta": {...}}``: one record per row of the
    long table (see :data:`~nbeval.results.result.SCORE_COLUMNS`) and, per evaluator, one record
    per model, best first."""
    scores = [plain(r) for r in result.scores.to_dict("records")]
    boards = {}
    for name in result.evaluators:
        table = result.leaderboard(name).reset_index()
        boards[name] = [plain(r) for r in table.to_dict("records")]
    meta = {k: result.meta.get(k) for k in ("duration_s", "cancelled", "usage", "nbeval_version")}
    return {"scores": scores, "leaderboards": boards, "meta": plain(meta)}
