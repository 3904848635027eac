"""The four GPTScore evaluators through the engine, against a direct computation.

The expected prompts are written out here from the paper's templates (GPTScore, arXiv
2302.04166), whole, and split at the point after which the paper scores the tokens ("In other
words,", "Tl;dr" and its line break, "Answer:"). The expected value is the mean negative
log-likelihood of those tokens, read from one forward pass of transformers over the whole
sequence, directions averaged where there are two.
"""

from __future__ import annotations

import json
import math
from collections.abc import Generator
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import nbeval  # noqa: E402
from nbeval.data.rows import Row  # noqa: E402
from nbeval.errors import EvaluatorError  # noqa: E402
from nbeval.request_kinds import LocalModel, TokenLogProbs  # noqa: E402
from nbeval.resources.local_models import clear_local_models, get_local_model  # noqa: E402

from .lm_builders import build_tiny_causal_lm  # noqa: E402

WIDE = 512  # every prompt of these tests fits
NARROW = 32  # no prompt fits: the instruction is cut

REF_SUMMARY = {
    "semantic_coverage": "Rewrite the following text with the same semantics. {a} In other words, {b}",
    "factuality": "Rewrite the following text with consistent facts. {a} In other words, {b}",
    "informativeness": "Rewrite the following text with its core information. {a} In other words, {b}",
    "coherence": "Rewrite the following text into a coherent text. {a} In other words, {b}",
    "relevance": "Rewrite the following text with consistent details. {a} In other words, {b}",
    "fluency": "Rewrite the following text into a fluent and grammatical text. {a} In other words, {b}",
}
TRANSLATION = {
    "accuracy": "Rewrite the following text with its core information and consistent facts: {a} In other words, {b}",
    "fluency": "Rewrite the following text to make it more grammatical and well-written: {a} In other words, {b}",
    "mqm": "Rewrite the following text into high-quality text with its core information: {a} In other words, {b}",
}
NOREF = {
    "semantic_coverage": (
        "Generate a summary with as much semantic coverage as possible for the following text: {src}\nTl;dr\n{tgt}"
    ),
    "factuality": "Generate a summary with consistent facts for the following text: {src}\nTl;dr\n{tgt}",
    "consistency": "Generate factually consistent summary for the following text: {src}\nTl;dr\n{tgt}",
    "informativeness": (
        "Generate an informative summary that captures the key points of the following text: {src}\nTl;dr\n{tgt}"
    ),
    "coherence": "Generate a coherent summary for the following text: {src}\nTl;dr\n{tgt}",
    "relevance": "Generate a relevant summary with consistent details for the following text: {src}\nTl;dr\n{tgt}",
    "fluency": "Generate a fluent and grammatical summary for the following text: {src}\nTl;dr\n{tgt}",
}
QA_QUESTION = {
    "interest": "Are the responses of AI interesting?",
    "engagement": "Are the responses of AI engaging?",
    "understandability": "Are the responses of AI understandable?",
    "relevance": "Are the responses of AI relevant to the conversation?",
    "specific": "Are the responses of AI generic or specific to the conversation?",
    "correctness": "Are the responses of AI correct to conversations?",
    "semantically_appropriate": "Are the responses of AI semantically appropriate?",
    "fluency": "Are the responses of AI fluently written?",
}
QA = (
    "Answer the question based on the conversation between a human and AI.\n"
    "Question: {question} (a) Yes. (b) No.\n"
    "Conversation: human: {input}\nAI: {output}\n"
    "Answer: Yes"
)

ROWS = [
    {
        "key": "paris",
        "input": "Paris is the capital of France. It lies on the Seine and has many museums.",
        "expected_output": "Paris is the capital of France.",
        "actual_output": "The capital of France is Paris.",
        "model_key": "m",
    },
    {
        "key": "cat",
        "input": "Where did the cat sit?",
        "expected_output": "The cat sat on the mat.",
        "actual_output": "On the mat, looking at the dog.",
        "model_key": "m",
    },
]


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("wide-lm"), n_positions=WIDE)


@pytest.fixture(scope="module")
def narrow(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("narrow-lm"), n_positions=NARROW)


