"""The diff's gate (issue 43, point 1): ``nbeval diff --fail-on-regression``, ``%nbeval diff
--fail-on-regression`` and ``RunDiff.gate()`` fail when nothing, or far too little, was compared.

Before the gate checked coverage, each case below passed: two runs on different datasets
(exact_match 1.0 → 0.0 but no shared row), an after run whose every judge call failed, and a model
measured on 0 of 30 rows after. The expected counts are worked out by hand from the rows built
here (which keys each run measured), never read from the code under test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.cli import main
from nbeval.errors import BadParameter
from tests.extension.conftest import Shell, loaded_shell
from tests.support.fake_openai import FakeOpenAIServer, Status
from tests.support.runs import thirty_cases

pytestmark = pytest.mark.usefixtures("no_judge_from_env")


def _renamed(records: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [{**r, "key": prefix + r["key"]} for r in records]


def _save(records: list[dict[str, Any]], folder: Path, evaluators: list[Any] | None = None, **kw: Any) -> str:
    result = nbeval.evaluate(records, evaluators or ["exact_match"], progress=False, **kw)
    return str(result.save(folder))


def _gate(before: str, after: str, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str]:
    code = main(["diff", before, after, "--fail-on-regression", *more])
    return code, capsys.readouterr().err


# -- the three cases of the issue --------------------------------------------------------------


def test_runs_on_different_datasets_compare_nothing_and_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # exact_match 1.0 before (c0..c29 all right) and 0.0 after (z-c0..z-c29 all wrong): no key in common
    before = _save(thirty_cases(0), tmp_path / "before")
    after = _save(_renamed(thirty_cases(30), "z-"), tmp_path / "after")
    code, err = _gate(before, after, capsys)
    assert code == 1
    assert "nothing was compared" in err and "0 rows measured in both runs (30 before, 30 after)" in err
    assert main(["diff", before, after]) == 0  # a report without a gate is fine
    verdict = nbeval.diff(before, after).gate()
    assert verdict.tripped and any("nothing was compared" in line for line in verdict.lines())


def test_an_after_run_whose_every_judge_call_failed_fails(
    tmp_path: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = thirty_cases(0)[:6]
    judge = {"model": "judge-model", "base_url": openai_server.url}
    openai_server.reply = "Rationale: harmless.\nRating: yes"
    before = _save(rows, tmp_path / "before", ["safety"], judge=judge, max_attempts=1, cache=False)
    openai_server.reply = Status(500, "down")
    after = _save(rows, tmp_path / "after", ["safety"], judge=judge, max_attempts=1, cache=False)
    code, err = _gate(before, after, capsys)
    assert code == 1
    assert "1 unmeasured after" in err and "m: safety (measured on 6 rows before, 0 of 6 after)" in err


def test_a_model_measured_on_no_row_of_thirty_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two = thirty_cases(0) + [{**r, "model_key": "m2"} for r in thirty_cases(0)]
    before = _save(two, tmp_path / "before")
    silent = [{**r, "actual_output": None} if r["model_key"] == "m2" else r for r in two]  # m2 answered nothing
    after = _save(silent, tmp_path / "after")
    code, err = _gate(before, after, capsys)
    assert code == 1
    assert "m2: exact_match (measured on 30 rows before, 0 of 30 after)" in err
    assert "m: exact_match" not in err  # m was compared on all 30 rows


def test_a_model_gone_from_the_after_run_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    two = thirty_cases(0) + [{**r, "model_key": "m2"} for r in thirty_cases(0)]
    before = _save(two, tmp_path / "before")
    after = _save(thirty_cases(0), tmp_path / "after")
    code, err = _gate(before, after, capsys)
    assert code == 1 and "m2: exact_match (measured on 30 rows before, not in the after run)" in err


def test_a_model_or_evaluator_new_in_the_after_run_is_no_failure(tmp_path: Path) -> None:
    before = _save(thirty_cases(0), tmp_path / "before")
    two = thirty_cases(0) + [{**r, "model_key": "m2"} for r in thirty_cases(0)]
    after = _save(two, tmp_path / "after", ["exact_match", "rouge"])
    assert main(["diff", before, after, "--fail-on-regression"]) == 0


# -- far fewer shared rows than either run -----------------------------------------------------


def _partly_shared(shared: int, total: int = 30) -> list[dict[str, Any]]:
    """``total`` right answers, the first ``shared`` on the keys of :func:`thirty_cases`."""
    rows = thirty_cases(0)[:total]
    return [r if i < shared else {**r, "key": "new-" + r["key"]} for i, r in enumerate(rows)]


def test_few_shared_rows_fail_below_min_shared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _save(thirty_cases(0), tmp_path / "before")
    after = _save(_partly_shared(3), tmp_path / "after")  # 3 of each run's 30 measured rows are shared: 10%
    code, err = _gate(before, after, capsys)
    assert code == 1
    assert (
        "1 with few shared rows" in err
        and "m: exact_match (shared: 3 of the 30 rows measured before, 3 of the 30 after: 10%)" in err
    )
    assert main(["diff", before, after, "--fail-on-regression", "--min-shared", "0.1"]) == 0  # 10% >= 10%
    assert main(["diff", before, after, "--fail-on-regression", "--min-shared", "0.11"]) == 1


def test_half_shared_passes_at_the_default(tmp_path: Path) -> None:
    from nbeval.results.runs.diff_gate import MIN_SHARED

    assert MIN_SHARED == 0.5
    before = _save(thirty_cases(0), tmp_path / "before")
    assert main(["diff", before, _save(_partly_shared(15), tmp_path / "half"), "--fail-on-regression"]) == 0
    assert main(["diff", before, _save(_partly_shared(14), tmp_path / "less"), "--fail-on-regression"]) == 1


def test_a_suite_that_grew_is_measured_against_the_larger_run(tmp_path: Path) -> None:
    # 30 rows before, the same 30 and 10 new after: 30 shared of 40 (75%), above the default half
    before = _save(thirty_cases(0), tmp_path / "before")
    grown = thirty_cases(0) + [{**r, "key": "extra-" + r["key"]} for r in thirty_cases(0)[:10]]
    after = _save(grown, tmp_path / "after")
    assert main(["diff", before, after, "--fail-on-regression"]) == 0
    assert main(["diff", before, after, "--fail-on-regression", "--min-shared", "0.8"]) == 1
    cov = nbeval.diff(before, after).coverage.iloc[0]
    assert (cov["rows_before"], cov["rows_after"], cov["shared"], cov["share"]) == (30, 40, 30, 0.75)


@pytest.mark.parametrize("bad", ["-0.1", "1.5", "nan"])
def test_min_shared_is_a_share(tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str) -> None:
    before = _save(thirty_cases(0), tmp_path / "before")
    assert main(["diff", before, before, "--fail-on-regression", "--min-shared", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith("nbeval: error: min_shared is the smallest share") and bad in err
    with pytest.raises(BadParameter, match="min_shared"):
        nbeval.diff(before, before).gate(min_shared=float(bad))


# -- what the diff shows, and the other front ends ---------------------------------------------


def test_the_report_says_what_was_not_compared(tmp_path: Path) -> None:
    before = _save(thirty_cases(0), tmp_path / "before")
    after = _save(_renamed(thirty_cases(30), "z-"), tmp_path / "after")
    text = nbeval.diff(before, after).to_text()
    assert "not compared:" in text and "nothing was compared" in text
    assert "not compared" in nbeval.diff(before, after)._repr_html_()
    assert "not compared" not in nbeval.diff(before, before).to_text()


def test_json_output_carries_the_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _save(thirty_cases(0), tmp_path / "before")
    after = _save(_renamed(thirty_cases(0), "z-"), tmp_path / "after")
    assert main(["diff", before, after, "--json", "--fail-on-regression"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["gate"]["tripped"] is True and out["has_regressions"] is False
    assert out["gate"]["found"] == [
        {"kind": "nothing compared", "model_key": "", "evaluator": ""},
        {"kind": "few shared rows", "model_key": "m", "evaluator": "exact_match"},
    ]
    assert out["coverage"] == [
        {
            "evaluator": "exact_match",
            "model_key": "m",
            "rows_before": 30,
            "rows_after": 30,
            "shared": 0,
            "share": 0.0,
            "N_before": 30,
            "N_after": 30,
            "unmeasured_before": False,
            "unmeasured_after": False,
        }
    ]


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Shell]:
    """An IPython shell with ``%load_ext nbeval``, run in ``tmp_path`` (tests/extension's, judge settings kept)."""
    with loaded_shell(monkeypatch, tmp_path, no_judge=False) as loaded:
        yield loaded


def test_the_magic_fails_the_cell_when_nothing_was_compared(shell: Shell) -> None:
    shell.ns["first"] = nbeval.evaluate(thirty_cases(0), ["exact_match"], progress=False)
    shell.ns["second"] = nbeval.evaluate(_renamed(thirty_cases(30), "z-"), ["exact_match"], progress=False)
    assert shell.cell("%nbeval diff first second").success
    ran = shell.cell("%nbeval diff first second --fail-on-regression")
    assert not ran.success and "nothing was compared" in ran.stdout + ran.stderr
    ran = shell.cell("%nbeval diff first first --fail-on-regression")
    assert ran.success, ran.stdout + ran.stderr
