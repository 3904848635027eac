"""``nbeval diff`` and ``nbeval runs``: two saved runs compared from the command line, and the runs
in a folder listed; exit codes as the README promises (1 on a regression only when asked)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.cli import main
from tests.support.runs import thirty_cases


@pytest.fixture
def saved(tmp_path: Path) -> tuple[Path, Path]:
    before = nbeval.evaluate(thirty_cases(0), ["exact_match"], progress=False).save(tmp_path / "runs" / "before")
    after = nbeval.evaluate(thirty_cases(15), ["exact_match"], progress=False).save(tmp_path / "runs" / "after")
    return Path(before), Path(after)


def test_diff_prints_the_regression_and_fails_only_when_asked(
    saved: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = saved
    assert main(["diff", str(before), str(after)]) == 0
    text = capsys.readouterr().out
    assert "exact_match" in text and "regression" in text.lower()
    # 15 of 30 rows went from pass to fail: exact McNemar p = 2 * 0.5**15, significant after Holm
    assert main(["diff", str(before), str(after), "--fail-on-regression"]) == 1
    assert "a regression was found" in capsys.readouterr().err
    # the other way round it is an improvement: nothing fails
    assert main(["diff", str(after), str(before), "--fail-on-regression"]) == 0


def test_a_min_effect_larger_than_the_change_is_not_a_regression(saved: tuple[Path, Path]) -> None:
    before, after = saved
    assert main(["diff", str(before), str(after), "--fail-on-regression", "--min-effect", "0.6"]) == 0
    assert main(["diff", str(before), str(after), "--fail-on-regression", "--min-effect", "0.4"]) == 1


def test_diff_as_json(saved: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    before, after = saved
    assert main(["diff", str(before), str(after), "--json", "--alpha", "0.01"]) == 0
    out = json.loads(capsys.readouterr().out)
    row = next(r for r in out["table"] if r["metric"] == "score")
    assert (row["mean_before"], row["mean_after"], row["n"]) == (1.0, 0.5, 30)
    assert out["has_regressions"] is True and len(out["flips"]) == 15


def test_diff_of_a_folder_that_is_not_a_result_is_a_clear_error(
    tmp_path: Path, saved: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["diff", str(tmp_path / "empty"), str(saved[1])]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nbeval: error:") and "empty" in err and "Traceback" not in err


def test_runs_lists_the_saved_runs(saved: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    folder = saved[0].parent
    assert main(["runs", str(folder)]) == 0
    text = capsys.readouterr().out
    assert text.index("after") < text.index("before")  # newest first
    assert main(["runs", str(folder), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["run"] for r in listed] == ["after", "before"]


def test_a_gate_on_two_runs_with_nothing_in_common_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = nbeval.evaluate(thirty_cases(0), ["exact_match"], progress=False).save(tmp_path / "a")
    b = nbeval.evaluate(thirty_cases(0), ["rouge"], progress=False).save(tmp_path / "b")
    assert main(["diff", str(a), str(b)]) == 0  # a report is fine
    assert main(["diff", str(a), str(b), "--fail-on-regression"]) == 1  # a gate that measured nothing is not
    assert "nothing was compared" in capsys.readouterr().err
