"""Saving a result to a folder, whole or not at all.

:func:`nbeval.load_result`, in :mod:`nbeval.results.storage.loading`, reads it back and checks it.

Every file is written into a hidden staging folder first; ``result.json`` last, with the save id
and the hash of each file (:mod:`nbeval.results.storage.save_id`). The files are then renamed into the
folder, ``result.json`` last, under the folder's lock (:mod:`nbeval.results.storage.folder_lock`), so two
saves into one folder at once leave the one that renamed last whole, never a mix; and a folder
that mixes two saves anyway (a crash between two renames, a file copied in) does not load.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.errors import BadParameter
from nbeval.results.record import FORMAT_VERSION, check_run_facts
from nbeval.results.run_facts import check_label
from nbeval.results.storage.files import check_folder, staging_folder
from nbeval.results.storage.fingerprint import dataset_fingerprint
from nbeval.results.storage.folder_lock import folder_lock
from nbeval.results.storage.labels import LABELS_FILE, save_labels
from nbeval.results.storage.save_id import SAVE_FIELD, new_save

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results.result import EvaluationResult

__all__ = ["DATASET_FILES", "RESULT_FILES", "SCORE_FILES", "save_result", "write_records"]

#: The long table's file in a saved folder, by format.
SCORE_FILES = {"parquet": "scores.parquet", "jsonl": "scores.jsonl"}
#: The dataset's file in a saved folder, by the format of the long table saved with it.
DATASET_FILES = {"parquet": "dataset.parquet", "jsonl": "dataset.json"}
#: The files :meth:`EvaluationResult.save` writes into its folder (``result.json`` last).
RESULT_FILES = ("scores.parquet", "aggregates.jsonl", "metrics.jsonl", "dataset.parquet", "result.json")


def save_result(
    result: EvaluationResult, folder: str | Path, *, scores_format: str = "parquet", label: str | None = None
) -> Path:
    """Write ``result`` to ``folder``: what :meth:`EvaluationResult.save` documents.

    ``label`` names the run in the saved run facts and, once the folder is written, in ``result.record``. The saved
    ``meta`` is ``result.record`` in the current format (a result loaded from an older format is written in the current
    one).
    """
    from nbeval.results.storage import dataset_file
    from nbeval.results.storage.columnar import write_scores_parquet

    if scores_format not in SCORE_FILES:
        msg = f"scores_format must be one of {', '.join(SCORE_FILES)}; got {scores_format!r}"
        raise BadParameter(msg)
    folder = Path(folder)
    score_file = SCORE_FILES[scores_format]
    data_file = DATASET_FILES[scores_format]
    names = (score_file, "aggregates.jsonl", "metrics.jsonl", data_file, "result.json")
    check_folder(folder, (*names, LABELS_FILE))
    from nbeval.results.storage.consistency import check_label_lengths

    check_label_lengths(result.labels, "result.labels")  # a label load_result would refuse is not written
    record = result.record
    if label is not None:
        record = record.labelled(check_label(label), None if record.run else dataset_fingerprint(result.dataset))
    if record.run is not None:
        hint = "fix result.meta['run'] (or remove it) before saving"
        check_run_facts(record.run.to_meta(), "result.meta", hint)
    folder.mkdir(parents=True, exist_ok=True)
    meta = replace(record, format_version=FORMAT_VERSION if scores_format == "parquet" else 1).to_meta()
    with staging_folder(folder) as stage:
        if scores_format == "parquet":
            write_scores_parquet(stage / score_file, result.scores)
        else:
            write_records(stage / score_file, result.scores)
        write_records(stage / "aggregates.jsonl", result.aggregates)
        write_records(stage / "metrics.jsonl", result.metrics)
        if scores_format == "parquet":
            dataset_file.write_dataset_parquet(stage / data_file, result.dataset)
        else:
            result.dataset.to_json(str(stage / data_file))
        save_labels(stage, result.labels)  # labels.csv (optional), moved in with the others
        save = new_save(stage, (*names[:-1], LABELS_FILE))
        (stage / "result.json").write_text(
            json.dumps(
                {
                    "meta": meta,
                    "explanations": result.explanations,
                    "model_labels": result.model_labels,
                    SAVE_FIELD: save,
                },
                indent=2,
                ensure_ascii=False,
                default=str,
            ),
            encoding="utf-8",
        )
        with folder_lock(folder):  # one save's renames at a time: the last one leaves its files whole
            for name in names[:-1]:
                os.replace(stage / name, folder / name)
            if save["files"][LABELS_FILE] is not None:
                os.replace(stage / LABELS_FILE, folder / LABELS_FILE)
            elif (folder / LABELS_FILE).is_file():  # an earlier result's labels are not this one's
                (folder / LABELS_FILE).unlink()
            os.replace(stage / "result.json", folder / "result.json")
    if label is not None:
        result.record = record
    return folder


def _nan_to_none(v: Any) -> Any:
    """A cell as plain JSON: NaN and pandas' ``<NA>`` become ``None``, numpy scalars Python ones."""
    if type(v).__module__ == "numpy" and hasattr(v, "item"):
        v = v.item()  # np.True_ from a nullable boolean column
    if v is None or (isinstance(v, float) and math.isnan(v)) or type(v).__name__ == "NAType":
        return None
    return v


def write_records(path: Path, df: pd.DataFrame) -> None:
    """``df`` as JSON lines, one object per row, every float exact."""
    # The stdlib writer keeps every float exactly (pandas' to_json rounds to 10 digits).
    cols = list(df.columns)
    with open(path, "w", encoding="utf-8") as fh:
        for rec in df.itertuples(index=False, name=None):
            fh.write(json.dumps(dict(zip(cols, map(_nan_to_none, rec), strict=True)), ensure_ascii=False))
            fh.write("\n")
