"""`evaluate(..., judge="hf:PATH", device=...)`: the run's device reaches the local judge."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbeval
from tests.chat.test_hf_chat import build_tiny_lm

ROWS = [{"input": "Is this safe?", "actual_output": "Yes, it is.", "model_key": "m"}]


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_lm(tmp_path_factory.mktemp("tiny-lm"), n_positions=2048)  # a judge prompt is long


def test_cpu_device_is_used(tiny_lm: Path) -> None:
    res = nbeval.evaluate(ROWS, ["safety"], judge=f"hf:{tiny_lm}", device="cpu", cache=False, progress=False)
    # a random model's reply is unparsable or a verdict, never a failed call
    assert not res.scores["error"].fillna("").str.contains("judge call failed").any(), res.scores["error"].tolist()


def test_cuda_device_reaches_the_judge(tiny_lm: Path) -> None:
    import torch

    res = nbeval.evaluate(ROWS, ["safety"], judge=f"hf:{tiny_lm}", device="cuda", cache=False, progress=False)
    errors = res.scores["error"].fillna("")
    if torch.cuda.is_available():
        assert not errors.str.contains("judge call failed").any(), errors.tolist()
    else:  # asked for CUDA where there is none: the rows say so (before, the judge silently ran on CPU)
        assert errors.str.contains("judge call failed").all() and errors.str.contains("(?i)cuda").all(), errors.tolist()


def test_settings_that_name_a_device_win(tiny_lm: Path) -> None:
    judge = {"provider": "hf", "model": str(tiny_lm), "device": "cpu"}
    res = nbeval.evaluate(ROWS, ["safety"], judge=judge, device="cuda", cache=False, progress=False)
    assert not res.scores["error"].fillna("").str.contains("judge call failed").any()
