"""``%nbeval diff`` and ``%nbeval runs``: the CLI's diff in a notebook, on variables or folders."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbeval
from nbeval.results.runs.diff import RunDiff
from tests.support.runs import thirty_cases


def test_diff_of_two_result_variables_binds_and_shows_the_diff(shell: Any) -> None:
    shell.ns["first"] = nbeval.evaluate(thirty_cases(0), ["exact_match"], progress=False)
    shell.ns["second"] = nbeval.evaluate(thirty_cases(15), ["exact_match"], progress=False)
    ran = shell.cell("%nbeval diff first second")
    assert ran.success, ran.stdout + ran.stderr
    found = shell.ns["_diff"]
    assert isinstance(found, RunDiff) and found.has_regressions
    expected = nbeval.diff(shell.ns["first"], shell.ns["second"])
    assert found.table["p_value"].tolist() == expected.table["p_value"].tolist()
    assert "exact_match" in ran.html()
    failing = shell.cell("%nbeval diff first second --fail-on-regression")
    assert not failing.success and "a regression was found" in failing.stdout + failing.stderr


def test_diff_of_saved_folders_and_the_runs_table(shell: Any, tmp_path: Path) -> None:
    nbeval.evaluate(thirty_cases(0), ["exact_match"], progress=False).save(tmp_path / "runs" / "a")
    nbeval.evaluate(thirty_cases(3), ["exact_match"], progress=False).save(tmp_path / "runs" / "b")
    ran = shell.cell(f"%nbeval diff {tmp_path / 'runs' / 'a'} {tmp_path / 'runs' / 'b'}")
    assert ran.success, ran.stdout + ran.stderr
    assert len(shell.ns["_diff"].flips) == 3
    listed = shell.cell(f"%nbeval runs {tmp_path / 'runs'}")
    assert listed.success, listed.stdout + listed.stderr
    assert "a" in listed.text() + listed.html() and "b" in listed.text() + listed.html()


def test_diff_of_something_that_is_no_run_is_one_line(shell: Any, tmp_path: Path) -> None:
    ran = shell.cell("%nbeval diff nothing_here other")
    assert not ran.success
    lines = [ln for ln in (ran.stdout + ran.stderr).splitlines() if ln.strip()]
    assert len(lines) == 1 and "nothing_here" in lines[0] and "result.save" in lines[0]