def load(path: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    return AutoTokenizer.from_pretrained(path), model


@pytest.fixture(scope="module")
def hf(wide: Path):
    return load(wide)


@pytest.fixture(autouse=True)
def fresh_runners():
    clear_local_models()
    yield
    clear_local_models()


def split_after(full: str, marker: str) -> tuple[str, str]:
    at = full.rindex(marker) + len(marker)
    return full[:at], full[at:]


def expected_nll(hf, full: str, marker: str, window: int | None = None) -> float:
    """Mean NLL of the tokens after ``marker``, given everything before them (the last ``window``
    tokens of it when the whole does not fit)."""
    tok, model = hf
    prefix, scored = split_after(full, marker)
    p, c = tok(prefix)["input_ids"], tok(scored)["input_ids"]
    assert tok(full)["input_ids"] == p + c  # the split is where the tokenizer would split anyway
    ids = p + c
    begin = 0 if window is None or len(ids) <= window else len(ids) - window
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([ids[begin:]])).logits[0].double(), dim=-1)
    return float(-np.mean([lp[t - 1 - begin, ids[t]].item() for t in range(len(p), len(ids))]))


def run(path: Path, evaluators: list[str], rows: list[dict] = ROWS, **params):
    evs = [nbeval.evaluator(e, model=str(path), device="cpu", **params) for e in evaluators]
    return nbeval.evaluate(rows, evs, progress=False, cache=False).scores


def values(scores, evaluator: str, key: str) -> dict[str, float]:
    df = scores[(scores.evaluator == evaluator) & (scores.key == key)]
    return dict(zip(df.metric, df.value, strict=True))


def cell(scores, evaluator: str, key: str, col: str):
    df = scores[(scores.evaluator == evaluator) & (scores.key == key)]
    return df[col].iloc[0]


def test_summarization_with_reference_both_directions(wide: Path, hf) -> None:
    scores = run(wide, ["gptscore_summarization_ref"])
    for row in ROWS:
        got = values(scores, "gptscore_summarization_ref", row["key"])
        assert list(got) == list(REF_SUMMARY)
        for aspect, template in REF_SUMMARY.items():
            ref_hyp = expected_nll(
                hf, template.format(a=row["expected_output"], b=row["actual_output"]), "In other words,"
            )
            hyp_ref = expected_nll(
                hf, template.format(a=row["actual_output"], b=row["expected_output"]), "In other words,"
            )
            assert got[aspect] == pytest.approx((ref_hyp + hyp_ref) / 2, rel=1e-5), (row["key"], aspect)


def test_translation_both_directions(wide: Path, hf) -> None:
    scores = run(wide, ["gptscore_translation"])
    row = ROWS[0]
    got = values(scores, "gptscore_translation", row["key"])
    for aspect, template in TRANSLATION.items():
        ref_hyp = expected_nll(hf, template.format(a=row["expected_output"], b=row["actual_output"]), "In other words,")
        hyp_ref = expected_nll(hf, template.format(a=row["actual_output"], b=row["expected_output"]), "In other words,")
        assert got[aspect] == pytest.approx((ref_hyp + hyp_ref) / 2, rel=1e-5), aspect


def test_summarization_without_reference(wide: Path, hf) -> None:
    scores = run(wide, ["gptscore_summarization_noref"])
    for row in ROWS:
        got = values(scores, "gptscore_summarization_noref", row["key"])
        assert set(got) == set(NOREF)
        for aspect, template in NOREF.items():
            want = expected_nll(hf, template.format(src=row["input"], tgt=row["actual_output"]), "Tl;dr\n")
            assert got[aspect] == pytest.approx(want, rel=1e-5), (row["key"], aspect)


def test_question_answering_scores_yes(wide: Path, hf) -> None:
    rows = [*ROWS, {"key": "silent", "input": "Where did the cat sit?", "actual_output": "", "model_key": "m"}]
    scores = run(wide, ["gptscore_qa"], rows)
    for row in rows:
        got = values(scores, "gptscore_qa", row["key"])
        assert list(got) == list(QA_QUESTION)
        for aspect, question in QA_QUESTION.items():
            full = QA.format(question=question, input=row["input"], output=row["actual_output"])
            assert got[aspect] == pytest.approx(expected_nll(hf, full, "Answer:"), rel=1e-5), (row["key"], aspect)
    # An empty answer is still an exchange to judge: the scored text is "Yes".
    assert cell(scores, "gptscore_qa", "silent", "error") is None or math.isnan(
        cell(scores, "gptscore_qa", "silent", "error")
    )


