"""The data model: test suites, datasets of answered rows, and labs.

The shapes follow the H2O Eval Studio data model (see the spec). Everything here is plain
dataclasses that convert to and from their JSON form (``from_dict`` / ``to_json``), checking every
field as it is read; a bad one raises :class:`~nbeval.errors.DataError` naming the source, row and
field. The methods that take a path (``from_json``, ``from_csv``, ``to_json(path)``, ``save``)
are thin: files are parsed and written by :mod:`nbeval.data.jsonio` and
:mod:`nbeval.data.tabular`, and :mod:`nbeval.data.readers` loads any source in any shape.

This module is the public home of every data-model class, including those defined below it:
:class:`Chunk` and :class:`Relationship` (:mod:`nbeval.data.fields`), :class:`TestCase` and
:class:`Test` (:mod:`nbeval.data.cases`), :class:`Row` (:mod:`nbeval.data.rows`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from nbeval.data.cases import Test, TestCase
from nbeval.data.fields import (
    DEFAULT_MODEL_KEY,
    ROW_FIELDS,
    Chunk,
    Relationship,
    as_list,
    check_str,
    check_str_list,
    derive_key,
    is_missing,
    repair_fields,
    warn_data,
)
from nbeval.data.jsonio import SUITE_SHAPES, is_csv_path, json_shape, load_json, write_json
from nbeval.data.rows import Row, field_missing, rows_from_records
from nbeval.data.tabular import csv_records, dataframe_records, is_dataframe, records_to_csv
from nbeval.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DEFAULT_MODEL_KEY",
    "ROW_FIELDS",
    "Chunk",
    "LlmDataset",
    "ModelInfo",
    "Relationship",
    "Row",
    "Test",
    "TestCase",
    "TestLab",
    "TestSuite",
    "count_nan_expected",
    "derive_key",
    "is_missing",
    "warn_nan_expected",
]


@dataclass
class TestSuite:
    """A named set of tests."""

    __test__ = False

    name: str = ""
    """The suite's name."""
    description: str = ""
    """What the suite is for."""
    tests: list[Test] = field(default_factory=list)
    """The tests, each a group of test cases sharing a corpus."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields nbeval does not know; kept and written back."""

    @property
    def test_cases(self) -> list[TestCase]:
        """Every test case of every test, in order."""
        return [tc for t in self.tests for tc in t.test_cases]

    def add_test_case(self, case: TestCase, test: Test | None = None) -> TestCase:
        """Add ``case`` to ``test`` (or to the last test, creating one when there is none).

        Args:
            case: The test case to add.
            test: The test to add it to, appended to the suite when it is not one of its tests yet;
                ``None`` for the suite's last test.

        Returns:
            ``case`` itself.
        """
        if test is None:
            if not self.tests:
                self.tests.append(Test())
            test = self.tests[-1]
        elif test not in self.tests:
            self.tests.append(test)
        test.test_cases.append(case)
        return case

    def to_dataset(self) -> LlmDataset:
        """The suite as unanswered rows, ready for models to answer.

        Returns:
            A dataset of one row per test case (``actual_output`` empty), each with its test's
            documents as its ``corpus``.
        """
        rows = [Row.from_test_case(tc, corpus=t.documents) for t in self.tests for tc in t.test_cases]
        return LlmDataset(rows)

    def to_json(self) -> dict[str, Any]:
        """The suite as a JSON-ready dict, in the shape the readers load back.

        Returns:
            ``name``, ``description`` and ``tests`` (each as :meth:`Test.to_json` writes it), the
            extra fields beside them.
        """
        return {
            "name": self.name,
            "description": self.description,
            "tests": [t.to_json() for t in self.tests],
            **self.extra,
        }

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<object>") -> TestSuite:
        """Read a suite from its parsed JSON, checking every field.

        The JSON may be the suite ``{"name", "tests": [...]}``, one test ``{"documents",
        "test_cases"}`` or one test case ``{"prompt", ...}``. Keys must be unique. A relationship
        pointing at a key that no test case has, and a bare ``NaN`` expected output, are each a
        :class:`~nbeval.data.fields.DataWarning`.

        Args:
            data: The parsed JSON.
            source: Where it comes from (a file name), named in errors and warnings.

        Returns:
            The suite; a single test or test case is wrapped in one.

        Raises:
            DataError: When ``data`` is not a suite, a test or a test case, a test is not a JSON
                object, two test cases share a key, or a field is bad; the message names
                ``source``, the test case and the field.
        """
        if not isinstance(data, dict) or json_shape(data) not in SUITE_SHAPES:
            raise DataError("expected a test suite (an object with 'tests')", source=source)
        if "prompt" in data:
            data = {"tests": [{"test_cases": [data]}]}
        elif "test_cases" in data:
            data = {"tests": [data]}
        top, _ = repair_fields({k: v for k, v in data.items() if k != "tests"}, source, None)
        tests: list[Test] = []
        seen: dict[str, str] = {}
        cases = [
            c
            for t in as_list(data.get("tests"), source, "tests")
            if isinstance(t, dict) and isinstance(t.get("test_cases"), list)
            for c in t["test_cases"]
        ]
        warn_nan_expected(count_nan_expected(cases), source, "test case")
        for ti, t in enumerate(as_list(data.get("tests"), source, "tests"), 1):
            if not isinstance(t, dict):
                raise DataError(
                    f"a test must be a JSON object with 'test_cases', got {type(t).__name__}",
                    source=source,
                    row=f"tests[{ti}]",
                )
            cases = []
            for ci, c in enumerate(as_list(t.get("test_cases"), source, f"tests[{ti}].test_cases"), 1):
                where = f"tests[{ti}].test_cases[{ci}]"
                case = TestCase.from_dict(c, source=source, where=where)
                k = case.resolved_key
                if k in seen:
                    raise DataError(f"duplicate key '{k}' (also at {seen[k]})", source=source, row=where, field="key")
                seen[k] = where
                cases.append(case)
            info, _ = repair_fields({k: v for k, v in t.items() if k != "test_cases"}, source, f"tests[{ti}]")
            tests.append(
                Test(
                    test_cases=cases,
                    key=check_str(info.get("key"), source, f"tests[{ti}]", "key"),
                    documents=check_str_list(info.get("documents"), source, f"tests[{ti}]", "documents"),
                    extra={k: v for k, v in info.items() if k not in ("key", "documents")},
                )
            )
        for where, case in zip(seen.values(), (c for t in tests for c in t.test_cases), strict=True):
            _warn_links(case.relationships, seen, source, where)  # seen: every case's key, in order
        return cls(
            name=check_str(top.get("name"), source, None, "name") or "",
            description=check_str(top.get("description"), source, None, "description") or "",
            tests=tests,
            extra={k: v for k, v in top.items() if k not in ("name", "description")},
        )

    @classmethod
    def from_json(cls, source: Any) -> TestSuite:
        """Load a suite from a path, a JSON string or a parsed dict.

        Args:
            source: A path to a JSON file, JSON text, or the parsed JSON (see :meth:`from_dict` for
                its shapes).

        Returns:
            The suite.
        """
        data, name = load_json(source)
        return cls.from_dict(data, source=name)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the suite as JSON to ``path``.

        Args:
            path: The file to write, as :meth:`to_json` gives the suite.
        """
        write_json(self.to_json(), path)


#: The fields that hold a row's or a test case's expected output, in the shapes nbeval reads.
_EXPECTED_FIELDS = ("expected_output", "expected_response")


def count_nan_expected(records: Iterable[Any]) -> int:
    """How many of ``records`` (parsed JSON objects) give the bare ``NaN`` as their expected output."""
    return sum(
        1
        for r in records
        if isinstance(r, dict) and any(isinstance(r.get(f), float) and math.isnan(r[f]) for f in _EXPECTED_FIELDS)
    )


def warn_nan_expected(n: int, source: str, what: str = "row") -> None:
    """Warn once, naming ``source``, when ``n`` of its records give ``NaN`` as the expected output.

    The warning is one :class:`~nbeval.data.fields.DataWarning` (``n`` as
    :func:`count_nan_expected` counts it); nothing happens when ``n`` is 0.

    ``NaN`` is no JSON value, but Python's parser and pandas' writer accept it; it is read as a
    missing expected output (evaluators that need one skip those rows, saying so), which would
    otherwise go unnoticed.
    """
    if n:
        many = n != 1
        warn_data(
            f"{n} {what}{'s give' if many else ' gives'} NaN as the expected output; NaN is not a JSON "
            f"value and is read as no expected output (evaluators that need one skip "
            f"{'them' if many else 'it'})",
            source=source,
            stacklevel=4,
        )


def _warn_links(relationships: list[Relationship], keys: dict[str, Any], source: str, where: Any) -> None:
    for j, rel in enumerate(relationships):
        if rel.target_type == "test_case" and rel.target not in keys:
            warn_data(
                f"the relationship '{rel.type}' points at the key '{rel.target}', which no test case has",
                source=source,
                row=where,
                field=f"relationships[{j}]",
                stacklevel=4,
            )


_MODEL_FIELDS = frozenset({"key", "name", "model_type", "llm_model_name", "connection", "collection_id", "documents"})


@dataclass
class ModelInfo:
    """A model that answered a lab's test cases."""

    key: str
    """The model's key, which its rows name as their ``model_key``."""
    name: str | None = None
    """The display name, when there is one."""
    model_type: str | None = None
    """The kind of model, e.g. ``rag`` or ``llm``, when given."""
    llm_model_name: str | None = None
    """The name of the LLM behind it, when given."""
    connection: str | None = None
    """Where the model was reached (e.g. its base URL), when given."""
    collection_id: str | None = None
    """The document collection a RAG model answers from, when given."""
    documents: list[str] = field(default_factory=list)
    """The documents the model was given."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields nbeval does not know; kept and written back."""

    @classmethod
    def from_dict(cls, m: Any, *, source: str = "<object>", where: str = "models[1]") -> ModelInfo:
        """Read a model from its entry in a lab's ``models``; it needs a ``key``.

        Args:
            m: The parsed JSON object of the entry.
            source: Where it comes from (a file name), named in errors.
            where: Which entry it is (e.g. ``models[1]``), named in errors.

        Returns:
            The model; fields nbeval does not know are kept in ``extra``.

        Raises:
            DataError: When ``m`` is not a JSON object or has no ``key``.
        """
        if not isinstance(m, dict) or m.get("key") in (None, ""):
            raise DataError("each model needs a 'key'", source=source, row=where, field="key")
        m, _ = repair_fields(m, source, where)
        known = {k: v for k, v in m.items() if k in _MODEL_FIELDS}
        known["key"] = check_str(m["key"], source, where, "key")
        known["documents"] = check_str_list(m.get("documents"), source, where, "documents")
        return cls(**known, extra={k: v for k, v in m.items() if k not in _MODEL_FIELDS})

    def to_json(self) -> dict[str, Any]:
        """The model as a JSON-ready dict.

        Returns:
            Every field by name, the extra fields beside the known ones.
        """
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        out.update(self.extra)
        return out

    @property
    def label(self) -> str:
        """The name to show for this model: its display name, else its model name, else its key."""
        return self.name or self.llm_model_name or self.key


