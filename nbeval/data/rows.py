"""A row: one test case answered by one model, the unit every evaluator reads.

:meth:`Row.from_record` reads a row from a record in any supported column style, checking every
field; :func:`rows_from_records` reads many and rejects a test case's key given twice for one
model. Datasets, suites and labs are in :mod:`nbeval.data.model`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nbeval.data.cases import TestCase
from nbeval.data.fields import (
    DEFAULT_MODEL_KEY,
    ROW_FIELDS,
    Chunk,
    Relationship,
    check_chunks,
    check_condition,
    check_guidelines,
    check_number,
    check_relationships,
    check_str,
    check_str_list,
    check_text,
    derive_key,
)
from nbeval.data.styles import normalize_record
from nbeval.errors import DataError

if TYPE_CHECKING:
    from nbeval.data.conditions import Condition

__all__ = ["Row", "rows_from_records"]


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

    @classmethod
    def from_record(cls, record: dict[str, Any], *, source: str = "records", row: int = 1) -> Row:
        """A row from a record in any supported column style (see :mod:`nbeval.data.styles`);
        a bad field raises :class:`~nbeval.errors.DataError` naming ``source``, ``row`` and the field."""
        rec = normalize_record(record)
        if rec.get("input") is None:
            raise DataError("every row needs an 'input' (the prompt)", source=source, row=row, field="input")
        model_key = rec.get("model_key")
        model_key = DEFAULT_MODEL_KEY if model_key in (None, "") else model_key
        return cls(
            input=check_text(rec.get("input"), source, row, "input"),
            key=check_str(rec.get("key"), source, row, "key") or "",
            model_key=check_str(model_key, source, row, "model_key") or DEFAULT_MODEL_KEY,
            corpus=check_str_list(rec.get("corpus"), source, row, "corpus"),
            context=check_chunks(rec.get("context"), source, row, "context"),
            categories=check_str_list(rec.get("categories"), source, row, "categories"),
            relationships=check_relationships(rec.get("relationships"), source, row),
            expected_output=check_text(rec.get("expected_output"), source, row, "expected_output"),
            output_condition=check_condition(rec.get("output_condition"), source, row, "output_condition"),
            actual_output=check_text(rec.get("actual_output"), source, row, "actual_output"),
            actual_duration=check_number(rec.get("actual_duration"), source, row, "actual_duration"),
            cost=check_number(rec.get("cost"), source, row, "cost"),
            expected_context=check_chunks(rec.get("expected_context"), source, row, "expected_context"),
            guidelines=check_guidelines(rec.get("guidelines"), source, row),
            error=check_str(rec.get("error"), source, row, "error"),
            extra={k: v for k, v in rec.items() if k not in ROW_FIELDS},
        )

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


def rows_from_records(records: Sequence[Any], *, source: str = "records") -> list[Row]:
    """Validated rows from dict records in any supported column style; a test case's key may
    appear once per model."""
    rows: list[Row] = []
    seen: dict[tuple[str, str], int] = {}
    for i, raw in enumerate(records, 1):
        if not isinstance(raw, dict):
            raise DataError(f"a row must be an object, got {type(raw).__name__}", source=source, row=i)
        row = Row.from_record(raw, source=source, row=i)
        ident = (row.key, row.model_key)
        if ident in seen:
            msg = (f"duplicate key '{row.key}' for model '{row.model_key}' (also row {seen[ident]}); "
                   "give each test case its own key")
            raise DataError(msg, source=source, row=i, field="key")
        seen[ident] = i
        rows.append(row)
    return rows
