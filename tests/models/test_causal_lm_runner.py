"""The causal language model runner against transformers used directly on the same tiny model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from nbeval.errors import ResourceError  # noqa: E402
from nbeval.resources.causal_lm import CausalLMRunner, plan_windows  # noqa: E402

from .lm_builders import build_tiny_causal_lm, load_hf  # noqa: E402

CONTEXT = 32
SHORT = "The cat sat on the mat."
LONG = " ".join(["The cat sat on the mat and looked at the dog near the river bank."] * 4)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-causal-lm"), n_positions=CONTEXT)


@pytest.fixture(scope="module")
def hf(tiny: Path):
    return load_hf(tiny)


@pytest.fixture(scope="module")
def runner(tiny: Path) -> CausalLMRunner:
    return CausalLMRunner(str(tiny), device="cpu")


def ids_of(tok, text: str) -> list[int]:
    return tok(text, add_special_tokens=False)["input_ids"]


def direct(model, ids: list[int], first: int, begin: int = 0) -> np.ndarray:
    """log p(ids[t] | ids[begin:t]) for t in first..len(ids)-1, one unpadded forward pass."""
    x = torch.tensor([ids[begin:]])
    with torch.no_grad():
        lp = torch.log_softmax(model(x).logits[0].double(), dim=-1)
    return np.array([lp[t - 1 - begin, ids[t]].item() for t in range(first, len(ids))])


def test_the_tokenizer_adds_nothing_and_the_texts_overflow(hf) -> None:
    tok, _ = hf
    assert tok("a")["input_ids"] == ids_of(tok, "a")  # no BOS: an empty prefix scores tokens 2..n
    assert len(ids_of(tok, SHORT)) < CONTEXT < len(ids_of(tok, LONG))


def test_plan_windows_follow_the_transformers_guide() -> None:
    # From position 1: begins at 0, stride, 2*stride, ...; each scores what the last did not reach.
    assert plan_windows(10, 1, 32, 16) == (((0, 10, 1),), False)
    assert plan_windows(70, 1, 32, 16) == (((0, 32, 1), (16, 48, 32), (32, 64, 48), (48, 70, 64)), False)
    # A continuation that fits with a long prefix: one window ending at the end, the prefix cut.
    assert plan_windows(50, 40, 32, 16) == (((18, 50, 40),), True)
    # A continuation longer than the window after a prefix: windows keep context-stride tokens of it.
    assert plan_windows(80, 20, 32, 16) == (((4, 36, 20), (20, 52, 36), (36, 68, 52), (52, 80, 68)), True)
    assert plan_windows(5, 5, 32, 16) == ((), False)


def test_empty_prefix_gives_tokens_two_to_n(runner: CausalLMRunner, hf) -> None:
    tok, model = hf
    (got,) = runner.logprobs([("", SHORT)])
    ids = ids_of(tok, SHORT)
    assert got.tokens == tuple(tok.decode([i]) for i in ids[1:])
    np.testing.assert_allclose(got.logprobs, direct(model, ids, 1), rtol=1e-5, atol=1e-5)
    # ... whose mean is transformers' own loss with labels=input_ids.
    x = torch.tensor([ids])
    with torch.no_grad():
        loss = model(x, labels=x).loss.item()
    assert -got.logprobs.mean() == pytest.approx(loss, rel=1e-5)


def test_continuation_is_conditioned_on_the_prefix(runner: CausalLMRunner, hf) -> None:
    tok, model = hf
    prefix, cont = "Is the cat on the mat?\nAnswer:", " Yes"
    (got,) = runner.logprobs([(prefix, cont)])
    p, c = ids_of(tok, prefix), ids_of(tok, cont)
    assert got.tokens == tuple(tok.decode([i]) for i in c)
    np.testing.assert_allclose(got.logprobs, direct(model, p + c, len(p)), rtol=1e-5, atol=1e-5)
    assert not runner.truncated((prefix, cont))


def test_long_prefix_is_cut_from_the_left(runner: CausalLMRunner, hf) -> None:
    tok, model = hf
    prefix, cont = LONG + " In other words,", " the cat sat."
    (got,) = runner.logprobs([(prefix, cont)])
    ids = ids_of(tok, prefix) + ids_of(tok, cont)
    first = len(ids_of(tok, prefix))
    # The window is the last CONTEXT tokens: the whole continuation, the end of the prefix.
    np.testing.assert_allclose(got.logprobs, direct(model, ids, first, begin=len(ids) - CONTEXT), rtol=1e-5, atol=1e-5)
    assert len(got.logprobs) == len(ids_of(tok, cont))
    assert runner.truncated((prefix, cont))


def test_long_text_uses_the_strided_windows(runner: CausalLMRunner, hf) -> None:
    tok, model = hf
    (got,) = runner.logprobs([("", LONG)])
    ids = ids_of(tok, LONG)
    stride = CONTEXT // 2
    expected = np.full(len(ids), np.nan)
    prev_end = 0
    for begin in range(0, len(ids), stride):  # the guide's loop, token by token
        end = min(begin + CONTEXT, len(ids))
        first = max(prev_end, 1)
        expected[first:end] = direct(model, ids[:end], first, begin=begin)
        prev_end = end
        if end == len(ids):
            break
    np.testing.assert_allclose(got.logprobs, expected[1:], rtol=1e-5, atol=1e-5)
    assert not runner.truncated(("", LONG))  # every token is scored; nothing before it is dropped


def test_batched_equals_unbatched_in_input_order(runner: CausalLMRunner) -> None:
    items = [
        ("", SHORT),
        ("Rewrite the following text.", " The cat sat."),
        ("", LONG),
        ("", "Paris is big."),
        ("Tl;dr\n", "A quick brown fox jumps over the lazy dog."),
        ("", SHORT),
    ]
    batched = runner.logprobs(items)
    one = runner.with_batch_size(1)
    singles = [one.logprobs([item])[0] for item in items]
    assert len(batched) == len(items)
    for b, s in zip(batched, singles, strict=True):
        assert b.tokens == s.tokens
        np.testing.assert_allclose(b.logprobs, s.logprobs, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(batched[0].logprobs, batched[-1].logprobs)


def test_forwards_count_distinct_windows_and_views_share_them(runner: CausalLMRunner) -> None:
    view = runner.with_batch_size(2)
    assert view.batch_size == 2 and runner.batch_size == 16
    before = runner.forwards
    got = view.logprobs([("", SHORT), ("", "Paris is big."), ("", SHORT), ("x", " y")])
    assert len(got) == 4
    assert runner.forwards - before == 3  # duplicates run once; the count is shared with the view
    assert view.forwards == runner.forwards


def test_empty_continuation_has_no_tokens(runner: CausalLMRunner) -> None:
    empty, single = runner.logprobs([("prefix", ""), ("", "a")])
    assert empty.tokens == () and empty.logprobs.size == 0
    assert single.tokens == () and single.logprobs.size == 0  # one token: nothing predicts it


def test_unknown_hub_name_offline_says_how_to_fetch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    runner = CausalLMRunner("nbeval-test/no-such-model", device="cpu")
    with pytest.raises(ResourceError, match="huggingface-cli download nbeval-test/no-such-model"):
        runner.logprobs([("", "text")])


def test_missing_directory_is_named(tmp_path: Path) -> None:
    runner = CausalLMRunner(str(tmp_path / "nowhere"), device="cpu")
    with pytest.raises(ResourceError, match="no model directory"):
        runner.logprobs([("", "text")])


def test_importing_nbeval_does_not_import_torch() -> None:
    code = (
        "import sys, nbeval, nbeval.resources.causal_lm, nbeval.evaluators.models.lm_scores; "
        "print('torch' in sys.modules, 'transformers' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert out.stdout.split() == ["False", "False"]


def test_one_tokenisation_per_text_and_truncation_remembered(tiny: Path, hf) -> None:
    """A round's prefixes go to the tokenizer in one call and its continuations in another; asking
    afterwards which items were truncated does not tokenise anything again."""
    tok, _ = hf
    fresh = CausalLMRunner(str(tiny), device="cpu")
    items = [(LONG + " In other words,", " the cat sat."), ("", SHORT), ("Q:", " A."), ("Q:", " B.")]
    fresh.logprobs(items[:1])  # loads the model
    shared_tok = fresh._shared.tokenizer
    calls: list[int] = []
    real_call = type(shared_tok).__call__

    def counting(self, text, *args, **kwargs):
        calls.append(len(text) if isinstance(text, list) else 1)
        return real_call(self, text, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(type(shared_tok), "__call__", counting)
        got = fresh.logprobs(items[1:])
        assert calls == [2, 3]  # non-empty prefixes, then continuations, each batched once
        calls.clear()
        assert [fresh.truncated(i) for i in items] == [True, False, False, False]
        assert calls == []
    # the batched ids are the per-text ids
    assert len(got[0].logprobs) == len(ids_of(tok, SHORT)) - 1
    assert len(got[1].logprobs) == len(ids_of(tok, " A."))
