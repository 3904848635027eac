"""A test case (a prompt with what a good answer looks like) and a test (cases sharing a corpus).

Both are plain dataclasses; :meth:`TestCase.from_dict` reads one from a JSON object, checking
every field. Suites, rows and labs are in :mod:`nbeval.data.model`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nbeval.data.fields import (
    Chunk,
    Relationship,
    check_chunks,
    check_condition,
    check_guidelines,
    check_relationships,
    check_str,
    check_str_list,
    check_text,
    derive_key,
)
from nbeval.errors import DataError

__all__ = ["Test", "TestCase"]

_CASE_FIELDS = frozenset({"key", "prompt", "categories", "relationships", "expected_output", "condition",
                          "guidelines", "expected_context"})


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

    @classmethod
    def from_dict(cls, c: Any, *, source: str = "<object>", where: str = "test case") -> TestCase:
        """A test case from its JSON object; a bad field raises :class:`~nbeval.errors.DataError`
        naming ``source``, ``where`` (the row) and the field."""
        if not isinstance(c, dict):
            raise DataError("a test case must be a JSON object", source=source, row=where)
        prompt = c.get("prompt")
        if not isinstance(prompt, str):
            raise DataError("a test case needs a text 'prompt'", source=source, row=where, field="prompt")
        return cls(
            prompt=prompt,
            key=check_str(c.get("key"), source, where, "key"),
            categories=check_str_list(c.get("categories"), source, where, "categories"),
            relationships=check_relationships(c.get("relationships"), source, where),
            expected_output=check_text(c.get("expected_output"), source, where, "expected_output"),
            condition=check_condition(c.get("condition"), source, where, "condition"),
            guidelines=check_guidelines(c.get("guidelines"), source, where),
            expected_context=check_chunks(c.get("expected_context"), source, where, "expected_context"),
            extra={k: v for k, v in c.items() if k not in _CASE_FIELDS},
        )

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
