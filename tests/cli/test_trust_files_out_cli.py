"""The command line never overwrites its own input, and a bad ``--out`` fails before any work."""

from __future__ import annotations

import importlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.cli import main
from nbeval.demo import demo_lab_path

#: Every file ``nbeval run`` writes into its ``--out`` folder.
RUN_FILES = ["scores.parquet", "aggregates.jsonl", "metrics.jsonl", "dataset.parquet", "result.json", "report.html"]
SUITE = {"name": "s", "tests": [{"test_cases": [{"key": "c1", "prompt": "What is 2+2?", "expected_output": "4"}]}]}


@pytest.fixture
def no_evaluation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any evaluation or model call fails the test: the checks must come first."""

    def boom(*args: Any, **kwargs: Any) -> Any:
        msg = "the output checks must fail before any work"
        raise AssertionError(msg)

    monkeypatch.setattr(nbeval, "evaluate", boom)
    monkeypatch.setattr(importlib.import_module("nbeval.chat.collect"), "collect", boom)


def _lab_copy(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(demo_lab_path(), path)
    return path.read_bytes()


@pytest.mark.parametrize("name", RUN_FILES)
def test_run_refuses_an_out_folder_that_would_overwrite_the_input(
    name: str, tmp_path: Path, no_evaluation: None, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / name
    before = _lab_copy(data)
    assert main(["run", str(data), "-e", "exact_match", "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nbeval: error:") and "\n" not in err
    assert name in err and "--out" in err and "overwrite" in err
    assert data.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing else was written


def test_run_with_out_dot_in_the_input_folder_keeps_the_lab(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the case: `nbeval run dataset.json --out .` used to replace a lab file with plain rows;
    # a result now keeps its rows in dataset.parquet, so the run goes ahead beside the lab
    before = _lab_copy(tmp_path / "dataset.json")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "dataset.json", "-e", "exact_match", "--out", ".", "--no-progress"]) == 0
    assert (tmp_path / "dataset.parquet").is_file()
    assert (tmp_path / "dataset.json").read_bytes() == before
    lab = nbeval.TestLab.from_json(str(tmp_path / "dataset.json"))  # still a lab, models and all
    assert len(lab.models) > 1


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_run_sees_through_links_and_spellings_of_the_out_folder(
    tmp_path: Path, no_evaluation: None, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _lab_copy(tmp_path / "real" / "result.json")
    (tmp_path / "link").symlink_to(tmp_path / "real", target_is_directory=True)
    spelled = str(tmp_path / "real" / ".." / "link")
    assert (
        main(["run", str(tmp_path / "real" / "result.json"), "-e", "exact_match", "--out", spelled, "--no-progress"])
        == 2
    )
    assert "result.json" in capsys.readouterr().err
    assert (tmp_path / "real" / "result.json").read_bytes() == before


def test_run_into_the_input_folder_under_other_names_still_works(tmp_path: Path) -> None:
    # only a clash is refused: a lab beside the result, under its own name, is fine
    _lab_copy(tmp_path / "lab.json")
    assert main(["run", str(tmp_path / "lab.json"), "-e", "exact_match", "--out", str(tmp_path), "--no-progress"]) == 0
    assert nbeval.load_result(tmp_path).scores.shape[0] > 0
    assert len(nbeval.TestLab.from_json(str(tmp_path / "lab.json")).models) > 1


def test_run_refuses_an_out_that_is_an_existing_file_before_evaluating(
    tmp_path: Path, no_evaluation: None, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "notes.txt"
    out.write_text("mine", encoding="utf-8")
    assert main(["run", demo_lab_path(), "-e", "exact_match", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(out) in err and "is a file, not a folder" in err
    assert out.read_text(encoding="utf-8") == "mine"


def test_run_refuses_an_out_below_a_file_before_evaluating(
    tmp_path: Path, no_evaluation: None, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    out = tmp_path / "notes.txt" / "run1"
    assert main(["run", demo_lab_path(), "-e", "exact_match", "--out", str(out), "--no-progress"]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err


def test_run_refuses_an_out_folder_holding_a_folder_where_a_file_goes(
    tmp_path: Path, no_evaluation: None, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "report.html").mkdir()
    assert main(["run", demo_lab_path(), "-e", "exact_match", "--out", str(tmp_path), "--no-progress"]) == 2
    assert "report.html" in capsys.readouterr().err


def _suite(path: Path) -> bytes:
    path.write_text(json.dumps(SUITE), encoding="utf-8")
    return path.read_bytes()


def test_complete_refuses_to_write_the_lab_over_the_suite(
    tmp_path: Path, no_evaluation: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _suite(tmp_path / "suite.json")
    monkeypatch.chdir(tmp_path)
    code = main(
        [
            "complete",
            "suite.json",
            "-m",
            "alpha",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--out",
            "./sub/../suite.json",
            "--no-progress",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "suite.json" in err and "--out" in err and "overwrite" in err
    assert (tmp_path / "suite.json").read_bytes() == before


def test_complete_writes_into_a_new_folder(tmp_path: Path, openai_server: Any) -> None:
    _suite(tmp_path / "suite.json")
    out = tmp_path / "new" / "lab.json"
    assert (
        main(
            [
                "complete",
                str(tmp_path / "suite.json"),
                "-m",
                "alpha",
                "--base-url",
                openai_server.url,
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    assert [m.key for m in nbeval.TestLab.from_json(str(out)).models] == ["alpha"]


def test_complete_refuses_an_out_that_is_a_folder_before_asking(
    tmp_path: Path, no_evaluation: None, capsys: pytest.CaptureFixture[str]
) -> None:
    _suite(tmp_path / "suite.json")
    code = main(
        [
            "complete",
            str(tmp_path / "suite.json"),
            "-m",
            "alpha",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    assert code == 2
    assert "is a folder" in capsys.readouterr().err


def test_complete_keeps_the_previous_lab_when_writing_fails(
    tmp_path: Path, openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _suite(tmp_path / "suite.json")
    out = tmp_path / "lab.json"
    args = [
        "complete",
        str(tmp_path / "suite.json"),
        "-m",
        "alpha",
        "--base-url",
        openai_server.url,
        "--out",
        str(out),
        "--no-progress",
    ]
    assert main(args) == 0
    before = out.read_bytes()

    def half_written(data: Any, path: Any) -> None:
        Path(path).write_text('{"name": "half', encoding="utf-8")
        raise OSError("disk full")

    monkeypatch.setattr("nbeval.data.jsonio.write_json", half_written)
    monkeypatch.setattr("nbeval.data.model.write_json", half_written, raising=False)
    with pytest.raises(OSError, match="disk full"):
        main([*args, "--no-cache"])
    assert out.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.json", "suite.json"]  # no leftovers
