"""ClassifierRunner against transformers and detoxify called directly on the same inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nbeval.errors import ResourceError
from nbeval.request_kinds import LocalModel
from nbeval.resources.classifier import ClassifierRunner, default_batch_size
from nbeval.resources.local_models import clear_local_models, get_local_model

from .classifier_builders import NLI_LABELS, build_classifier, build_detoxify_checkpoint, direct_probs

TEXTS = [
    "Short one.",
    "A somewhat longer sentence about the weather in Paris today.",
    "Hi",
    "The cat sat on the mat while the dog slept by the door of the old house.",
    "Medium length text here.",
]


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_classifier(tmp_path_factory.mktemp("nli"), NLI_LABELS, seed=3, max_length=24)


@pytest.fixture(scope="module")
def multi_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_classifier(
        tmp_path_factory.mktemp("multi"), ["a", "b", "c"], seed=4, problem_type="multi_label_classification"
    )


@pytest.fixture(scope="module")
def one_label_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_classifier(tmp_path_factory.mktemp("one"), ["consistent"], seed=5)


@pytest.fixture(scope="module")
def detox_ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_detoxify_checkpoint(tmp_path_factory.mktemp("detox"))


@pytest.fixture(autouse=True)
def _fresh_runners():
    clear_local_models()
    yield
    clear_local_models()


def test_single_texts_equal_transformers_softmax_in_input_order(nli_dir: Path) -> None:
    runner = ClassifierRunner(nli_dir, device="cpu", batch_size=2)  # several batches, sorted by length
    got = runner.classify(TEXTS)
    assert got.labels == NLI_LABELS
    want = direct_probs(nli_dir, TEXTS)
    np.testing.assert_allclose(got.scores, want, atol=1e-5)
    np.testing.assert_allclose(got.scores.sum(axis=1), 1.0, atol=1e-6)
    assert len({tuple(np.round(r, 4)) for r in got.scores}) == len(TEXTS)  # the head separates texts


def test_pairs_equal_transformers(nli_dir: Path) -> None:
    pairs = [("Paris is the capital of France.", "Paris is in France."), ("It rains.", "The sun shines brightly.")]
    got = ClassifierRunner(nli_dir).classify(pairs)
    np.testing.assert_allclose(got.scores, direct_probs(nli_dir, pairs), atol=1e-5)


def test_multi_label_and_one_label_models_use_a_sigmoid(multi_dir: Path, one_label_dir: Path) -> None:
    multi = ClassifierRunner(multi_dir).classify(TEXTS[:3])
    np.testing.assert_allclose(multi.scores, direct_probs(multi_dir, TEXTS[:3], sigmoid=True), atol=1e-5)
    one = ClassifierRunner(one_label_dir).classify([("a premise.", "a hypothesis.")])
    assert one.labels == ("consistent",)
    np.testing.assert_allclose(
        one.scores, direct_probs(one_label_dir, [("a premise.", "a hypothesis.")], sigmoid=True), atol=1e-5
    )
    assert 0.0 < one.scores[0, 0] < 1.0


def test_long_inputs_are_truncated_and_reported(nli_dir: Path) -> None:
    long = "word " * 60  # far over the 24-token window
    runner = ClassifierRunner(nli_dir)
    got = runner.classify([long, "Short one."])
    assert runner.truncated(long) and not runner.truncated("Short one.")
    np.testing.assert_allclose(got.scores[0], direct_probs(nli_dir, [long], max_length=24)[0], atol=1e-5)
    pair = ("premise " * 40, "hypothesis")
    runner.classify([pair])
    # a pair read from JSON is a list: it is looked up as the tuple it was classified as
    assert runner.truncated(pair) and runner.truncated(list(pair))  # type: ignore[arg-type]


def test_each_distinct_input_goes_through_the_model_once(nli_dir: Path) -> None:
    runner = ClassifierRunner(nli_dir)
    first = runner.classify(["x.", "y.", "x."])
    assert runner.forwards == 2
    again = runner.classify(["y.", "x."])
    assert runner.forwards == 2  # remembered
    np.testing.assert_array_equal(again.scores, first.scores[[1, 0]])


def test_batch_size_views_share_the_model(nli_dir: Path) -> None:
    runner = ClassifierRunner(nli_dir, device="cpu")
    assert runner.batch_size == default_batch_size("cpu") == 32 and default_batch_size("cuda:0") == 128
    view = runner.with_batch_size(1)
    assert view.batch_size == 1 and runner.with_batch_size(None) is runner
    view.classify(["a.", "b."])
    assert runner.loaded and runner.forwards == 2
    runner.classify(["a."])
    assert view.forwards == 2


def test_get_local_model_shares_one_runner_per_model_and_device(nli_dir: Path) -> None:
    ref = LocalModel(str(nli_dir), "classifier", "cpu")
    a = get_local_model(ref)
    assert get_local_model(ref) is a
    b = get_local_model(LocalModel(str(nli_dir), "classifier", "cpu", batch_size=3))
    assert b is not a and b.batch_size == 3 and b._shared is a._shared


def test_detoxify_checkpoint_equals_detoxify_predict(detox_ckpt: Path) -> None:
    from detoxify import Detoxify

    runner = ClassifierRunner(detox_ckpt, kind="detoxify", batch_size=2)
    got = runner.classify(TEXTS)
    want = Detoxify(checkpoint=str(detox_ckpt), device="cpu").predict(TEXTS)
    assert got.labels == tuple(want)  # detoxify's standard names: toxicity, ..., identity_attack
    for j, label in enumerate(got.labels):
        np.testing.assert_allclose(got.scores[:, j], want[label], atol=1e-5)


def test_hub_name_not_downloaded_says_how_to_fetch_it() -> None:
    with pytest.raises(ResourceError, match="huggingface-cli download nbeval-tests/no-such-model"):
        ClassifierRunner("nbeval-tests/no-such-model").classify(["x"])


def test_hhem_failure_points_to_an_nli_model() -> None:
    with pytest.raises(ResourceError, match="NLI cross-encoder or pair classifier"):
        ClassifierRunner("vectara/hallucination_evaluation_model").classify([("a", "b")])


def test_detoxify_name_not_downloaded_offline_says_how_to_fetch_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    monkeypatch.setattr(torch.hub, "_hub_dir", str(tmp_path))  # an empty torch hub cache
    with pytest.raises(ResourceError, match=r"not downloaded.*\.ckpt"):
        ClassifierRunner("original", kind="detoxify").classify(["x"])
    with pytest.raises(ResourceError, match="neither a detoxify model name"):
        ClassifierRunner("no-such-detoxify", kind="detoxify").classify(["x"])


def test_a_bad_checkpoint_file_is_a_resource_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ckpt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(ResourceError, match="could not load detoxify model"):
        ClassifierRunner(bad, kind="detoxify").classify(["x"])


def test_a_device_that_does_not_exist_is_a_resource_error(nli_dir: Path) -> None:
    with pytest.raises(ResourceError, match="device"):
        ClassifierRunner(nli_dir, device="no-such-device").classify(["x"])


def test_single_texts_are_tokenised_once_and_their_truncation_read_from_it(nli_dir: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(nli_dir)  # the same tokenizer, called directly
    window = 24
    words = [" ".join(["word"] * n) for n in range(1, 40)]
    exact = next(w for w in words if len(tok(w)["input_ids"]) == window)
    over = exact + " word"
    runner = ClassifierRunner(nli_dir)
    runner._model()  # load outside the count
    shared_tok = runner._model().tokenizer
    calls: list[object] = []
    real_call = type(shared_tok).__call__

    def counting(self, *args, **kwargs):
        calls.append(kwargs.get("truncation"))
        return real_call(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(shared_tok), "__call__", counting)
        got = runner.classify([exact, over, "Short one."])
    assert calls == [True]  # one call, truncating: nothing is encoded twice
    assert [runner.truncated(t) for t in (exact, over, "Short one.")] == [False, True, False]
    np.testing.assert_allclose(
        got.scores, direct_probs(nli_dir, [exact, over, "Short one."], max_length=window), atol=1e-5
    )
