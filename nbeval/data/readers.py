"""Loading datasets, suites and labs from any source, in every shape nbeval accepts.

Shapes read (detected from the content, not the file name):

* an LLM dataset: ``{"inputs": [row, ...]}`` or a bare list of rows (``input``, ``actual_output``...);
* a test lab: ``{"raw_dataset": ..., "dataset": ..., "models": [...]}``;
* a test suite ``{"name", "tests": [...]}``, a test ``{"documents", "test_cases"}``, a test case;
* agent-evaluation eval sets: ``request``, ``response``, ``expected_response``,
  ``retrieved_context[].content/.doc_uri``, ``expected_retrieved_context[].doc_uri``, ``guidelines``;
* DB-GPT evaluation records: ``query``, ``contexts``, ``prediction``, ``doc_name``;
* CSV and pandas DataFrames with the LLM dataset's columns (lists as JSON in the cell).

JSON is read leniently: trailing commas (as in some published examples) are accepted. Files are
UTF-8, with or without a byte-order mark (as Excel writes them). Every problem raises
:class:`~nbeval.errors.DataError` naming the source, the row and the field; what loads but was
repaired or looks wrong (text that cannot be encoded, a key given twice in one JSON object, one
key with different prompts for two models, a relationship pointing at no key) is a
:class:`~nbeval.data.fields.DataWarning` naming them.

The work is done below this module, each part with one job: :mod:`~nbeval.data.jsonio` (JSON
files and text, shape detection), :mod:`~nbeval.data.tabular` (CSV and DataFrames),
:mod:`~nbeval.data.styles` (other tools' column names), :mod:`~nbeval.data.fields` (checks per
field) and the classes of :mod:`~nbeval.data.model`. Inside ``nbeval.data`` imports point one
way, down that list (pyproject.toml's import-linter contract): the model never imports readers.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from nbeval.data.jsonio import SUITE_SHAPES, is_csv_path, json_shape, load_json, write_json
from nbeval.data.model import LlmDataset, TestLab, TestSuite
from nbeval.data.rows import rows_from_records
from nbeval.data.tabular import is_dataframe

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "load",
    "load_json",
    "read_csv",
    "read_dataset",
    "read_lab",
    "read_pandas",
    "read_suite",
    "rows_from_records",
    "write_csv",
    "write_json",
]

_is_dataframe = is_dataframe  # the name nbeval.engine imports


def load(source: Any) -> LlmDataset | TestLab | TestSuite:
    """Load any supported file or object: a dataset, a lab or a suite, as found."""
    if is_dataframe(source) or is_csv_path(source):
        return LlmDataset.from_json(source)
    data, name = load_json(source)
    shape = json_shape(data)
    if shape == "lab":
        return TestLab.from_dict(data, source=name)
    if shape in SUITE_SHAPES:
        return TestSuite.from_dict(data, source=name)
    return LlmDataset.from_dict(data, source=name)


def read_dataset(source: Any) -> LlmDataset:
    """A dataset from any shape: a lab gives its answered ``dataset``, a suite its unanswered rows."""
    return LlmDataset.from_json(source)


def read_lab(source: Any) -> TestLab:
    """A test lab from a path, JSON text or parsed object."""
    return TestLab.from_json(source)


def read_suite(source: Any) -> TestSuite:
    """A test suite (or one test, or one test case) from a path, JSON text or parsed object."""
    return TestSuite.from_json(source)


def read_csv(path: str | os.PathLike[str]) -> LlmDataset:
    """Rows from a CSV written by :func:`write_csv` or by hand (list cells as JSON or plain text)."""
    return LlmDataset.from_csv(path)


def read_pandas(df: pd.DataFrame) -> LlmDataset:
    """Rows from a DataFrame with the LLM dataset's columns (or a supported column style)."""
    return LlmDataset.from_pandas(df)


def write_csv(dataset: LlmDataset, path: str | os.PathLike[str] | None = None) -> str:
    """Write rows as CSV; list fields and non-scalar extras are JSON in their cells."""
    return dataset.to_csv(path)
