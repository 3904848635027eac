"""Resources.answer: answers with their warnings, and ScorePairs batched and deduplicated per round
(the pair scorer is the ScorePairs handler's own)."""

from __future__ import annotations

import numpy as np
import pytest

import nbeval
from nbeval.errors import MissingDependency, ResourceError
from nbeval.request_kinds import Chat, Embed, Request, ScorePairs
from nbeval.request_kinds.score_pairs import PairsHandler
from nbeval.runtime import Answer, Resources


class FakeEmbedder:
    def encode(self, texts):
        out = np.array([[len(t) + 1.0, 1.0] for t in texts])
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def truncated(self, text):
        return text.startswith("LONG")


class FakeCrossEncoder:
    """Scores a pair by the length of its texts; records every batch."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.batches: list[list[tuple[str, str]]] = []

    def score(self, pairs):
        self.batches.append(list(pairs))
        return np.array([len(a) / (len(a) + len(b) + 1) for a, b in pairs], dtype=np.float64)


@pytest.fixture
def scorers(monkeypatch: pytest.MonkeyPatch) -> dict[str, FakeCrossEncoder]:
    made: dict[str, FakeCrossEncoder] = {}
    monkeypatch.setattr(
        PairsHandler, "scorer", lambda self, resources, model: made.setdefault(model, FakeCrossEncoder(model))
    )
    return made


def test_answers_carry_their_own_warnings() -> None:
    res = Resources(embedder=FakeEmbedder())
    answers = res.answer([Embed(("LONG text", "short")), Embed(("short",)), Embed(("LONG a", "LONG b"))])
    assert all(isinstance(a, Answer) for a in answers)
    assert answers[0].warnings == ("1 text(s) longer than the embedder's window were truncated",)
    assert answers[1].warnings == ()
    assert answers[2].warnings == ("2 text(s) longer than the embedder's window were truncated",)
    assert answers[0].value.shape == (2, 2) and np.allclose(answers[1].value[0], answers[0].value[1])
    assert not hasattr(res, "warnings")  # no side channel left between rounds
    again = res.answer([Embed(("short",))])  # a later round does not inherit earlier warnings
    assert again[0].warnings == ()


def test_an_unknown_request_is_answered_with_an_error() -> None:
    class Other:
        pass

    (answer,) = Resources().answer([Other()])
    assert isinstance(answer.value, ResourceError) and "no resource answers a Other request" in str(answer.value)


def test_score_pairs_are_batched_and_deduplicated_per_model(scorers) -> None:
    reqs: list[Request] = [
        ScorePairs((("a", "bb"), ("ccc", "d")), model="ce-1"),
        ScorePairs((("ccc", "d"),), model="ce-1"),
        ScorePairs((("a", "bb"), ("a", "bb")), model="ce-2"),
        ScorePairs((), model="ce-1"),
    ]
    answers = Resources().answer(reqs)
    assert scorers["ce-1"].batches == [[("a", "bb"), ("ccc", "d")]]  # one call per model, each pair once
    assert scorers["ce-2"].batches == [[("a", "bb")]]
    assert answers[0].value.tolist() == [1 / 4, 3 / 5] and answers[1].value.tolist() == [3 / 5]
    assert answers[2].value.tolist() == [1 / 4, 1 / 4] and answers[3].value.tolist() == []
    assert all(a.warnings == () for a in answers)


@pytest.mark.parametrize(
    ("raised", "message"),
    [
        (ResourceError("could not load cross-encoder 'x'"), "could not load cross-encoder 'x'"),
        (MissingDependency("install it with pip install 'nbeval[embed]'"), "install it with"),
        (RuntimeError("CUDA out of memory"), "CUDA out of memory"),
    ],
)
def test_a_failing_cross_encoder_answers_every_request_of_its_model_with_an_error(
    monkeypatch: pytest.MonkeyPatch, raised: Exception, message: str
) -> None:
    class Broken:
        def score(self, pairs):
            raise raised

    monkeypatch.setattr(PairsHandler, "scorer", lambda self, resources, model: Broken())
    answers = Resources().answer([ScorePairs((("a", "b"),), model="x"), ScorePairs((("c", "d"),), model="x")])
    for a in answers:
        assert isinstance(a.value, ResourceError) and message in str(a.value)


def test_cross_encoder_resolves_to_the_shared_scorer_on_the_runs_device() -> None:
    from nbeval.resources.cross_encoder import get_cross_encoder

    scorer = PairsHandler().scorer(Resources(device="cpu"), "/some/model")
    assert scorer is get_cross_encoder("/some/model", device="cpu") and scorer.device == "cpu"


def test_the_engine_pools_score_pairs_across_rows(scorers) -> None:
    recs = [
        {
            "key": f"k{i}",
            "input": "q",
            "expected_output": f"answer {i % 2}",
            "actual_output": "an answer",
            "model_key": m,
        }
        for m in ("m1", "m2")
        for i in range(6)
    ]
    ev = nbeval.evaluator("answer_semantic_similarity", cross_encoder="ce-test")
    res = nbeval.evaluate(recs, [ev], progress=False, chunk_rows=100)
    assert scorers["ce-test"].batches == [[("answer 0", "an answer"), ("answer 1", "an answer")]]
    values = res.scores.set_index(["key", "model_key"])["value"]
    assert values[("k0", "m1")] == pytest.approx(8 / 18) and values[("k3", "m2")] == pytest.approx(8 / 18)
    assert res.scores["rationale"].str.startswith("cross-encoder ce-test score").all()


def test_a_row_whose_cross_encoder_fails_gets_the_error_not_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def score(self, pairs):
            raise ResourceError("could not load cross-encoder 'nope': gone")

    monkeypatch.setattr(PairsHandler, "scorer", lambda self, resources, model: Broken())
    ev = nbeval.evaluator("answer_semantic_similarity", cross_encoder="nope")
    res = nbeval.evaluate([{"input": "q", "expected_output": "a", "actual_output": "b"}], [ev], progress=False)
    assert res.scores["error"].tolist() == ["could not load cross-encoder 'nope': gone"]


def test_requests_and_exports() -> None:
    assert nbeval.ScorePairs is ScorePairs and "ScorePairs" in nbeval.__all__
    req = ScorePairs((("a", "b"),), model="m")
    assert hash(req) == hash(ScorePairs((("a", "b"),), model="m"))  # frozen, like Embed and Chat
    assert all(issubclass(kind, Request) for kind in (Embed, Chat, ScorePairs))  # one base, open to new kinds
