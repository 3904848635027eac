"""The Embed handler's answers: each request gets its texts' vectors, in its order, whatever the round.

A round whose texts are all new is answered from the encoder's matrix as it came; a round that
repeats texts of an earlier round stacks the vectors kept. Both must give each request exactly
its texts' rows.
"""

from __future__ import annotations

import inspect
import zlib
from typing import Any

import numpy as np

from nbeval.request_kinds import Embed
from nbeval.runtime import Resources


def _vector(text: str) -> np.ndarray:
    return np.random.default_rng(zlib.crc32(text.encode())).normal(size=8).astype(np.float32)


class _Encoder:
    """Made-up vectors, one per text; remembers what it was asked and says which texts are "long"."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.asked.append(list(texts))
        return np.stack([_vector(t) for t in texts]) if texts else np.zeros((0, 8), dtype=np.float32)

    def truncated(self, text: str) -> bool:
        return text.startswith("LONG")


def _answers(resources: Resources, requests: list[Embed]) -> list[np.ndarray]:
    return [a.value for a in resources.answer(requests)]


def _check(requests: list[Embed], answers: list[np.ndarray]) -> None:
    for req, got in zip(requests, answers, strict=True):
        assert isinstance(got, np.ndarray)
        want = np.stack([_vector(t) for t in req.texts])
        np.testing.assert_array_equal(got, want)


def test_a_round_of_new_texts_answers_each_request_with_its_rows() -> None:
    encoder = _Encoder()
    resources = Resources(embedder=encoder)
    requests = [Embed(("b", "a", "b")), Embed(("c",)), Embed(("a", "d", "c"))]
    answers = _answers(resources, requests)
    _check(requests, answers)
    assert encoder.asked == [["b", "a", "c", "d"]]  # each distinct text once, in the order first asked
    answers[0][0, 0] = 99.0  # an answer is the row's own: writing to it changes no other
    assert answers[2][0, 0] == _vector("a")[0] and _answers(resources, [Embed(("b",))])[0][0, 0] == _vector("b")[0]


def test_a_round_repeating_earlier_texts_asks_only_the_new_ones() -> None:
    encoder = _Encoder()
    resources = Resources(embedder=encoder)
    _answers(resources, [Embed(("x", "y"))])
    requests = [Embed(("z", "y")), Embed(("x", "w", "z")), Embed(("y",))]
    answers = _answers(resources, requests)
    _check(requests, answers)
    assert encoder.asked == [["x", "y"], ["z", "w"]]
    assert _answers(resources, [Embed(("w", "x"))]) and encoder.asked[-1] == ["z", "w"]  # all known: no call


def test_truncated_texts_are_counted_per_request() -> None:
    resources = Resources(embedder=_Encoder())
    out = resources.answer([Embed(("LONG one", "short", "LONG two")), Embed(("short",)), Embed(())])
    assert out[0].warnings == ("2 text(s) longer than the embedder's window were truncated",)
    assert out[1].warnings == ()
    assert out[2].value.shape == (0, 0)


def test_scorers_waiting_for_vectors_hold_no_lists() -> None:
    """A scorer parked at its request holds tuples (untracked by the garbage collector), not lists.

    Same texts asked either way; lists held by thousands of waiting scorers were what set off full
    collections in a run.
    """
    from nbeval.data.model import Chunk, Row
    from nbeval.evaluators.registry import evaluator

    row = Row(
        "What is the capital of France?",
        expected_output="Paris is the capital. It is in France.",
        actual_output="The capital is Paris. It lies on the Seine.",
        context=[Chunk("Paris is the capital of France. It is large."), Chunk("The Seine flows through it.")],
        expected_context=[Chunk("Paris is the capital of France.")],
    )
    for name in (
        "answer_sentence_similarity",
        "answer_relevancy_sentence",
        "groundedness_semantic",
        "context_relevancy_soft",
        "retriever_similarity",
    ):
        gen = evaluator(name).score(row)
        assert inspect.isgenerator(gen)
        request = next(gen)
        assert gen.gi_frame is not None  # parked at its request, not finished
        held = {k: type(v).__name__ for k, v in gen.gi_frame.f_locals.items() if isinstance(v, list)}
        assert not held, (name, held)
        assert isinstance(request, Embed) and request.texts
        gen.close()


def test_structure_scorers_waiting_for_vectors_hold_no_lists() -> None:
    """``step_alignment`` and ``summarization_completeness`` park with tuples too; their results keep lists."""
    from nbeval.data.model import Chunk, Row
    from nbeval.evaluators.registry import evaluator

    row = Row(
        "Paris is the capital of France. It lies on the Seine. It is large.",
        actual_output="1. Preheat the oven.\n2. Mix the flour.\n3. Bake for an hour.",
        context=[Chunk("1. Preheat the oven.\n2. Mix the flour and the eggs.\n3. Bake it.")],
    )
    for name in ("step_alignment", "summarization_completeness"):
        gen: Any = evaluator(name).score(row)  # a generator (Any: mypy narrows isgenerator's to send(Never))
        request = next(gen)
        assert gen.gi_frame is not None  # parked at its request, not finished
        held = {k: type(v).__name__ for k, v in gen.gi_frame.f_locals.items() if isinstance(v, list)}
        assert not held, (name, held)
        assert isinstance(request, Embed) and request.texts
        try:
            gen.send(np.stack([_vector(t) / np.linalg.norm(_vector(t)) for t in request.texts]))
        except StopIteration as done:
            score = done.value
        else:
            raise AssertionError(f"{name} asked twice")
        if name == "step_alignment":
            assert score.details is not None
            assert score.details["context_steps"] == ["Preheat the oven.", "Mix the flour and the eggs.", "Bake it."]
            assert isinstance(score.details["answer_steps"], list) and len(score.details["answer_steps"]) == 3
