"""A row: one test case answered by one model, the unit every evaluator reads.

:meth:`Row.from_record` reads a row from a record in any supported column style, checking every
field; :func:`rows_from_records` reads many and rejects a test case's key given twice for one
model. Datasets, suites and labs are in :mod:`nbeval.data.model`.

Text that cannot be encoded (a lone surrogate) is repaired however a row is made, from a record
or directly: it becomes U+FFFD, a :class:`~nbeval.data.fields.DataWarning` names the row and
field, and the row keeps the note in :attr:`Row.warnings`. :func:`rows_from_records` also warns
when one key carries different prompts for two models, and when a relationship points at a key
that no row has.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import InitVar, dataclass, field, fields, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from nbeval.data.cases import TestCase
from nbeval.data.conversation import (
    CONVERSATION_FIELDS,
    EMPTY_IS_A_VALUE,
    case_conversation,
    check_messages,
    check_tool_calls,
    conversation_parts,
    conversation_prompt,
    final_answer,
    last_text,
)
from nbeval.data.fields import (
    DEFAULT_MODEL_KEY,
    ROW_FIELDS,
    WARNINGS_FIELD,
    Chunk,
    Relationship,
    check_chunks,
    check_condition,
    check_constraints,
    check_guidelines,
    check_named_guidelines,
    check_number,
    check_relationships,
    check_str,
    check_str_list,
    check_text,
    derive_key,
    is_missing,
    repair_fields,
    warn_data,
    with_constraints,
)
from nbeval.data.styles import normalize_record
from nbeval.data.text import needs_repair
from nbeval.data.trace_shapes import phoenix_frame_hint
from nbeval.errors import DataError

if TYPE_CHECKING:
    from nbeval.data.conditions import Condition

__all__ = ["WARNINGS_FIELD", "Row", "field_missing", "rows_from_chunks", "rows_from_records"]


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
    """The documents the model may draw on (the test's corpus)."""
    context: list[Chunk] = field(default_factory=list)
    """Retrieved context, in rank order."""
    categories: list[str] = field(default_factory=list)
    """The categories the test case belongs to."""
    relationships: list[Relationship] = field(default_factory=list)
    """Links to other test cases, e.g. to the original a perturbed case was made from."""
    expected_output: str | None = None
    """The reference answer, when there is one."""
    output_condition: str | None = None
    """The condition (:mod:`nbeval.data.conditions`) the answer must satisfy, when there is one;
    parsed as ``condition``."""
    actual_output: str | None = None
    """The model's answer; ``None`` until it has answered."""
    actual_duration: float | None = None
    """How long the model took to answer, in seconds, when known."""
    cost: float | None = None
    """What the answer cost, when known."""
    expected_context: list[Chunk] = field(default_factory=list)
    """The context a retriever should find for the prompt."""
    guidelines: list[str] = field(default_factory=list)
    """Guidelines a good answer follows, in plain language (all of them in order when they are given
    by name, see ``named_guidelines``)."""
    error: str | None = None
    """Why collecting this answer failed, when it did."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Fields nbeval does not know; kept and written back."""
    warnings: list[str] = field(default_factory=list)
    """What nbeval repaired in this row when it was read (e.g. text that could not be encoded);
    written to files as ``nbeval_warnings``."""
    named_guidelines: dict[str, list[str]] = field(default_factory=dict)
    """The guidelines by name, when they were given so (MLflow 3's ``{"tone": [...], ...}``);
    ``guidelines`` is then all of them in order. Written back as the mapping."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The conversation, in the OpenAI chat format (see :mod:`nbeval.data.conversation`): tool
    calls and their results included. Without an ``input`` (``actual_output``) the row's are its
    last user message (the assistant's last text after it)."""
    expected_tool_calls: list[dict[str, Any]] | None = None
    """The reference tool calls, ``[{"name", "arguments": {...}}]``; ``[]`` when no tool call is
    expected (the agent must not call one), ``None`` when none were given (the tool-call
    evaluators skip the row)."""
    reference_topics: list[str] = field(default_factory=list)
    """The topics the assistant may talk about."""
    _repaired: InitVar[bool] = False
    """Set by :meth:`from_record`, which has repaired the text already (naming source and row)."""

    def __post_init__(self, _repaired: bool) -> None:
        self.warnings = list(self.warnings)  # a copy made by with_answer must not share the list
        if self.named_guidelines:
            self.guidelines = [g for items in self.named_guidelines.values() for g in items]
        if not _repaired:
            where = f"with key '{self.key}'" if self.key else None
            self.messages = check_messages(self.messages, "Row", where)
            self.expected_tool_calls = check_tool_calls(self.expected_tool_calls, "Row", where)
            self.reference_topics = check_str_list(self.reference_topics, "Row", where, "reference_topics")
            self._repair()
        if self.messages:
            if self.input is None:
                self.input = last_text(self.messages, "user")
            if self.actual_output is None:
                self.actual_output = final_answer(self.messages)
        if not self.key:
            self.key = derive_key(
                self._key_prompt(),
                self.expected_output,
                self.output_condition,
                self.categories,
                self.expected_context,
                self.guidelines,
            )

    def _key_prompt(self) -> str | None:
        """What the key is derived from: the prompt, or the conversation up to the last user message.

        The conversation counts only when there is more to it than that one message.
        """
        if self.messages and sum(m["role"] != "tool" for m in self.messages[:2]) > 1:
            return conversation_prompt(self.messages) or self.input
        return self.input

    def _repair(self) -> None:
        """Repair text that cannot be encoded, in every field (see the module docstring)."""
        if not _needs_repair(self):
            return
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "warnings"}
        values["context"] = [c.to_json() for c in self.context]
        values["expected_context"] = [c.to_json() for c in self.expected_context]
        values["relationships"] = [r.to_json() for r in self.relationships]
        fixed, notes = repair_fields(values, None, f"with key '{self.key}'" if self.key else None)
        if not notes:
            return
        for name, value in fixed.items():
            if name in ("context", "expected_context"):
                value = [
                    Chunk(content=c, doc_uri=None)
                    if isinstance(c, str)
                    else Chunk(content=c.get("content"), doc_uri=c.get("doc_uri"))
                    for c in value
                ]
            elif name == "relationships":
                value = [Relationship(**r) for r in value]
            setattr(self, name, value)
        self.warnings.extend(notes)

    @cached_property
    def condition(self) -> Condition | None:
        """``output_condition`` parsed (``None`` when empty)."""
        if not self.output_condition:
            return None
        from nbeval.data.conditions import parse_condition

        return parse_condition(self.output_condition)

    @property
    def context_texts(self) -> list[str]:
        """The text of each retrieved context chunk, in order."""
        return [c.text for c in self.context]

    @property
    def perturbation_source(self) -> str | None:
        """The key of the test case this one was perturbed from, if any."""
        for r in self.relationships:
            if r.type == "perturbation_source":
                return r.target
        return None

    @classmethod
    def from_test_case(cls, case: TestCase, *, corpus: Sequence[str] = (), model_key: str = DEFAULT_MODEL_KEY) -> Row:
        """A row asking ``case`` of a model, with no answer yet.

        Args:
            case: The test case; its conversation, reference tool calls and topics are read from
                its extra fields.
            corpus: The documents the model may draw on (the test's ``documents``).
            model_key: The model that is to answer.

        Returns:
            The unanswered row, sharing the test case's key and warnings.
        """
        return cls(
            input=case.prompt,
            key=case.resolved_key,
            model_key=model_key,
            corpus=list(corpus),
            categories=list(case.categories),
            relationships=list(case.relationships),
            expected_output=case.expected_output,
            output_condition=case.output_condition,
            expected_context=list(case.expected_context),
            guidelines=list(case.guidelines),
            named_guidelines=dict(case.named_guidelines),
            extra={k: v for k, v in case.extra.items() if k not in CONVERSATION_FIELDS},
            warnings=list(case.warnings),
            # a suite keeps a case's conversation, reference calls and topics among its extra fields
            messages=case_conversation(case.extra.get("messages"), case.prompt, "test case", case.resolved_key),
            expected_tool_calls=case.extra.get("expected_tool_calls"),  # [] (none expected) is kept
            reference_topics=case.extra.get("reference_topics") or [],
        )

    @classmethod
    def from_record(cls, record: dict[str, Any], *, source: str = "records", row: int = 1) -> Row:
        """Read a row from a record in any supported column style (see :mod:`nbeval.data.styles`).

        Every field is checked; text that cannot be encoded is repaired and noted in ``warnings``.
        Eval Studio's ``constraints`` (kept as given, among the extra fields) are checked with the
        condition: ``output_condition`` becomes ``(condition) AND "token" AND ...`` (see
        :func:`~nbeval.data.fields.with_constraints`, which leaves a condition that already
        requires them as it is, so a row written and read back does not change).

        Args:
            record: The record, one dict.
            source: Where it comes from (a file name), named in errors and warnings.
            row: The record's number in ``source`` (from 1), named in errors and warnings.

        Returns:
            The row; fields nbeval does not know are kept in ``extra``.

        Raises:
            DataError: When the record has neither an ``input`` nor a user message in ``messages``,
                or a field is bad; the message names ``source``, ``row`` and the field.
        """
        rec, notes = repair_fields(normalize_record(record), source, row)
        messages = check_messages(rec.get("messages"), source, row)
        if messages and rec.get("input") is None:
            rec["input"] = last_text(messages, "user")
        if messages and rec.get("actual_output") is None:
            rec["actual_output"] = final_answer(messages)
        if rec.get("input") is None:
            msg = "every row needs an 'input' (the prompt), or 'messages' with a user message"
            raise DataError(msg + phoenix_frame_hint(record), source=source, row=row, field="input")
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
            output_condition=with_constraints(
                check_condition(rec.get("output_condition"), source, row, "output_condition"),
                check_constraints(rec.get("constraints"), source, row),
            ),
            actual_output=check_text(rec.get("actual_output"), source, row, "actual_output"),
            actual_duration=check_number(rec.get("actual_duration"), source, row, "actual_duration"),
            cost=check_number(rec.get("cost"), source, row, "cost"),
            expected_context=check_chunks(rec.get("expected_context"), source, row, "expected_context"),
            guidelines=check_guidelines(rec.get("guidelines"), source, row),
            named_guidelines=check_named_guidelines(rec.get("guidelines"), source, row),
            error=check_str(rec.get("error"), source, row, "error"),
            extra={k: v for k, v in rec.items() if k not in _KNOWN},
            warnings=check_str_list(rec.get(WARNINGS_FIELD), source, row, WARNINGS_FIELD) + notes,
            messages=messages,
            expected_tool_calls=check_tool_calls(rec.get("expected_tool_calls"), source, row),
            reference_topics=check_str_list(rec.get("reference_topics"), source, row, "reference_topics"),
            _repaired=True,
        )

    def with_answer(self, **changes: Any) -> Row:
        """A copy with model-side fields (answer, context, duration, cost, error) replaced.

        Args:
            **changes: The new values, by field name (e.g. ``actual_output=...``).

        Returns:
            The new row; this one is left as it is.
        """
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """The row as a JSON-ready dict, in the record format the readers load back.

        Returns:
            Every row field by name, then the conversation fields that are set, the extra fields,
            and ``nbeval_warnings`` when there are some.
        """
        out: dict[str, Any] = {}
        for name in ROW_FIELDS:
            value = getattr(self, name)
            if name in ("context", "expected_context"):
                value = [c.to_json() for c in value]
            elif name == "relationships":
                value = [r.to_json() for r in value]
            elif name == "guidelines" and self.named_guidelines:
                value = {k: list(v) for k, v in self.named_guidelines.items()}
            elif isinstance(value, list):
                value = list(value)
            out[name] = value
        for name, values in conversation_parts(self).items():
            out[name] = [dict(v) if isinstance(v, dict) else v for v in values]
        out.update(self.extra)
        if self.warnings:
            out[WARNINGS_FIELD] = list(self.warnings)
        return out