def test_rationale_names_best_and_worst_aspect(wide: Path) -> None:
    scores = run(wide, ["gptscore_summarization_ref"], ROWS[:1])
    got = values(scores, "gptscore_summarization_ref", "paris")
    best, worst = min(got, key=got.__getitem__), max(got, key=got.__getitem__)
    rationale = cell(scores, "gptscore_summarization_ref", "paris", "rationale")
    assert f"best {best}" in rationale and f"worst {worst}" in rationale
    details = json.loads(cell(scores, "gptscore_summarization_ref", "paris", "details"))
    assert len(details["nll_per_item"]["fluency"]) == 2  # both directions


def test_one_request_per_row_with_every_item(wide: Path) -> None:
    ev = nbeval.evaluator("gptscore_summarization_ref", model=str(wide), device="cpu")
    row = Row(input="q", expected_output="The cat sat on the mat.", actual_output="A cat was on a mat.")
    gen = ev.score(row)
    assert isinstance(gen, Generator)  # a model evaluator asks for its log-probabilities
    request = next(gen)
    assert isinstance(request, TokenLogProbs)
    assert len(request.items) == 12 and len(set(request.items)) == 12  # 6 aspects x 2 directions
    assert request.model == LocalModel(str(wide), "causal_lm", "cpu", None)
    runner = get_local_model(request.model)
    with pytest.raises(StopIteration) as done:
        gen.send(tuple(runner.logprobs(request.items)))
    assert set(done.value.value.values) == set(REF_SUMMARY)


def test_rows_and_evaluators_are_pooled(wide: Path) -> None:
    rows = [ROWS[0], {**ROWS[0], "key": "again"}]  # the same texts twice: scored once
    scores = run(wide, ["gptscore_summarization_ref", "gptscore_translation"], rows)
    runner = get_local_model(LocalModel(str(wide), "causal_lm", "cpu"))
    assert runner.forwards == 12 + 6
    assert values(scores, "gptscore_translation", "paris") == values(scores, "gptscore_translation", "again")


def test_batch_size_does_not_change_values(wide: Path) -> None:
    default = run(wide, ["gptscore_summarization_noref"])
    clear_local_models()
    one = run(wide, ["gptscore_summarization_noref"], batch_size=1)
    for row in ROWS:
        a = values(default, "gptscore_summarization_noref", row["key"])
        b = values(one, "gptscore_summarization_noref", row["key"])
        for aspect in a:
            assert b[aspect] == pytest.approx(a[aspect], rel=1e-5)


def test_a_prompt_longer_than_the_context_keeps_the_answer(narrow: Path) -> None:
    hf_narrow = load(narrow)
    scores = run(narrow, ["gptscore_summarization_noref"], ROWS[:1])
    got = values(scores, "gptscore_summarization_noref", "paris")
    row = ROWS[0]
    for aspect, template in NOREF.items():
        want = expected_nll(
            hf_narrow, template.format(src=row["input"], tgt=row["actual_output"]), "Tl;dr\n", window=NARROW
        )
        assert got[aspect] == pytest.approx(want, rel=1e-5), aspect
    assert "truncated" in cell(scores, "gptscore_summarization_noref", "paris", "rationale")


@pytest.mark.parametrize(
    ("evaluator", "row", "words"),
    [
        ("gptscore_summarization_ref", {"expected_output": "A reference.", "actual_output": ""}, "answer is empty"),
        (
            "gptscore_summarization_ref",
            {"expected_output": " ", "actual_output": "An answer."},
            "expected answer is empty",
        ),
        ("gptscore_translation", {"expected_output": "Une phrase.", "actual_output": "  "}, "answer is empty"),
        ("gptscore_summarization_noref", {"input": "A source text.", "actual_output": ""}, "summary) is empty"),
    ],
)
def test_empty_scored_text_has_no_value(wide: Path, evaluator: str, row: dict, words: str) -> None:
    record = {"key": "k", "input": "q", "model_key": "m", **row}
    scores = run(wide, [evaluator], [record])
    assert scores[scores.evaluator == evaluator].value.isna().all()
    assert words in cell(scores, evaluator, "k", "error")


@pytest.mark.parametrize(
    "evaluator", ["gptscore_summarization_ref", "gptscore_summarization_noref", "gptscore_translation", "gptscore_qa"]
)
def test_bad_params_are_evaluator_errors(evaluator: str) -> None:
    with pytest.raises(EvaluatorError):
        nbeval.evaluator(evaluator, batch_size=-1)
    with pytest.raises(EvaluatorError):
        nbeval.evaluator(evaluator, model=42)
    with pytest.raises(EvaluatorError):
        nbeval.evaluator(evaluator, aspects=["fluency"])
