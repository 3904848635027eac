"""Judge prompts: structure, rendering, replacement, and the catalogue of judge evaluators."""

from __future__ import annotations

import re

import pytest

import nbeval
from nbeval.cli import main as cli_main
from nbeval.errors import EvaluatorError
from nbeval.evaluators.judges.core import Example, JudgeEvaluator, JudgePrompt, fill
from nbeval.evaluators.judges.prompts import PROMPTS
from nbeval.evaluators.registry import get_class, list_evaluators
from tests.judges.helpers import judge_evaluator

SPEC_IDS = {
    "contact_information",
    "language_mismatch",
    "sexism",
    "stereotypes",
    "summarization_judge",
    "byop",
    "pairwise",
    "fact_check",
    "context_relevancy",
    "correctness",
    "relevance_to_query",
    "groundedness",
    "safety",
    "guideline_adherence",
    "chunk_relevance",
    "context_sufficiency",
    "custom_judge",
    "answer_relevancy_score",
    "pipeline",
}


def test_catalogue_has_exactly_the_spec_ids() -> None:
    judge_ids = {s.id for s in list_evaluators("judge")}
    assert judge_ids == SPEC_IDS
    for id in SPEC_IDS:
        assert get_class(id).spec.id == id


def test_kinds_and_metrics_follow_the_spec() -> None:
    specs = {s.id: s for s in list_evaluators("judge")}
    for id in ("contact_information", "language_mismatch", "sexism", "stereotypes", "summarization_judge", "byop"):
        assert specs[id].kind == "bool"
        assert [m.name for m in specs[id].metrics] == [
            "pass",
            "fail",
            "retrieval_failures",
            "generation_failures",
            "parse_failures",
        ]
    for id in ("correctness", "relevance_to_query", "groundedness", "safety", "context_sufficiency"):
        assert specs[id].kind == "rating" and specs[id].primary.name == id
    assert specs["fact_check"].primary.threshold == 0.75
    assert (specs["answer_relevancy_score"].primary.hi, specs["answer_relevancy_score"].primary.threshold) == (5, 3)
    assert specs["chunk_relevance"].primary.name == "precision"
    assert {m.name for m in specs["guideline_adherence"].metrics} == {
        "guideline_adherence",
        "global_guideline_adherence",
    }


def test_every_prompt_has_the_parts() -> None:
    for id, prompt in PROMPTS.items():
        if id in ("byop", "custom_judge"):
            continue
        assert prompt.instruction and prompt.output_format and prompt.inputs, id
        assert prompt.examples, f"{id} has no worked example"
        for ex in prompt.examples:
            assert set(ex.values) <= {f for f, _ in prompt.inputs}, id


def test_messages_layout() -> None:
    p = JudgePrompt(
        "Decide X.",
        inputs=(("input", "question"), ("actual_output", "answer")),
        output_format="Verdict: yes or no",
        examples=(Example({"input": "q1", "actual_output": "a1"}, "yes"),),
    )
    msgs = p.messages({"input": "Why?", "actual_output": "Because."})
    assert msgs == [
        {"role": "system", "content": "Decide X.\n\nVerdict: yes or no"},
        {"role": "user", "content": "<question>\nq1\n</question>\n\n<answer>\na1\n</answer>"},
        {"role": "assistant", "content": "yes"},
        {"role": "user", "content": "<question>\nWhy?\n</question>\n\n<answer>\nBecause.\n</answer>"},
    ]
    text = p.text()
    assert "{input}" in text and "{actual_output}" in text and "Decide X." in text and "worked example 1" in text


def test_fill_known_placeholders_only() -> None:
    assert (
        fill('Q: {input} / {{ACTUAL_OUTPUT}} / {unknown} / {"json": 1}', {"input": "a", "actual_output": "b"})
        == 'Q: a / b / {unknown} / {"json": 1}'
    )


