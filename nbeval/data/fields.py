"""What the fields of a row and a test case hold, and the checks each field passes when read.

The small value types (:class:`Chunk`, :class:`Relationship`), the key derived from a test
case's content, and one check per kind of field. Every check takes the raw value with where it
came from (source, row, field) and returns the clean value or raises
:class:`~nbeval.errors.DataError` naming all three. Nothing here reads a file.

Two rules every layer shares live here too: :func:`label_text`, the text a label or an answer
compares by (numbers by value), and :func:`repair_fields` with :class:`DataWarning`, the repair
of text that cannot be encoded, reported as a warning naming the source, row and field.
"""

from __future__ import annotations

import decimal
import functools
import hashlib
import json
import math
import numbers
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nbeval.data.text import REPAIR_NOTE, repair_data
from nbeval.errors import ConditionError, DataError

__all__ = [
    "CONSTRAINT_REGEXP",
    "DEFAULT_MODEL_KEY",
    "ROW_FIELDS",
    "WARNINGS_FIELD",
    "Chunk",
    "DataWarning",
    "Relationship",
    "as_list",
    "check_chunks",
    "check_condition",
    "check_constraints",
    "check_guidelines",
    "check_named_guidelines",
    "check_number",
    "check_relationships",
    "check_str",
    "check_str_list",
    "check_text",
    "derive_key",
    "is_missing",
    "is_null",
    "label_text",
    "numeric_text",
    "repair_fields",
    "warn_data",
    "with_constraints",
]

#: The model key given to rows that do not name one.
DEFAULT_MODEL_KEY = "model"

#: Row fields in file order; the names are the LLM dataset's (see the spec).
ROW_FIELDS = (
    "key",
    "model_key",
    "input",
    "corpus",
    "context",
    "categories",
    "relationships",
    "expected_output",
    "output_condition",
    "actual_output",
    "actual_duration",
    "cost",
    "expected_context",
    "guidelines",
    "error",
)

#: The key under which the notes of what nbeval repaired in a row or test case (``warnings``)
#: are written to files, only when there are some.
WARNINGS_FIELD = "nbeval_warnings"


