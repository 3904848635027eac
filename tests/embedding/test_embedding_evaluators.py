"""The nine embedding evaluators through the engine.

Golden values are recomputed here with numpy from sentence-transformers' own vectors for
sentences split by hand, independently of nbeval's splitter, caches and evaluator code.
"""

from __future__ import annotations

import math
from collections.abc import Generator, Sequence

import numpy as np
import pytest

import nbeval
from nbeval.engine import evaluate
from nbeval.errors import EvaluatorError
from nbeval.evaluators.registry import evaluator, list_evaluators
from nbeval.resources.embedder import Embedder

from .conftest import ExplodingModel, FakeModel, fake_embedder

NINE = [
    "semantic_similarity",
    "answer_semantic_similarity",
    "answer_sentence_similarity",
    "answer_relevancy_sentence",
    "groundedness_semantic",
    "context_relevancy_soft",
    "retriever_similarity",
    "step_alignment",
    "summarization_completeness",
]

Q = "What is the capital of France?"
EA = "Paris is the capital of France. It lies on the Seine."
EA_S = ["Paris is the capital of France.", "It lies on the Seine."]
AA = "The capital of France is Paris. Paris has about two million inhabitants. I like turtles."
AA_S = ["The capital of France is Paris.", "Paris has about two million inhabitants.", "I like turtles."]
C1 = "Paris is the capital and largest city of France. The city stands on the Seine river."
C1_S = ["Paris is the capital and largest city of France.", "The city stands on the Seine river."]
C2 = "Berlin is the capital of Germany. It has many museums."
C2_S = ["Berlin is the capital of Germany.", "It has many museums."]
E1, E2 = "Paris is the capital and largest city of France.", "France is a country in Western Europe."

RECORD = {
    "key": "france",
    "input": Q,
    "expected_output": EA,
    "actual_output": AA,
    "context": [C1, C2],
    "expected_context": [E1, E2],
    "model_key": "m",
}


def values(result, evaluator_name: str, model_key: str | None = None) -> dict[str, float]:
    df = result.scores
    df = df[df.evaluator == evaluator_name]
    if model_key is not None:
        df = df[df.model_key == model_key]
    return dict(zip(df.metric, df.value, strict=True))


def column(result, evaluator_name: str, col: str) -> list:
    df = result.scores
    return list(df[df.evaluator == evaluator_name][col])


@pytest.fixture(scope="module")
def vec(real_embedder: Embedder):
    """Vectors straight from sentence-transformers (not through nbeval's Embedder.encode)."""
    st = real_embedder.model

    def embed(texts: list[str]) -> np.ndarray:
        return st.encode(texts, normalize_embeddings=True, convert_to_numpy=True).astype(np.float64)

    return embed