def field_missing(name: str, value: Any) -> bool:
    """Whether a row's field ``name`` holding ``value`` counts as absent.

    As :func:`~nbeval.data.fields.is_missing`, but the empty list of a field of
    :data:`~nbeval.data.conversation.EMPTY_IS_A_VALUE` is given (only ``None`` or NaN is absent).
    """
    if name in EMPTY_IS_A_VALUE:
        return value is None or (isinstance(value, float) and value != value)
    return is_missing(value)


#: Fields of a record that are not kept among a row's extra fields.
_KNOWN = frozenset((*ROW_FIELDS, *CONVERSATION_FIELDS, WARNINGS_FIELD))


def _needs_repair(row: Row) -> bool:
    """Whether any text of ``row`` cannot be encoded (cheap: ASCII text is checked in constant time)."""
    texts: list[Any] = [
        row.input,
        row.key,
        row.model_key,
        row.expected_output,
        row.output_condition,
        row.actual_output,
        row.error,
        row.corpus,
        row.categories,
        row.guidelines,
        row.extra,
        row.named_guidelines,
        row.messages,
        row.expected_tool_calls,
        row.reference_topics,
    ]
    texts.extend((c.content, c.doc_uri) for c in (*row.context, *row.expected_context))
    texts.extend((r.type, r.target, r.target_type) for r in row.relationships)
    return needs_repair(texts)


