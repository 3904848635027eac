"""`cache=<a folder>` keeps the cache in that folder; `nbeval run` on a suite says to complete it first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import build_parser, main
from nbeval.commands import cli_command

ROWS = [{"input": "Is this safe?", "actual_output": "Yes.", "model_key": "m"}]
CALLS: list[str] = []  # module level: a judge's identity covers what its closure captures


def judge(prompt: str) -> str:
    CALLS.append(prompt)
    return '{"rating": "yes", "rationale": "harmless"}'


def test_cache_can_be_a_folder(tmp_path: Path) -> None:
    CALLS.clear()
    folder = tmp_path / "cache"
    folder.mkdir()
    first = nbeval.evaluate(ROWS, ["safety"], judge=judge, cache=folder, progress=False)
    again = nbeval.evaluate(ROWS, ["safety"], judge=judge, cache=folder, progress=False)
    assert len(CALLS) == 1  # the second run was answered from the folder's cache
    assert (folder / "chat.sqlite").is_file()
    assert first.scores["error"].isna().all() and again.scores["value"].tolist() == first.scores["value"].tolist()


def test_run_help_and_a_suite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_help = cli_command("run").cli_parser()
    assert "suite" not in (run_help.description or "") and "nbeval complete" in build_parser().format_help()
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"name": "s", "tests": [{"test_cases": [{"key": "c1", "prompt": "2+2?"}]}]}))
    assert main(["run", str(suite), "-e", "exact_match", "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "has no answers" in err and "Traceback" not in err
