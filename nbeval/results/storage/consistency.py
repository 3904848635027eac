"""A saved result's tables checked against each other.

The checks run once each file has been read and checked on its own
(:mod:`nbeval.results.storage.loading`): each metric of an evaluator listed once and exactly one of
them primary; each score of a (test case, model, evaluator, metric) once, of a row the dataset has
and of a metric ``metrics.jsonl`` lists; each aggregate once, of a model and metric the result has;
each dataset row once, its condition well formed; each human label at most
:data:`~nbeval.results.storage.limits.MAX_LABEL_CHARS` characters.

Each check raises :class:`~nbeval.errors.DataError` naming the file, the row and the field. The
checks of the long table work on its categoricals' codes and on each distinct value once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.csvsafe import csv_unsafe
from nbeval.errors import DataError
from nbeval.results.score_table import KEY_COLUMNS
from nbeval.results.storage.labels import LABELS_FILE
from nbeval.results.storage.limits import MAX_LABEL_CHARS

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.data.model import LlmDataset

__all__ = [
    "CHANGED",
    "check_aggregates",
    "check_dataset",
    "check_label_file",
    "check_label_lengths",
    "check_metrics",
    "check_scores",
]

#: What a message adds when a saved file no longer holds what nbeval wrote.
CHANGED = "the file was changed after it was saved"
_SHOWN = 80  # characters of a value from a file shown in a message
_DIRECTIONS = ("higher", "lower")
_KINDS = ("score", "bool", "rating")


def _q(value: Any) -> str:
    """A value read from a file, quoted for a message on one line (cut past :data:`_SHOWN` characters)."""
    text = str(value)
    return repr(text) if len(text) <= _SHOWN else f"{text[:_SHOWN]!r}…"


def check_metrics(metrics: pd.DataFrame, lines: list[int], path: Path) -> None:
    """Each metric of an evaluator once, its direction and kind known, one primary per evaluator."""
    source = str(path)
    seen: dict[tuple[str, str], int] = {}
    primary: dict[str, tuple[int, str]] = {}
    first: dict[str, int] = {}
    for line, evaluator, metric, direction, kind, is_primary in zip(
        lines,
        metrics["evaluator"],
        metrics["metric"],
        metrics["direction"],
        metrics["kind"],
        metrics["primary"],
        strict=True,
    ):
        if direction not in _DIRECTIONS:
            raise DataError(
                f"must be 'higher' or 'lower', got {direction!r}"[:120], source=source, row=line, field="direction"
            )
        if kind not in _KINDS:
            raise DataError(
                f"must be one of {', '.join(_KINDS)}, got {kind!r}"[:120], source=source, row=line, field="kind"
            )
        if (evaluator, metric) in seen:
            msg = (
                f"the metric {_q(metric)} of evaluator {_q(evaluator)} a second time "
                f"(also row {seen[evaluator, metric]})"
            )
            raise DataError(f"{msg}; {CHANGED}", source=source, row=line, field="metric")
        seen[evaluator, metric] = line
        first.setdefault(evaluator, line)
        if is_primary:
            if evaluator in primary:
                other, name = primary[evaluator]
                msg = (
                    f"a second primary metric of evaluator {_q(evaluator)} (row {other}, {_q(name)}, is one); an "
                    f"evaluator has one"
                )
                raise DataError(f"{msg}; {CHANGED}", source=source, row=line, field="primary")
            primary[evaluator] = (line, metric)
    for evaluator, line in first.items():
        if evaluator not in primary:
            msg = f"evaluator {_q(evaluator)} has no primary metric; {CHANGED}"
            raise DataError(msg, source=source, row=line, field="primary")


def check_scores(
    scores: pd.DataFrame,
    metrics: pd.DataFrame,
    dataset: LlmDataset,
    path: Path,
    lines: list[int] | None,
    dataset_name: str,
) -> None:
    """Each score of a metric ``metrics.jsonl`` lists and of a row the dataset has, and each once."""
    import pandas as pd

    def row(i: int) -> int:
        return lines[i] if lines is not None else i + 1

    source = str(path)
    known = set(zip(metrics["evaluator"], metrics["metric"], strict=True))
    evaluators = list(dict.fromkeys(metrics["evaluator"]))
    pairs = scores[["evaluator", "metric"]].drop_duplicates()  # on the categoricals' codes: cheap
    for i, evaluator, metric in zip(pairs.index, pairs["evaluator"], pairs["metric"], strict=True):
        if evaluator not in evaluators:
            msg = f"a score of evaluator {_q(evaluator)}, which metrics.jsonl does not list (it lists {evaluators})"
            raise DataError(f"{msg}; {CHANGED}", source=source, row=row(int(i)), field="evaluator")
        if (evaluator, metric) not in known:
            msg = f"a score of metric {_q(metric)}, which evaluator {_q(evaluator)} does not report in metrics.jsonl"
            raise DataError(f"{msg}; {CHANGED}", source=source, row=row(int(i)), field="metric")
    rows = {(r.key, r.model_key) for r in dataset.rows}
    keys = scores[["key", "model_key"]].drop_duplicates()
    for i, key, model_key in zip(keys.index, keys["key"], keys["model_key"], strict=True):
        if (key, model_key) not in rows:
            msg = f"scores the row with key {_q(key)} for model {_q(model_key)}, which {dataset_name} does not have"
            raise DataError(f"{msg}; the files were changed after they were saved", source=source, row=row(int(i)))
    codes = pd.DataFrame({c: scores[c].cat.codes for c in KEY_COLUMNS})
    again = codes.duplicated()
    if again.any():
        i = int(again.to_numpy().argmax())
        same = (codes == codes.iloc[i]).all(axis=1).to_numpy()
        j = int(same.argmax())
        key, model_key, evaluator, metric = (scores[c].iloc[i] for c in KEY_COLUMNS)
        msg = (
            f"the score of the row with key {_q(key)} for model {_q(model_key)}, evaluator {_q(evaluator)} "
            f"and metric {_q(metric)} a second time (also row {row(j)})"
        )
        raise DataError(f"{msg}; {CHANGED}", source=source, row=row(i))


def check_aggregates(
    aggregates: pd.DataFrame, lines: list[int], metrics: pd.DataFrame, dataset: LlmDataset, path: Path
) -> None:
    """Each aggregate once, of a model the dataset has and a metric ``metrics.jsonl`` lists."""
    source = str(path)
    known = set(zip(metrics["evaluator"], metrics["metric"], strict=True))
    evaluators = set(metrics["evaluator"])
    models = {r.model_key for r in dataset.rows}
    seen: dict[tuple[str, str, str], int] = {}
    for line, model_key, evaluator, metric, direction in zip(
        lines,
        aggregates["model_key"],
        aggregates["evaluator"],
        aggregates["metric"],
        aggregates["direction"],
        strict=True,
    ):
        if evaluator not in evaluators:
            msg = f"an aggregate of evaluator {_q(evaluator)}, which metrics.jsonl does not list"
            raise DataError(f"{msg}; {CHANGED}", source=source, row=line, field="evaluator")
        if (evaluator, metric) not in known:
            msg = (
                f"an aggregate of metric {_q(metric)}, which evaluator {_q(evaluator)} does not report in metrics.jsonl"
            )
            raise DataError(f"{msg}; {CHANGED}", source=source, row=line, field="metric")
        if model_key not in models:
            msg = f"an aggregate of model {_q(model_key)}, which the dataset does not have"
            raise DataError(f"{msg}; {CHANGED}", source=source, row=line, field="model_key")
        if direction not in _DIRECTIONS:
            raise DataError(
                f"must be 'higher' or 'lower', got {direction!r}"[:120], source=source, row=line, field="direction"
            )
        ident = (model_key, evaluator, metric)
        if ident in seen:
            msg = (
                f"the aggregate of model {_q(model_key)}, evaluator {_q(evaluator)} and metric {_q(metric)} "
                f"a second time (also row {seen[ident]})"
            )
            raise DataError(f"{msg}; {CHANGED}", source=source, row=line)
        seen[ident] = line


def check_dataset(dataset: LlmDataset, path: Path) -> None:
    """Each (key, model) once; each condition well formed (checked once per distinct condition)."""
    from nbeval.data.conditions import parse_condition
    from nbeval.errors import ConditionError

    source = str(path)
    seen: dict[tuple[str, str], int] = {}
    checked: set[str] = set()
    for i, r in enumerate(dataset.rows, 1):
        ident = (r.key, r.model_key)
        if ident in seen:
            msg = f"the row with key {_q(r.key)} for model {_q(r.model_key)} a second time (also row {seen[ident]})"
            raise DataError(f"{msg}; {CHANGED}", source=source, row=i, field="key")
        seen[ident] = i
        condition = r.output_condition
        if condition is not None and condition not in checked:
            try:
                parse_condition(condition)
            except ConditionError as exc:  # its own message points under the text, on more lines
                msg = f"malformed condition: {exc.reason} at position {exc.position}; {CHANGED}"
                raise DataError(msg, source=source, row=i, field="output_condition") from None
            checked.add(condition)


def check_label_lengths(labels: Any, source: str) -> None:
    """Check that no label in ``labels`` is longer than :data:`MAX_LABEL_CHARS`.

    Raise :class:`~nbeval.errors.DataError` naming the first label (a cell of the ``label`` column
    of ``labels``, rows counted from 1) longer than that.
    """
    if "label" not in getattr(labels, "columns", ()):
        return
    for i, value in enumerate(labels["label"], 1):
        if isinstance(value, str) and len(value) > MAX_LABEL_CHARS:
            msg = (
                f"a label of {len(value):,} characters; a label (a verdict or a class name) is at most "
                f"{MAX_LABEL_CHARS:,}"
            )
            raise DataError(msg, source=source, row=i, field="label")


def check_label_file(folder: Path) -> None:
    """Check that ``labels.csv``'s labels are no longer than :data:`MAX_LABEL_CHARS`.

    What else is wrong with the file, :func:`~nbeval.results.storage.labels.load_labels` says.
    """
    import pandas as pd

    path = folder / LABELS_FILE
    if not path.is_file():
        return
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except (ValueError, OSError, pd.errors.ParserError):  # not UTF-8, not CSV: load_labels says so
        return
    if "label" in table.columns:  # measured as set: without the apostrophe saved before a formula
        table["label"] = table["label"].map(csv_unsafe)
    check_label_lengths(table, str(path))
