"""What a judge tells :func:`nbeval.align`: how it writes a worked example's reply.

:func:`nbeval.align` (:mod:`nbeval.engine.align`) splits the labelled rows, runs the judge and
measures it; the judge itself says how a person's verdict is written as one of its replies
(:meth:`~nbeval.evaluators.judges.core.JudgeEvaluator.example_reply`), which of a row's fields an
example shows (``example_values``) and how the aligned copy is made (``with_examples``). A judge
that gives no single pass/fail verdict per row answers ``None`` and cannot be aligned.

Labels carry no note, so the reason written in an example is a fixed sentence
(:data:`PASS_REASON`, :data:`FAIL_REASON`).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["ALIGN_SUPPORTED", "FAIL_REASON", "PASS_REASON", "rating_reply", "verdict_reply"]

#: The reason written in an example whose person said pass (labels carry no reason of their own).
PASS_REASON = "A person who reviewed this answer judged that it meets the criteria."
#: The reason written in an example whose person said fail.
FAIL_REASON = "A person who reviewed this answer judged that it does not meet the criteria."

#: Which judges can be aligned, as an error says it.
ALIGN_SUPPORTED = (
    "align supports judges with one pass/fail verdict per row and a prompt of worked examples: the rating "
    "judges (correctness, relevance_to_query, groundedness, safety, context_sufficiency, guideline_adherence, "
    "custom_judge rating the answer) and the verdict judges (contact_information, language_mismatch, sexism, "
    "summarization_judge, byop)"
)


def rating_reply(passed: bool) -> str:
    """A rating judge's reply (``Rationale: ...`` and ``Rating: yes|no``) carrying a person's verdict."""
    return f"Rationale: {PASS_REASON if passed else FAIL_REASON}\nRating: {'yes' if passed else 'no'}"


def verdict_reply(passed: bool, choices: Mapping[str, bool], output_format: str, template: str | None) -> str | None:
    """Write a verdict judge's reply carrying a person's verdict.

    The reply is ``Reason: ...`` and ``Verdict: <word>``, or the word alone for a template that asks
    for one word; ``None`` when ``choices`` (word to "the row passes") do not name both a passing and
    a failing word.
    """
    if set(choices.values()) != {True, False}:
        return None
    word = next(w for w, ok in choices.items() if ok is passed)
    if "Verdict:" in output_format or not template:
        return f"Reason: {PASS_REASON if passed else FAIL_REASON}\nVerdict: {word}"
    return word
