"""Loading a saved result folder: every file read, checked, and checked against the others.

:func:`load_result` promises a whole, untouched result, as
:meth:`~nbeval.results.EvaluationResult.save` wrote it. Anything else is a
:class:`~nbeval.errors.DataError` on one line naming the file (and the row and field where there
is one), raised before a result is made:

* each file: there, readable, UTF-8 (Parquet text and metadata too), JSON where it should be;
* ``result.json``: a JSON object whose run facts have the shapes nbeval writes (``meta.usage`` an
  object of numbers, ``meta.duration_s`` a number, ``meta.cancelled`` true or false, ``meta.run``
  exactly the keys of :data:`~nbeval.results.run_facts.RUN_FACT_KEYS`, its label no longer than
  :data:`~nbeval.results.storage.limits.MAX_LABEL_CHARS`, ...; a folder saved before ``meta.run``
  existed has none and loads);
* each table: exactly its columns, each holding its kind of value; a stored text no longer than
  its cap (:mod:`nbeval.results.storage.limits`);
* across the files: each metric of an evaluator listed once in ``metrics.jsonl`` and exactly one
  of them primary; each score of a (test case, model, evaluator, metric) once, of a row the
  dataset has and of a metric ``metrics.jsonl`` lists; each aggregate once, of a model and metric
  the result has; each dataset row once, its condition well formed; each human label at most
  :data:`~nbeval.results.storage.limits.MAX_LABEL_CHARS` characters; each head-to-head verdict between
  two models the test case has, filed alike on both their rows (:mod:`nbeval.results.storage.verdict_check`).

Last, every file must be the one the save of ``result.json`` wrote (its save id and hashes,
:mod:`nbeval.results.storage.save_id`), not a file of another save into the same folder; a folder saved
before the save id existed is not checked.

The checks across the files are :mod:`nbeval.results.storage.consistency`; those of the long table work
on its categoricals' codes and on each distinct value once, so they cost little next to reading
the files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.jsonio import json_lines
from nbeval.data.model import LlmDataset
from nbeval.errors import DataError
from nbeval.results.record import RunRecord, saved_record
from nbeval.results.result import (
    AGGREGATE_COLUMNS,
    DATASET_FILES,
    METRIC_COLUMNS,
    PASSED_DTYPE,
    SCORE_FILES,
    EvaluationResult,
)
from nbeval.results.score_table import SCORE_COLUMNS, typed_scores
from nbeval.results.storage.consistency import (
    CHANGED,
    check_aggregates,
    check_dataset,
    check_label_file,
    check_label_lengths,
    check_metrics,
    check_scores,
)
from nbeval.results.storage.labels import with_saved_labels
from nbeval.results.storage.limits import STORED_CAPS, stored_length_limit
from nbeval.results.storage.save_id import check_save
from nbeval.results.storage.verdict_check import check_verdicts

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["check_label_lengths", "load_result", "read_aggregates", "read_info", "read_records", "read_result_info"]

#: What each column of the saved tables holds: (kind, whether it may be null).
_TEXT, _NUMBER, _BOOL, _COUNT = "text", "a number", "true or false", "a whole number"
_COLUMN_KINDS: dict[str, dict[str, tuple[str, bool]]] = {
    "scores.jsonl": {
        "key": (_TEXT, False),
        "model_key": (_TEXT, False),
        "evaluator": (_TEXT, False),
        "metric": (_TEXT, False),
        "value": (_NUMBER, True),
        "passed": (_BOOL, True),
        "label": (_TEXT, True),
        "rationale": (_TEXT, True),
        "error": (_TEXT, True),
        "skipped": (_BOOL, False),
        "skip_reason": (_TEXT, True),
        "details": (_TEXT, True),
    },
    "aggregates.jsonl": {
        "model_key": (_TEXT, False),
        "evaluator": (_TEXT, False),
        "metric": (_TEXT, False),
        "value": (_NUMBER, True),
        "n": (_COUNT, False),
        "N": (_COUNT, False),
        "passed": (_BOOL, True),
        "direction": (_TEXT, False),
        "threshold": (_NUMBER, True),
        "primary": (_BOOL, False),
    },
    "metrics.jsonl": {
        "evaluator": (_TEXT, False),
        "evaluator_id": (_TEXT, False),
        "family": (_TEXT, False),
        "kind": (_TEXT, False),
        "metric": (_TEXT, False),
        "direction": (_TEXT, False),
        "lo": (_NUMBER, True),
        "hi": (_NUMBER, True),
        "threshold": (_NUMBER, True),
        "primary": (_BOOL, False),
        "description": (_TEXT, True),
    },
}
#: Text columns whose cells have a cap, by file (see :mod:`nbeval.results.storage.limits`).
_CAPS = {"scores.jsonl": STORED_CAPS}


def _is_kind(value: Any, kind: str) -> bool:
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _COUNT:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _read_result_text(path: Path) -> str:
    """A file of a saved result as text; a missing, unreadable or non-UTF-8 file is a DataError."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        msg = f"the saved result is incomplete: {path.name} is missing; save the result again"
        raise DataError(msg, source=str(path)) from None
    except UnicodeDecodeError as exc:
        msg = f"not UTF-8 text (byte {exc.start}): {CHANGED}; save the result again"
        raise DataError(msg, source=str(path)) from None
    except OSError as exc:
        raise DataError(f"cannot read the file: {exc.strerror or exc}", source=str(path)) from None


