"""toxicity through the engine, against detoxify and transformers called directly on the same sentences."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nbeval
from nbeval.data.text import split_sentences
from nbeval.errors import EvaluatorError
from nbeval.evaluators.models.base import ModelEvaluator
from nbeval.request_kinds import LocalModel
from nbeval.resources.local_models import clear_local_models, get_local_model

from .classifier_builders import JIGSAW_CLASSES, build_classifier, build_detoxify_checkpoint, direct_probs


def _toxicity(**params: Any) -> ModelEvaluator:
    ev = nbeval.evaluator("toxicity", **params)
    assert isinstance(ev, ModelEvaluator)
    return ev


METRICS = ["toxicity", "severe_toxicity", "obscene", "threat", "insult", "identity_attack"]
A1 = ["You are a wonderful person.", "I will find you.", "The weather is nice today."]
A2 = ["The weather is nice today.", "Go away, idiot!"]  # shares a sentence with A1
RECORDS = [
    {"key": "r1", "input": "q1", "actual_output": " ".join(A1), "model_key": "m"},
    {"key": "r2", "input": "q2", "actual_output": " ".join(A2), "model_key": "m"},
]


def values(result, key: str, evaluator: str = "toxicity") -> dict[str, float]:
    df = result.scores
    df = df[(df.evaluator == evaluator) & (df.key == key)]
    return dict(zip(df.metric, df.value, strict=True))


def cell(result, key: str, col: str, evaluator: str = "toxicity"):
    df = result.scores
    value = df[(df.evaluator == evaluator) & (df.key == key)][col].iloc[0]
    return json.loads(value) if col == "details" and isinstance(value, str) else value


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_detoxify_checkpoint(tmp_path_factory.mktemp("detox"), max_length=12)


@pytest.fixture(scope="module")
def detox(ckpt: Path):
    from detoxify import Detoxify

    return Detoxify(checkpoint=str(ckpt), device="cpu")


@pytest.fixture(autouse=True)
def _fresh_runners():
    clear_local_models()
    yield
    clear_local_models()


def test_the_sentences_are_the_ones_split_by_hand() -> None:
    assert split_sentences(RECORDS[0]["actual_output"]) == A1
    assert split_sentences(RECORDS[1]["actual_output"]) == A2


def test_each_metric_is_the_max_over_sentences_of_detoxify_predict(ckpt: Path, detox) -> None:
    res = nbeval.evaluate(
        RECORDS, [nbeval.evaluator("toxicity", model=str(ckpt), device="cpu")], progress=False, cache=False
    )
    for rec, sents in (("r1", A1), ("r2", A2)):
        want = detox.predict(sents)
        got = values(res, rec)
        assert set(got) == set(METRICS)
        for m in METRICS:
            assert got[m] == pytest.approx(max(want[m]), abs=1e-5)
        worst = sents[int(np.argmax(want["toxicity"]))]
        assert worst in cell(res, rec, "rationale")
        assert cell(res, rec, "details")["sentence_toxicity"] == pytest.approx(want["toxicity"], abs=1e-4)


def test_a_shared_sentence_goes_through_the_model_once(ckpt: Path) -> None:
    nbeval.evaluate(RECORDS, [nbeval.evaluator("toxicity", model=str(ckpt), device="cpu")], progress=False, cache=False)
    runner = get_local_model(LocalModel(str(ckpt), "detoxify", "cpu"))
    assert runner.forwards == len(set(A1) | set(A2)) == 4


def test_a_sequence_classifier_with_jigsaw_labels(tmp_path: Path) -> None:
    order = ["insult", "toxic", "identity_hate", "obscene", "threat", "severe_toxic"]  # not detoxify's order
    path = build_classifier(tmp_path / "jigsaw", order, seed=7, problem_type="multi_label_classification")
    ev = _toxicity(model=str(path), device="cpu")
    assert ev.local_model.kind == "classifier"
    res = nbeval.evaluate(RECORDS[:1], [ev], progress=False, cache=False)
    probs = direct_probs(path, A1, sigmoid=True).max(axis=0)
    canon = {"toxic": "toxicity", "severe_toxic": "severe_toxicity", "identity_hate": "identity_attack"}
    got = values(res, "r1")
    for j, label in enumerate(order):
        assert got[canon.get(label, label)] == pytest.approx(probs[j], abs=1e-5)


def test_a_classifier_without_the_labels_is_an_error_on_the_row_and_others_still_score(tmp_path: Path) -> None:
    path = build_classifier(tmp_path / "two", ["toxic", "insult"], seed=8)
    res = nbeval.evaluate(
        RECORDS[:1], [nbeval.evaluator("toxicity", model=str(path)), "pii_leakage"], progress=False, cache=False
    )
    error = cell(res, "r1", "error")
    assert "severe_toxicity" in error and "identity_attack" in error and "'insult'" in error
    assert res.scores[res.scores.evaluator == "pii_leakage"].value.notna().any()


def test_a_detoxify_model_that_is_not_downloaded_is_an_error_on_the_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    monkeypatch.setattr(torch.hub, "_hub_dir", str(tmp_path))
    res = nbeval.evaluate(RECORDS[:1], ["toxicity", "pii_leakage"], progress=False, cache=False)
    error = cell(res, "r1", "error")
    assert "'original'" in error and ".ckpt" in error
    assert res.scores[res.scores.evaluator == "pii_leakage"].value.notna().any()


def test_a_long_sentence_is_truncated_and_the_row_says_so(ckpt: Path, detox) -> None:
    long = "This sentence keeps going on and on with many words beyond the tiny window of twelve tokens."
    res = nbeval.evaluate(
        [{"key": "long", "input": "q", "actual_output": long, "model_key": "m"}],
        [nbeval.evaluator("toxicity", model=str(ckpt))],
        progress=False,
        cache=False,
    )
    assert "truncated" in cell(res, "long", "rationale")
    assert values(res, "long")["toxicity"] == pytest.approx(detox.predict([long, "Hi."])["toxicity"][0], abs=1e-5)


def test_a_blank_answer_scores_zero_and_says_why(ckpt: Path) -> None:
    res = nbeval.evaluate(
        [{"key": "blank", "input": "q", "actual_output": "   ", "model_key": "m"}],
        [nbeval.evaluator("toxicity", model=str(ckpt))],
        progress=False,
        cache=False,
    )
    assert values(res, "blank") == dict.fromkeys(METRICS, 0.0)
    assert "blank" in cell(res, "blank", "rationale")


def test_the_model_kind_follows_the_model_name(ckpt: Path, tmp_path: Path) -> None:
    assert _toxicity().local_model == LocalModel("original", "detoxify", None, None)
    assert _toxicity(model="unbiased").local_model.kind == "detoxify"
    assert _toxicity(model=ckpt).local_model.kind == "detoxify"  # a PathLike
    assert _toxicity(model="unitary/toxic-bert").local_model.kind == "classifier"
    assert JIGSAW_CLASSES[0] == "toxic"


@pytest.mark.parametrize("params", [{"model": ""}, {"model": 3}, {"batch_size": 0}, {"device": 1}, {"no_such": 1}])
def test_bad_params_are_evaluator_errors(params: dict) -> None:
    with pytest.raises(EvaluatorError):
        nbeval.evaluator("toxicity", **params)
