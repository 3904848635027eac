"""``perplexity`` through the engine, against transformers' own loss on the same tiny model."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

import nbeval  # noqa: E402
from nbeval.errors import EvaluatorError  # noqa: E402
from nbeval.request_kinds import LocalModel  # noqa: E402
from nbeval.resources.local_models import clear_local_models, get_local_model  # noqa: E402

from .lm_builders import build_tiny_causal_lm, load_hf  # noqa: E402

CONTEXT = 32
TEXTS = {
    "cat": "The cat sat on the mat.",
    "paris": "Paris is the capital of France. It lies on the Seine.",
    "long": " ".join(["Stock prices rose sharply on Monday after the news about the company."] * 6),
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-ppl-lm"), n_positions=CONTEXT)


@pytest.fixture(scope="module")
def hf(tiny: Path):
    return load_hf(tiny)


@pytest.fixture(autouse=True)
def fresh_runners():
    clear_local_models()
    yield
    clear_local_models()


def records(texts: dict[str, str]) -> list[dict]:
    return [
        {"key": k, "input": "q", "expected_output": "e", "actual_output": t, "model_key": "m"} for k, t in texts.items()
    ]


def run(tiny: Path, texts: dict[str, str], *others, **params):
    ev = nbeval.evaluator("perplexity", model=str(tiny), device="cpu", **params)
    return nbeval.evaluate(records(texts), [ev, *others], progress=False, cache=False).scores


def by_key(scores, evaluator: str = "perplexity", col: str = "value") -> dict:
    df = scores[scores.evaluator == evaluator]
    return dict(zip(df.key, df[col], strict=True))


def hf_perplexity(hf, text: str) -> float:
    """torch.exp(loss) with labels=input_ids: one pass within the context, else the guide's
    strided loop (each window's loss weighted by the tokens it actually predicts)."""
    tok, model = hf
    ids = tok(text, return_tensors="pt").input_ids
    n = ids.size(1)
    with torch.no_grad():
        if n <= CONTEXT:
            return torch.exp(model(ids, labels=ids).loss).item()
        stride, nll_sum, count, prev_end = CONTEXT // 2, 0.0, 0, 0
        for begin in range(0, n, stride):
            end = min(begin + CONTEXT, n)
            trg_len = end - prev_end
            input_ids = ids[:, begin:end]
            target_ids = input_ids.clone()
            target_ids[:, :-trg_len] = -100
            loss = model(input_ids, labels=target_ids).loss
            predicted = (target_ids[:, 1:] != -100).sum().item()  # labels shift left by one
            nll_sum += loss.item() * predicted
            count += predicted
            prev_end = end
            if end == n:
                break
        return math.exp(nll_sum / count)


def test_matches_transformers_loss_and_the_strided_loop(tiny: Path, hf) -> None:
    tok, _ = hf
    assert len(tok(TEXTS["long"]).input_ids) > 2 * CONTEXT  # several windows
    got = by_key(run(tiny, TEXTS))
    for key, text in TEXTS.items():
        assert got[key] == pytest.approx(hf_perplexity(hf, text), rel=1e-5), key


def test_rationale_names_the_least_likely_tokens(tiny: Path, hf) -> None:
    tok, model = hf
    scores = run(tiny, {"cat": TEXTS["cat"]})
    rationale = by_key(scores, col="rationale")["cat"]
    ids = tok(TEXTS["cat"], return_tensors="pt").input_ids
    with torch.no_grad():
        lp = torch.log_softmax(model(ids).logits[0, :-1], -1).gather(1, ids[0, 1:, None])[:, 0]
    worst = tok.decode([ids[0, 1 + int(lp.argmin())].item()])
    assert rationale.startswith("perplexity ")
    assert f"least likely: {worst!r}" in rationale
    details = json.loads(by_key(scores, col="details")["cat"])
    assert details["tokens"] == ids.size(1) - 1


def test_empty_and_one_token_answers_have_no_value(tiny: Path, hf) -> None:
    tok, _ = hf
    assert len(tok("a").input_ids) == 1
    scores = run(tiny, {"empty": "", "blank": "  ", "one": "a", "cat": TEXTS["cat"]})
    values, errors = by_key(scores), by_key(scores, col="error")
    for key in ("empty", "blank", "one"):
        assert math.isnan(values[key]), key
    assert "empty" in errors["empty"] and "empty" in errors["blank"]
    assert "single token" in errors["one"]
    assert values["cat"] > 0


def test_rows_are_pooled_and_deduplicated(tiny: Path, hf) -> None:
    tok, _ = hf
    texts = {"a": TEXTS["cat"], "b": "Paris is big.", "c": TEXTS["cat"]}
    assert all(len(tok(t).input_ids) <= CONTEXT for t in texts.values())
    scores = run(tiny, texts)
    runner = get_local_model(LocalModel(str(tiny), "causal_lm", "cpu"))
    assert runner.forwards == 2  # two distinct answers, one window each
    got = by_key(scores)
    assert got["a"] == got["c"]


def test_batch_size_does_not_change_values(tiny: Path) -> None:
    default = by_key(run(tiny, TEXTS))
    one = by_key(run(tiny, TEXTS, batch_size=1))
    for key in TEXTS:
        assert one[key] == pytest.approx(default[key], rel=1e-5)


def test_unknown_model_offline_fails_that_row_only(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    bad = nbeval.evaluator("perplexity", model="nbeval-test/not-downloaded", device="cpu", name="bad_ppl")
    scores = run(tiny, {"cat": TEXTS["cat"]}, bad, "rouge")
    err = by_key(scores, "bad_ppl", "error")["cat"]
    assert "huggingface-cli download nbeval-test/not-downloaded" in err
    assert math.isnan(by_key(scores, "bad_ppl")["cat"])
    assert by_key(scores)["cat"] > 0
    assert set(scores[scores.evaluator == "rouge"].value.notna()) == {True}


@pytest.mark.parametrize(
    "params",
    [
        {"batch_size": 0},
        {"batch_size": "8"},
        {"device": 3},
        {"model": ""},
        {"model": None},
        {"stride": 4},
    ],
)
def test_bad_params_are_evaluator_errors(params: dict) -> None:
    with pytest.raises(EvaluatorError):
        nbeval.evaluator("perplexity", **params)
