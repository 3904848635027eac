"""Fixtures of the embedding tests: the packaged model, a fake model, a tiny cross-encoder."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from nbeval.resources.embedder import Embedder, get_embedder


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The packaged all-MiniLM-L6-v2 on the CPU (loaded once for the whole session)."""
    emb = get_embedder(device="cpu")
    emb.encode(["warm up"])
    return emb


class FakeTokenizer:
    """One token per whitespace-separated word, plus two special tokens."""

    def __call__(self, texts, add_special_tokens=True, truncation=False, verbose=True):
        return {"input_ids": [[0] * (len(t.split()) + 2) for t in texts]}


class FakeModel:
    """Deterministic pseudo-embeddings from a hash of the text; records every call."""

    def __init__(self, dim: int = 8, max_seq_length: int = 16) -> None:
        self.dim = dim
        self.max_seq_length = max_seq_length
        self.tokenizer = FakeTokenizer()
        self.calls: list[list[str]] = []

    def encode(self, texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False, show_progress_bar=False):
        self.calls.append(list(texts))
        return np.stack([fake_vector(t, self.dim) for t in texts]) * 3.0  # not unit length on purpose

    def get_embedding_dimension(self) -> int:
        return self.dim


def fake_vector(text: str, dim: int = 8) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return np.random.default_rng(seed).normal(size=dim).astype(np.float32)


class ExplodingModel(FakeModel):
    def encode(self, texts, *args, **kwargs):  # a cache that works never gets here
        raise AssertionError(f"model called with {texts!r}")


def fake_embedder(model: FakeModel | None = None, **kwargs) -> Embedder:
    """An Embedder whose model is already 'loaded' with a fake."""
    emb = Embedder("fake-model-for-tests", **kwargs)
    emb._model = model or FakeModel()
    return emb


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A randomly initialised one-label BERT and a word-piece tokenizer trained here, saved to disk."""
    import torch
    from tokenizers import BertWordPieceTokenizer
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    path = tmp_path_factory.mktemp("tiny-cross-encoder")
    corpus = [
        "the cat sat on the mat",
        "a dog ran in the park",
        "paris is the capital of france",
        "water boils at one hundred degrees",
        "the answer is four",
    ]
    wp = BertWordPieceTokenizer(lowercase=True)
    wp.train_from_iterator(corpus, vocab_size=120, min_frequency=1)
    tok = BertTokenizer(tokenizer_object=wp._tokenizer)  # transformers 5: the fast (tokenizers) class
    tok.save_pretrained(path)
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=tok.vocab_size,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
        max_position_embeddings=64,
    )
    cfg.num_labels = 1  # a property since transformers 5, not a constructor field
    BertForSequenceClassification(cfg).save_pretrained(path)
    return path