def S(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.clip(a @ b.T, 0.0, 1.0)


@pytest.fixture(scope="module")
def golden_result(real_embedder: Embedder):
    return evaluate([RECORD], NINE, progress=False, embedder=real_embedder)


def test_catalogue_declares_the_nine() -> None:
    ids = {s.id for s in list_evaluators("embedding")}
    assert set(NINE) <= ids
    metrics = {i: [m.name for m in nbeval.evaluators.registry.get_spec(i).metrics] for i in NINE}
    assert metrics["answer_sentence_similarity"] == ["mean_answer_similarity", "min_answer_similarity"]
    assert metrics["context_relevancy_soft"] == ["recall_relevancy", "precision_relevancy"]
    assert metrics["step_alignment"] == [
        "edits",
        "insertions",
        "deletions",
        "mismatches",
        "context_steps",
        "answer_steps",
    ]
    spec = nbeval.evaluators.registry.get_spec("step_alignment")
    assert spec.primary.name == "edits" and spec.metric("edits").direction == "lower"
    assert math.isinf(spec.metric("edits").hi)
    for i in NINE:
        assert "embedder" in evaluator(i).params


def test_golden_whole_text(golden_result, vec) -> None:
    ea, aa = vec([EA, AA])
    cos = float(ea @ aa)
    assert values(golden_result, "semantic_similarity")["score"] == pytest.approx((cos + 1) / 2, abs=1e-5)
    assert values(golden_result, "answer_semantic_similarity")["answer_similarity"] == pytest.approx(
        max(cos, 0.0), abs=1e-5
    )


def test_golden_answer_sentence_similarity(golden_result, vec) -> None:
    best = S(vec(AA_S), vec(EA_S)).max(axis=1)
    got = values(golden_result, "answer_sentence_similarity")
    assert got["mean_answer_similarity"] == pytest.approx(best.mean(), abs=1e-5)
    assert got["min_answer_similarity"] == pytest.approx(best.min(), abs=1e-5)
    assert best.argmin() == 2  # the turtles
    assert "I like turtles." in column(golden_result, "answer_sentence_similarity", "rationale")[0]


def test_golden_answer_relevancy(golden_result, vec) -> None:
    expected = S(vec([Q]), vec(AA_S)).max()
    assert values(golden_result, "answer_relevancy_sentence")["answer_relevancy"] == pytest.approx(expected, abs=1e-5)


def test_golden_groundedness(golden_result, vec) -> None:
    expected = S(vec(AA_S), vec(C1_S + C2_S)).max(axis=1).min()
    assert values(golden_result, "groundedness_semantic")["groundedness"] == pytest.approx(expected, abs=1e-5)


def test_golden_context_relevancy_soft(golden_result, vec) -> None:
    q = vec([Q])
    per_chunk = [S(q, vec(C1_S)).max(), S(q, vec(C2_S)).max()]
    got = values(golden_result, "context_relevancy_soft")
    assert got["recall_relevancy"] == pytest.approx(max(per_chunk), abs=1e-5)
    assert got["precision_relevancy"] == pytest.approx(np.mean(per_chunk), abs=1e-5)


def test_golden_retriever_similarity(golden_result, vec) -> None:
    expected = S(vec([C1, C2]), vec([E1, E2])).max(axis=1).mean()
    assert values(golden_result, "retriever_similarity")["similarity"] == pytest.approx(expected, abs=1e-5)


def test_semantic_similarity_mapping() -> None:
    """(cos + 1) / 2 on vectors chosen by hand: same direction 1, orthogonal 0.5, opposite 0."""

    table = {"same": [1.0, 0.0], "ortho": [0.0, 1.0], "opposite": [-1.0, 0.0], "sixty": [0.5, math.sqrt(3) / 2]}

    class Fixed(FakeModel):
        def encode(self, texts, *args, **kwargs):
            return np.array([table[t] for t in texts])

    emb = fake_embedder(Fixed())
    recs = [
        {"key": k, "input": "q", "expected_output": "same", "actual_output": k, "model_key": "m"}
        for k in ("same", "ortho", "opposite", "sixty")
    ]
    res = evaluate(recs, ["semantic_similarity", "answer_semantic_similarity"], progress=False, embedder=emb)
    df = res.scores.set_index(["evaluator", "key"])["value"]
    assert df[("semantic_similarity", "same")] == pytest.approx(1.0)
    assert df[("semantic_similarity", "ortho")] == pytest.approx(0.5)
    assert df[("semantic_similarity", "opposite")] == pytest.approx(0.0)
    assert df[("semantic_similarity", "sixty")] == pytest.approx(0.75)  # cos 60 degrees = 0.5
    assert df[("answer_semantic_similarity", "opposite")] == 0.0  # a negative cosine is reported as 0
    assert df[("answer_semantic_similarity", "sixty")] == pytest.approx(0.5)


# -- step alignment and summarization ------------------------------------------------------------

PROCEDURE = "1. Open the Settings app.\n2. Tap Wi-Fi.\n3. Enter your password.\n4. Press Join."
ANSWER_STEPS = "First, go to settings. Then type in the password. Next, press Join. Finally, enjoy browsing the web."


def test_golden_step_alignment(real_embedder: Embedder, vec) -> None:
    ctx = ["Open the Settings app.", "Tap Wi-Fi.", "Enter your password.", "Press Join."]
    ans = ["go to settings.", "type in the password.", "press Join.", "enjoy browsing the web."]
    sim = vec(ctx) @ vec(ans).T
    # The expected alignment, worked out by hand, holds if these similarities sit on the right
    # side of the cut-off (0.5): the three reworded steps match, nothing else does.
    for i, j in [(0, 0), (2, 1), (3, 2)]:
        assert sim[i, j] >= 0.5
    assert sim[1].max() < 0.5 and sim[:, 3].max() < 0.5
    # context 1 ~ answer 1, context 2 (Wi-Fi) missing, context 3 ~ answer 2, context 4 ~ answer 3,
    # answer 4 (browsing) extra: 2 edits, 1 insertion, 1 deletion, 0 mismatches.
    rec = {
        "key": "wifi",
        "input": "How do I join Wi-Fi?",
        "actual_output": ANSWER_STEPS,
        "context": [PROCEDURE],
        "model_key": "m",
    }
    res = evaluate([rec], ["step_alignment"], progress=False, embedder=real_embedder)
    got = values(res, "step_alignment")
    assert got == {
        "edits": 2.0,
        "insertions": 1.0,
        "deletions": 1.0,
        "mismatches": 0.0,
        "context_steps": 4.0,
        "answer_steps": 4.0,
    }
    rationale = column(res, "step_alignment", "rationale")[0]
    assert "context 2 missing from the answer: Tap Wi-Fi." in rationale
    assert "answer 4 not in the context: enjoy browsing the web." in rationale


def test_step_alignment_without_context_steps(real_embedder: Embedder) -> None:
    rec = {
        "key": "k",
        "input": "q",
        "actual_output": "1. Do this\n2. Do that",
        "context": ["Just prose here."],
        "model_key": "m",
    }
    res = evaluate([rec], ["step_alignment"], progress=False, embedder=real_embedder)
    got = values(res, "step_alignment")
    assert math.isnan(got["edits"]) and got["context_steps"] == 0.0 and got["answer_steps"] == 2.0
    assert "no enumerated steps" in column(res, "step_alignment", "rationale")[0]
    assert column(res, "step_alignment", "error")[0] is None


def test_step_alignment_cutoff_param(real_embedder: Embedder) -> None:
    rec = {"key": "wifi", "input": "q", "actual_output": ANSWER_STEPS, "context": [PROCEDURE], "model_key": "m"}
    strict = evaluator("step_alignment", cutoff=0.999)
    res = evaluate([rec], [strict], progress=False, embedder=real_embedder)
    assert values(res, "step_alignment")["edits"] == 4.0  # nothing matches: four substitutions
    with pytest.raises(EvaluatorError, match="cutoff"):
        evaluator("step_alignment", cutoff="high")


def test_golden_summarization_small_source(real_embedder: Embedder, vec) -> None:
    """Three source sentences (no UMAP): the summary repeats sentences 1 and 3, so its spread is
    d(1, 3) and the source's is the diameter plus the longer edge from the third point."""
    src = ["The cat sleeps on the sofa.", "Stock prices rose sharply on Monday.", "The recipe needs two eggs."]
    summary = [src[0], src[2]]
    p = vec(src)
    d = np.linalg.norm(p[:, None] - p[None], axis=2)
    d1, d2, _ = sorted([d[0, 1], d[0, 2], d[1, 2]], reverse=True)
    expected = d[0, 2] / (d1 + d2)
    rec = {"key": "s", "input": " ".join(src), "actual_output": " ".join(summary), "model_key": "m"}
    res = evaluate([rec], ["summarization_completeness"], progress=False, embedder=real_embedder)
    assert values(res, "summarization_completeness")["completeness"] == pytest.approx(expected, abs=1e-5)


LONG_SOURCE = (
    "The Apollo 11 mission landed the first humans on the Moon in July 1969. "
    "Neil Armstrong and Buzz Aldrin spent about two hours walking on the lunar surface. "
    "Photosynthesis lets plants turn sunlight, water and carbon dioxide into sugar. "
    "Chlorophyll gives leaves their green colour and absorbs red and blue light. "
    "The French Revolution began in 1789 with the storming of the Bastille. "
    "It ended the absolute monarchy and spread ideas of citizenship across Europe. "
    "Sourdough bread rises thanks to wild yeast and lactic acid bacteria. "
    "A long, cool fermentation gives the loaf its sour taste and open crumb. "
    "Python is a programming language known for its readable syntax. "
    "Its package index hosts hundreds of thousands of open source libraries. "
    "Coral reefs cover less than one percent of the ocean floor. "
    "Yet they shelter about a quarter of all marine species."
)


@pytest.mark.slow
def test_summarization_copy_and_one_sentence(real_embedder: Embedder) -> None:
    recs = [
        {"key": "s", "input": LONG_SOURCE, "actual_output": LONG_SOURCE, "model_key": "copy"},
        {
            "key": "s",
            "input": LONG_SOURCE,
            "actual_output": "Humans first walked on the Moon in 1969.",
            "model_key": "short",
        },
    ]
    res = evaluate(recs, ["summarization_completeness"], progress=False, embedder=real_embedder)
    assert values(res, "summarization_completeness", "copy")["completeness"] >= 0.95
    assert values(res, "summarization_completeness", "short")["completeness"] <= 0.5
    assert "UMAP" in column(res, "summarization_completeness", "rationale")[0]


# -- sharing, caching, edge cases ----------------------------------------------------------------


def test_text_used_by_six_evaluators_is_encoded_once() -> None:
    """A one-sentence answer is the same text for the whole-answer and the sentence evaluators."""
    answer = "The sky is blue."
    model = FakeModel()
    emb = fake_embedder(model)
    rec = {
        "key": "k",
        "input": "What colour is the sky?",
        "expected_output": "It is blue.",
        "actual_output": answer,
        "context": ["The sky looks blue. Rayleigh scattering explains it."],
        "model_key": "m",
    }
    ids = [
        "semantic_similarity",
        "answer_semantic_similarity",
        "answer_sentence_similarity",
        "answer_relevancy_sentence",
        "groundedness_semantic",
        "summarization_completeness",
    ]
    res = evaluate([rec], ids, progress=False, embedder=emb)
    assert not res.scores["error"].notna().any()
    sent = [t for call in model.calls for t in call]
    assert sent.count(answer) == 1
    # distinct texts needed, by hand: the answer, the expected answer, the question, two context sentences
    assert emb.texts_encoded == 5 == len(set(sent))


def test_rerun_with_disk_cache_encodes_nothing(tmp_path) -> None:
    first = fake_embedder(FakeModel(), cache_dir=tmp_path)
    evaluate([RECORD], NINE[:7], progress=False, embedder=first)
    assert first.texts_encoded > 0
    second = Embedder("fake-model-for-tests", cache_dir=tmp_path)
    res = evaluate([RECORD], NINE[:7], progress=False, embedder=second)
    assert second.texts_encoded == 0 and not second.loaded
    assert not res.scores["error"].notna().any()


def test_empty_answer_scores_without_errors(real_embedder: Embedder) -> None:
    rec = {**RECORD, "actual_output": ""}
    res = evaluate([rec], NINE, progress=False, embedder=real_embedder)
    assert not res.scores["error"].notna().any()
    assert not res.scores["skipped"].any()
    v = values(res, "answer_sentence_similarity")
    assert 0.0 <= v["mean_answer_similarity"] <= 1.0
    assert values(res, "summarization_completeness")["completeness"] == 0.0
    assert values(res, "step_alignment")["answer_steps"] == 0.0


def test_overlong_text_warns_on_its_row(real_embedder: Embedder) -> None:
    long = "word " * 400
    recs = [{**RECORD, "key": "long", "actual_output": long}, {**RECORD, "key": "short"}]
    res = evaluate(recs, ["semantic_similarity"], progress=False, embedder=real_embedder)
    df = res.scores.set_index("key")
    assert "truncated" in df.loc["long", "rationale"]
    assert "truncated" not in df.loc["short", "rationale"]
    assert not df["error"].notna().any()


def test_non_english(real_embedder: Embedder) -> None:
    rec = {
        "key": "zh",
        "input": "法国的首都是哪里？",
        "expected_output": "巴黎是法国的首都。它位于塞纳河畔。",
        "actual_output": "法国的首都是巴黎。¡Es una ciudad preciosa!",
        "context": ["巴黎是法国的首都和最大城市。"],
        "expected_context": ["巴黎是法国的首都。"],
        "model_key": "m",
    }
    res = evaluate([rec], NINE, progress=False, embedder=real_embedder)
    assert not res.scores["error"].notna().any()
    v = res.scores.dropna(subset=["value"])
    bounded = v[~v.metric.isin(["edits", "insertions", "deletions", "mismatches", "context_steps", "answer_steps"])]
    assert bounded.value.between(0, 1).all()


def test_empty_context_list_is_skipped(real_embedder: Embedder) -> None:
    rec = {**RECORD, "context": [], "expected_context": []}
    ids = ["groundedness_semantic", "context_relevancy_soft", "retriever_similarity", "step_alignment"]
    res = evaluate([rec], ids, progress=False, embedder=real_embedder)
    assert res.scores["skipped"].all()
    assert res.scores["skip_reason"].str.contains("context").all()


def test_per_evaluator_embedder(real_embedder: Embedder) -> None:
    model = FakeModel()
    own = fake_embedder(model)
    ev = evaluator("semantic_similarity", embedder=own)
    res = evaluate([RECORD], [ev, "answer_semantic_similarity"], progress=False, embedder=real_embedder)
    assert model.calls == [[EA, AA]]
    assert not res.scores["error"].notna().any()


def test_cross_encoder_option(tiny_cross_encoder) -> None:
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    ev = evaluator("answer_semantic_similarity", cross_encoder=str(tiny_cross_encoder))
    rec = {"key": "k", "input": "q", "expected_output": "the cat sat", "actual_output": "a dog ran", "model_key": "m"}
    res = evaluate([rec], [ev], progress=False)
    tok = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    model = BertForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    with torch.no_grad():
        expected = float(torch.sigmoid(model(**tok("the cat sat", "a dog ran", return_tensors="pt")).logits)[0, 0])
    assert values(res, "answer_semantic_similarity")["answer_similarity"] == pytest.approx(expected, abs=1e-5)
    assert "cross-encoder" in column(res, "answer_semantic_similarity", "rationale")[0]


def test_cross_encoder_option_yields_a_score_pairs_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring asks for the pair's score and does no I/O: the cross-encoder is never touched."""
    import nbeval.resources.cross_encoder as ce
    from nbeval.data.model import Row
    from nbeval.request_kinds import ScorePairs

    monkeypatch.setattr(ce, "get_cross_encoder", lambda *a, **k: pytest.fail("score() loaded the cross-encoder"))
    ev = evaluator("answer_semantic_similarity", cross_encoder="some/cross-encoder")
    row = Row.from_record({"key": "k", "input": "q", "expected_output": "the cat sat", "actual_output": "a dog ran"})
    gen = ev.score(row)
    assert isinstance(gen, Generator)  # it asks for the pair's score
    request = next(gen)
    assert request == ScorePairs((("the cat sat", "a dog ran"),), model="some/cross-encoder")
    with pytest.raises(StopIteration) as stop:
        gen.send(np.array([0.625]))
    assert stop.value.value.values == {"answer_similarity": 0.625}
    assert stop.value.value.rationale == "cross-encoder some/cross-encoder score 0.625"
    over = ev.score(row)
    assert isinstance(over, Generator)
    next(over)
    with pytest.raises(StopIteration) as stop:
        over.send(np.array([1.5]))  # a model whose scores are not in [0, 1]: clipped, reported as given
    assert stop.value.value.values == {"answer_similarity": 1.0} and "score 1.500" in stop.value.value.rationale


def test_cross_encoder_through_the_engine_equals_calling_it_directly(tiny_cross_encoder) -> None:
    from nbeval.resources.cross_encoder import CrossEncoderScorer, get_cross_encoder

    pairs = [
        ("the cat sat on the mat", "a dog ran in the park"),
        ("paris is the capital", "the answer is four"),
        ("water boils", "water boils at one hundred degrees"),
    ]
    recs = [
        {"key": f"k{i}", "input": "q", "expected_output": a, "actual_output": b, "model_key": m}
        for m in ("m1", "m2")
        for i, (a, b) in enumerate(pairs)
    ]
    ev = evaluator("answer_semantic_similarity", cross_encoder=str(tiny_cross_encoder))
    shared = get_cross_encoder(str(tiny_cross_encoder), device="cpu")
    before, calls = shared.pairs_scored, []
    original = shared.score

    def counting(pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        calls.append(list(pairs))
        return original(pairs)

    shared.score = counting  # type: ignore[method-assign]  # on this instance only, deleted below
    try:
        res = evaluate(recs, [ev], progress=False, device="cpu")
    finally:
        del shared.score
    assert calls == [pairs]  # one batch for the whole round, each distinct pair once (two models share them)
    assert shared.pairs_scored - before <= len(pairs)
    direct = CrossEncoderScorer(tiny_cross_encoder, device="cpu").score(pairs)  # a fresh scorer, no shared cache
    got = res.scores.set_index(["model_key", "key"])["value"]
    for m in ("m1", "m2"):
        assert [got[(m, f"k{i}")] for i in range(3)] == pytest.approx(np.clip(direct, 0, 1).tolist(), abs=1e-6)


def test_summarization_param_validation() -> None:
    with pytest.raises(EvaluatorError, match="min_sentences_for_umap"):
        evaluator("summarization_completeness", min_sentences_for_umap=1)


def test_a_failing_embedder_errors_rows_not_the_run() -> None:
    res = evaluate([RECORD], NINE[:3], progress=False, embedder=fake_embedder(ExplodingModel()))
    assert res.scores["error"].str.contains("embedder failed").all()


def test_step_alignment_rationale_is_the_same_at_every_batch_size(real_embedder) -> None:
    """Tied steps (the same action twice, similarity 1.00) are paired by the rule, so the batch
    composition that changes float noise changes neither values nor rationales (issue 25)."""
    from nbeval.data.model import LlmDataset
    from nbeval.engine import evaluate
    from nbeval.evaluators.registry import evaluator
    from nbeval.resources.embedder import Embedder

    context = ["To reset the unit:\n1. Press the reset button.\n2. Wait ten seconds.\n3. Press the reset button."]
    answers = [
        "First, press the reset button. Then press the reset button. Then wait ten seconds.",
        "1. Press the reset button.\n2. Press the reset button.\n3. Press the reset button.",
        "Press the reset button, then wait ten seconds, then press the reset button, finally unplug it.",
    ]
    records = [
        {"key": f"k{i}", "input": "How do I reset it?", "actual_output": a, "context": context, "model_key": "m"}
        for i, a in enumerate(answers)
    ]
    seen = []
    for batch_size in (1, 3, 64):
        emb = Embedder(device="cpu", batch_size=batch_size)
        result = evaluate(
            LlmDataset.from_records(records), [evaluator("step_alignment")], progress=False, embedder=emb, cache=False
        )
        s = result.scores.sort_values(["key", "metric"])
        seen.append((list(s["rationale"]), [None if v != v else v for v in s["value"]]))
    assert seen[0] == seen[1] == seen[2]
    assert any("answer 1" in r and "answer 2 not in the context" in r for r in seen[0][0])