def read_records(path: Path, columns: list[str]) -> tuple[pd.DataFrame, list[int]]:
    """Read one saved table (a JSON object per line) and the line of each of its rows.

    Every line is checked: it must be JSON, have exactly ``columns``, and hold in each the kind of
    value ``_COLUMN_KINDS`` says (text no longer than its cap); anything else is a DataError naming
    the file, the line (as the row) and the column.
    """
    import pandas as pd

    kinds = _COLUMN_KINDS.get(path.name, {})
    caps = _CAPS.get(path.name, {})
    source = str(path)
    recs, lines = [], []
    # JSON lines, not splitlines(): a text may hold U+2028 or U+0085 unescaped (written ensure_ascii=False)
    for lineno, line in enumerate(json_lines(_read_result_text(path)), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError) as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise DataError(f"not valid JSON ({reason}); {CHANGED}", source=source, row=lineno) from None
        if not isinstance(rec, dict):
            raise DataError(
                f"expected an object with the columns {', '.join(columns)}; got {type(rec).__name__}",
                source=source,
                row=lineno,
            )
        missing = [c for c in columns if c not in rec]
        if missing:
            raise DataError("the column is missing", source=source, row=lineno, field=missing[0])
        unknown = [c for c in rec if c not in columns]
        if unknown:
            raise DataError(
                f"unknown column (this file has {', '.join(columns)})", source=source, row=lineno, field=str(unknown[0])
            )
        for column, (kind, nullable) in kinds.items():
            value = rec[column]
            if not (value is None and nullable) and not _is_kind(value, kind):
                got = "null" if value is None else f"{type(value).__name__} {value!r}"[:60]
                raise DataError(
                    f"must be {kind}{' or null' if nullable else ''}, got {got}",
                    source=source,
                    row=lineno,
                    field=column,
                )
        for column, cap in caps.items():
            value = rec[column]
            if isinstance(value, str) and len(value) > stored_length_limit(cap):
                msg = f"a text of {len(value):,} characters, where nbeval stores at most {cap:,}; {CHANGED}"
                raise DataError(msg, source=source, row=lineno, field=column)
        recs.append(rec)
        lines.append(lineno)
    return pd.DataFrame(recs, columns=columns), lines


# -- result.json --------------------------------------------------------------------------------


def read_info(path: Path) -> dict[str, Any]:
    """``result.json``, checked: a JSON object whose parts have the shapes nbeval writes."""
    source = str(path)
    try:
        info = json.loads(_read_result_text(path))
    except RecursionError:
        raise DataError(f"not readable: the JSON is nested too deeply; {CHANGED}", source=source) from None
    except ValueError:
        raise DataError(f"not valid JSON; {CHANGED}", source=source) from None
    if not isinstance(info, dict):
        raise DataError(f"expected a JSON object, got {type(info).__name__}", source=source)
    for name in ("meta", "explanations", "model_labels"):
        if info.get(name) is not None and not isinstance(info[name], dict):
            raise DataError(f"must be an object, got {type(info[name]).__name__}", source=source, field=name)
    saved_record(info.get("meta"), source=source, hint=CHANGED)
    for evaluator, per_model in (info.get("explanations") or {}).items():
        if not isinstance(per_model, dict):
            raise DataError(
                f"must be an object of models, got {type(per_model).__name__}",
                source=source,
                field=f"explanations.{evaluator}",
            )
        for model, per_metric in per_model.items():
            if not isinstance(per_metric, dict):
                raise DataError(
                    f"must be an object of metrics, got {type(per_metric).__name__}",
                    source=source,
                    field=f"explanations.{evaluator}.{model}",
                )
    labels = info.get("model_labels") or {}
    if not all(isinstance(v, str) for v in labels.values()):
        raise DataError("model labels must be text", source=source, field="model_labels")
    return info


