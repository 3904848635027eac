"""Human labels: what a person says about a judge's verdict on one row, kept as data.

A label belongs to one test case (``key``), one model (``model_key``) and one evaluator, and is a
string: ``"pass"``/``"fail"`` for an evaluator with a pass/fail verdict, or a class label such as
``"toxic"``. Labels come from the CaseExplorer, a DataFrame, a list of dicts or a CSV file with
the columns :data:`LABEL_COLUMNS`; they are saved with the result as ``labels.csv``.

For an evaluator with a pass/fail verdict (see :func:`pass_fail_evaluators`: the bool and rating
evaluators, and any whose rows carry a score and no class label) a label is a verdict, and the
usual ways of writing one are read as ``"pass"``/``"fail"``: ``1``/``0`` (also ``1.0``/``0.0``, as
a pandas column with a gap stores them), ``True``/``False`` and the texts ``pass``/``fail``,
``passed``/``failed``, ``yes``/``no``, ``true``/``false``, ``1``/``0`` in any case
(:data:`PASS_FAIL_WORDS`). Anything else (``"maybe"``, a score such as ``0.7``) is refused with a
:class:`~nbeval.errors.DataError` naming the row, its test case and model, and the label: what
agreement and :func:`nbeval.align` compare is the judge's verdict with the person's, and a number
other than 1/0 is no verdict (on a lower-is-better metric a score of 1 fails, while the label 1
passes). For an evaluator whose rows carry a class label (``classification``) a label is any
non-empty text: a class.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nbeval.data.csvsafe import csv_safe, csv_unsafe
from nbeval.errors import DataError
from nbeval.results.storage.files import write_aside
from nbeval.results.storage.limits import MAX_LABEL_CHARS

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = [
    "LABELS_FILE",
    "LABEL_COLUMNS",
    "PASS_FAIL_WORDS",
    "empty_labels",
    "load_labels",
    "merge_labels",
    "pass_fail_evaluators",
    "read_labels",
    "save_labels",
    "with_saved_labels",
]

#: The columns of a saved result's labels file: whose label it is, and the label.
LABEL_COLUMNS = ["key", "model_key", "evaluator", "label"]
#: The file of a saved result's folder that holds its labels (optional: none when absent).
LABELS_FILE = "labels.csv"
_ON = ["key", "model_key", "evaluator"]
#: Texts read as a pass/fail label for an evaluator with a pass/fail verdict (compared lower-cased).
PASS_FAIL_WORDS = {
    "pass": "pass",
    "fail": "fail",
    "passed": "pass",
    "failed": "fail",
    "yes": "pass",
    "no": "fail",
    "true": "pass",
    "false": "fail",
    "1": "pass",
    "0": "fail",
}


def empty_labels() -> pd.DataFrame:
    """A labels table with no rows."""
    import pandas as pd

    return pd.DataFrame({c: pd.Series(dtype=object) for c in LABEL_COLUMNS})


def read_labels(data: Any, result: EvaluationResult, *, source: str | None = None) -> pd.DataFrame:
    """``data`` (a DataFrame, a list of dicts, or the path of a CSV file) as a checked labels table.

    Every row must name a test case and model the result has, an evaluator it ran, and a label
    that is non-empty text; anything else is a :class:`~nbeval.errors.DataError` naming the row
    (counted from 1, the header not counted) and the field. Surrounding whitespace is trimmed,
    except from a key or model key the result has as it is written.
    """
    import pandas as pd

    if isinstance(data, (str, os.PathLike)):
        source = str(data)
        try:
            df = pd.read_csv(data, dtype=str, keep_default_na=False, encoding="utf-8")
        except FileNotFoundError:
            raise DataError("the labels file does not exist", source=source) from None
        except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise DataError(f"not a readable CSV file of labels ({type(exc).__name__})", source=source) from None
        except OSError as exc:  # a folder, no permission
            raise DataError(f"cannot read the labels file: {exc.strerror or exc}", source=source) from None
        df = df.map(csv_unsafe)
    elif isinstance(data, pd.DataFrame):
        df = data
    elif isinstance(data, list):
        if not all(isinstance(r, dict) for r in data):
            raise DataError(
                "labels given as a list must be dicts with the columns " + ", ".join(LABEL_COLUMNS),
                source=source or "labels",
            )
        df = pd.DataFrame(data)
    else:
        msg = f"labels must be a DataFrame, a list of dicts or a CSV path, got {type(data).__name__}"
        raise DataError(msg, source=source or "labels")
    source = source or "labels"
    missing = [c for c in LABEL_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(
            f"the column is missing (labels need {', '.join(LABEL_COLUMNS)})", source=source, field=missing[0]
        )
    rows = {(r.key, r.model_key) for r in result.dataset.rows}
    # a key or model key the result has is taken as it is, surrounding whitespace and all (a test
    # case's key may have some); other cells are trimmed
    known: dict[str, set[str]] = {"key": {k for k, _ in rows}, "model_key": {m for _, m in rows}}
    evaluators = set(result.evaluators)
    pass_fail = pass_fail_evaluators(result)
    out = []
    for i, rec in enumerate(df[LABEL_COLUMNS].itertuples(index=False, name=None), 1):
        cells: dict[str, str] = {}
        for field, value in zip(LABEL_COLUMNS, rec, strict=True):
            evaluator = cells.get("evaluator", "")
            if field == "label" and evaluator in pass_fail and not _blank(value) and not _too_long(value):
                verdict = _pass_fail(value)
                if verdict not in ("pass", "fail"):
                    raise DataError(_not_a_verdict(value, cells), source=source, row=i, field=field)
                value = verdict
            as_is = isinstance(value, str) and value in known.get(field, ())
            if not as_is and (not isinstance(value, str) or not value.strip()):
                got = "nothing" if value is None or value != value else f"{type(value).__name__} {value!r}"[:60]
                hint = ""
                if field == "label" and got != "nothing" and evaluator in evaluators:
                    hint = (
                        f"; 1/0, True/False and yes/no are read as pass/fail only for an evaluator with a "
                        f"pass/fail verdict, which '{evaluator}' is not"
                    )
                raise DataError(f"must be non-empty text, got {got}{hint}", source=source, row=i, field=field)
            cells[field] = value if as_is else value.strip()
            if field == "label" and len(cells[field]) > MAX_LABEL_CHARS:  # load_result would refuse it
                msg = (
                    f"a label of {len(cells[field]):,} characters; a label (a verdict or a class name) is at "
                    f"most {MAX_LABEL_CHARS:,}"
                )
                raise DataError(msg, source=source, row=i, field=field)
        if cells["evaluator"] not in evaluators:
            msg = f"no evaluator '{cells['evaluator']}' in this result; it has {sorted(evaluators)}"
            raise DataError(msg, source=source, row=i, field="evaluator")
        if (cells["key"], cells["model_key"]) not in rows:
            field = "key" if cells["key"] not in {k for k, _ in rows} else "model_key"
            msg = f"the result has no test case '{cells['key']}' answered by model '{cells['model_key']}'"
            raise DataError(msg, source=source, row=i, field=field)
        out.append(cells)
    table = pd.DataFrame(out, columns=LABEL_COLUMNS) if out else empty_labels()
    # within one input the last label of a row wins, as when a person changes their mind
    return table.drop_duplicates(_ON, keep="last").reset_index(drop=True)


def pass_fail_evaluators(result: EvaluationResult) -> set[str]:
    """Return the evaluators of ``result`` whose human labels are pass/fail verdicts.

    The bool and rating evaluators, and those whose rows carry no label of their own (a score with a
    threshold, which passes or fails the row; a score without one, whose pass/fail labels choose a
    threshold, see :mod:`nbeval.results.statistics.agreement`). ``classification``'s rows carry the
    predicted class, so a label ``1`` there is a class, not a pass.
    """
    from nbeval.evaluators.base import UNRATED_LABELS

    m = result.metrics[result.metrics["primary"].astype(bool)]
    out: set[str] = set()
    s = result.scores
    for name, kind, metric in zip(m["evaluator"], m["kind"], m["metric"], strict=True):
        labels = s.loc[(s["evaluator"] == name) & (s["metric"] == metric), "label"].dropna()
        if kind in ("bool", "rating") or not any(str(x) not in UNRATED_LABELS for x in labels):
            out.add(str(name))
    return out


def _blank(value: Any) -> bool:
    """No label: nothing, NaN (a gap in a pandas column) or only whitespace."""
    return (
        value is None or (isinstance(value, float) and value != value) or (isinstance(value, str) and not value.strip())
    )


def _too_long(value: Any) -> bool:
    return isinstance(value, str) and len(value.strip()) > MAX_LABEL_CHARS


def _not_a_verdict(value: Any, cells: dict[str, str]) -> str:
    """Why ``value`` is no label for the pass/fail evaluator of ``cells``, naming the row."""
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return (
        f"the label {shown} of test case '{cells['key']}', model '{cells['model_key']}' is not a verdict: "
        f"'{cells['evaluator']}' passes or fails a row, so its labels are pass or fail, written pass/fail, "
        "passed/failed, yes/no, true/false or 1/0 (any case; also True/False and the numbers 1/0)"
    )


def _pass_fail(value: Any) -> Any:
    """Return ``value`` as ``"pass"``/``"fail"`` when it is one of the usual ways of writing one.

    See the module docstring for those ways; anything else is returned unchanged.
    """
    import numbers

    if isinstance(value, str):
        return PASS_FAIL_WORDS.get(value.strip().lower(), value)
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "pass" if value else "fail"
    if isinstance(value, numbers.Real) and value in (0, 1):
        return "pass" if value == 1 else "fail"
    return value


def merge_labels(current: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Return ``current`` with ``new`` added.

    A row of ``new`` replaces the label of the same (key, model_key, evaluator) in ``current``.
    """
    import pandas as pd

    if current.empty:
        return new.reset_index(drop=True)
    both = pd.concat([current[LABEL_COLUMNS].astype(object), new[LABEL_COLUMNS].astype(object)], ignore_index=True)
    return both.drop_duplicates(_ON, keep="last").reset_index(drop=True)


