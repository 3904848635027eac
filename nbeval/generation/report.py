"""What a generation made and what went wrong.

The test suite with its generation report (:func:`suite_of`), the report's lines
(:func:`summary_lines`), and the error of a run that made nothing (:func:`no_case_error`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nbeval.data.fields import Chunk
from nbeval.data.model import Test, TestCase, TestSuite
from nbeval.errors import GenerationFailed
from nbeval.generation.chunks import DocChunk
from nbeval.results.reporting.usage_text import cost_text, unknown_calls

__all__ = ["REPORT_KEY", "failure", "no_case_error", "suite_of", "summary_lines"]

#: Where the generation report is kept: ``suite.extra[REPORT_KEY]`` (a top-level key of the suite's JSON).
REPORT_KEY = "generation_report"


def failure(a: Any) -> dict[str, Any]:
    """One slot whose case was not made (an ``_Asked`` of :mod:`.generate`), for the report."""
    out: dict[str, Any] = {
        "slot": a.slot.index,
        "kind": a.slot.kind,
        "chunk_ids": [c.id for c in a.slot.chunks],
        "persona": a.slot.persona.name if a.slot.persona else None,
        "calls": a.calls,
    }
    if a.error is not None:
        out["error"] = a.error
    if a.replies:
        out["problems"] = list(a.problems)
        out["replies"] = list(a.replies)
    return out


def _context(chunks: Sequence[DocChunk]) -> list[Chunk]:
    return [Chunk(content=c.content, doc_uri=c.doc_uri) for c in chunks]


def suite_of(kept: list[Any], uris: list[str], report: dict[str, Any], name: str | None, seed: int) -> TestSuite:
    """The suite of the cases ``kept`` (``_Asked`` with a case), in plan order, carrying ``report``."""
    cases = []
    for a in sorted(kept, key=lambda a: a.slot.index):
        s, case = a.slot, a.case or {}
        categories = [f"generated:{s.kind}"] + ([f"persona:{s.persona.name}"] if s.persona else [])
        cases.append(
            TestCase(
                prompt=case["question"],
                key=f"gen{seed}-{s.index + 1:03d}",
                categories=categories,
                expected_output=case["answer"],
                expected_context=_context(s.chunks),
                extra={
                    "generation": {
                        "kind": s.kind,
                        "persona": s.persona.name if s.persona else None,
                        "chunk_ids": [c.id for c in s.chunks],
                        "status": "pending",
                    }
                },
            )
        )
    description = (
        f"{len(cases)} test cases written by {report.get('judge') or 'the judge'} from {len(uris)} documents "
        f"(nbeval.generate, seed {seed}); review them before relying on them"
    )
    return TestSuite(
        name=name or "generated",
        description=description,
        tests=[Test(test_cases=cases, documents=uris)],
        extra={REPORT_KEY: report},
    )


def no_case_error(report: Mapping[str, Any], refused: str | None) -> GenerationFailed:
    """Return the error of a run that made no test case, naming the cause.

    The cause is the endpoint's refusal (``refused``), the failed calls' first error, or the replies
    that never fitted the schema.
    """
    calls, parses = report.get("call_failures") or [], report.get("parse_failures") or []
    if refused is not None:
        msg = (
            f"nbeval.generate made no test case: the judge refused the first call, so nothing more was asked: "
            f"{refused}; check the judge's model name, base URL and API key"
        )
    elif calls:
        msg = (
            f"nbeval.generate made no test case: {len(calls)} judge call(s) failed, e.g. {calls[0]['error']}; "
            "check that the judge's server is up and its model name, base URL and API key"
        )
    else:
        first = (parses[0].get("problems") or ["?"])[-1] if parses else "?"
        msg = (
            f"nbeval.generate made no test case: none of the judge's replies fitted the schema ({len(parses)} "
            f"case(s), e.g. {first}); try a stronger judge model, or use_response_format=True"
        )
    return GenerationFailed(msg, dict(report))


def summary_lines(suite: TestSuite) -> list[str]:
    """What a generation made and spent, in a few lines (the command line and the magic print them)."""
    r = suite.extra.get(REPORT_KEY) or {}
    kinds = ", ".join(f"{v} {k}" for k, v in (r.get("by_kind") or {}).items())
    cost = f", ${r['cost']:.4f}" if r.get("cost") is not None else ""
    if unknown_calls(r):  # some calls were not priced: the cost is a lower bound, and says so
        cost = f", cost {cost_text(r)}"
    lines = [
        f"made {r.get('made', len(suite.test_cases))} of {r.get('requested', '?')} test cases"
        + (f" ({kinds})" if kinds else "")
        + f" from {r.get('documents', '?')} documents in {r.get('chunks', '?')} chunks",
        f"judge: {r.get('calls', 0)} calls ({r.get('cached_calls', 0)} answered from the cache), "
        f"{r.get('prompt_tokens', 0)} prompt + {r.get('completion_tokens', 0)} completion tokens{cost}",
    ]
    for wanted, by in (r.get("stood_in") or {}).items():
        made = " and ".join(f"{n} {kind}" for kind, n in by.items())
        lines.append(
            f"{sum(by.values())} {wanted} case(s) replaced by {made}: "
            f"the documents hold no more distinct {wanted} requests"
        )
    problems = [
        f"{len(r.get('parse_failures', []))} never fitted the schema" if r.get("parse_failures") else "",
        f"{len(r.get('call_failures', []))} calls failed" if r.get("call_failures") else "",
        f"{r.get('duplicates_removed', 0)} duplicates removed" if r.get("duplicates_removed") else "",
        f"{r.get('reasked', 0)} asked again until the reply fitted" if r.get("reasked") else "",
    ]
    if any(problems):
        lines.append("; ".join(p for p in problems if p) + f" (listed in the suite's {REPORT_KEY})")
    return lines
