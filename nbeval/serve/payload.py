"""A result as plain JSON for the service: the long table of scores and one leaderboard per evaluator."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nbeval.results import EvaluationResult

__all__ = ["plain", "read_scores", "result_payload", "result_summary"]


def plain(value: Any) -> Any:
    """``value`` with only JSON types left.

    NaN and pandas' ``<NA>`` become ``None``, numpy scalars Python ones, tuples lists; dict keys
    become strings.
    """
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
    """A result as the API sends it: scores, leaderboards and meta.

    ``{"scores": [...], "leaderboards": {...}, "meta": {...}}``: one record per row of the long
    table (see :data:`~nbeval.results.result.SCORE_COLUMNS`) and, per evaluator, one record per
    model, best first.
    """
    scores = [plain(r) for r in result.scores.to_dict("records")]
    boards = {}
    for name in result.evaluators:
        table = result.leaderboard(name).reset_index()
        boards[name] = [plain(r) for r in table.to_dict("records")]
    return {"scores": scores, "leaderboards": boards, "meta": plain(result.record.summary())}


def result_summary(result: EvaluationResult) -> dict[str, Any]:
    """What a job keeps of its result besides the folder.

    One leaderboard per evaluator (one record per model, best first) and the run's facts.
    """
    boards = {}
    for name in result.evaluators:
        table = result.leaderboard(name).reset_index()
        boards[name] = [plain(r) for r in table.to_dict("records")]
    return {"leaderboards": boards, "meta": plain(result.record.summary())}


def read_scores(folder: str | Path, offset: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
    """A slice of the long table of the result saved in ``folder``.

    Records ``offset`` to ``offset + limit`` (all from ``offset`` with ``limit=None``), as
    :func:`result_payload` gives them, read without loading the rest of the result.
    """
    import pyarrow.parquet as pq

    path = Path(folder) / "scores.parquet"
    if not path.exists():  # saved with scores_format="jsonl"
        from nbeval.results.storage.loading import load_result

        rows = load_result(folder).scores.to_dict("records")
        end = None if limit is None else offset + limit
        return [plain(r) for r in rows[offset:end]]
    file = pq.ParquetFile(path)
    out: list[dict[str, Any]] = []
    seen = 0
    for group in range(file.num_row_groups):
        n = file.metadata.row_group(group).num_rows
        if seen + n <= offset:
            seen += n
            continue
        table = file.read_row_group(group)
        start = max(0, offset - seen)
        want = None if limit is None else limit - len(out)
        part = table.slice(start, want) if want is not None else table.slice(start)
        out.extend(_score_record(r) for r in part.to_pylist())
        seen += n
        if limit is not None and len(out) >= limit:
            break
    return out


def _score_record(row: dict[str, Any]) -> dict[str, Any]:
    return {k: plain(v) for k, v in row.items()}
