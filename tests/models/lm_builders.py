"""A tiny causal language model built in the tests: random weights, a byte-level BPE tokenizer
trained here on a small corpus, saved with ``save_pretrained`` so nbeval loads it by path.

Its context is short (``n_positions`` 32 by default) so that ordinary test sentences overflow it
and the windowed paths run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CORPUS = [
    "The cat sat on the mat and looked at the dog.",
    "Paris is the capital of France. It lies on the Seine.",
    "Rewrite the following text with the same semantics. In other words, the text says it again.",
    "Generate a summary for the following text: Tl;dr the summary is short.",
    "Answer the question based on the conversation between a human and AI.",
    "Question: Are the responses of AI interesting? (a) Yes. (b) No.",
    "Conversation: human: what is the weather like? AI: it is sunny and warm today.",
    "Stock prices rose sharply on Monday after the news about the company.",
    "The recipe needs two eggs, some flour, milk and a little sugar.",
    "A quick brown fox jumps over the lazy dog near the river bank.",
]


def build_tiny_causal_lm(path: Path, n_positions: int = 32, vocab_size: int = 512, seed: int = 0) -> Path:
    """Train a byte-level BPE on :data:`CORPUS`, build a 2-layer GPT-2 on it, save both to ``path``."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS * 3, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    fast.save_pretrained(path)
    torch.manual_seed(seed)
    eos = tok.token_to_id("<|endoftext|>")
    config = GPT2Config(
        vocab_size=tok.get_vocab_size(),
        n_positions=n_positions,
        n_embd=32,
        n_layer=2,
        n_head=2,
        bos_token_id=eos,
        eos_token_id=eos,
        pad_token_id=eos,
    )
    model = GPT2LMHeadModel(config)
    # Random weights at the default scale give nearly uniform predictions; larger ones make token
    # probabilities differ, so a wrong position or an off-by-one shows in the numbers.
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() > 1:
                p.mul_(8.0)
    model.save_pretrained(path)
    return path


def load_hf(path: Path) -> tuple[Any, Any]:
    """The tokenizer and model at ``path``, loaded directly with transformers (the tests' reference)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(path)
    model.eval()
    return AutoTokenizer.from_pretrained(path), model
