"""A test case (a prompt with what a good answer looks like) and a test (cases sharing a corpus).

Both are plain dataclasses; :meth:`TestCase.from_dict` reads one from a JSON object, checking
every field. Suites, rows and labs are in :mod:`nbeval.data.model`. Text that cannot be encoded
is repaired as in a row (see :mod:`nbeval.data.rows`), noted in :attr:`TestCase.warnings`.

The published H2O Eval Studio suites say what an answer must contain as ``"constraints":
["token", ...]`` (a token ``REGEXP:...`` is a regular expression) rather than as a
``condition``. The field is kept as it was given (in :attr:`TestCase.extra`, written back
unchanged); :attr:`TestCase.output_condition` is what an evaluation checks: the condition and
every constraint, ``(condition) AND "token" AND ...``, so an answer must satisfy both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from nbeval.data.fields import (
    WARNINGS_FIELD,
    Chunk,
    Relationship,
    check_chunks,
    check_condition,
    check_constraints,
    check_guidelines,
    check_named_guidelines,
    check_relationships,
    check_str,
    check_str_list,
    check_text,
    derive_key,
    repair_fields,
    with_constraints,
)
from nbeval.data.text import needs_repair
from nbeval.errors import DataError

__all__ = ["Test", "TestCase"]

_CASE_FIELDS = frozenset(
    {
        "key",
        "prompt",
        "categories",
        "relationships",
        "expected_output",
        "condition",
        "guidelines",
        "expected_context",
        WARNINGS_FIELD,
    }
)


@dataclass
class TestCase:
    """A prompt with what a good answer looks like.

    Each field is described below it. Making a test case checks its ``condition`` and Eval Studio
    ``constraints`` (a malformed one raises :class:`~nbeval.errors.ConditionError` or
    :class:`~nbeval.errors.DataError` at once, not mid-run) and repairs text that cannot be encoded.
    """

    __test__ = False  # not a pytest test class

    prompt: str
    """The prompt put to the model."""
    key: str | None = None
    """The test case's key, shared by every model's answer to it; derived from the content when not
    given (see ``resolved_key``)."""
    categories: list[str] = field(default_factory=list)
    """The categories the test case belongs to."""
    relationships: list[Relationship] = field(default_factory=list)
    """Links to other test cases, e.g. to the original a perturbed case was made from."""
    expected_output: str | None = None
    """The reference answer, when there is one."""
    condition: str | None = None
    """A condition in the condition language (:mod:`nbeval.data.conditions`) that the answer must
    satisfy, when there is one; see ``output_condition`` for what an evaluation checks."""
    guidelines: list[str] = field(default_factory=list)
    """Guidelines a good answer follows, in plain language (all of them in order when they are given
    by name, see ``named_guidelines``)."""
    expected_context: list[Chunk] = field(default_factory=list)
    """The context a retriever should find for the prompt."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields nbeval does not know, and Eval Studio's ``constraints``; kept and written back."""
    warnings: list[str] = field(default_factory=list)
    """What nbeval repaired in this test case when it was read; written as ``nbeval_warnings``."""
    named_guidelines: dict[str, list[str]] = field(default_factory=dict)
    """The guidelines by name, when they were given so (``{"tone": [...], "safety": [...]}``);
    ``guidelines`` is then all of them in order. Written back as the mapping."""

    def __post_init__(self) -> None:
        self.warnings = list(self.warnings)
        if self.named_guidelines:
            self.named_guidelines = {k: list(v) for k, v in self.named_guidelines.items()}
            self.guidelines = [g for items in self.named_guidelines.values() for g in items]
        self._repair()
        if self.condition:
            from nbeval.data.conditions import parse_condition

            parse_condition(self.condition)  # a malformed condition fails here, not mid-run
        check_constraints(self.extra.get("constraints"), None, f"test case '{self.key}'" if self.key else None)

    @property
    def constraints(self) -> list[str]:
        """Eval Studio's ``constraints``: the strings the answer must contain, blank ones left out.

        One starting ``REGEXP:`` is a regular expression.
        """
        return check_constraints(self.extra.get("constraints"), None, None)

    @property
    def output_condition(self) -> str | None:
        """What an evaluation checks the answer against: the condition and every constraint.

        Written ``(condition) AND "a" AND "b"`` (see the module docstring); ``None`` when neither is
        given.
        """
        return with_constraints(self.condition, self.constraints)

    def _repair(self) -> None:
        texts = [
            self.prompt,
            self.key,
            self.expected_output,
            self.condition,
            self.categories,
            self.guidelines,
            self.named_guidelines,
            self.extra,
            [(c.content, c.doc_uri) for c in self.expected_context],
            [(r.type, r.target, r.target_type) for r in self.relationships],
        ]
        if not needs_repair(texts):
            return
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "warnings"}
        values["relationships"] = [r.to_json() for r in self.relationships]
        values["expected_context"] = [c.to_json() for c in self.expected_context]
        fixed, notes = repair_fields(values, None, f"test case '{self.key}'" if self.key else None)
        if not notes:
            return
        fixed["relationships"] = [Relationship(**r) for r in fixed["relationships"]]
        fixed["expected_context"] = [
            Chunk(content=c) if isinstance(c, str) else Chunk(content=c.get("content"), doc_uri=c.get("doc_uri"))
            for c in fixed["expected_context"]
        ]
        for name, value in fixed.items():
            setattr(self, name, value)
        self.warnings.extend(notes)

    @property
    def resolved_key(self) -> str:
        """The key, derived from the content when none was given."""
        return self.key or derive_key(
            self.prompt,
            self.expected_output,
            self.output_condition,
            self.categories,
            self.expected_context,
            self.guidelines,
        )

    @classmethod
    def from_dict(cls, c: Any, *, source: str = "<object>", where: str = "test case") -> TestCase:
        """Read a test case from its JSON object, checking every field.

        Text that cannot be encoded is repaired, each repair a
        :class:`~nbeval.data.fields.DataWarning` and a note in ``warnings``.

        Args:
            c: The parsed JSON object of one test case.
            source: Where the object comes from (a file name), named in errors and warnings.
            where: Which test case it is in ``source`` (the row), named in errors and warnings.

        Returns:
            The test case; fields nbeval does not know are kept in ``extra``.

        Raises:
            DataError: When ``c`` is not a JSON object, has no text ``prompt`` or a field is bad; the
                message names ``source``, ``where`` and the field.
        """
        if not isinstance(c, dict):
            raise DataError("a test case must be a JSON object", source=source, row=where)
        c, notes = repair_fields(c, source, where)
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
            named_guidelines=check_named_guidelines(c.get("guidelines"), source, where),
            expected_context=check_chunks(c.get("expected_context"), source, where, "expected_context"),
            extra=_extra(c, source, where),
            warnings=check_str_list(c.get(WARNINGS_FIELD), source, where, WARNINGS_FIELD) + notes,
        )

    def to_json(self) -> dict[str, Any]:
        """The test case as a JSON-ready dict, in the shape the readers load back.

        Returns:
            The fields by name, with the key resolved (see ``resolved_key``); ``guidelines``,
            ``expected_context`` and ``nbeval_warnings`` only when set, the extra fields beside them.
        """
        out: dict[str, Any] = {
            "key": self.resolved_key,
            "prompt": self.prompt,
            "categories": list(self.categories),
            "relationships": [r.to_json() for r in self.relationships],
            "expected_output": self.expected_output,
            "condition": self.condition,
        }
        if self.named_guidelines:
            out["guidelines"] = {k: list(v) for k, v in self.named_guidelines.items()}
        elif self.guidelines:
            out["guidelines"] = list(self.guidelines)
        if self.expected_context:
            out["expected_context"] = [c.to_json() for c in self.expected_context]
        out.update(self.extra)
        if self.warnings:
            out[WARNINGS_FIELD] = list(self.warnings)
        return out


def _extra(c: dict[str, Any], source: str, where: str) -> dict[str, Any]:
    """The fields of ``c`` nbeval does not model, kept as given.

    ``constraints`` is checked here so that a bad one names its file and test case.
    """
    check_constraints(c.get("constraints"), source, where)
    return {k: v for k, v in c.items() if k not in _CASE_FIELDS}


@dataclass
class Test:
    """Test cases that share a corpus (the documents a RAG system answers from)."""

    __test__ = False

    test_cases: list[TestCase] = field(default_factory=list)
    """The test cases, in order."""
    key: str | None = None
    """The test's key, when it has one."""
    documents: list[str] = field(default_factory=list)
    """The corpus: the documents the test cases are answered from."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields nbeval does not know; kept and written back."""

    def to_json(self) -> dict[str, Any]:
        """The test as a JSON-ready dict, in the shape the readers load back.

        Returns:
            ``key``, ``documents`` and ``test_cases`` (each as :meth:`TestCase.to_json` writes it),
            the extra fields beside them.
        """
        return {
            "key": self.key,
            "documents": list(self.documents),
            "test_cases": [tc.to_json() for tc in self.test_cases],
            **self.extra,
        }
