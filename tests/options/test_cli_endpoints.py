"""CLI endpoint flags: `--judge-base-url` with the model from NBEVAL_JUDGE_MODEL, and a local
`hf:` model beside `--base-url` in `nbeval complete` (loaded locally, never sent to the URL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from tests.chat.test_hf_chat import build_tiny_lm

ROWS = [
    {"input": "Is this safe?", "actual_output": "Yes.", "model_key": "m"},
    {"input": "And this?", "actual_output": "Also yes.", "model_key": "m"},
]


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "rows.json"
    path.write_text(json.dumps({"inputs": ROWS}), encoding="utf-8")
    return path


def test_judge_base_url_with_the_model_from_the_environment(
    tmp_path: Path, openai_server, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    from tests.support.fake_openai import Text

    openai_server.reply = lambda rec: Text('{"rating": "yes", "rationale": "harmless"}')
    monkeypatch.setenv("NBEVAL_JUDGE_MODEL", "env-judge")
    monkeypatch.delenv("NBEVAL_JUDGE_BASE_URL", raising=False)
    code = main(
        [
            "run",
            str(_data(tmp_path)),
            "-e",
            "safety",
            "--judge-base-url",
            openai_server.url,
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
            "--no-cache",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert len(openai_server.requests) == 2
    assert {r.model for r in openai_server.requests} == {"env-judge"}
    scores = nbeval.load_result(tmp_path / "o").scores
    assert scores["error"].isna().all()


def test_judge_base_url_without_any_model_says_what_to_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.delenv("NBEVAL_JUDGE_MODEL", raising=False)
    code = main(
        [
            "run",
            str(_data(tmp_path)),
            "-e",
            "safety",
            "--judge-base-url",
            "http://127.0.0.1:9/v1",
            "--out",
            str(tmp_path / "o"),
            "--no-progress",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "--judge NAME or set NBEVAL_JUDGE_MODEL" in err


def test_complete_loads_an_hf_model_locally_beside_a_base_url(tmp_path: Path, openai_server, capsys) -> None:
    from tests.support.fake_openai import Text

    openai_server.reply = lambda rec: Text("remote answer")
    model = build_tiny_lm(tmp_path / "tiny-lm", n_positions=1024)
    suite = tmp_path / "suite.json"
    suite.write_text(
        json.dumps(
            {
                "name": "s",
                "tests": [{"test_cases": [{"key": "c1", "prompt": "the answer is", "expected_output": "four"}]}],
            }
        )
    )
    out = tmp_path / "lab.json"
    code = main(
        [
            "complete",
            str(suite),
            "-m",
            f"hf:{model}",
            "-m",
            "remote",
            "--base-url",
            openai_server.url,
            "--out",
            str(out),
            "--no-progress",
            "--no-cache",
        ]
    )
    assert code == 0, capsys.readouterr().err
    assert {r.model for r in openai_server.requests} == {"remote"}  # the hf: model was not sent
    lab = nbeval.TestLab.from_json(str(out))
    rows = {r.model_key: r for r in lab.dataset}
    assert rows["remote"].actual_output == "remote answer"
    local = rows[f"hf:{model}"]
    assert local.error is None and isinstance(local.actual_output, str)