class LlmDataset:
    """The normalized rows of an evaluation: one per (test case, model).

    Args:
        rows: The rows, kept in ``rows`` as a list.
        source: Where the rows come from (a file name), when known.
    """

    def __init__(self, rows: Iterable[Row] = (), *, source: str | None = None) -> None:
        self.rows: list[Row] = list(rows)
        self.source = source

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_json(cls, source: Any) -> LlmDataset:
        """Load a dataset from a file, JSON text, a parsed object or a DataFrame, in any shape nbeval reads.

        A lab gives its answered ``dataset``, a suite its unanswered rows (see the README for the
        shapes).

        Args:
            source: A path (JSON, JSONL or CSV), JSON text, the parsed JSON or a pandas DataFrame.

        Returns:
            The dataset.
        """
        if is_dataframe(source):
            return cls.from_pandas(source)
        if is_csv_path(source):
            return cls.from_csv(source)
        data, name = load_json(source)
        shape = json_shape(data)
        if shape == "lab":
            return TestLab.from_dict(data, source=name).dataset
        if shape in SUITE_SHAPES:
            return TestSuite.from_dict(data, source=name).to_dataset()
        return cls.from_dict(data, source=name)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<object>") -> LlmDataset:
        """Read a dataset from a parsed LLM dataset, checking every row.

        Args:
            data: ``{"inputs": [row, ...]}``, a list of rows, or one row.
            source: Where it comes from (a file name), named in errors and warnings.

        Returns:
            The dataset.

        Raises:
            DataError: When ``data`` is none of those shapes (``inputs`` not a list included), or a
                row is bad.
        """
        if isinstance(data, dict) and "inputs" in data:
            records = data["inputs"]
            if not isinstance(records, list):
                raise DataError("'inputs' must be a list of rows", source=source, field="inputs")
        elif isinstance(data, dict):
            records = [data]
        elif isinstance(data, list):
            records = data
        else:
            raise DataError("expected a JSON object or a list of rows", source=source)
        if isinstance(records, list):
            warn_nan_expected(count_nan_expected(records), source)
        return cls(rows_from_records(records, source=source), source=source)

    @classmethod
    def from_records(cls, records: Iterable[dict[str, Any]], *, source: str | None = None) -> LlmDataset:
        """A dataset of plain dicts, one row each (the record format of the readers).

        Args:
            records: The rows as dicts, in any supported column style.
            source: What names the records in error messages (``"records"`` when not given).

        Returns:
            The dataset.
        """
        return cls(rows_from_records(list(records), source=source or "records"), source=source)

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str]) -> LlmDataset:
        """Read a dataset from a CSV written by :meth:`to_csv` or by hand (see :mod:`nbeval.data.tabular`).

        Args:
            path: The CSV file.

        Returns:
            The dataset, its ``source`` the path.
        """
        name = str(path)
        return cls(rows_from_records(csv_records(path), source=name), source=name)

    @classmethod
    def from_pandas(cls, df: pd.DataFrame) -> LlmDataset:
        """Read a dataset from a DataFrame with the LLM dataset's columns (or a supported column style).

        Args:
            df: The DataFrame, one row per row.

        Returns:
            The dataset.
        """
        return cls(rows_from_records(dataframe_records(df), source="DataFrame"), source="DataFrame")

    # -- export ------------------------------------------------------------------------------

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as JSON-ready dicts, which :meth:`from_records` reads back.

        Returns:
            One dict per row, as :meth:`Row.to_json` writes it.
        """
        return [r.to_json() for r in self.rows]

    def to_json(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The dataset as ``{"inputs": [...]}``; written to ``path`` when given.

        Args:
            path: The JSON file to write, or ``None`` to write nothing.

        Returns:
            The JSON data, ``inputs`` holding one dict per row.
        """
        data = {"inputs": self.to_records()}
        if path is not None:
            write_json(data, path)
        return data

    def to_csv(self, path: str | os.PathLike[str] | None = None) -> str:
        """The rows as CSV text, written to ``path`` when given.

        List fields and non-text extras are JSON in their cells.

        Args:
            path: The CSV file to write, or ``None`` to write nothing.

        Returns:
            The CSV text.
        """
        return records_to_csv(self.to_records(), path)

    def to_pandas(self) -> pd.DataFrame:
        """The rows as a pandas DataFrame, one column per row field.

        Returns:
            The DataFrame, one row per row.
        """
        import pandas as pd

        return pd.DataFrame(self.to_records())

    # -- access ------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self.rows)

    def __getitem__(self, i: int) -> Row:
        return self.rows[i]

    def __repr__(self) -> str:
        return f"LlmDataset({len(self.rows)} rows, {len(self.model_keys)} models, {len(self.keys)} test cases)"

    @property
    def model_keys(self) -> list[str]:
        """The distinct model keys, in the order they first appear."""
        return list(dict.fromkeys(r.model_key for r in self.rows))

    @property
    def keys(self) -> list[str]:
        """The distinct test case keys, in the order they first appear."""
        return list(dict.fromkeys(r.key for r in self.rows))

    def has_field(self, name: str) -> bool:
        """Whether any row has a value for the field ``name``.

        A value is one that is not missing: non-empty, or ``[]`` where that says something
        (:data:`~nbeval.data.conversation.EMPTY_IS_A_VALUE`).

        Args:
            name: The row field.

        Returns:
            ``True`` when at least one row has a value for it.
        """
        return any(not field_missing(name, getattr(r, name, None)) for r in self.rows)