def is_missing(value: Any) -> bool:
    """Whether a field value counts as absent: ``None``, NaN, or an empty list, tuple or dict."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return isinstance(value, (list, tuple, dict)) and len(value) == 0


def is_null(value: Any) -> bool:
    """Whether a value read from a file is no value at all.

    That is ``None``, NaN (an empty cell), or pandas' ``NA`` / ``NaT``.
    """
    if value is None:
        return True
    kind = type(value)
    if kind is str:
        return False
    if kind is float or isinstance(value, float):
        return math.isnan(value)
    return kind.__name__ in ("NAType", "NaTType")


# ---------------------------------------------------------------------------------------------
# Numbers as labels


#: A number written plainly: optional sign, digits without a leading zero (``0`` itself and
#: ``0.5`` are fine, ``01`` is not), an optional fraction and exponent.
_NUMBER_TEXT = re.compile(r"[+-]?(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NUMBER_MAX_CHARS = 64
_EXACT = decimal.Context(prec=_NUMBER_MAX_CHARS + 8)


def numeric_text(value: Any) -> str | None:
    """The canonical text of ``value`` when it is a number, else ``None``.

    A number is an ``int`` or a finite ``float`` (not a boolean), or a string that is exactly a
    plain decimal number (no white space around it, no leading zero such as ``01``, no thousands
    separator; at most 64 characters). The canonical text is the shortest plain decimal form of
    the value: ``1``, ``1.0``, ``"1"``, ``"1.0"``, ``"+1"`` and ``"1e0"`` are all ``"1"``;
    ``0.5`` and ``"0.50"`` are ``"0.5"``; ``-0`` is ``"0"``. A float counts by its shortest
    round-trip form (``0.1`` is ``"0.1"``).
    """
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    if isinstance(value, str):
        if len(value) > _NUMBER_MAX_CHARS or not _NUMBER_TEXT.fullmatch(value):
            return None
        text = value
    elif isinstance(value, numbers.Integral):
        try:
            return str(int(value))
        except ValueError:  # more digits than Python will write as text
            return None
    elif isinstance(value, numbers.Real):
        f = float(value)
        if not math.isfinite(f):
            return None
        text = repr(f)
    else:
        return None
    d = decimal.Decimal(text)
    if d.is_zero():
        return "0"
    d = d.normalize(_EXACT)
    exponent = d.as_tuple().exponent
    if isinstance(exponent, int) and -_NUMBER_MAX_CHARS <= exponent <= _NUMBER_MAX_CHARS:
        return format(d, "f")
    return str(d)  # an extreme exponent stays in scientific form rather than expand


def label_text(value: Any) -> str:
    """The text a label or an answer compares by: numbers by value, anything else as it is.

    A missing value (``None``, NaN) is ``""``; a number (see :func:`numeric_text`) is its
    canonical text, so ``1``, ``1.0``, ``"1"`` and ``"1.0"`` compare equal; any other value is its
    text unchanged (case and white space count; ``"01"`` stays ``"01"``).
    """
    if is_null(value):
        return ""
    canonical = numeric_text(value)
    if canonical is not None:
        return canonical
    return value if isinstance(value, str) else str(value)


# ---------------------------------------------------------------------------------------------
# Repairs and warnings


class DataWarning(UserWarning):
    """A warning that the data loaded but something in it was repaired or looks wrong.

    The message names the source, the row and the field.
    """


def warn_data(
    message: str, *, source: str | None = None, row: Any = None, field: str | None = None, stacklevel: int = 3
) -> str:
    """Issue a :class:`DataWarning` located like a :class:`~nbeval.errors.DataError`; returns its text."""
    text = str(DataError(message, source=source, row=row, field=field))
    warnings.warn(text, DataWarning, stacklevel=stacklevel)
    return text


def repair_fields(record: dict[str, Any], source: str | None, row: Any) -> tuple[dict[str, Any], list[str]]:
    """Repair the text in ``record`` that cannot be encoded, noting each repaired field.

    The repair is :func:`~nbeval.data.text.repair_text`'s. Returns ``record`` repaired and one note
    per repaired field; each repair is also a :class:`DataWarning`.
    """
    fixed, places = repair_data(record)
    notes = []
    for place in places:
        field = place.lstrip(".") or None
        warn_data(REPAIR_NOTE, source=source, row=row, field=field, stacklevel=4)
        notes.append(f"field '{field}': {REPAIR_NOTE}" if field else REPAIR_NOTE)
    return fixed, notes


@dataclass(frozen=True)
class Chunk:
    """One piece of retrieved (or expected) context."""

    content: str | None = None
    """The chunk's text (may be absent for an expected context given only as a document)."""
    doc_uri: str | None = None
    """The document the chunk comes from."""

    def to_json(self) -> str | dict[str, Any]:
        """The chunk in its JSON form.

        Returns:
            A plain string when there is no ``doc_uri`` (the common case), else a dict of
            ``content`` and ``doc_uri`` (each only when set).
        """
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
    """What the link means, e.g. ``perturbation_source``."""
    target: str
    """The key of what the link points at."""
    target_type: str = "test_case"
    """What kind of thing ``target`` is; ``test_case`` links are checked against the known keys."""

    def to_json(self) -> dict[str, str]:
        """The relationship as a JSON-ready dict.

        Returns:
            ``type``, ``target`` and ``target_type`` by name.
        """
        return {"type": self.type, "target": self.target, "target_type": self.target_type}


def derive_key(
    prompt: str | None,
    expected_output: Any = None,
    condition: str | None = None,
    categories: Sequence[str] = (),
    expected_context: Sequence[Chunk] = (),
    guidelines: Sequence[str] = (),
) -> str:
    """A stable key from a test case's content, so every model's answer to it shares the key.

    Only test-case fields take part (never a model's answer or retrieved context).
    """
    payload = json.dumps(
        [
            prompt,
            expected_output,
            condition or None,
            list(categories),
            [c.to_json() for c in expected_context],
            list(guidelines),
        ],
        ensure_ascii=False,
        sort_keys=True,
        default=str,
    )
    return "tc-" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


