"""One yes/no rating per retrieved chunk, and the row's precision.

This is what ``chunk_relevance`` and ``custom_judge`` (``assessment_type="retrieval"``) report.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from nbeval.errors import ResourceError
from nbeval.evaluators.base import Score
from nbeval.evaluators.judges.core import JudgeEvaluator, JudgePrompt, row_values, usage_details
from nbeval.evaluators.judges.expected import YES_NO_SCALE, Rated, rate
from nbeval.evaluators.judges.parse import parse_choice

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = ["rate_chunks"]

_YES_NO = {"yes": True, "no": False}


def rate_chunks(
    ev: JudgeEvaluator, row: Row, prompt: JudgePrompt, metric: str = "precision"
) -> Generator[Any, Any, Score]:
    """Ask the judge about every retrieved chunk of ``row``; precision = yes / rated chunks.

    A chunk whose call fails or whose reply cannot be read gets no rating and an error; the row
    is scored on the chunks that were rated. With ``score_mode="expected"`` each chunk counts
    with its probability of yes (``details["probabilities"]``), precision is their mean over the
    chunks that have one, and a chunk whose reply came without log-probabilities is not rated
    (see :mod:`nbeval.evaluators.judges.expected`).
    """
    base = row_values(row)
    expected = ev.score_mode == "expected"
    ratings: list[str | None] = []
    rationales: list[str | None] = []
    errors: list[str | None] = []
    found: list[Rated | None] = []
    replies: list[Any] = []
    for chunk in row.context:
        try:
            reply = yield from ev.ask({**base, "chunk": chunk.text}, prompt)
        except ResourceError as exc:
            ratings.append(None)
            rationales.append(None)
            errors.append(str(exc))
            found.append(None)
            continue
        replies.append(reply)
        p = parse_choice(reply.text, _YES_NO)
        word = None if not p.ok else ("yes" if p.value else "no")
        rated = rate(reply, word, YES_NO_SCALE, ev.score_mode, p.error)
        ratings.append(word)
        rationales.append(p.rationale)
        errors.append(rated.error)
        found.append(rated)
    values = [None if r is None else r.value for r in found]
    scored = [v for v in values if v is not None]
    details: dict[str, Any] = {
        "ratings": ratings,
        "rationales": rationales,
        "errors": errors,
        "judge": usage_details(replies),
    }
    if expected:
        details["probabilities"] = values
        details["distributions"] = [None if r is None else r.details.get("distribution") for r in found]
    lines = [
        _line(i, w, v, why, err, expected)
        for i, (w, v, why, err) in enumerate(zip(ratings, values, rationales, errors, strict=True), 1)
    ]
    if not scored:
        first = next((e for e in errors if e), "no chunk was rated")
        # Unrated when some judge reply came back unreadable (or, expected, without what it
        # needs); when every call failed, an error.
        label = next((r.label for r in found if r is not None and r.value is None), None)
        return Score(
            {metric: None},
            rationale="\n".join(lines),
            label=label,
            error=f"no chunk could be rated: {first}",
            details=details,
        )
    rated_words = [w for w, v in zip(ratings, values, strict=True) if v is not None]
    yes = rated_words.count("yes")
    partial = len(scored) < len(ratings)
    error = f"{len(ratings) - len(scored)} of {len(ratings)} chunks could not be rated" if partial else None
    return Score(
        {metric: sum(scored) / len(scored)},
        rationale="\n".join(lines),
        label=f"{yes}/{len(scored)} relevant",
        error=error,
        details=details,
    )


def _line(i: int, word: str | None, value: float | None, why: str | None, err: str | None, expected: bool) -> str:
    """One chunk's line of the row's rationale."""
    if expected and value is not None:
        return f"[{i}] {word} (P(yes) {value:.2f}): {why}"
    if expected and word is not None:  # written, but its probability could not be read
        return f"[{i}] no rating: {err}"
    return f"[{i}] {word or 'no rating'}: {why or err}"
