"""What the SuiteBuilder edits: test cases as plain dicts.

It also gives live feedback on conditions and keeps the review of generated cases (their
``extra["generation"]`` record, see :mod:`~nbeval.widgets.suite_review`).
"""

from __future__ import annotations

import copy
import re
from typing import Any

from nbeval.data.model import Chunk, Relationship, TestCase, derive_key
from nbeval.errors import ConditionError
from nbeval.widgets.common import status_html
from nbeval.widgets.markup import esc

__all__ = [
    "CHUNK_SPLIT",
    "FIELDS",
    "REJECTED",
    "STATUSES",
    "case_dict",
    "case_kind",
    "chunk",
    "condition_feedback",
    "content_key",
    "edited",
    "generation",
    "restored",
    "review_counts",
    "review_status",
    "reviewed",
    "set_aside",
    "to_test_case",
]

#: The fields of a test case the suite builder edits, and the pattern that splits pasted text into chunks (a blank
#: line).
FIELDS = ("key", "prompt", "expected_output", "condition", "categories", "guidelines", "expected_context")
CHUNK_SPLIT = re.compile(r"\n\s*\n")
#: Where rejected generated cases are kept aside, in ``suite.extra``.
REJECTED = "rejected_cases"
#: The review statuses of a generated case, in the order they are counted.
STATUSES = ("pending", "accepted", "rejected")


def condition_feedback(text: str) -> tuple[str, int, str]:
    """Parse ``text``: (error message or "", error position or -1, HTML feedback with a marker)."""
    from nbeval.data.conditions import parse_condition

    if not text.strip():
        return "", -1, status_html("no condition")
    try:
        parsed = parse_condition(text)
    except ConditionError as exc:
        pos = max(0, min(exc.position, len(text)))
        reason = getattr(exc, "reason", str(exc).splitlines()[0])
        marked = (
            f'{esc(text[:pos])}<span style="background:#f8c9cf;border-bottom:2px solid #b3261e">'
            f"{esc(text[pos : pos + 1] or ' ')}</span>{esc(text[pos + 1 :])}"
        )
        return (
            reason,
            pos,
            (
                status_html(f"✗ {reason} (at character {pos + 1})", "error")
                + f'<code style="white-space:pre-wrap">{marked}</code>'
            ),
        )
    return "", -1, status_html(f"✓ parses as: {parsed}", "ok")


def case_dict(tc: TestCase) -> dict[str, Any]:
    """A test case as the plain dict the suite builder's form edits (empty strings for unset texts)."""
    return {
        "key": tc.key,
        "prompt": tc.prompt,
        "expected_output": tc.expected_output or "",
        "condition": tc.condition or "",
        "categories": list(tc.categories),
        "guidelines": list(tc.guidelines),
        "expected_context": [c.to_json() for c in tc.expected_context],
        "relationships": [r.to_json() for r in tc.relationships],
        "extra": dict(tc.extra),
    }


def chunk(j: Any) -> Chunk:
    """A context chunk from the form's value: a string, or a dict with ``content`` and maybe ``doc_uri``."""
    return Chunk(content=j) if isinstance(j, str) else Chunk(content=j.get("content"), doc_uri=j.get("doc_uri"))


def to_test_case(d: dict[str, Any]) -> TestCase:
    """A test case from the form's dict (see :func:`case_dict`); empty texts become unset."""
    return TestCase(
        prompt=d["prompt"],
        key=d.get("key") or None,
        categories=list(d["categories"]),
        relationships=[Relationship(**r) for r in d.get("relationships", [])],
        expected_output=d["expected_output"] or None,
        condition=d["condition"].strip() or None,
        guidelines=list(d["guidelines"]),
        expected_context=[chunk(c) for c in d["expected_context"]],
        extra=dict(d.get("extra", {})),
    )


def content_key(case: dict[str, Any]) -> str:
    """The key a case dict would get from its content (conditions are not parsed here)."""
    return derive_key(
        case["prompt"],
        case["expected_output"] or None,
        case["condition"] or None,
        case["categories"],
        [chunk(c) for c in case["expected_context"]],
        case["guidelines"],
    )


