"""Runs over time: the results saved in one folder, listed and followed metric by metric.

:func:`runs` lists them; :func:`run_history` follows a metric over them (what
``nbeval.widgets.history_chart`` draws).

A *runs folder* holds one saved result per sub-folder (``result.save("runs/0412", label=...)``).
:func:`runs` reads only each result's ``result.json`` and ``aggregates.jsonl`` (checked as
:func:`~nbeval.results.storage.loading.load_result` checks them), never the long table, so listing
hundreds of runs is quick. :func:`run_history` needs each model's interval, computed from the
rows' values (``result.leaderboard(evaluator, ci=0.95)``), so it loads each run whole, one at a
time.
"""

from __future__ import annotations

import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.errors import DataError, NotFound
from nbeval.results.record import RunFacts, RunRecord

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results.result import EvaluationResult

__all__ = ["HISTORY_COLUMNS", "RUN_COLUMNS", "run_history", "runs"]

#: The columns of :func:`runs`.
RUN_COLUMNS = [
    "run",
    "path",
    "started_at",
    "label",
    "models",
    "evaluators",
    "rows",
    "git_commit",
    "git_dirty",
    "nbeval_version",
    "dataset_fingerprint",
    "judge",
    "duration_s",
    "cost",
    "unknown_usage_calls",
    "error",
]
#: The columns of :func:`run_history`.
HISTORY_COLUMNS = [
    "run",
    "started_at",
    "label",
    "git_commit",
    "git_dirty",
    "model_key",
    "metric",
    "value",
    "lo",
    "hi",
    "n",
]


def runs(folder: str | Path) -> pd.DataFrame:
    """The results saved directly inside ``folder``, newest first: one row per run.

    Columns (:data:`RUN_COLUMNS`): ``run`` (the sub-folder's name), ``path``, ``started_at`` (UTC;
    for a result saved before nbeval recorded it, the folder's modification time), ``label``,
    ``models`` and ``evaluators`` (lists), ``rows`` (dataset rows: test cases times models),
    ``git_commit``, ``git_dirty``, ``nbeval_version``, ``dataset_fingerprint``, ``judge`` (the
    run's judge model, if it used one), ``duration_s``, ``cost`` (US dollars, when priced; a lower
    bound when ``unknown_usage_calls`` > 0), ``unknown_usage_calls`` (calls whose token usage the
    server reported as no call can have, left unpriced; 0 for runs without any) and ``error``:
    ``None``, or why a result folder could not be read (its other columns are then empty; the
    listing goes on). A sub-folder without ``result.json`` is not a result and is left out, as
    are hidden ones.

    Args:
        folder: The runs folder, holding one saved result per sub-folder.

    Returns:
        The runs, one row each, newest first.

    Raises:
        DataError: When ``folder`` does not exist or is a file, not a folder.
    """
    import pandas as pd

    base = Path(folder)
    if not base.is_dir():
        what = "does not exist" if not base.exists() else "is a file, not a folder"
        raise DataError(f"{what}; give the folder holding the saved results", source=str(base))
    found = [
        _run_row(sub)
        for sub in sorted(base.iterdir())
        if sub.is_dir() and not sub.name.startswith(".") and (sub / "result.json").is_file()
    ]
    table = pd.DataFrame(found, columns=RUN_COLUMNS)
    for column in RUN_COLUMNS:  # a missing text, list or flag is None, not NaN
        if column not in ("started_at", "rows", "duration_s", "cost", "unknown_usage_calls"):
            table[column] = table[column].astype(object).where(table[column].notna(), None)
    table["started_at"] = pd.to_datetime(table["started_at"], utc=True, format="ISO8601")
    table["rows"] = table["rows"].astype("Int64")
    table["unknown_usage_calls"] = table["unknown_usage_calls"].astype("Int64")
    table = table.sort_values(["started_at", "run"], ascending=False, kind="stable", na_position="last")
    return table.reset_index(drop=True)


def _run_row(folder: Path) -> dict[str, Any]:
    """One row of :func:`runs`: the facts of the result saved in ``folder``, or its error."""
    from nbeval.results.storage.loading import read_aggregates, read_result_info
    from nbeval.results.storage.save_id import check_save

    row: dict[str, Any] = dict.fromkeys(RUN_COLUMNS)
    row.update(run=folder.name, path=str(folder), started_at=_modified(folder))
    try:
        info = read_result_info(folder)
        record = RunRecord.from_meta(info.get("meta"))
        aggregates = read_aggregates(folder)
        check_save(folder, info, ["aggregates.jsonl"])  # not the aggregates of another save
    except DataError as exc:
        row["error"] = str(exc)
        return row
    facts = record.run or RunFacts()
    rows_per_model = aggregates.groupby("model_key", sort=False, observed=True)["N"].max()
    evaluators = [e.name for e in record.evaluators or ()]
    row.update(
        started_at=facts.started_at or row["started_at"],
        label=facts.label,
        models=list(dict.fromkeys(aggregates["model_key"])),
        evaluators=[str(e) for e in evaluators if e] or list(dict.fromkeys(aggregates["evaluator"])),
        rows=int(rows_per_model.sum()),
        git_commit=facts.git_commit,
        git_dirty=facts.git_dirty,
        nbeval_version=record.nbeval_version,
        dataset_fingerprint=facts.dataset_fingerprint,
        judge=facts.judge_model,
        duration_s=record.duration_s,
        cost=record.usage.priced_cost,
        unknown_usage_calls=record.usage.unknown_calls,
    )
    return row