# ---------------------------------------------------------------------------------------------
# Checks: each names the source, row and field in its error.


def as_list(value: Any, source: str, field: str) -> list[Any]:
    """A JSON list (``None``: empty)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise DataError("must be a list", source=source, field=field)
    return value


def check_str(v: Any, source: str, row: Any, field: str) -> str | None:
    """Text, or ``None`` when absent; whole numbers (ids) become text."""
    if is_null(v):
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    if not isinstance(v, str):
        raise DataError(f"must be text, got {type(v).__name__}", source=source, row=row, field=field)
    return v


def check_text(v: Any, source: str, row: Any, field: str) -> str | None:
    """Like :func:`check_str`, and any number becomes text (labels such as 1 or 3.5)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and not is_null(v):
        return str(v)
    return check_str(v, source, row, field)


def check_number(v: Any, source: str, row: Any, field: str) -> float | None:
    """A number, or ``None`` when absent (an empty string too)."""
    if is_null(v) or v == "":
        return None
    if isinstance(v, bool):
        raise DataError("must be a number, got a boolean", source=source, row=row, field=field)
    try:
        return float(v)
    except (TypeError, ValueError):
        raise DataError(f"must be a number, got {v!r}", source=source, row=row, field=field) from None


def check_str_list(v: Any, source: str, row: Any, field: str) -> list[str]:
    """A list of strings; one string is a list of one."""
    if is_null(v):
        return []
    if isinstance(v, str):
        return [v]
    if not isinstance(v, (list, tuple)) or not all(isinstance(x, str) for x in v):
        raise DataError("must be a list of strings", source=source, row=row, field=field)
    return list(v)


def check_guidelines(v: Any, source: str, row: Any) -> list[str]:
    """Guidelines as a list of strings; named groups (a dict of lists) are flattened in order."""
    if isinstance(v, dict):
        return [g for items in check_named_guidelines(v, source, row).values() for g in items]
    return check_str_list(v, source, row, "guidelines")


def check_named_guidelines(v: Any, source: str, row: Any) -> dict[str, list[str]]:
    """Guidelines given by name (MLflow 3's ``{"tone": ["Be polite."], ...}``), in order.

    ``{}`` when they are a plain list or absent. A name must be non-empty text; one string under a
    name is a list of one.
    """
    if not isinstance(v, dict):
        return {}
    out: dict[str, list[str]] = {}
    for name, items in v.items():
        if not isinstance(name, str) or not name.strip():
            raise DataError("a guideline's name must be non-empty text", source=source, row=row, field="guidelines")
        out[name] = check_str_list(items, source, row, f"guidelines.{name}")
    return out


def check_chunks(v: Any, source: str, row: Any, field: str) -> list[Chunk]:
    """Chunks from text or ``{content, doc_uri}`` objects (``text``/``page_content``, ``uri``/``source`` too)."""
    if is_null(v):
        return []
    if isinstance(v, (str, dict)):
        v = [v]
    if not isinstance(v, (list, tuple)):
        raise DataError("must be a list of chunks (text or {content, doc_uri})", source=source, row=row, field=field)
    out = []
    for j, c in enumerate(v):
        where = f"{field}[{j}]"
        if isinstance(c, str):
            out.append(Chunk(content=c))
        elif isinstance(c, dict):
            content = c.get("content", c.get("text", c.get("page_content")))
            uri = c.get("doc_uri", c.get("uri", c.get("source")))
            if content is None and uri is None:
                raise DataError("a chunk needs 'content' or 'doc_uri'", source=source, row=row, field=where)
            if (content is not None and not isinstance(content, str)) or (uri is not None and not isinstance(uri, str)):
                raise DataError("chunk 'content' and 'doc_uri' must be text", source=source, row=row, field=where)
            out.append(Chunk(content=content, doc_uri=uri))
        else:
            raise DataError(
                f"a chunk must be text or an object, got {type(c).__name__}", source=source, row=row, field=where
            )
    return out


