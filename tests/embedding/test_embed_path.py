"""The direct embedding path (issue 19): one tokenisation, one matrix, one forward pass per batch.

Reference values come from sentence-transformers' own ``encode`` and from the transformers
tokenizer called directly, never from the Embedder under test.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from nbeval.data.text import split_sentences
from nbeval.errors import ResourceError
from nbeval.evaluators.embedding import evaluators as emb_evaluators
from nbeval.evaluators.embedding import steps as emb_steps
from nbeval.resources.embedder import Embedder, default_batch_size

ROOT = Path(__file__).resolve().parents[2]


def _bench_module():
    spec = importlib.util.spec_from_file_location("embed_path_bench", ROOT / "benchmarks" / "embed_path.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("embed_path_bench", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The benchmark's tiny model: the packaged tokenizer, a random 2-layer 64-wide BERT, mean pooling."""
    return _bench_module().build_tiny_model(tmp_path_factory.mktemp("tiny-st"))


@pytest.fixture
def tiny(tiny_model_dir: Path) -> Embedder:
    return Embedder(tiny_model_dir, device="cpu", batch_size=4)


TEXTS = [
    "A short one.",
    "",
    "Ünïcödé text, with accents and\ttabs.",
    "The quick brown fox jumps over the lazy dog.",
    "Paris is the capital of France.",
    "x",
    "Numbers 1, 2 and 3.",
    "Another sentence entirely, a bit longer.",
]


def test_tiny_model_is_what_the_issue_describes(tiny: Embedder) -> None:
    model = tiny.model
    bert = model[0].auto_model.config
    assert (bert.num_hidden_layers, bert.hidden_size) == (2, 64)
    assert model[1].get_config_dict()["pooling_mode"] == "mean"
    assert tiny._plan() is not None  # a plain text encoder takes the direct path


def test_vectors_equal_sentence_transformers_encode(tiny: Embedder) -> None:
    got = tiny.encode(TEXTS)
    want = tiny.model.encode(TEXTS, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)
    assert got.shape == want.shape == (len(TEXTS), 64)
    np.testing.assert_allclose(got, want, atol=1e-6, rtol=0)


def test_packaged_model_vectors_equal_sentence_transformers(real_embedder: Embedder) -> None:
    emb = Embedder(device="cpu")
    emb._model = real_embedder.model
    assert emb._plan() is not None
    np.testing.assert_allclose(
        emb.encode(TEXTS), real_embedder.model.encode(TEXTS, normalize_embeddings=True), atol=1e-6, rtol=0
    )


