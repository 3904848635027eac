"""A local Hugging Face judge's documented options: device, dtype and max_new_tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbeval
from nbeval.chat import HFChat
from nbeval.errors import EvaluatorError
from tests.chat.test_hf_chat import build_tiny_lm

ROWS = [{"input": "Is this safe?", "actual_output": "Yes, it is.", "model_key": "m"}]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("tiny-lm"), n_positions=2048)


@pytest.mark.parametrize(("dtype", "expected"), [("float32", "float32"), ("bfloat16", "bfloat16"), (None, "float32")])
def test_dtype_sets_the_precision_the_model_loads_in(tiny_lm: Path, dtype: str | None, expected: str) -> None:
    import torch

    chat = HFChat(tiny_lm, device="cpu", max_new_tokens=2, dtype=dtype)
    reply = chat.chat([{"role": "user", "content": "the answer is"}])
    assert chat._model.dtype == getattr(torch, expected)  # None: the checkpoint's own (saved as float32)
    assert reply.usage.completion_tokens == 2  # max_new_tokens bounds the reply


def test_settings_reach_the_judge_through_evaluate(tiny_lm: Path) -> None:
    judge = {"provider": "hf", "model": str(tiny_lm), "dtype": "bfloat16", "max_new_tokens": 3}
    res = nbeval.evaluate(ROWS, ["safety"], judge=judge, device="cpu", cache=False, progress=False)
    assert res.meta["usage"]["completion_tokens"] == 3
    assert not res.scores["error"].fillna("").str.contains("judge call failed").any()


def test_an_unknown_dtype_is_refused() -> None:
    with pytest.raises(EvaluatorError, match="dtype must be one of"):
        HFChat("anything", dtype="float8")
