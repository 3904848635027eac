"""fairness_bias, hallucination and summac through the engine.

Reference values come from transformers called directly (softmax or sigmoid of the logits, one
input at a time) on tiny models built here, aggregated by hand as each evaluator's docstring says.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import nbeval
from nbeval.data.text import split_sentences
from nbeval.errors import EvaluatorError
from nbeval.request_kinds import LocalModel
from nbeval.resources.local_models import clear_local_models, get_local_model

from .classifier_builders import NLI_LABELS, build_classifier, direct_probs

SOURCE = ["Paris is the capital of France.", "It lies on the Seine river.", "The city has many museums."]
SUMMARY = ["Paris, on the Seine, is the French capital.", "It has no museums."]
C1, C2 = "Paris is the capital of France. It lies on the Seine.", "Berlin is the capital of Germany."
ANSWER = "Paris is the capital of France."


def values(result, key: str, evaluator: str) -> dict[str, float]:
    df = result.scores
    df = df[(df.evaluator == evaluator) & (df.key == key)]
    return dict(zip(df.metric, df.value, strict=True))


def cell(result, key: str, evaluator: str, col: str):
    df = result.scores
    value = df[(df.evaluator == evaluator) & (df.key == key)][col].iloc[0]
    return json.loads(value) if col == "details" and isinstance(value, str) else value


@pytest.fixture(scope="module")
def nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_classifier(tmp_path_factory.mktemp("nli"), NLI_LABELS, seed=11)


@pytest.fixture(scope="module")
def bias(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_classifier(tmp_path_factory.mktemp("bias"), ["Non-biased", "Biased"], seed=12, max_length=16)


@pytest.fixture(autouse=True)
def _fresh_runners():
    clear_local_models()
    yield
    clear_local_models()


# -- fairness_bias ------------------------------------------------------------------------------


def test_fairness_bias_is_the_probability_of_the_biased_label(bias: Path) -> None:
    texts = {"a": "Women are bad drivers.", "b": "The meeting starts at ten."}
    recs = [{"key": k, "input": "q", "actual_output": t, "model_key": "m"} for k, t in texts.items()]
    res = nbeval.evaluate(recs, [nbeval.evaluator("fairness_bias", model=str(bias))], progress=False, cache=False)
    want = direct_probs(bias, list(texts.values()))[:, 1]
    for k, w in zip(texts, want, strict=True):
        assert values(res, k, "fairness_bias")["fairness_bias"] == pytest.approx(w, abs=1e-5)
        assert "'Biased'" in cell(res, k, "fairness_bias", "rationale")
        assert "truncated" not in cell(res, k, "fairness_bias", "rationale")


def test_fairness_bias_warns_when_the_answer_exceeds_the_window(bias: Path) -> None:
    long = "This answer goes on and on about many things, far beyond a sixteen-token window, as answers do."
    res = nbeval.evaluate(
        [{"key": "l", "input": "q", "actual_output": long, "model_key": "m"}],
        [nbeval.evaluator("fairness_bias", model=str(bias))],
        progress=False,
        cache=False,
    )
    assert "truncated" in cell(res, "l", "fairness_bias", "rationale")
    want = direct_probs(bias, [long], max_length=16)[0, 1]
    assert values(res, "l", "fairness_bias")["fairness_bias"] == pytest.approx(want, abs=1e-5)


def test_fairness_bias_needs_a_biased_label(tmp_path: Path) -> None:
    path = build_classifier(tmp_path / "plain", ["LABEL_0", "LABEL_1"])
    res = nbeval.evaluate(
        [{"key": "x", "input": "q", "actual_output": "Hello.", "model_key": "m"}],
        [nbeval.evaluator("fairness_bias", model=str(path))],
        progress=False,
        cache=False,
    )
    error = cell(res, "x", "fairness_bias", "error")
    assert "biased" in error and "LABEL_0" in error


# -- hallucination ------------------------------------------------------------------------------


def test_hallucination_is_the_best_chunks_entailment(nli: Path) -> None:
    rec = {"key": "h", "input": "q", "context": [C1, C2], "actual_output": ANSWER, "model_key": "m"}
    res = nbeval.evaluate([rec], [nbeval.evaluator("hallucination", model=str(nli))], progress=False, cache=False)
    per_chunk = direct_probs(nli, [(C1, ANSWER), (C2, ANSWER)])[:, 0]  # column 0 is "entailment"
    best = int(per_chunk.argmax())
    assert values(res, "h", "hallucination")["hallucination"] == pytest.approx(per_chunk[best], abs=1e-5)
    assert f"chunk {best + 1} of 2" in cell(res, "h", "hallucination", "rationale")
    assert cell(res, "h", "hallucination", "details")["chunk_consistency"] == pytest.approx(per_chunk, abs=1e-4)


def test_hallucination_with_a_one_label_pair_model(tmp_path: Path) -> None:
    path = build_classifier(tmp_path / "hhem-like", ["consistent"], seed=13)
    rec = {"key": "h", "input": "q", "context": [C1, C2], "actual_output": ANSWER, "model_key": "m"}
    res = nbeval.evaluate([rec], [nbeval.evaluator("hallucination", model=str(path))], progress=False, cache=False)
    want = direct_probs(path, [(C1, ANSWER), (C2, ANSWER)], sigmoid=True)[:, 0].max()
    assert values(res, "h", "hallucination")["hallucination"] == pytest.approx(want, abs=1e-5)


def test_hallucination_default_model_fails_on_the_row_with_what_to_do() -> None:
    rec = {"key": "h", "input": "q", "context": [C1], "actual_output": ANSWER, "model_key": "m"}
    res = nbeval.evaluate([rec], ["hallucination", "pii_leakage"], progress=False, cache=False)
    assert "NLI cross-encoder or pair classifier" in cell(res, "h", "hallucination", "error")
    assert res.scores[res.scores.evaluator == "pii_leakage"].value.notna().any()


# -- summac -------------------------------------------------------------------------------------


def _summac_by_hand(model_dir: Path, e_col: int, c_col: int):
    pairs = [(s, h) for h in SUMMARY for s in SOURCE]
    probs = direct_probs(model_dir, pairs)
    e = probs[:, e_col].reshape(len(SUMMARY), len(SOURCE))
    c = probs[:, c_col].reshape(len(SUMMARY), len(SOURCE))
    zs_raw = float(np.mean(e.max(axis=1) - c.max(axis=1)))
    # the fixed convolution: 10 even bins; a bin weighs its count by its centre from 0.5 up
    conv = []
    for row in e:
        total = 0.0
        for p in row:
            b = min(int(p * 10), 9)
            centre = (b + 0.5) / 10
            total += centre if centre >= 0.5 else 0.0
        conv.append(min(total, 1.0))
    return zs_raw, float(np.mean(conv)), e


def test_summac_equals_the_hand_aggregated_nli_probabilities(nli: Path) -> None:
    assert split_sentences(" ".join(SOURCE)) == SOURCE and split_sentences(" ".join(SUMMARY)) == SUMMARY
    rec = {"key": "s", "input": " ".join(SOURCE), "actual_output": " ".join(SUMMARY), "model_key": "m"}
    res = nbeval.evaluate([rec], [nbeval.evaluator("summac", model=str(nli))], progress=False, cache=False)
    zs_raw, conv, _ = _summac_by_hand(nli, 0, 2)
    got = values(res, "s", "summac")
    assert got["summac_zs"] == pytest.approx(min(max(zs_raw, 0.0), 1.0), abs=1e-5)
    assert got["summac_conv"] == pytest.approx(conv, abs=1e-5)
    assert cell(res, "s", "summac", "details")["summac_zs_raw"] == pytest.approx(zs_raw, abs=1e-4)


def test_summac_reads_vitaminc_label_names_and_custom_conv_weights(tmp_path: Path) -> None:
    path = build_classifier(tmp_path / "vitc", ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"], seed=14)
    rec = {"key": "s", "input": " ".join(SOURCE), "actual_output": " ".join(SUMMARY), "model_key": "m"}
    weights = [0.0, 0.5, 1.0]  # three even bins
    res = nbeval.evaluate(
        [rec], [nbeval.evaluator("summac", model=str(path), conv_weights=weights)], progress=False, cache=False
    )
    zs_raw, _, e = _summac_by_hand(path, 0, 1)
    conv = np.mean([min(sum(weights[min(int(p * 3), 2)] for p in row), 1.0) for row in e])
    got = values(res, "s", "summac")
    assert got["summac_zs"] == pytest.approx(min(max(zs_raw, 0.0), 1.0), abs=1e-5)
    assert got["summac_conv"] == pytest.approx(conv, abs=1e-5)


def test_summac_needs_nli_labels(tmp_path: Path) -> None:
    path = build_classifier(tmp_path / "bias", ["Non-biased", "Biased"])
    rec = {"key": "s", "input": "A. B.", "actual_output": "C.", "model_key": "m"}
    res = nbeval.evaluate([rec], [nbeval.evaluator("summac", model=str(path))], progress=False, cache=False)
    assert "entailment and contradiction" in cell(res, "s", "summac", "error")


def test_summac_of_a_blank_summary_is_zero() -> None:
    rec = {"key": "s", "input": "Some source.", "actual_output": " ", "model_key": "m"}
    res = nbeval.evaluate([rec], ["summac"], progress=False, cache=False)  # no model is loaded
    assert values(res, "s", "summac") == {"summac_conv": 0.0, "summac_zs": 0.0}
    assert "blank" in cell(res, "s", "summac", "rationale")


@pytest.mark.parametrize("weights", ["abc", [], [1, "x"], [True], 3])
def test_summac_rejects_bad_conv_weights(weights) -> None:
    with pytest.raises(EvaluatorError, match="conv_weights"):
        nbeval.evaluator("summac", conv_weights=weights)


# -- batching across evaluators and rows --------------------------------------------------------


def test_hallucination_and_summac_share_one_model_and_its_inputs(nli: Path) -> None:
    recs = [
        {"key": "a", "input": C1, "context": [C1], "actual_output": ANSWER, "model_key": "m"},
        {"key": "b", "input": C1, "context": [C1, C2], "actual_output": ANSWER, "model_key": "m"},
    ]
    evs = [
        nbeval.evaluator("hallucination", model=str(nli), device="cpu"),
        nbeval.evaluator("summac", model=str(nli), device="cpu"),
    ]
    nbeval.evaluate(recs, evs, progress=False, cache=False)
    hallucination = {(C1, ANSWER), (C2, ANSWER)}
    summac = {(s, ANSWER) for s in split_sentences(C1)}
    runner = get_local_model(LocalModel(str(nli), "classifier", "cpu"))
    assert runner.forwards == len(hallucination | summac) == 4