def _modified(folder: Path) -> str:
    """The folder's modification time, in UTC, ISO 8601."""
    return datetime.fromtimestamp(folder.stat().st_mtime, timezone.utc).isoformat()


def run_history(
    runs_or_folder: pd.DataFrame | str | Path, evaluator: str, metric: str | None = None, *, level: float = 0.95
) -> pd.DataFrame:
    """Follow ``evaluator``'s ``metric`` per run and model, with its ``level`` interval.

    The metric defaults to the evaluator's primary metric in each run. The oldest run comes first,
    then models in leaderboard order.

    ``runs_or_folder``: a runs folder, or the table :func:`runs` gave for one (or some of its
    rows). Columns (:data:`HISTORY_COLUMNS`): ``run``, ``started_at``, ``label``, ``git_commit``,
    ``git_dirty``, ``model_key``, ``metric``, ``value``, ``lo``, ``hi`` and ``n`` (rows measured),
    each as ``result.leaderboard(evaluator, metric, ci=level)`` of that run gives them. Each run
    is loaded whole, one at a time (the intervals need the rows' values). Runs that do not have
    the evaluator (or metric) are left out; a run listed with an ``error``, or that fails to load,
    is left out with a :class:`~nbeval.data.fields.DataWarning`. When no run has it,
    :class:`~nbeval.errors.NotFound` names the evaluators the runs have.
    ``attrs["metric"]`` describes the metric as the newest run has it: ``evaluator``, ``metric``,
    ``direction``, ``lo``, ``hi``, ``threshold``, ``kind``.
    """
    import pandas as pd

    listing = runs(runs_or_folder) if isinstance(runs_or_folder, (str, Path)) else runs_or_folder
    listing = listing.sort_values("started_at", kind="stable")
    found: list[dict[str, Any]] = []
    seen: set[str] = set()
    described: dict[str, Any] | None = None
    for run in listing.to_dict("records"):
        result = _load(run)
        if result is None:
            continue
        seen.update(result.evaluators)
        name = _metric_of(result, evaluator, metric)
        if name is None:
            continue
        found.extend(_history_rows(result, run, evaluator, name, level))
        described = _describe(result, evaluator, name)
    if described is None:
        what = f"evaluator '{evaluator}'" + (f" with a metric '{metric}'" if metric else "")
        raise NotFound(f"no run has {what}; the runs have {sorted(seen)}")
    table = pd.DataFrame(found, columns=HISTORY_COLUMNS)
    table.attrs["metric"] = described
    return table


def _load(run: dict[str, Any]) -> EvaluationResult | None:
    """The result of a :func:`runs` row, or ``None`` (with a warning) when it cannot be read."""
    from nbeval.data.fields import DataWarning
    from nbeval.results.storage.loading import load_result

    error = run.get("error")
    if not isinstance(error, str) or not error:
        try:
            return load_result(run["path"])
        except DataError as exc:
            error = str(exc)
    warnings.warn(f"run {run.get('run')!r} is left out: {error}", DataWarning, stacklevel=3)
    return None


def _metric_of(result: EvaluationResult, evaluator: str, metric: str | None) -> str | None:
    """``metric`` (default: the primary) if ``result`` has it for ``evaluator``, else ``None``."""
    if evaluator not in result.evaluators:
        return None
    name = metric or result.primary_metric(evaluator)
    known = result.metrics.loc[result.metrics["evaluator"] == evaluator, "metric"]
    return name if name in set(known) else None


def _history_rows(
    result: EvaluationResult, run: dict[str, Any], evaluator: str, metric: str, level: float
) -> list[dict[str, Any]]:
    """One row per model of ``result``: ``metric``'s value, interval and rows measured."""
    board = result.leaderboard(evaluator, metric, ci=level)
    return [
        {
            "run": run["run"],
            "started_at": run["started_at"],
            "label": _text(run.get("label")),
            "git_commit": _text(run.get("git_commit")),
            "git_dirty": run.get("git_dirty") if isinstance(run.get("git_dirty"), bool) else None,
            "model_key": str(model_key),
            "metric": metric,
            "value": _number(board.at[model_key, metric]),
            "lo": _number(board.at[model_key, f"{metric}_lo"]),
            "hi": _number(board.at[model_key, f"{metric}_hi"]),
            "n": int(_number(board.at[model_key, f"{metric}_n"]) or 0),
        }
        for model_key in board.index
    ]


def _text(value: Any) -> str | None:
    """A text cell; ``None`` for anything else (a missing one read back as NaN)."""
    return value if isinstance(value, str) else None


def _number(value: Any) -> float | None:
    """A table cell as a float; ``None`` for a missing one (NaN, ``<NA>``)."""
    import pandas as pd

    return None if value is None or pd.isna(value) else float(value)


def _describe(result: EvaluationResult, evaluator: str, metric: str) -> dict[str, Any]:
    """What a chart needs to know of ``metric``: direction, range, threshold, kind."""
    m = result.metrics[(result.metrics["evaluator"] == evaluator) & (result.metrics["metric"] == metric)].iloc[0]
    return {
        "evaluator": evaluator,
        "metric": metric,
        "direction": str(m["direction"]),
        "lo": _number(m["lo"]),
        "hi": _number(m["hi"]),
        "threshold": _number(m["threshold"]),
        "kind": str(m["kind"]),
    }
