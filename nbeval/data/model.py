"""The data model: test cases, tests, suites, labs, and the normalized rows an evaluation reads.

The shapes follow the H2O Eval Studio data model (see the spec). Everything here is plain
dataclasses; parsing and validation of files live in :mod:`nbeval.data.readers`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.data.conditions import Condition

__all__ = [
    "DEFAULT_MODEL_KEY",
    "Chunk",
    "LlmDataset",
    "ModelInfo",
    "Relationship",
    "Row",
    "Test",
    "TestCase",
    "TestLab",
    "TestSuite",
    "derive_key",
]

#: The model key given to rows that do not name one.
DEFAULT_MODEL_KEY = "model"



def is_missing(value: Any) -> bool:
    """Whether a field value counts as absent: ``None``, NaN, or an empty list, tuple or dict."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, (list, tuple, dict)) and len(value) == 0

@dataclass(frozen=True)
class Chunk:
    """One piece of retrieved (or expected) context."""

    content: str | None = None
    """The chunk's text (may be absent for an expected context given only as a document)."""
    doc_uri: str | None = None
    """The document the chunk comes from."""

    def to_json(self) -> str | dict[str, Any]:
        """A plain string when there is no ``doc_uri`` (the common case), else a dict."""
        if self.doc_uri is None and self.content is not None:
            return self.content
        out: dict[str, Any] = {}
        if self.content is not None:
            out["content"] = self.content
        if self.doc_uri is not None:
            out["doc_uri"] = self.doc_uri
        return out

    @property
    def text(self) -> str:
        """The text to compare or show: the content, else the document name."""
        return self.content if self.content is not None else (self.doc_uri or "")


@dataclass(frozen=True)
class Relationship:
    """A link from one test case to another, e.g. the original a perturbed case was made from."""

    type: str
    target: str
    target_type: str = "test_case"

    def to_json(self) -> dict[str, str]:
        return {"type": self.type, "target": self.target, "target_type": self.target_type}


def derive_key(prompt: str | None, expected_output: Any = None, condition: str | None = None,
               categories: Sequence[str] = (), expected_context: Sequence[Chunk] = (),
               guidelines: Sequence[str] = ()) -> str:
    """A stable key from a test case's content, so every model's answer to it shares the key.

    Only test-case fields take part (never a model's answer or retrieved context).
    """
    payload = json.dumps(
        [prompt, expected_output, condition or None, list(categories),
         [c.to_json() for c in expected_context], list(guidelines)],
        ensure_ascii=False, sort_keys=True, default=str,
    )
    return "tc-" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


