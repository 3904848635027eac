"""HFChat on a tiny random-weight causal LM with a word-level tokenizer built in the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbeval.chat import ChatClient, ChatReply, HFChat
from tests.support.replies import as_replies

pytest.importorskip("torch")
pytest.importorskip("transformers")

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "user", "assistant", "system"]
TEMPLATE = (
    "{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}assistant{% endif %}"
)


def build_tiny_lm(path: Path, chat_template: str | None = None, n_positions: int = 64) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")
    if chat_template:
        fast.chat_template = chat_template
    fast.save_pretrained(path)
    import torch

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(vocab),
        n_positions=n_positions,
        n_embd=32,
        n_layer=1,
        n_head=2,
        bos_token_id=None,
        eos_token_id=None,
        pad_token_id=1,
    )
    GPT2LMHeadModel(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("tiny-lm"))


@pytest.fixture(scope="module")
def tiny_chat_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("tiny-chat-lm"), TEMPLATE)


def test_reply_from_a_local_path(tiny_lm: Path) -> None:
    model = HFChat(tiny_lm, device="cpu", max_new_tokens=4)
    reply = model.chat([{"role": "user", "content": "the cat sat on a mat"}])
    assert isinstance(reply.text, str)
    # No chat template: a lone user message is its content, six known words; no EOS token, so
    # generation runs to max_new_tokens.
    assert reply.usage.prompt_tokens == 6
    assert reply.usage.completion_tokens == 4
    assert all(w in [*WORDS, "[UNK]"] for w in reply.text.split())
    assert model.name == tiny_lm.name


def test_chat_template_is_applied(tiny_chat_lm: Path) -> None:
    model = HFChat(tiny_chat_lm, device="cpu", max_new_tokens=2)
    reply = model.chat([{"role": "system", "content": "dog"}, {"role": "user", "content": "the cat"}])
    # "system dog user the cat assistant": six tokens.
    assert reply.usage.prompt_tokens == 6
    assert reply.usage.completion_tokens == 2


def test_generation_params_and_determinism(tiny_lm: Path) -> None:
    model = HFChat(tiny_lm, device="cpu", max_new_tokens=8)
    a = model.chat([{"role": "user", "content": "the dog ran"}], max_tokens=3, response_format={"type": "json_object"})
    b = model.chat([{"role": "user", "content": "the dog ran"}], max_tokens=3)
    assert a.usage.completion_tokens == 3
    assert a.text == b.text  # greedy decoding by default


def test_through_the_client_with_cache(tiny_lm: Path, cache_path: Path) -> None:
    client = ChatClient(HFChat(tiny_lm, device="cpu", max_new_tokens=3), cache=cache_path, concurrency=2)
    first = client.run_many(["the cat", "a dog", "the cat"])
    assert all(isinstance(r, ChatReply) for r in first)
    again = as_replies(
        ChatClient(HFChat(tiny_lm, device="cpu", max_new_tokens=3), cache=cache_path).run_many(["a dog"])
    )
    assert again[0].cached and again[0].text == as_replies(first)[1].text
    assert client.usage_totals().completion_tokens == 6  # two distinct prompts, three tokens each


def test_unloadable_model_is_a_failure(tmp_path: Path) -> None:
    (result,) = ChatClient(HFChat(tmp_path / "nothing-here"), cache=False).run_many(["q"])
    assert not isinstance(result, ChatReply)
    assert "cannot load" in result.error


def test_on_cuda_when_available(tiny_lm: Path) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here")
    model = HFChat(tiny_lm, max_new_tokens=2)  # device=None picks cuda
    reply = model.chat([{"role": "user", "content": "the cat"}])
    assert model.device == "cuda" and reply.usage.completion_tokens == 2


def test_an_access_token_stays_private(tiny_lm: Path, cache_path: Path) -> None:
    token = "hf_privateAccessToken0123456789"
    model = HFChat(tiny_lm, token=token, max_new_tokens=3)
    client = ChatClient(model, cache=cache_path)
    (reply,) = client.run_many(["the cat"])
    assert isinstance(reply, ChatReply)  # loaded with the token (a local path does not need it)
    assert token not in repr(model) + repr(client) + model.cache_identity()
    assert token.encode() not in b"".join(p.read_bytes() for p in cache_path.parent.iterdir() if p.is_file())