_LAB_FIELDS = frozenset({"name", "description", "raw_dataset", "dataset", "models", "llm_model_names", "docs_cache"})


@dataclass
class TestLab:
    """A suite completed with models' answers (the H2O Eval Studio "test lab")."""

    __test__ = False

    name: str = ""
    """The lab's name."""
    description: str = ""
    """What the lab is for."""
    raw_dataset: LlmDataset = field(default_factory=LlmDataset)
    """The rows before the models answered: the suite's test cases, unanswered."""
    dataset: LlmDataset = field(default_factory=LlmDataset)
    """The answered rows: one per test case and model; what :meth:`LlmDataset.from_json` reads
    from a lab."""
    models: list[ModelInfo] = field(default_factory=list)
    """The models that answered."""
    llm_model_names: list[str] = field(default_factory=list)
    """The names of the models' LLMs."""
    docs_cache: dict[str, str] = field(default_factory=dict)
    """What the lab keeps for each document, by the document's name (Eval Studio's labs give the
    local file each one was downloaded to)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields nbeval does not know; kept and written back."""

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<object>") -> TestLab:
        """Read a lab from its parsed JSON, checking every field.

        Args:
            data: The parsed JSON, ``{"raw_dataset": ..., "dataset": ..., "models": [...]}``.
            source: Where it comes from (a file name), named in errors and warnings.

        Returns:
            The lab.

        Raises:
            DataError: When ``data`` is not a lab, ``docs_cache`` is not an object, ``raw_dataset``
                or ``dataset`` is not a dataset or a list of rows, or a field is bad.
        """
        if json_shape(data) != "lab":
            raise DataError("expected a test lab (an object with 'dataset' and 'models')", source=source)
        models = [
            ModelInfo.from_dict(m, source=source, where=f"models[{i}]")
            for i, m in enumerate(as_list(data.get("models"), source, "models"), 1)
        ]
        sections = [data.get(k) for k in ("raw_dataset", "dataset")]
        warn_nan_expected(
            count_nan_expected(
                r
                for s in sections
                if isinstance(s, (dict, list))
                for r in ((s.get("inputs") if isinstance(s, dict) else s) or [])
            ),
            source,
        )

        def part(key: str) -> LlmDataset:
            section = data.get(key)
            records = section.get("inputs") if isinstance(section, dict) else section
            if records is None:
                records = []
            if not isinstance(records, list):
                msg = f"'{key}' must be a dataset ({{\"inputs\": [rows]}}) or a list of rows"
                raise DataError(msg, source=source, field=key)
            rows = rows_from_records(records, source=f"{source} ({key})", check_links=key == "dataset")
            return LlmDataset(rows, source=source)

        top, _ = repair_fields(
            {k: v for k, v in data.items() if k not in ("raw_dataset", "dataset", "models")}, source, None
        )
        docs_cache = top.get("docs_cache") or {}
        if not isinstance(docs_cache, dict):
            raise DataError("must be an object (document to text)", source=source, field="docs_cache")
        return cls(
            name=check_str(top.get("name"), source, None, "name") or "",
            description=check_str(top.get("description"), source, None, "description") or "",
            raw_dataset=part("raw_dataset"),
            dataset=part("dataset"),
            models=models,
            llm_model_names=check_str_list(top.get("llm_model_names"), source, None, "llm_model_names"),
            docs_cache=dict(docs_cache),
            extra={k: v for k, v in top.items() if k not in _LAB_FIELDS},
        )

    @classmethod
    def from_json(cls, source: Any) -> TestLab:
        """Load a lab from a path, a JSON string or a parsed dict.

        Args:
            source: A path to a JSON file, JSON text, or the parsed JSON (see :meth:`from_dict`).

        Returns:
            The lab.
        """
        data, name = load_json(source)
        return cls.from_dict(data, source=name)

    def to_json(self, path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """The lab as JSON data; written to ``path`` when given.

        Args:
            path: The JSON file to write, or ``None`` to write nothing.

        Returns:
            The JSON data, in the shape :meth:`from_dict` reads back.
        """
        data = {
            "name": self.name,
            "description": self.description,
            "raw_dataset": {"inputs": self.raw_dataset.to_records()},
            "dataset": {"inputs": self.dataset.to_records()},
            "models": [m.to_json() for m in self.models],
            "llm_model_names": list(self.llm_model_names),
            "docs_cache": dict(self.docs_cache),
            **self.extra,
        }
        if path is not None:
            write_json(data, path)
        return data

    def model_label(self, model_key: str) -> str:
        """The display name of the model ``model_key`` (see :attr:`ModelInfo.label`).

        Args:
            model_key: The model's key.

        Returns:
            The name to show for the model; the key itself for a model the lab does not list.
        """
        for m in self.models:
            if m.key == model_key:
                return m.label
        return model_key
