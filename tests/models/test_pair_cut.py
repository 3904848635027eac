"""Long text pairs: each side cut near the window before the pair is encoded (issue 35, point 10).

A fast tokenizer truncating a pair keeps every combination of both texts' overflow windows, so
the memory of the pair path grew with the product of the two lengths (two 100 KB texts: 4.4 GB).
The numbers must stay exactly those of transformers truncating the whole pair.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nbeval.resources.classifier import ClassifierRunner
from nbeval.resources.local_models import clear_local_models
from nbeval.resources.pair_cut import cut_pairs

from .classifier_builders import NLI_LABELS, build_classifier, direct_probs, minilm_path

WORDS = (
    "the quick brown fox jumps over a lazy dog unbelievably antidisestablishmentarianism 1234567 Zürich "
    "naïve 東京 😀 , . ! state-of-the-art"
).split()


@pytest.fixture(scope="module")
def minilm_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(minilm_path())


@pytest.mark.parametrize("window", [32, 64, 128])
def test_cut_pairs_truncate_to_the_tokens_of_the_whole_pair(minilm_tokenizer, window: int) -> None:
    # 300 random pairs a side shorter, longer, both longer, or equal; the reference is the pair
    # truncation of transformers on the whole texts.
    rng = random.Random(window)
    for _ in range(300):
        a = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 200)))
        b = a if rng.random() < 0.2 else " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 200)))
        ((ca, cb),) = cut_pairs(minilm_tokenizer, [(a, b)], window)
        whole = minilm_tokenizer([a], [b], truncation=True, max_length=window)["input_ids"][0]
        cut = minilm_tokenizer([ca], [cb], truncation=True, max_length=window)["input_ids"][0]
        assert cut == whole, (window, a, b)


def test_short_pairs_and_slow_tokenizers_are_left_alone(minilm_tokenizer) -> None:
    pairs = [("A premise.", "A hypothesis."), ("x " * 5000, "y")]
    assert cut_pairs(minilm_tokenizer, pairs[:1], 64) == pairs[:1]

    class Slow:
        is_fast = False

    assert cut_pairs(Slow(), pairs, 64) == pairs
    ((a, b),) = cut_pairs(minilm_tokenizer, pairs[1:], 64)
    assert b == "y" and len(a) < 200 and pairs[1][0].startswith(a)


def test_long_pairs_score_as_transformers_truncating_the_whole_pair(tmp_path: Path) -> None:
    clear_local_models()
    model = build_classifier(tmp_path / "nli", NLI_LABELS, seed=3, max_length=24)
    rng = random.Random(1)
    pairs = [
        (" ".join(rng.choice(WORDS) for _ in range(n)), " ".join(rng.choice(WORDS) for _ in range(m)))
        for n, m in [(300, 5), (5, 300), (400, 250), (250, 400), (3, 4)]
    ]
    runner = ClassifierRunner(model, device="cpu", batch_size=2)
    got = runner.classify(pairs)
    np.testing.assert_allclose(got.scores, direct_probs(model, pairs, max_length=24), atol=1e-5)
    assert [runner.truncated(p) for p in pairs] == [True, True, True, True, False]
    clear_local_models()


_PEAK = """
import json, resource, sys
from nbeval.resources.{module} import {factory}
runner = {factory}(sys.argv[1], device="cpu")
pair = ("{first}", "{second}")
{call}([("warm up.", "a short pair.")])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
{call}([(pair[0] * {n}, pair[1] * {n})])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({{"grew_mb": (after - before) / 1024}}))
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["classifier", "cross_encoder"])
def test_a_long_pair_takes_memory_linear_in_its_length(kind: str, tmp_path: Path) -> None:
    # Two ~10 KB texts: the pair truncation of the whole texts took about 1 GB more (quadratic);
    # cut first, the peak grows by a few MB. Measured in a child process (ru_maxrss is a
    # process-wide peak) with a memory ceiling, not a time.
    if kind == "classifier":
        model = build_classifier(tmp_path / "nli", NLI_LABELS, seed=3, max_length=24)
        code = _PEAK.format(
            module="classifier",
            factory="ClassifierRunner",
            call="runner.classify",
            first="alpha beta gamma. ",
            second="delta epsilon zeta. ",
            n=550,
        )
    else:
        model = build_classifier(tmp_path / "pair", ["consistent"], seed=5, max_length=24)
        code = _PEAK.format(
            module="cross_encoder",
            factory="CrossEncoderScorer",
            call="runner.score",
            first="the cat sat on the mat. ",
            second="a dog ran in the park. ",
            n=420,
        )
    out = subprocess.run(
        [sys.executable, "-c", code, str(model)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    grew = json.loads(out.stdout.strip().splitlines()[-1])["grew_mb"]
    assert grew < 250, f"the long pair took {grew:.0f} MB more"
