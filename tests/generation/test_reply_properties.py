"""Issue 43, "make the class of bug hard to write again": the parsers of the generation replies
(``nbeval.generate``'s test cases, the LLM perturbators' rewritten prompts) under any reply text.

Properties (Hypothesis): for any text a model may send, a parser returns (never raises); exactly
one of its result and its reason is given; a result has the schema's fields as non-empty, stripped
strings; a reason is a non-empty sentence. A reply that does follow the schema is read back as
written, whatever surrounds it (a code fence, prose before and after). And in a run, a reply
that never fits is a per-chunk entry of the report (the slot's chunk ids, the raw replies and
what was wrong), not a crash and not a dropped case.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

import nbeval
from nbeval.errors import GenerationFailed
from nbeval.generation.prompts import CASE_SCHEMA, parse_reply
from nbeval.perturbation.llm import parse_reply as parse_rewrite
from tests.generation.corpus import HANDBOOK

DEEP_ARRAY = "[" * 100_000
DEEP_OBJECT = '{"question":' * 50_000 + '"q"' + "}" * 50_000

#: JSON-looking text: values of any JSON type, objects with the schema's keys or near them.
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
keys = st.sampled_from(["question", "answer", "prompt", "technique", "Question", ""])
objects = st.dictionaries(keys | st.text(max_size=8), json_values, max_size=5).map(json.dumps)
noise = st.text(max_size=40) | st.sampled_from(["```json\n", "```", "{", "}", '"', "\\", "Here you go: "])
replies = (
    st.lists(objects | noise, max_size=5).map("".join)
    | st.text()
    | st.binary().map(lambda b: b.decode("utf-8", "replace"))
)


def _check_case(text: str) -> None:
    case, problem = parse_reply(text)
    assert (case is None) != (problem is None)
    if case is not None:
        assert set(case) == set(CASE_SCHEMA["required"])
        assert all(isinstance(v, str) and v and v == v.strip() for v in case.values())
    else:
        assert isinstance(problem, str) and problem.strip()


@settings(max_examples=1000, deadline=None)
@given(text=replies)
@example(text=DEEP_ARRAY)  # found by hand while writing these: json's RecursionError escaped both parsers
@example(text=DEEP_OBJECT)
@example(text="")
@example(text='```json\n{"question": 1, "answer": "a"}\n```')
def test_any_reply_gives_a_case_or_a_reason_never_an_exception(text: str) -> None:
    _check_case(text)
    prompt, technique, why = parse_rewrite(text, "Which platform does the train leave from?")
    assert (prompt is None) == bool(why)
    if prompt is None:
        assert why.strip() and technique == ""
    else:
        assert prompt and prompt == prompt.strip() and isinstance(technique, str)


blank = st.text(alphabet=" \t\n", max_size=3)
words = st.text(min_size=1, max_size=60).filter(lambda s: s.strip() != "")


@settings(max_examples=800, deadline=None)
@given(question=words, answer=words, before=st.sampled_from(["", "Sure. ", "```json\n", "```\n"]), pad=blank)
def test_a_reply_that_fits_is_read_back_as_written(question: str, answer: str, before: str, pad: str) -> None:
    body = json.dumps({"question": question, "answer": answer})
    after = "\n```" if before.startswith("```") else (" Hope that helps." if before else "")
    case, problem = parse_reply(pad + before + body + after + pad)
    assert problem is None and case == {"question": question.strip(), "answer": answer.strip()}


@settings(max_examples=800, deadline=None)
@given(prompt=words, original=words)
# found by Hypothesis: the brace scan ended a string at an escaped quote (\"), so a prompt holding a
# quote was "no JSON object in the reply", and the case was re-asked and then not perturbed
@example(prompt='"', original="x")
@example(prompt='Say "hi" and {go} \\', original="x")
def test_a_rewrite_that_fits_is_read_back_unless_it_is_the_original(prompt: str, original: str) -> None:
    got, _, why = parse_rewrite("Here it is:\n" + json.dumps({"prompt": prompt, "technique": "x"}), original)
    if " ".join(prompt.split()).casefold() == " ".join(original.split()).casefold():
        assert got is None and "unchanged" in why
    else:
        assert got == prompt.strip() and why == ""


def test_a_reply_that_never_fits_is_a_per_chunk_entry_of_the_report() -> None:
    bad = [DEEP_ARRAY, "not json at all", '{"question": ["a list"], "answer": "x"}']
    seen: list[str] = []

    def writer(messages: list[dict[str, str]]) -> str:
        reply = bad[len(seen) % len(bad)]
        seen.append(reply)
        return reply

    options: dict[str, Any] = {"dedupe_threshold": None, "cache": False, "extra_rounds": 0, "progress": False}
    try:
        nbeval.generate(HANDBOOK[:1], 1, kinds=["single_hop"], judge=writer, attempts=3, **options)
    except GenerationFailed as exc:
        report = exc.report
    else:
        raise AssertionError("no reply fitted, so no case can have been made")
    (failure,) = report["parse_failures"]
    assert failure["chunk_ids"] and failure["calls"] == 3 and len(failure["replies"]) == 3
    assert [p.split(" (")[0] for p in failure["problems"]] == [
        "the reply is JSON nested too deep to read",
        "the reply is not a JSON object",
        "'question' must be a string, not list",
    ]