# -- reviewing generated cases (nbeval.widgets.suite_review shows them) -----------------------


def generation(case: dict[str, Any]) -> dict[str, Any] | None:
    """The case's generation record (``extra["generation"]``), or ``None`` for a case written by hand."""
    found = case.get("extra", {}).get("generation")
    return found if isinstance(found, dict) else None


def case_kind(case: dict[str, Any]) -> str:
    """``single_hop``, ``multi_hop``...: the record's ``kind``, else the ``generated:<kind>`` category."""
    kind = (generation(case) or {}).get("kind")
    if isinstance(kind, str) and kind:
        return kind
    return next((c.split(":", 1)[1] for c in case.get("categories", []) if c.startswith("generated:")), "generated")


def review_status(case: dict[str, Any]) -> str:
    """The case's review status: ``pending``, ``accepted`` or ``rejected``."""
    status = (generation(case) or {}).get("status")
    return status if status in STATUSES else "pending"


def reviewed(case: dict[str, Any], status: str, **notes: Any) -> dict[str, Any]:
    """A copy of ``case`` with its generation ``status`` set and ``notes`` added to its record."""
    new = copy.deepcopy(case)
    record = dict(generation(new) or {})
    record.update(status=status, **notes)
    new["extra"] = {**new.get("extra", {}), "generation": record}
    return new


def edited(case: dict[str, Any], **fields: str | None) -> dict[str, Any]:
    """Change the given fields of a generated case and accept it.

    What the generator wrote is kept under ``original`` in the generation record (the first time a
    field changes).

    Args:
        case: The generated case, as a form dict.
        **fields: The new texts by field (``prompt``, ``expected_output``); ``None`` leaves a field
            as it is.

    Returns:
        A copy of ``case`` with the fields changed and its status ``accepted``.
    """
    changes = {k: v for k, v in fields.items() if v is not None and v != case[k]}
    original = dict((generation(case) or {}).get("original") or {})
    for k in changes:
        original.setdefault(k, case[k])
    new = reviewed(case, "accepted", **({"edited": True, "original": original} if original else {}))
    new.update(changes)
    return new


def set_aside(case: dict[str, Any], reason: str | None, position: int = 0) -> dict[str, Any]:
    """Make the entry that keeps a rejected case aside.

    Args:
        case: The rejected case, as a form dict.
        reason: Why it was rejected; ``None`` for no reason.
        position: Where the case was in the list.

    Returns:
        ``{"test": index, "position": where it was, "case": its JSON}``, the JSON with
        ``status: "rejected"`` and the ``reason``.

    Raises:
        ConditionError: When the case's condition does not parse.
    """
    tc = to_test_case(reviewed(case, "rejected", reason=reason or ""))
    data = tc.to_json()
    if not case.get("key"):
        data["key"] = None  # a key derived from the content stays derived when the case comes back
    return {"test": case.get("test", 0), "position": position, "case": data}


def restored(entry: dict[str, Any]) -> dict[str, Any]:
    """The case dict of a rejected entry, pending again (its reason dropped)."""
    case = case_dict(TestCase.from_dict(entry["case"], source="rejected_cases"))
    record = {k: v for k, v in (generation(case) or {}).items() if k != "reason"}
    case["extra"]["generation"] = {**record, "status": "pending"}
    case["test"] = int(entry.get("test", 0) or 0)
    return case


def review_counts(cases: list[dict[str, Any]], rejected: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per kind: how many generated cases are pending, accepted and rejected (kinds in the order met)."""
    out: dict[str, dict[str, int]] = {}
    aside = [restored(e) for e in rejected if isinstance(e, dict) and isinstance(e.get("case"), dict)]
    for case, status in [(c, review_status(c)) for c in cases if generation(c)] + [(c, "rejected") for c in aside]:
        out.setdefault(case_kind(case), dict.fromkeys(STATUSES, 0))[status] += 1
    return out
