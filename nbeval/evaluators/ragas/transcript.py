"""What ragas saw, written for a person: a row's rationale from the structured calls ragas made.

Each step is a dict (``bridge.Step.to_dict()``): the output model ragas asked for, the parsed
reply, the attempts. Statements are numbered, verdicts marked ✓ (1) or ✗ (0) with the judge's
reason; a reply that never fitted the schema is quoted raw.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["TITLES", "render"]

#: How each of ragas's output models is headed in a rationale.
TITLES = {
    "StatementGeneratorOutput": "statements the judge found",
    "NLIStatementOutput": "verdicts: is each statement supported by the context?",
    "AnswerRelevanceOutput": "question the judge wrote from the answer",
    "ContextPrecisionOutput": "chunk verdict: was it useful for the expected answer?",
    "ContextRecallOutput": "expected-answer sentences: attributable to the context?",
    "ClassificationWithReason": "statements sorted against the expected answer",
    "WorkflowOutput": "the user's goal and the end state the judge read from the conversation",
    "CompareOutcomeOutput": "verdict: does the end state reach the desired outcome?",
    "TopicExtractionOutput": "topics the judge found in the user's messages",
    "TopicRefusedOutput": "did the assistant refuse to answer on the topic?",
    "TopicClassificationOutput": "is each topic within the reference topics?",
}
_SORTED = {
    "TP": "true positives (in both)",
    "FP": "false positives (only in the answer)",
    "FN": "false negatives (only in the expected answer)",
}
_VERDICT_KEYS = ("verdict", "attributed")
_TEXT_KEYS = ("statement", "question")


def render(
    steps: Sequence[Mapping[str, Any]],
    *,
    notes: Sequence[str] = (),
    titles: Mapping[tuple[str, int], str] | None = None,
) -> str:
    """The rationale text for ``steps`` (in the order ragas made them), after any ``notes``.

    ``titles`` heads the n-th (from 1) step of an output model in its own words, e.g. ``{("StatementGeneratorOutput",
    2): "statements in the expected answer"}``.
    """
    totals = Counter(str(s.get("step")) for s in steps)
    seen: Counter[str] = Counter()
    parts = [f"note: {n}" for n in notes]
    for step in steps:
        name = str(step.get("step"))
        seen[name] += 1
        title = (titles or {}).get((name, seen[name])) or TITLES.get(name, name)
        if totals[name] > 1 and (name, seen[name]) not in (titles or {}):
            title += f" ({seen[name]} of {totals[name]})"
        if step.get("attempts", 1) > 1:
            title += f" [{step['attempts']} attempts]"
        parts.append(f"[{title}]")
        output = step.get("output")
        if output is None:
            for raw in step.get("unparsed_replies", []):
                parts.append(f"  unparsed reply: {raw}")
            if step.get("error"):
                parts.append(f"  why: {step['error']}")
            continue
        parts.extend(_lines(output))
    return "\n".join(parts)


def _lines(output: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    if "verdict" in output and "reason" in output:  # one verdict with its reason (a chunk)
        return [f"  {_mark(output['verdict'])} {output['reason']}"]
    for key, value in output.items():
        if key in _SORTED:
            lines.append(f"  {_SORTED[key]}: {len(value)}")
            lines.extend(f"    - {_item(v)}" for v in value)
        elif isinstance(value, list):
            lines.extend(f"  {i}. {_item(v)}" for i, v in enumerate(value, 1))
            if not value:
                lines.append("  (none)")
        elif key == "noncommittal":
            lines.append(f"  noncommittal: {'yes' if value else 'no'}")
        else:
            lines.append(f"  {value}" if key in _TEXT_KEYS else f"  {key}: {value}")
    return lines


def _item(value: Any) -> str:
    if not isinstance(value, Mapping):
        return str(value)
    text = next((str(value[k]) for k in _TEXT_KEYS if k in value), "")
    mark = next((_mark(value[k]) + " " for k in _VERDICT_KEYS if k in value), "")
    reason = f" (reason: {value['reason']})" if value.get("reason") else ""
    return f"{mark}{text}{reason}"


def _mark(verdict: Any) -> str:
    # ragas's goal comparison answers its verdict as the text "0" or "1"
    return "✗" if not verdict or verdict == "0" else "✓"