def rows_from_records(records: Sequence[Any], *, source: str = "records", check_links: bool = True) -> list[Row]:
    """Validated rows from dict records in any supported column style; a test case's key may appear once per model.

    Warns (:class:`~nbeval.data.fields.DataWarning`) when a key carries a different prompt for another model and, with
    ``check_links``, when a relationship's target is no row's key.
    """
    if not isinstance(records, (list, tuple)):
        raise DataError(f"expected a list of rows, got {type(records).__name__}", source=source)
    return rows_from_chunks([records], source=source, check_links=check_links)


def rows_from_chunks(
    chunks: Iterable[Sequence[Any]], *, source: str = "records", check_links: bool = True
) -> list[Row]:
    """:func:`rows_from_records` over records that arrive in chunks.

    Each chunk can be let go once converted; the checks are the same across all of them and the
    rows are numbered from the first.
    """
    rows: list[Row] = []
    seen: dict[tuple[str, str], int] = {}
    prompts: dict[str, tuple[str | None, str, int]] = {}
    i = 0
    for records in chunks:
        for raw in records:
            i += 1
            if not isinstance(raw, dict):
                raise DataError(f"a row must be an object, got {type(raw).__name__}", source=source, row=i)
            row = Row.from_record(raw, source=source, row=i)
            ident = (row.key, row.model_key)
            if ident in seen:
                msg = (
                    f"duplicate key '{row.key}' for model '{row.model_key}' (also row {seen[ident]}); "
                    "give each test case its own key"
                )
                raise DataError(msg, source=source, row=i, field="key")
            seen[ident] = i
            first = prompts.setdefault(row.key, (row.input, row.model_key, i))
            if first[0] != row.input:
                warn_data(
                    f"the key '{row.key}' has a different prompt for model '{row.model_key}' than for "
                    f"model '{first[1]}' (row {first[2]}); each key should name one test case",
                    source=source,
                    row=i,
                    field="input",
                )
            rows.append(row)
    if check_links:
        for n, row in enumerate(rows, 1):
            for j, rel in enumerate(row.relationships):
                if rel.target_type == "test_case" and rel.target not in prompts:
                    warn_data(
                        f"the relationship '{rel.type}' points at the key '{rel.target}', which no row has",
                        source=source,
                        row=n,
                        field=f"relationships[{j}]",
                    )
    return rows