def save_labels(folder: str | Path, labels: pd.DataFrame) -> None:
    """Write ``labels`` to ``folder/labels.csv`` (aside first, then renamed over it).

    With no labels, remove a ``labels.csv`` left there by an earlier result so it is not loaded with
    this one. Cells a spreadsheet would run as a formula are written as text (see
    :mod:`nbeval.data.csvsafe`).
    """
    path = Path(folder) / LABELS_FILE
    if labels.empty:
        if path.is_file():
            path.unlink()
        return
    table = labels[LABEL_COLUMNS].astype(object).map(csv_safe)
    write_aside(path, lambda tmp: table.to_csv(tmp, index=False, encoding="utf-8", lineterminator="\r\n"))


def load_labels(folder: str | Path, result: EvaluationResult) -> pd.DataFrame:
    """The labels saved in ``folder`` (checked against ``result``), or none when the folder has no ``labels.csv``."""
    path = Path(folder) / LABELS_FILE
    if not path.exists():
        return empty_labels()
    return read_labels(path, result)


def with_saved_labels(result: EvaluationResult, folder: str | Path) -> EvaluationResult:
    """``result`` with the labels saved in ``folder`` (if any) set on it."""
    labels = load_labels(folder, result)
    if not labels.empty:
        result.set_labels(labels)
    return result