def test_truncation_known_from_the_one_tokenisation(tiny: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny.model
    hf = model.tokenizer
    window = tiny.max_seq_length
    # A text of exactly the window (special tokens included) is not cut; one word more is.
    exact = " ".join(["word"] * (window - 2))
    over = exact + " word"
    long = "many words " * 300
    texts = [exact, over, long, "short"]
    lengths = [len(ids) for ids in hf(texts, truncation=False, verbose=False)["input_ids"]]
    assert lengths[:2] == [window, window + 1]
    assert tiny._plan() is not None  # built once per model (it checks itself on a 4-text probe)
    # No second tokenisation: neither the transformers tokenizer nor the byte-length check runs.
    monkeypatch.setattr(type(hf), "__call__", lambda *a, **k: pytest.fail("tokenised a second time"))
    monkeypatch.setattr(tiny, "_note_truncation", lambda texts: pytest.fail("truncation checked apart"))
    tiny.encode(texts)
    assert [tiny.truncated(t) for t in texts] == [n > window for n in lengths] == [False, True, True, False]


def test_one_forward_pass_per_batch(tiny: Embedder) -> None:
    calls: list[int] = []
    handle = tiny.model.register_forward_hook(lambda mod, inp, out: calls.append(len(out["sentence_embedding"])))
    try:
        tiny.encode([f"text number {i}" for i in range(10)])
    finally:
        handle.remove()
    assert calls == [4, 4, 2]  # batch size 4, each text once


def test_batches_are_length_sorted(tiny: Embedder) -> None:
    """Longest first by characters, the order sentence-transformers uses, so each text meets the
    same padding as in its ``encode``; a batch pads only to its own longest text."""
    seen: list[list[int]] = []
    handle = tiny.model.register_forward_pre_hook(
        lambda mod, args: seen.append(args[0]["attention_mask"].sum(1).tolist())
    )
    texts = ["one", "one two three four five six seven", "one two", "one two three four", "one two three", "x"]
    try:
        tiny.encode(texts)
    finally:
        handle.remove()
    want = [len(ids) for ids in tiny.model.tokenizer(sorted(texts, key=len, reverse=True))["input_ids"]]
    assert seen == [want[:4], want[4:]]
    assert want == sorted(want, reverse=True)


def test_prefetch_thread_gives_the_same_vectors(tiny: Embedder) -> None:
    texts = [f"sentence {i} " * (i % 7 + 1) for i in range(30)]
    plain = tiny.encode(texts)
    other = Embedder(tiny.name, device="cpu", batch_size=4)
    other._model = tiny.model
    plan = other._plan()
    assert plan is not None
    plan.prefetch = True  # the CUDA behaviour, exercised on the CPU (no pinned memory here)
    np.testing.assert_array_equal(other.encode(texts), plain)


def test_falls_back_when_the_direct_path_disagrees(tiny: Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny.model
    real = model.preprocess

    def shifted(texts, **kwargs):
        out = real(texts, **kwargs)
        out["input_ids"] = out["input_ids"].clone() + 1  # not what the direct path would feed
        return out

    monkeypatch.setattr(model, "preprocess", shifted)
    assert tiny._plan() is None and tiny._batch_plan is False
    monkeypatch.setattr(model, "preprocess", real)
    want = model.encode(TEXTS, batch_size=4, normalize_embeddings=True)
    np.testing.assert_allclose(tiny.encode(TEXTS), want, atol=1e-6, rtol=0)  # sentence-transformers' path


def test_batch_size_per_device() -> None:
    assert default_batch_size("cpu") == 64
    assert default_batch_size("cuda") == default_batch_size("cuda:1") == 256
    assert Embedder(device="cuda:0").batch_size == 256  # not loaded: the device asked for decides
    assert Embedder(device="cpu").batch_size == 64
    assert Embedder(device="cuda", batch_size=8).batch_size == 8
    with pytest.raises(ValueError, match="at least 1"):
        Embedder(batch_size=0)


def test_fp16_only_on_cuda(tiny_model_dir: Path) -> None:
    with pytest.raises(ValueError, match="CUDA"):
        Embedder(tiny_model_dir, device="cpu", fp16=True)
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the model would load on it")
    with pytest.raises(ResourceError, match="CUDA"):
        Embedder(tiny_model_dir, fp16=True).encode(["x"])  # no device asked for: loads on the CPU


def test_cuda_fp16_and_prefetch_within_tolerance(tiny_model_dir: Path) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    texts = [f"The sentence number {i} talks about item {i * 7}." for i in range(600)]
    cpu = Embedder(tiny_model_dir, device="cpu").encode(texts)
    gpu = Embedder(tiny_model_dir, device="cuda")
    plan = gpu._plan()
    assert plan is not None and plan.prefetch
    np.testing.assert_allclose(gpu.encode(texts), cpu, atol=1e-4, rtol=0)
    half = Embedder(tiny_model_dir, device="cuda", fp16=True).encode(texts)
    assert np.abs(half[:100] @ half.T - cpu[:100] @ cpu.T).max() <= 1e-3  # the cosines evaluators report


def test_sentences_and_steps_worked_out_once_per_text(monkeypatch: pytest.MonkeyPatch) -> None:
    emb_evaluators.clear_caches()
    split_calls: list[str] = []
    step_calls: list[str] = []
    real_steps = emb_steps.extract_steps

    def split(text: str) -> list[str]:
        split_calls.append(text)
        return split_sentences(text)

    def steps(text: str) -> list[str]:
        step_calls.append(text)
        return real_steps(text)

    monkeypatch.setattr(emb_evaluators, "split_sentences", split)
    monkeypatch.setattr(emb_steps, "extract_steps", steps)
    text = "First, open it. Then close it. Finally, lock it."
    for _ in range(3):
        assert emb_evaluators.sentences(text) == ["First, open it.", "Then close it.", "Finally, lock it."]
        assert list(emb_steps.steps_of(text)) == ["open it.", "close it.", "lock it."]
    assert emb_evaluators.sentences(None) == [""]
    assert split_calls == [text, ""] and step_calls == [text]
    emb_evaluators.clear_caches()
    emb_evaluators.sentences(text)
    assert split_calls == [text, "", text]  # cleared: worked out again