def check_relationships(v: Any, source: str, row: Any) -> list[Relationship]:
    """Relationships from ``{type, target[, target_type]}`` objects."""
    if is_null(v):
        return []
    if not isinstance(v, list):
        raise DataError("must be a list", source=source, row=row, field="relationships")
    out = []
    for j, r in enumerate(v):
        if not isinstance(r, dict) or not isinstance(r.get("type"), str) or not isinstance(r.get("target"), str):
            raise DataError(
                "a relationship needs text 'type' and 'target'", source=source, row=row, field=f"relationships[{j}]"
            )
        out.append(Relationship(type=r["type"], target=r["target"], target_type=r.get("target_type", "test_case")))
    return out


def check_condition(v: Any, source: str, row: Any, field: str) -> str | None:
    """A condition's text, parsed to be sure it is well formed (blank: ``None``)."""
    text = check_str(v, source, row, field)
    if not text or not text.strip():
        return None
    problem = _condition_problem(text)
    if problem is not None:
        raise DataError(f"malformed condition: {problem}", source=source, row=row, field=field)
    return text


@functools.lru_cache(maxsize=4096)
def _condition_problem(text: str) -> str | None:
    """What is wrong with a condition's text (``None``: well formed).

    Cached because each test case's condition comes once per model that answered it, and parsing
    was a third of the time of reading such a file.
    """
    from nbeval.data.conditions import parse_condition

    try:
        parse_condition(text)
    except ConditionError as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------------------------------------
# Eval Studio's constraints: what the answer must contain


#: The prefix that makes a constraint a regular expression (``"REGEXP:.*(C|C\\.).*"``).
CONSTRAINT_REGEXP = "REGEXP:"


def check_constraints(v: Any, source: str | None, row: Any, field: str = "constraints") -> list[str]:
    """H2O Eval Studio's ``constraints``: the strings an answer must all contain.

    Each one is a substring, or a regular expression after the prefix ``REGEXP:``. One string is a
    list of one; blank entries (the published suites give ``[""]`` for "none") are dropped. A
    pattern that does not compile is a :class:`~nbeval.errors.DataError` naming the entry.
    """
    tokens = [t for t in check_str_list(v, source or "<object>", row, field) if t.strip()]
    for i, token in enumerate(tokens):
        try:
            _constraint_node(token)
        except ConditionError as exc:
            raise DataError(f"malformed constraint: {exc}", source=source, row=row, field=f"{field}[{i}]") from None
    return tokens


def _constraint_node(token: str) -> Any:
    from nbeval.data.conditions import Regexp, Text

    if token.startswith(CONSTRAINT_REGEXP):
        return Regexp(token[len(CONSTRAINT_REGEXP) :])
    return Text(token)


def with_constraints(condition: str | None, constraints: Sequence[str]) -> str | None:
    """``condition`` and every constraint, as one condition.

    Written ``(condition) AND "a" AND "b"`` (just the constraints when there is no condition;
    ``condition`` itself when there are no constraints). Constraints the condition already
    requires at its top level are not added again, so a condition built here and read back with
    the same constraints stays as it is. Both must be well formed (as :func:`check_condition` and
    :func:`check_constraints` leave them).
    """
    if not constraints:
        return condition
    from nbeval.data.conditions import And, parse_condition

    nodes = list(dict.fromkeys(_constraint_node(t) for t in constraints if t.strip()))
    if not nodes:
        return condition
    if not condition or not condition.strip():
        return str(nodes[0] if len(nodes) == 1 else And(tuple(nodes)))
    parsed = parse_condition(condition)
    required = set(parsed.operands) if isinstance(parsed, And) else {parsed}
    missing = [n for n in nodes if n not in required]
    if not missing:
        return condition
    rest = " AND ".join(str(n) for n in missing)
    return f"({condition}) AND {rest}"
