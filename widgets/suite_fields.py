"""What the SuiteBuilder edits: test cases as plain dicts, and live feedback on conditions."""

from __future__ import annotations

import re
from typing import Any

from nbeval.data.model import Chunk, Relationship, TestCase, derive_key
from nbeval.errors import ConditionError
from nbeval.widgets.common import status_html
from nbeval.widgets.markup import esc

__all__ = ["CHUNK_SPLIT", "FIELDS", "case_dict", "chunk", "condition_feedback", "content_key", "to_test_case"]

FIELDS = ("key", "prompt", "expected_output", "condition", "categories", "guidelines", "expected_context")
CHUNK_SPLIT = re.compile(r"\n\s*\n")


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
    return Chunk(content=j) if isinstance(j, str) else Chunk(content=j.get("content"), doc_uri=j.get("doc_uri"))


def to_test_case(d: dict[str, Any]) -> TestCase:
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
