"""``device=`` reaches the model: a device this machine lacks fails the row with a message naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import nbeval  # noqa: E402
from nbeval.resources.local_models import clear_local_models  # noqa: E402

from .lm_builders import build_tiny_causal_lm  # noqa: E402


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_a_device_the_machine_lacks_is_an_error_on_the_row(tmp_path: Path) -> None:
    clear_local_models()
    path = build_tiny_causal_lm(tmp_path / "lm")
    rows = [{"input": "q", "actual_output": "the cat sat on the mat"}]
    on_cpu = nbeval.evaluate(
        rows, [nbeval.evaluator("perplexity", model=str(path), device="cpu")], progress=False, cache=False
    ).scores.iloc[0]
    on_gpu = nbeval.evaluate(
        rows, [nbeval.evaluator("perplexity", model=str(path), device="cuda")], progress=False, cache=False
    ).scores.iloc[0]
    assert on_cpu["value"] > 0 and on_cpu["error"] is None
    assert "cuda" in on_gpu["error"]
