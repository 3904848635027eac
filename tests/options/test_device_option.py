"""`device=` and `nbeval run --device` place the run's embedder (and local judges, see
test_hf_judge_device.py) on that device."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main

ROWS = [
    {
        "key": "a",
        "input": "What boils water?",
        "expected_output": "water boils at one hundred degrees",
        "actual_output": "the cat sat on the mat",
        "model_key": "m",
    },
    {
        "key": "b",
        "input": "Capital?",
        "expected_output": "paris is the capital of france",
        "actual_output": "the capital of france is paris",
        "model_key": "m",
    },
]


def _cuda() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def _scores(result: nbeval.EvaluationResult) -> tuple[list[float], list[object]]:
    s = result.scores[result.scores["metric"] == "score"]
    return s["value"].tolist(), s["error"].tolist()


def test_device_cpu_loads_the_embedder_on_the_cpu() -> None:
    from nbeval.resources.embedder import get_embedder

    values, errors = _scores(nbeval.evaluate(ROWS, ["semantic_similarity"], device="cpu", progress=False))
    assert all(e is None for e in errors), errors
    emb = get_embedder(None, device="cpu")  # the shared instance that run used
    assert emb.loaded and emb.device == "cpu" and emb.model.device.type == "cpu"
    default, _ = _scores(nbeval.evaluate(ROWS, ["semantic_similarity"], progress=False))
    assert values == pytest.approx(default, abs=1e-4)


def test_device_cuda_reaches_the_embedder() -> None:
    values, errors = _scores(nbeval.evaluate(ROWS, ["semantic_similarity"], device="cuda", progress=False))
    if _cuda():
        on_cpu, _ = _scores(nbeval.evaluate(ROWS, ["semantic_similarity"], device="cpu", progress=False))
        assert all(e is None for e in errors) and values == pytest.approx(on_cpu, abs=1e-3)
    else:  # asked for CUDA where there is none: every row says so (the run never falls back silently)
        assert all("embedder failed" in str(e) and "cuda" in str(e).lower() for e in errors), errors


def test_cli_device_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "rows.json"
    data.write_text(json.dumps({"inputs": ROWS}), encoding="utf-8")
    base = ["run", str(data), "-e", "semantic_similarity", "--no-progress"]
    assert main([*base, "--device", "cpu", "--out", str(tmp_path / "cpu")]) == 0
    assert main([*base, "--device", "cuda", "--out", str(tmp_path / "cuda")]) == 0
    capsys.readouterr()
    on_cpu, cpu_errors = _scores(nbeval.load_result(tmp_path / "cpu"))
    default, _ = _scores(nbeval.evaluate(ROWS, ["semantic_similarity"], progress=False))
    assert all(e is None for e in cpu_errors) and on_cpu == pytest.approx(default, abs=1e-4)
    values, errors = _scores(nbeval.load_result(tmp_path / "cuda"))
    if _cuda():
        assert all(e is None for e in errors) and values == pytest.approx(on_cpu, abs=1e-3)
    else:
        assert all("cuda" in str(e).lower() for e in errors), errors
