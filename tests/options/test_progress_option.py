"""`progress=` and `--no-progress`: a progress bar on stderr, or none at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from tests.support.fake_openai import FakeOpenAIServer

ROWS = [
    {"key": f"k{i}", "input": f"q{i}", "expected_output": "x", "actual_output": "x", "model_key": "m"} for i in range(4)
]


def _data(tmp_path: Path) -> str:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"inputs": ROWS}), encoding="utf-8")
    return str(path)


def _suite(tmp_path: Path) -> str:
    path = tmp_path / "suite.json"
    path.write_text(
        json.dumps(
            {
                "name": "s",
                "tests": [
                    {
                        "test_cases": [
                            {"key": "c1", "prompt": "What is 2+2?", "expected_output": "4"},
                            {"key": "c2", "prompt": "Capital of France?", "expected_output": "Paris"},
                        ]
                    }
                ],
            }
        ),
        encoding="utf-8",
    )
    return str(path)


def test_evaluate_progress_draws_a_bar_on_stderr_only_when_asked(capsys: pytest.CaptureFixture[str]) -> None:
    nbeval.evaluate(ROWS, ["exact_match"], progress=True)
    err = capsys.readouterr().err
    # tqdm's text bar: "nbeval:   0%|          | 0/4 [00:00<?, ?score/s]"
    assert "nbeval:" in err and "/4 [" in err and "score/s" in err, err
    nbeval.evaluate(ROWS, ["exact_match"], progress=False)
    assert capsys.readouterr().err == ""
    nbeval.evaluate(ROWS, ["exact_match"])  # the default draws one
    assert "nbeval:" in capsys.readouterr().err


def test_run_no_progress_leaves_stderr_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["run", _data(tmp_path), "-e", "exact_match", "--out", str(tmp_path / "out")]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "nbeval:" in err and "/4 [" in err, err
    assert main([*args, "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "exact_match" in captured.out


def test_complete_no_progress_leaves_stderr_empty(
    tmp_path: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "complete",
        _suite(tmp_path),
        "-m",
        "alpha",
        "--base-url",
        openai_server.url,
        "--no-cache",
        "--out",
        str(tmp_path / "lab.json"),
    ]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "collecting answers:" in err and "/2 [" in err, err
    assert main([*args, "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "wrote" in captured.out
    assert openai_server.request_count == 4  # both runs asked (so the second had something to show)


def test_demo_no_progress_leaves_stderr_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["demo", "--no-embedding", "--out", str(tmp_path / "demo")]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "nbeval:" in err and "score/s" in err, err
    assert main([*args, "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "problems: " in captured.out
