"""text_matching: golden condition examples, per-model fractions, context checks, time bounds.

Every expected value below was worked out by hand (see the ``_about`` notes of the golden files
and the comments next to each table), never taken from nbeval's output.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest

import nbeval
from nbeval.data.model import Chunk, Row

GOLDEN = Path(__file__).parent / "golden"
BOOL = ("pass", "fail", "retrieval_failures", "generation_failures", "parse_failures")


def _golden(name: str) -> dict:
    return json.loads((GOLDEN / name).read_text(encoding="utf-8"))


CONDITIONS = _golden("matching_conditions.json")
CONDITION_CASES = [
    (c["condition"], label, expected) for c in CONDITIONS["cases"] for label, expected in c["expected"].items()
]


def _same(a: float | None, b: float | None) -> bool:
    if a is None or (isinstance(a, float) and math.isnan(a)):
        return b is None
    return b is not None and math.isclose(a, b)


def _score(**fields):
    return nbeval.evaluator("text_matching").score(Row(input="q", **fields))


# --- the spec's and the seed's condition examples ----------------------------------------------


@pytest.mark.parametrize(("condition", "answer_label", "expected"), CONDITION_CASES)
def test_condition_examples(condition: str, answer_label: str, expected: bool) -> None:
    answer = CONDITIONS["answers"][answer_label]
    s = _score(actual_output=answer, output_condition=condition)
    assert s.values["pass"] == float(expected)
    assert s.values["generation_failures"] == float(not expected)
    assert s.values["retrieval_failures"] is None  # no context on these rows
    assert s.values["parse_failures"] == 0.0
    assert s.values["pass"] + s.values["fail"] + s.values["parse_failures"] == 1.0
    assert s.error is None
    # The rationale is the condition's own explanation of the answer.
    assert s.rationale == "answer: " + nbeval.parse_condition(condition).explain(answer)


def test_rationale_names_operands_found_and_missing() -> None:
    s = _score(
        actual_output="In Brazil revenue was 15,969 million Real",
        output_condition='("Brazil" OR "brazil") AND regexp("15,?969 [Mm]illion") AND NOT "Real"',
    )
    assert s.values["pass"] == 0.0
    assert '"Brazil" found' in s.rationale
    assert '"brazil" not found' in s.rationale
    assert '"15,969 million"' in s.rationale  # what the regexp matched
    assert '"Real" found' in s.rationale


# --- per row and per model, end to end ---------------------------------------------------------

# Hand-worked outcomes: (pass, retrieval_failures, generation_failures); None = no context.
#   alpha T1: answer has "15,969" and "million"; context too                  -> pass
#   alpha T2: answer "15969" matches 15,?969; context "15 969" does not       -> retrieval failure
#   alpha T3: "brazil" + "15969 Million", no "Real"; no context               -> pass
#   alpha T4: answer lacks "Paris"; context has it                            -> generation failure
#   beta  T1: answer lacks "million"; context "15,969 million" passes         -> generation failure
#   beta  T2: "15,969" matches; no context                                    -> pass
#   beta  T3: answer contains "Real"; context passes                          -> generation failure
#   beta  T4: answer "Paris"; context ("Lyon ..." + "Marseille ...") lacks it  -> retrieval failure
ROWS = {
    ("alpha", "Brazil revenue?"): (1, 0, 0),
    ("alpha", "Revenue figure?"): (0, 1, 0),
    ("alpha", "Brazil revenue in words?"): (1, None, 0),
    ("alpha", "Capital of France?"): (0, 0, 1),
    ("beta", "Brazil revenue?"): (0, 0, 1),
    ("beta", "Revenue figure?"): (1, None, 0),
    ("beta", "Brazil revenue in words?"): (0, 0, 1),
    ("beta", "Capital of France?"): (0, 1, 0),
}
# Per model: (value, n) for each metric. retrieval_failures counts only rows with context (3 each).
AGGREGATES = {
    "alpha": {
        "pass": (2 / 4, 4),
        "fail": (2 / 4, 4),
        "retrieval_failures": (1 / 3, 3),
        "generation_failures": (1 / 4, 4),
        "parse_failures": (0.0, 4),
    },
    "beta": {
        "pass": (1 / 4, 4),
        "fail": (3 / 4, 4),
        "retrieval_failures": (1 / 3, 3),
        "generation_failures": (2 / 4, 4),
        "parse_failures": (0.0, 4),
    },
}


def test_rows_and_aggregates_end_to_end() -> None:
    records = _golden("matching_models.json")["records"]
    result = nbeval.evaluate(records, ["text_matching"], progress=False)
    prompts = {(r.model_key, r.key): r.input for r in result.dataset.rows}
    scores = result.scores
    assert not scores["skipped"].any()
    seen = set()
    for (model, key), group in scores.groupby(["model_key", "key"]):
        prompt = prompts[(model, key)]
        assert prompt is not None
        want = ROWS[(model, prompt)]
        got = dict(zip(group["metric"], group["value"], strict=True))
        assert _same(got["pass"], want[0]), (model, key)
        assert _same(got["fail"], 1 - want[0])
        assert _same(got["retrieval_failures"], want[1])
        assert _same(got["generation_failures"], want[2])
        assert _same(got["parse_failures"], 0.0)
        seen.add((model, prompts[(model, key)]))
    assert seen == set(ROWS)

    agg = result.aggregates
    for model, metrics in AGGREGATES.items():
        for metric, (value, n) in metrics.items():
            row = agg[
                (agg["model_key"] == model) & (agg["evaluator"] == "text_matching") & (agg["metric"] == metric)
            ].iloc[0]
            assert math.isclose(row["value"], value), (model, metric)
            assert row["n"] == n and row["N"] == 4
    primary = agg[agg["primary"]]
    assert set(primary["metric"]) == {"pass"}
    # alpha passes half its rows, on the threshold (0.5); beta a quarter, below it.
    assert dict(zip(primary["model_key"], primary["passed"], strict=True)) == {"alpha": True, "beta": False}


def test_row_without_condition_is_skipped() -> None:
    records = [
        {"input": "q1", "actual_output": "anything"},
        {"input": "q2", "actual_output": "Paris", "output_condition": '"Paris"'},
    ]
    result = nbeval.evaluate(records, ["text_matching"], progress=False)
    first = result.scores[result.scores["key"] == result.dataset.rows[0].key]
    assert first["skipped"].all()
    assert "output_condition" in first["skip_reason"].iloc[0]
    agg = result.aggregates.set_index("metric")
    assert agg.loc["pass", "value"] == 1.0 and agg.loc["pass", "n"] == 1 and agg.loc["pass", "N"] == 2


# --- retrieved context ---------------------------------------------------------------------------


def test_context_chunks_are_joined_with_a_blank_line() -> None:
    chunks = [Chunk("revenue 15,"), Chunk("969 million")]
    # "15,969" spans the seam of the two chunks: the joined text is "revenue 15,\n\n969 million".
    s = _score(actual_output="15,969", output_condition='"15,969"', context=chunks)
    assert s.values["generation_failures"] == 0.0
    assert s.values["retrieval_failures"] == 1.0
    assert s.values["pass"] == 0.0 and s.values["fail"] == 1.0
    s = _score(actual_output="15,969", output_condition='regexp("15,\\n\\n969")', context=chunks)
    assert s.values["retrieval_failures"] == 0.0  # exactly one blank line between chunks
    assert s.values["generation_failures"] == 1.0
    assert "context:" in s.rationale


def test_context_given_only_by_document_is_not_checked() -> None:
    s = _score(actual_output="Paris", output_condition='"Paris"', context=[Chunk(doc_uri="paris.pdf")])
    assert s.values["retrieval_failures"] is None
    assert s.values["pass"] == 1.0
    assert "context" not in s.rationale


# --- malformed conditions and runaway regular expressions --------------------------------------


def test_malformed_condition_is_that_rows_error() -> None:
    s = _score(actual_output="abc", output_condition='"abc')  # Row does not validate; the reader would
    assert s.values["parse_failures"] == 1.0
    assert s.values["pass"] is None and s.values["fail"] is None  # unrated, not failed
    assert s.label == "unchecked" and s.error and "position" in s.error


def test_catastrophic_regexp_is_a_row_error_not_a_hang() -> None:
    records = [
        {
            "input": "evil",
            "model_key": "m",
            "output_condition": 'regexp("(a+)+$")',
            "actual_output": "a" * 50_000 + "b",
        },
        {"input": "fine", "model_key": "m", "output_condition": 'regexp("(a+)+$")', "actual_output": "aaa"},
    ]
    started = time.perf_counter()
    result = nbeval.evaluate(records, ["text_matching"], progress=False)
    elapsed = time.perf_counter() - started
    # a deadline (the regexp's 1 s timeout); unbounded, the pattern backtracks for far longer: the
    # margin is for a machine with two busy processes on two cores
    assert elapsed < 15, f"evaluate() took {elapsed:.2f} s"

    scores = result.scores
    evil = scores[scores["key"] == result.dataset.rows[0].key].set_index("metric")
    assert evil.loc["parse_failures", "value"] == 1.0
    assert math.isnan(evil.loc["pass", "value"]) and math.isnan(evil.loc["fail", "value"])  # unrated
    assert evil.loc["pass", "label"] == "timed_out"
    assert "took longer" in evil.loc["pass", "error"] and "answer" in evil.loc["pass", "error"]
    fine = scores[scores["key"] == result.dataset.rows[1].key].set_index("metric")
    assert fine.loc["pass", "value"] == 1.0 and not isinstance(fine.loc["pass", "error"], str)

    agg = result.aggregates.set_index("metric")
    # one row passed, one could not be checked: pass 1/1 and fail 0/1 over the rated row,
    # parse failures 1/2 over both
    assert (agg.loc["pass", "value"], agg.loc["pass", "n"], agg.loc["pass", "N"]) == (1.0, 1, 2)
    assert (agg.loc["fail", "value"], agg.loc["fail", "n"]) == (0.0, 1)
    assert (agg.loc["parse_failures", "value"], agg.loc["parse_failures", "n"]) == (0.5, 2)


def test_catastrophic_regexp_on_the_context_is_bounded_too() -> None:
    started = time.perf_counter()
    s = _score(actual_output="aaa", output_condition='regexp("(a+)+$")', context=[Chunk("a" * 50_000 + "b")])
    assert time.perf_counter() - started < 15  # a deadline, as above
    assert s.values["parse_failures"] == 1.0
    assert "retrieved context" in s.error
