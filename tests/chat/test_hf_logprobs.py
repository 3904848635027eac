"""A local Hugging Face judge's log-probabilities, checked against a forward pass of the same model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from nbeval.chat import HFChat
from tests.chat.test_hf_chat import build_tiny_lm  # skips this module too without torch and transformers

PROMPT = "the cat sat"
MESSAGES = [{"role": "user", "content": PROMPT}]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("tiny-lm-logprobs"))


def test_logprobs_match_a_forward_pass(tiny_lm: Path) -> None:
    import torch

    model = HFChat(tiny_lm, device="cpu", max_new_tokens=4)
    reply = model.chat(MESSAGES, logprobs=True, top_logprobs=3)
    assert reply.logprobs is not None and len(reply.logprobs) == reply.usage.completion_tokens == 4
    assert "".join(t.token for t in reply.logprobs) == reply.text

    tok = model._tokenizer
    prompt_ids = tok(PROMPT, return_tensors="pt")["input_ids"][0].tolist()
    new_ids = tok(reply.text, add_special_tokens=False)["input_ids"]
    assert len(new_ids) == 4
    with torch.no_grad():
        logits = model._model(torch.tensor([prompt_ids + new_ids])).logits[0]
    logsoftmax = torch.log_softmax(logits.float(), dim=-1)
    for i, token in enumerate(reply.logprobs):
        row = logsoftmax[len(prompt_ids) - 1 + i]  # the position that predicts generated token i
        assert token.logprob == pytest.approx(float(row[new_ids[i]]), abs=1e-5)
        best = torch.topk(row, 3)
        assert [t for t, _ in token.top] == [tok.decode([j]) for j in best.indices.tolist()]
        assert [lp for _, lp in token.top] == pytest.approx(best.values.tolist(), abs=1e-5)
        assert len(token.top) == 3 and sum(math.exp(lp) for _, lp in token.top) <= 1 + 1e-6
        # greedy decoding: the token written is the likeliest one
        assert token.top[0][1] == pytest.approx(token.logprob)


def test_no_logprobs_unless_asked(tiny_lm: Path) -> None:
    model = HFChat(tiny_lm, device="cpu", max_new_tokens=2)
    asked = model.chat(MESSAGES, logprobs=True)
    assert model.chat(MESSAGES).logprobs is None
    assert asked.logprobs is not None and all(t.top == () for t in asked.logprobs)  # top_logprobs: 0
    assert model.chat(MESSAGES).text == asked.text  # asking for them changes nothing written