@dataclass
class TestCase:
    """A prompt with what a good answer looks like."""

    __test__ = False  # not a pytest test class

    prompt: str
    key: str | None = None
    categories: list[str] = field(default_factory=list)
    relationships: list[Relationship] = field(default_factory=list)
    expected_output: str | None = None
    condition: str | None = None
    guidelines: list[str] = field(default_factory=list)
    expected_context: list[Chunk] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields nbeval does not know; kept and written back."""

    def __post_init__(self) -> None:
        if self.condition:
            from nbeval.data.conditions import parse_condition

            parse_condition(self.condition)  # a malformed condition fails here, not mid-run

    @property
    def resolved_key(self) -> str:
        """The key, derived from the content when none was given."""
        return self.key or derive_key(self.prompt, self.expected_output, self.condition,
                                      self.categories, self.expected_context, self.guidelines)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"key": self.resolved_key, "prompt": self.prompt,
                               "categories": list(self.categories),
                               "relationships": [r.to_json() for r in self.relationships],
                               "expected_output": self.expected_output,
                               "condition": self.condition}
        if self.guidelines:
            out["guidelines"] = list(self.guidelines)
        if self.expected_context:
            out["expected_context"] = [c.to_json() for c in self.expected_context]
        out.update(self.extra)
        return out


@dataclass
class Test:
    """Test cases that share a corpus (the documents a RAG system answers from)."""

    __test__ = False

    test_cases: list[TestCase] = field(default_factory=list)
    key: str | None = None
    documents: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "documents": list(self.documents),
                "test_cases": [tc.to_json() for tc in self.test_cases], **self.extra}


@dataclass
class TestSuite:
    """A named set of tests."""

    __test__ = False

    name: str = ""
    description: str = ""
    tests: list[Test] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def test_cases(self) -> list[TestCase]:
        return [tc for t in self.tests for tc in t.test_cases]

    def add_test_case(self, case: TestCase, test: Test | None = None) -> TestCase:
        """Add ``case`` to ``test`` (or to the last test, creating one when there is none)."""
        if test is None:
            if not self.tests:
                self.tests.append(Test())
            test = self.tests[-1]
        elif test not in self.tests:
            self.tests.append(test)
        test.test_cases.append(case)
        return case

    def to_dataset(self) -> LlmDataset:
        """The suite as unanswered rows (one per test case, ``actual_output`` empty)."""
        rows = [Row.from_test_case(tc, corpus=t.documents) for t in self.tests for tc in t.test_cases]
        return LlmDataset(rows)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description,
                "tests": [t.to_json() for t in self.tests], **self.extra}

    @classmethod
    def from_json(cls, source: Any) -> TestSuite:
        """Load a suite from a path, a JSON string or a parsed dict."""
        from nbeval.data.readers import read_suite

        return read_suite(source)

    def save(self, path: str) -> None:
        from nbeval.data.readers import write_json

        write_json(self.to_json(), path)


@dataclass
class ModelInfo:
    """A model that answered a lab's test cases."""

    key: str
    name: str | None = None
    model_type: str | None = None
    llm_model_name: str | None = None
    connection: str | None = None
    collection_id: str | None = None
    documents: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        out.update(self.extra)
        return out

    @property
    def label(self) -> str:
        return self.name or self.llm_model_name or self.key


#: Row fields in file order; the names are the LLM dataset's (see the spec).
ROW_FIELDS = ("key", "model_key", "input", "corpus", "context", "categories", "relationships",
              "expected_output", "output_condition", "actual_output", "actual_duration", "cost",
              "expected_context", "guidelines", "error")