# -- the folder ---------------------------------------------------------------------------------


def read_result_info(folder: str | Path) -> dict[str, Any]:
    """Read ``result.json`` of the saved result in ``folder``, without reading the other files.

    It is checked as :func:`load_result` checks it (its ``meta``, ``explanations`` and
    ``model_labels``).
    """
    return read_info(Path(folder) / "result.json")


def read_aggregates(folder: str | Path) -> pd.DataFrame:
    """Read ``aggregates.jsonl`` of the saved result in ``folder``.

    Each line is checked as :func:`load_result` checks it (not against the other files).
    """
    aggregates, _lines = read_records(Path(folder) / "aggregates.jsonl", AGGREGATE_COLUMNS)
    aggregates["value"] = aggregates["value"].astype(float)
    return aggregates


def load_result(folder: str | Path) -> EvaluationResult:
    """Load a result written by :meth:`EvaluationResult.save`.

    A folder that is not a whole, untouched saved result raises :class:`~nbeval.errors.DataError`
    naming the file, the line and the column: a file missing, not UTF-8 or not JSON, a line with
    columns missing, unknown or holding the wrong kind of value, run facts of the wrong shape,
    a score, aggregate or dataset row given twice, scores of rows the dataset does not have or of
    metrics the result does not list, an evaluator without exactly one primary metric, a
    condition that does not parse, a label longer than its cap, or a result saved by a newer
    nbeval (see :mod:`nbeval.results.storage.loading`).

    Args:
        folder: The folder :meth:`EvaluationResult.save` wrote.

    Returns:
        The result as it was saved, with its dataset and human labels.

    Raises:
        DataError: When ``folder`` does not exist, holds no ``result.json``, or is not a whole,
            untouched saved result (the message names the file, the line and the column).
    """
    folder = Path(folder)
    if not folder.is_dir():
        what = "does not exist" if not folder.exists() else "is a file, not a folder"
        raise DataError(f"{what}; give the folder result.save(folder) wrote", source=str(folder))
    if not (folder / "result.json").exists():
        msg = f"{folder} holds no saved result (result.json is missing); save one with result.save(folder)"
        raise DataError(msg, source=str(folder))
    info = read_info(folder / "result.json")
    version = RunRecord.from_meta(info.get("meta")).folder_format
    scores_path = folder / SCORE_FILES["parquet" if version >= 2 else "jsonl"]
    score_lines: list[int] | None = None
    if version >= 2:
        from nbeval.results.storage.columnar import read_scores_parquet

        scores = read_scores_parquet(scores_path)
    else:
        records, score_lines = read_records(scores_path, SCORE_COLUMNS)
        scores = typed_scores(records)
    aggregates, aggregate_lines = read_records(folder / "aggregates.jsonl", AGGREGATE_COLUMNS)
    aggregates["value"] = aggregates["value"].astype(float)
    aggregates["passed"] = aggregates["passed"].astype(PASSED_DTYPE)
    metrics, metric_lines = read_records(folder / "metrics.jsonl", METRIC_COLUMNS)
    dataset_name = DATASET_FILES["parquet" if version >= 3 else "jsonl"]
    if version >= 3:
        from nbeval.results.storage.dataset_file import read_dataset_parquet

        dataset = read_dataset_parquet(folder / dataset_name)
    else:
        dataset = LlmDataset.from_json(str(folder / dataset_name))
    check_metrics(metrics, metric_lines, folder / "metrics.jsonl")
    check_dataset(dataset, folder / dataset_name)
    check_scores(scores, metrics, dataset, scores_path, score_lines, dataset_name)
    check_aggregates(aggregates, aggregate_lines, metrics, dataset, folder / "aggregates.jsonl")
    check_verdicts(scores, metrics, scores_path, score_lines)
    check_label_file(folder)
    loaded = with_saved_labels(
        EvaluationResult(
            scores,
            aggregates,
            metrics,
            dataset,
            meta=info.get("meta"),
            explanations=info.get("explanations"),
            model_labels=info.get("model_labels"),
        ),
        folder,
    )
    # hashed after every file was read: one that another save replaced meanwhile does not match
    check_save(folder, info)
    return loaded
