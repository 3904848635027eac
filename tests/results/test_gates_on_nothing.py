"""Every gate fails on a run that measured nothing (issue 43, closing section).

The gates: ``nbeval run`` with ``--fail-on-problems`` and with each ``--fail-on`` choice (exit
status 1), ``%nbeval run ... --fail-on`` (a failed cell), :func:`nbeval.results.reporting.gate.check_gate`
and ``application.run_gate`` (the Python API); ``nbeval diff --fail-on-regression`` (exit 1),
``%nbeval diff ... --fail-on-regression`` and ``RunDiff.gate()``. The runs that measured nothing:
every judge call failed (the loopback fake server answers 500), no model answered (0 of 30
rows), an empty dataset, and (for a diff, whose runs each measured something) two runs on
disjoint datasets. A run that measured something on every row is the control: it passes each
gate, so a gate that always failed would not pass this module either.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import pytest

import nbeval
from nbeval import application
from nbeval.cli import main
from nbeval.commands import Command
from nbeval.results.reporting.gate import GATE_KINDS, check_gate
from tests.extension.conftest import Shell, loaded_shell
from tests.support.fake_openai import FakeOpenAIServer, Status
from tests.support.runs import thirty_cases

pytestmark = pytest.mark.usefixtures("no_judge_from_env")

#: Every ``--fail-on`` choice a gate can be given: all kinds, each kind alone, and the old default.
CHOICES: list[list[str]] = [
    ["--fail-on-problems"],
    *(["--fail-on", kind] for kind in GATE_KINDS),
    ["--fail-on", "threshold,unrated,flip"],
]
NOTHING = ["judge_failed", "no_answers", "empty_dataset"]


@pytest.fixture(autouse=True)
def _one_attempt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each judge call tried once, so a server answering 500 fails at once (the CLI and the magics
    build one RunOptions with ``Command.run_options``)."""
    build = Command.run_options
    monkeypatch.setattr(Command, "run_options", lambda self, args: build(self, args).merged(max_attempts=1))


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    """The loopback fake judge: a harmless verdict for the control, 500 for every call when told."""
    with FakeOpenAIServer(reply="Rationale: harmless.\nRating: yes") as s:
        yield s


class Case:
    """One run: its records, evaluators, and judge (for the CLI, the magics and the API alike)."""

    def __init__(self, name: str, server: FakeOpenAIServer, tmp_path: Path) -> None:
        self.name, self.server, self.tmp_path = name, server, tmp_path
        self.judged = name == "judge_failed"
        rows = thirty_cases(0)
        if name == "no_answers":
            rows = [{**r, "actual_output": None} for r in rows]
        elif name == "empty_dataset":
            rows = []
        elif self.judged:
            rows = rows[:5]
        self.records = rows
        self.evaluators = ["safety"] if self.judged else ["exact_match"]

    def prepare(self) -> None:
        """Make the judge fail every call (the control keeps its harmless verdicts)."""
        if self.judged:
            self.server.reply = Status(500, "the judge is down")

    def cli_args(self) -> list[str]:
        data = self.tmp_path / f"{self.name}.json"
        data.write_text(json.dumps(self.records), encoding="utf-8")
        judge = ["--judge", "judge-model", "--judge-base-url", self.server.url] if self.judged else []
        out = str(self.tmp_path / f"out-{self.name}")
        return [str(data), "-e", ",".join(self.evaluators), *judge, "--out", out, "--no-progress", "--no-cache"]

    def evaluate(self) -> nbeval.EvaluationResult:
        judge = {"model": "judge-model", "base_url": self.server.url} if self.judged else None  # None: not given
        return nbeval.evaluate(self.records, self.evaluators, progress=False, cache=False, max_attempts=1, judge=judge)


@pytest.fixture
def case(server: FakeOpenAIServer, tmp_path: Path) -> Callable[[str], Case]:
    return lambda name: Case(name, server, tmp_path)


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Shell]:
    """An IPython shell with ``%load_ext nbeval``, run in ``tmp_path`` (tests/extension's, judge settings kept)."""
    with loaded_shell(monkeypatch, tmp_path, no_judge=False) as loaded:
        yield loaded


# -- nbeval run: every choice of kinds, on every run that measured nothing ----------------------