@dataclass
class Row:
    """One test case answered by one model: what an evaluator reads."""

    input: str | None
    """The prompt (for summarization evaluators: the source document)."""
    key: str = ""
    """The test case's key; shared by every model's answer to it."""
    model_key: str = DEFAULT_MODEL_KEY
    """Which model produced ``actual_output``."""
    corpus: list[str] = field(default_factory=list)
    context: list[Chunk] = field(default_factory=list)
    """Retrieved context, in rank order."""
    categories: list[str] = field(default_factory=list)
    relationships: list[Relationship] = field(default_factory=list)
    expected_output: str | None = None
    output_condition: str | None = None
    actual_output: str | None = None
    actual_duration: float | None = None
    cost: float | None = None
    expected_context: list[Chunk] = field(default_factory=list)
    guidelines: list[str] = field(default_factory=list)
    error: str | None = None
    """Why collecting this answer failed, when it did."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields nbeval does not know; kept and written back."""

    def __post_init__(self) -> None:
        if not self.key:
            self.key = derive_key(self.input, self.expected_output, self.output_condition,
                                  self.categories, self.expected_context, self.guidelines)

    @cached_property
    def condition(self) -> Condition | None:
        """``output_condition`` parsed (``None`` when empty)."""
        if not self.output_condition:
            return None
        from nbeval.data.conditions import parse_condition

        return parse_condition(self.output_condition)

    @property
    def context_texts(self) -> list[str]:
        return [c.text for c in self.context]

    @property
    def perturbation_source(self) -> str | None:
        """The key of the test case this one was perturbed from, if any."""
        for r in self.relationships:
            if r.type == "perturbation_source":
                return r.target
        return None

    @classmethod
    def from_test_case(cls, case: TestCase, *, corpus: Sequence[str] = (),
                       model_key: str = DEFAULT_MODEL_KEY) -> Row:
        return cls(input=case.prompt, key=case.resolved_key, model_key=model_key,
                   corpus=list(corpus), categories=list(case.categories),
                   relationships=list(case.relationships), expected_output=case.expected_output,
                   output_condition=case.condition, expected_context=list(case.expected_context),
                   guidelines=list(case.guidelines), extra=dict(case.extra))

    def with_answer(self, **changes: Any) -> Row:
        """A copy with model-side fields (answer, context, duration, cost, error) replaced."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ROW_FIELDS:
            value = getattr(self, name)
            if name in ("context", "expected_context"):
                value = [c.to_json() for c in value]
            elif name == "relationships":
                value = [r.to_json() for r in value]
            elif isinstance(value, list):
                value = list(value)
            out[name] = value
        out.update(self.extra)
        return out


class LlmDataset:
    """The normalized rows of an evaluation: one per (test case, model)."""

    def __init__(self, rows: Iterable[Row] = (), *, source: str | None = None) -> None:
        self.rows: list[Row] = list(rows)
        self.source = source

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_json(cls, source: Any) -> LlmDataset:
        """From a path, JSON text or parsed object in any shape nbeval reads (see the README)."""
        from nbeval.data.readers import read_dataset

        return read_dataset(source)

    @classmethod
    def from_records(cls, records: Iterable[dict[str, Any]], *, source: str | None = None) -> LlmDataset:
        from nbeval.data.readers import rows_from_records

        return cls(rows_from_records(list(records), source=source or "records"), source=source)

    @classmethod
    def from_csv(cls, path: str) -> LlmDataset:
        from nbeval.data.readers import read_csv

        return read_csv(path)

    @classmethod
    def from_pandas(cls, df: pd.DataFrame) -> LlmDataset:
        from nbeval.data.readers import read_pandas

        return read_pandas(df)

    # -- export ------------------------------------------------------------------------------

    def to_records(self) -> list[dict[str, Any]]:
        return [r.to_json() for r in self.rows]

    def to_json(self, path: str | None = None) -> dict[str, Any]:
        """The dataset as ``{"inputs": [...]}``; written to ``path`` when given."""
        data = {"inputs": self.to_records()}
        if path is not None:
            from nbeval.data.readers import write_json

            write_json(data, path)
        return data

    def to_csv(self, path: str | None = None) -> str:
        from nbeval.data.readers import write_csv

        return write_csv(self, path)

    def to_pandas(self) -> pd.DataFrame:
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
        return list(dict.fromkeys(r.model_key for r in self.rows))

    @property
    def keys(self) -> list[str]:
        return list(dict.fromkeys(r.key for r in self.rows))

    def has_field(self, name: str) -> bool:
        """Whether any row has a non-empty value for ``name``."""
        return any(not is_missing(getattr(r, name, None)) for r in self.rows)


@dataclass
class TestLab:
    """A suite completed with models' answers (the H2O Eval Studio "test lab")."""

    __test__ = False

    name: str = ""
    description: str = ""
    raw_dataset: LlmDataset = field(default_factory=LlmDataset)
    dataset: LlmDataset = field(default_factory=LlmDataset)
    models: list[ModelInfo] = field(default_factory=list)
    llm_model_names: list[str] = field(default_factory=list)
    docs_cache: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, source: Any) -> TestLab:
        from nbeval.data.readers import read_lab

        return read_lab(source)

    def to_json(self, path: str | None = None) -> dict[str, Any]:
        data = {"name": self.name, "description": self.description,
                "raw_dataset": {"inputs": self.raw_dataset.to_records()},
                "dataset": {"inputs": self.dataset.to_records()},
                "models": [m.to_json() for m in self.models],
                "llm_model_names": list(self.llm_model_names),
                "docs_cache": dict(self.docs_cache), **self.extra}
        if path is not None:
            from nbeval.data.readers import write_json

            write_json(data, path)
        return data

    def model_label(self, model_key: str) -> str:
        for m in self.models:
            if m.key == model_key:
                return m.label
        return model_key