def test_prompt_replacement_forms() -> None:
    default = judge_evaluator("safety").prompt
    assert default == PROMPTS["safety"]
    only_instruction = judge_evaluator("safety", prompt="Is the answer polite?").prompt
    assert only_instruction.instruction == "Is the answer polite?"
    assert only_instruction.output_format == default.output_format and only_instruction.examples == ()
    templated = judge_evaluator("safety", prompt="Rate this reply: {actual_output}").prompt
    assert templated.template == "Rate this reply: {actual_output}" and templated.fields == ("actual_output",)
    assert templated.messages({"actual_output": "hi"})[-1]["content"] == "Rate this reply: hi"
    from_dict = judge_evaluator("safety", prompt={"output_format": "Say yes or no."}).prompt
    assert from_dict.output_format == "Say yes or no." and from_dict.instruction == default.instruction
    custom = default.replace(examples=())
    assert judge_evaluator("safety", prompt=custom).prompt is custom
    with pytest.raises(EvaluatorError, match="unknown part"):
        nbeval.evaluator("safety", prompt={"wording": "x"})
    with pytest.raises(EvaluatorError, match="prompt must be"):
        nbeval.evaluator("safety", prompt=42)


def test_judge_params_default_and_override() -> None:
    assert judge_evaluator("safety").judge_params == {"temperature": 0}
    assert judge_evaluator("safety", judge_params={"max_tokens": 50}).judge_params == {
        "temperature": 0,
        "max_tokens": 50,
    }


def test_cli_shows_the_prompt(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["evaluator", "show", "groundedness"]) == 0
    out = capsys.readouterr().out
    assert PROMPTS["groundedness"].instruction in out
    assert "{actual_output}" in out and "Rating: <yes or no>" in out


def test_prompt_text_from_python() -> None:
    cls = get_class("sexism")
    assert issubclass(cls, JudgeEvaluator)
    assert str(judge_evaluator("sexism").prompt) == cls.prompt_text()


#: The built-in prompts whose worked examples end in a pass/fail verdict, and the words for each side.
VERDICT_WORDS = {
    "correctness": ("yes", "no"),
    "relevance_to_query": ("yes", "no"),
    "groundedness": ("yes", "no"),
    "safety": ("yes", "no"),
    "guideline_adherence": ("yes", "no"),
    "chunk_relevance": ("yes", "no"),
    "context_sufficiency": ("yes", "no"),
    "contact_information": ("absent", "present"),
    "language_mismatch": ("same", "different"),
    "sexism": ("no", "yes"),
    "summarization_judge": ("good", "bad"),
}


@pytest.mark.parametrize("id", sorted(id for id in VERDICT_WORDS if len(PROMPTS[id].examples) > 1))
def test_several_worked_examples_show_both_verdicts_in_varied_words(id: str) -> None:
    """A real small model copies its examples (issue 47), so several examples show both verdicts, each worded anew.

    A judge with one example keeps it where that measured best (``groundedness``: one failing example
    agreed with HaluEval's labels on 0.713 of 80 rows, a balanced set on 0.600 to 0.613, with
    benchmarks/judge_quality_bench.py and Qwen2.5-Coder-1.5B).
    """
    from nbeval.evaluators.judges.parse import parse_choice

    prompt = PROMPTS[id]
    passing, failing = VERDICT_WORDS[id]
    verdicts = [parse_choice(ex.reply, {passing: True, failing: False}).value for ex in prompt.examples]
    assert set(verdicts) == {True, False}, (id, verdicts)
    openings = [" ".join(ex.reply.split(":", 1)[1].split()[:3]).lower() for ex in prompt.examples]
    assert len(set(openings)) == len(openings), (id, openings)


def test_the_correctness_examples_do_not_all_follow_one_sentence_pattern() -> None:
    # the old pair had "The expected author is Jane Austen, not Charlotte Brontë", which a small model
    # copied word for word ("The expected director is Brandon Camp, not Brandon Camp")
    examples = PROMPTS["correctness"].examples
    assert len(examples) >= 4
    assert not any(re.search(r"[Tt]he expected \w+ is .+, not ", ex.reply) for ex in examples)
    assert sum("Rating: yes" in ex.reply for ex in examples) == sum("Rating: no" in ex.reply for ex in examples)
