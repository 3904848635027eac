"""An empty evaluator list is an error, never a run that scores nothing and passes a CI gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.cli import main
from nbeval.demo import demo_lab_path
from nbeval.errors import EvaluatorError
from nbeval.evaluators.registry import resolve_evaluators

EMPTY: list[Any] = ["", ",", " , ,", [], [""], [" ", ","], ()]
ROWS = [{"input": "q", "actual_output": "a", "expected_output": "a"}]


@pytest.mark.parametrize("items", EMPTY, ids=repr)
def test_resolve_evaluators_refuses_an_empty_list_and_says_how_to_name_some(items: Any) -> None:
    with pytest.raises(EvaluatorError) as info:
        resolve_evaluators(items)
    message = str(info.value)
    assert "no evaluators" in message
    assert "nbeval evaluators" in message and "'rouge'" in message  # how to name them and where to look


@pytest.mark.parametrize("items", [[], "", [""]], ids=repr)
def test_evaluate_with_no_evaluators_raises(items: Any) -> None:
    with pytest.raises(EvaluatorError, match="no evaluators"):
        nbeval.evaluate(ROWS, items, progress=False)
    with pytest.raises(EvaluatorError, match="no evaluators"):
        nbeval.evaluate(ROWS, items, dry_run=True, progress=False)


def test_resolve_evaluators_still_takes_one_id_among_empty_parts() -> None:
    assert [e.id for e in resolve_evaluators(",exact_match,,")] == ["exact_match"]
    assert [e.id for e in resolve_evaluators(["", "exact_match"])] == ["exact_match"]


@pytest.mark.parametrize("flag", ["", ",", " "], ids=repr)
def test_cli_run_with_an_empty_evaluator_list_exits_2(
    flag: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    code = main(["run", demo_lab_path(), "-e", flag, "--out", str(out), "--no-progress", "--fail-on-problems"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("nbeval: error: no evaluators") and "\n" not in err
    assert not out.exists()  # nothing was written: no green, empty result
    assert main(["run", demo_lab_path(), "-e", flag, "--dry-run", "--no-progress"]) == 2
