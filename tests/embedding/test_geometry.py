"""Geometric completeness: hand-built vectors with distances worked out on paper, then real embeddings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nbeval.data.text import split_sentences
from nbeval.evaluators.embedding.geometry import completeness, three_segment_distance


def eye(n: int, dim: int | None = None) -> np.ndarray:
    return np.eye(dim or n)[:n]


def unit_rows(rng: np.random.Generator, n: int, dim: int = 64) -> np.ndarray:
    x = rng.normal(size=(n, dim))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# -- three-segment distance ----------------------------------------------------------------------


def test_three_segment_square() -> None:
    """Unit square: the diameter is a diagonal (sqrt 2); a side (1) extends one end; the last corner
    is reached by the other diagonal (sqrt 2): 2*sqrt(2) + 1."""
    square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], dtype=float)
    assert three_segment_distance(square) == pytest.approx(2 * math.sqrt(2) + 1)


def test_three_segment_line() -> None:
    """Points 0, 1, 2, 3, 10 on a line: 0-10 (10), then 10-1 (9) beats 0-3 (3), then 0-3 (3) beats
    1-3 (2): 22."""
    pts = np.array([[0.0], [1.0], [2.0], [3.0], [10.0]])
    assert three_segment_distance(pts) == pytest.approx(22.0)


@pytest.mark.parametrize(
    ("pts", "expected"),
    [
        (np.zeros((0, 2)), 0.0),
        (np.array([[3.0, 4.0]]), 0.0),
        (np.array([[0.0, 0.0], [3.0, 4.0]]), 5.0),
        (np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 4.0]]), 5.0 + 4.0),  # diameter 5, then the longer of 4 and 3
    ],
)
def test_three_segment_few_points(pts: np.ndarray, expected: float) -> None:
    assert three_segment_distance(pts) == pytest.approx(expected)


# -- completeness on hand-built vectors ---------------------------------------------------------


def test_orthonormal_source_two_of_four() -> None:
    """Four orthonormal source sentences: every pair is sqrt 2 apart, so the source path is
    3*sqrt 2; a summary on two of them spans sqrt 2: completeness 1/3."""
    src = eye(4)
    r = completeness(src, src[[0, 2]])
    assert r.value == pytest.approx(1 / 3)
    assert r.snapped == [0, 2]
    assert r.radius == pytest.approx(math.sqrt(2))
    assert not r.reduced


def test_copy_scores_one_and_single_point_zero() -> None:
    src = eye(5)
    assert completeness(src, src).value == pytest.approx(1.0)
    assert completeness(src, src[[3]]).value == 0.0


def test_near_points_snap_far_points_drop() -> None:
    src = eye(3, 5)
    near = src[0] + np.array([0, 0.1, 0, 0, 0])
    far = np.eye(5)[4]  # orthogonal to every source sentence
    r = completeness(src, np.stack([near, far]), radius=0.5)
    assert r.snapped == [0, None]
    assert r.value == 0.0  # only one grounded point remains


def test_summary_never_exceeds_one() -> None:
    rng = np.random.default_rng(3)
    src = unit_rows(rng, 6)
    noisy = src + rng.normal(scale=0.05, size=src.shape)
    doubled = completeness(src, np.vstack([noisy, noisy])).value
    assert doubled is not None and doubled <= 1.0


@pytest.mark.parametrize(
    ("source", "summary", "expected"),
    [
        (np.zeros((0, 4)), eye(1, 4), None),  # nothing to cover
        (eye(3), np.zeros((0, 3)), 0.0),  # empty summary
        (eye(1, 3), eye(1, 3), 1.0),  # one source sentence, covered
        (eye(1, 3), eye(3)[[2]], 0.0),  # one source sentence, summary orthogonal to it (cos 0 < 0.5)
    ],
)
def test_very_few_sentences(source: np.ndarray, summary: np.ndarray, expected: float | None) -> None:
    assert completeness(source, summary).value == expected


def test_duplicate_source_sentences_count_once() -> None:
    src = np.vstack([eye(2), eye(2)])  # e1 e2 e1 e2
    r = completeness(src, eye(2))
    assert r.value == pytest.approx(1.0)
    assert r.snapped == [0, 1]


# -- with UMAP ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_umap_copy_and_one_sentence() -> None:
    rng = np.random.default_rng(0)
    src = unit_rows(rng, 24)
    full = completeness(src, src)
    assert full.reduced
    assert full.value == pytest.approx(1.0)
    one = completeness(src, src[[5]])
    assert one.value == 0.0
    again = completeness(src, src[[0, 7, 19]])
    assert again.value == completeness(src, src[[0, 7, 19]]).value  # deterministic
    assert again.value is not None and 0.0 < again.value < 1.0


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_umap_score_ignores_float_noise_in_the_vectors(seed: int) -> None:
    # Another batch size, thread count or device gives the same sentences' vectors with different
    # last bits (about 1e-7). Before issue 25 UMAP was fitted on the vectors and the score moved by
    # up to 0.17 with such noise; now it is fitted on rounded distances and does not move at all.
    rng = np.random.default_rng(seed)
    src = unit_rows(rng, 14)
    noisy = src + rng.normal(scale=1e-7, size=src.shape)
    noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
    summary = [1, 4, 9]
    clean, shaken = completeness(src, src[summary]), completeness(noisy, noisy[summary])
    assert clean.reduced and shaken.reduced
    assert shaken.value == clean.value
    assert shaken.snapped == clean.snapped


SOURCE = """
The Apollo 11 mission landed the first humans on the Moon in July 1969.
Neil Armstrong and Buzz Aldrin spent about two hours walking on the lunar surface.
Photosynthesis lets plants turn sunlight, water and carbon dioxide into sugar.
Chlorophyll gives leaves their green colour and absorbs red and blue light.
The French Revolution began in 1789 with the storming of the Bastille.
It ended the absolute monarchy and spread ideas of citizenship across Europe.
Sourdough bread rises thanks to wild yeast and lactic acid bacteria.
A long, cool fermentation gives the loaf its sour taste and open crumb.
Python is a programming language known for its readable syntax.
Its package index hosts hundreds of thousands of open source libraries.
Coral reefs cover less than one percent of the ocean floor.
Yet they shelter about a quarter of all marine species.
"""


@pytest.mark.slow
def test_real_embeddings(real_embedder) -> None:
    sents = split_sentences(SOURCE)
    assert len(sents) == 12
    src = real_embedder.encode(sents)
    copy = completeness(src, real_embedder.encode(sents))
    assert copy.reduced
    assert copy.value is not None and copy.value >= 0.95
    one = completeness(src, real_embedder.encode(["Astronauts walked on the Moon in 1969."]))
    assert one.value is not None and one.value <= 0.5
    unrelated = completeness(src, real_embedder.encode(["Bananas are yellow.", "My cat sleeps all day."]))
    assert unrelated.value is not None and unrelated.value <= 0.5