@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: " ".join(c))
@pytest.mark.parametrize("name", NOTHING)
def test_the_run_gate_fails_on_a_run_that_measured_nothing(
    case: Callable[[str], Case], name: str, choice: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    run = case(name)
    run.prepare()
    assert main(["run", *run.cli_args(), *choice]) == 1
    out = capsys.readouterr().out
    assert "failing: nothing was measured" in out, out


@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: " ".join(c))
def test_the_run_gate_passes_the_control(
    case: Callable[[str], Case], choice: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", *case("judge_failed").cli_args(), *choice]) == 0  # the judge answers every row


@pytest.mark.parametrize("name", NOTHING)
def test_the_python_gate_fails_on_a_run_that_measured_nothing(case: Callable[[str], Case], name: str) -> None:
    run = case(name)
    run.prepare()
    result = run.evaluate()
    choices: list[Literal[True] | list[str]] = [True, *([kind] for kind in GATE_KINDS)]
    choices.append(["threshold", "unrated", "flip"])
    for fail_on in choices:
        verdict = check_gate(result, fail_on)
        assert verdict.tripped and any(line.startswith("nothing was measured") for line in verdict.failing)
        via_application = application.run_gate(result, fail_on)
        assert via_application is not None and via_application.tripped


@pytest.mark.parametrize("name", NOTHING)
def test_the_magic_gate_fails_the_cell(shell: Shell, case: Callable[[str], Case], name: str) -> None:
    run = case(name)
    run.prepare()
    shell.ns["rows"] = run.records
    judge = f" --judge judge-model --judge-base-url {run.server.url}" if run.judged else ""
    ran = shell.cell(f"%nbeval run rows -e {','.join(run.evaluators)}{judge} --no-progress --no-cache --fail-on flip")
    assert not ran.success and "nothing was measured" in ran.stdout + ran.stderr


# -- nbeval diff: a run that measured nothing on either side, and disjoint datasets --------------


def _saved(run: Case, folder: str) -> str:
    return str(run.evaluate().save(run.tmp_path / folder))


@pytest.mark.parametrize("side", ["after", "before", "both"])
@pytest.mark.parametrize("name", NOTHING)
def test_the_diff_gate_fails_when_a_side_measured_nothing(
    case: Callable[[str], Case], name: str, side: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run = case(name)
    good = _saved(run, "good") if side != "both" else None
    run.prepare()
    nothing = _saved(run, "nothing")
    before, after = {"after": (good, nothing), "before": (nothing, good), "both": (nothing, nothing)}[side]
    assert before is not None and after is not None
    assert main(["diff", before, after, "--fail-on-regression"]) == 1
    assert "nbeval: failing: " in capsys.readouterr().err
    assert nbeval.diff(before, after).gate().tripped
    assert main(["diff", before, after, "--fail-on-regression", "--min-shared", "0"]) == 1  # no share rescues it


def test_the_diff_gate_fails_on_disjoint_datasets(case: Callable[[str], Case], tmp_path: Path) -> None:
    ok = case("no_answers")
    ok.records = thirty_cases(0)
    before = _saved(ok, "before")
    ok.records = [{**r, "key": "other-" + r["key"]} for r in thirty_cases(30)]
    after = _saved(ok, "after")
    assert main(["diff", before, after, "--fail-on-regression", "--min-shared", "0"]) == 1
    assert nbeval.diff(before, after, min_shared=0).gate().tripped


def test_the_diff_gate_passes_the_control(case: Callable[[str], Case]) -> None:
    run = case("judge_failed")
    before, after = _saved(run, "before"), _saved(run, "after")
    assert main(["diff", before, after, "--fail-on-regression"]) == 0
    assert not nbeval.diff(before, after).gate().tripped


@pytest.mark.parametrize("name", NOTHING)
def test_the_diff_magic_fails_the_cell(shell: Shell, case: Callable[[str], Case], name: str) -> None:
    run = case(name)
    shell.ns["good"] = run.evaluate()
    run.prepare()
    shell.ns["nothing"] = run.evaluate()
    ran = shell.cell("%nbeval diff good nothing --fail-on-regression")
    assert not ran.success and "(--fail-on-regression)" in ran.stdout + ran.stderr
