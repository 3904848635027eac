"""``%nbeval run``: the CLI's options, data from files, variables or ``demo``, a bound result."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pandas as pd
import pytest

import nbeval
from nbeval import cli
from nbeval.commands import Arg, arg, cli_command, register
from nbeval.commands.run import Run
from nbeval.extension.parsers import run_parser
from tests.extension.conftest import Shell

EVALUATORS = ["rouge", "exact_match"]


@pytest.fixture(scope="module")
def expected() -> nbeval.EvaluationResult:
    return nbeval.evaluate(nbeval.demo_lab(), EVALUATORS, progress=False)


def _same_leaderboards(got: nbeval.EvaluationResult, want: nbeval.EvaluationResult) -> None:
    assert got.evaluators == want.evaluators
    for ev in want.evaluators:
        pd.testing.assert_frame_equal(got.leaderboard(ev), want.leaderboard(ev))


def test_run_demo_shows_the_summary_with_its_chart_and_binds_the_result(
    shell: Shell, expected: nbeval.EvaluationResult
) -> None:
    ran = shell.cell("%nbeval run demo -e rouge,exact_match --no-progress")
    assert ran.success, ran.stdout
    _same_leaderboards(shell.ns["_nbeval"], expected)
    assert len(ran.outputs) == 1  # displayed once, not echoed again as Out[]
    assert ran.result is None
    assert "== rouge (ranked on rouge_l) ==" in ran.text()
    html = ran.html()
    assert "gpt-4o-mini" in html and "<svg" in html  # the kit's summary with its leaderboard chart


def test_dash_o_names_the_variable(shell: Shell, expected: nbeval.EvaluationResult) -> None:
    assert shell.cell("%nbeval run demo -e rouge,exact_match --no-progress -o first").success
    assert "_nbeval" not in shell.ns
    _same_leaderboards(shell.ns["first"], expected)


@pytest.mark.parametrize("kind", ["dataframe", "records", "dataset", "lab", "path_variable"])
def test_data_from_a_variable(shell: Shell, kind: str, tmp_path: Path, expected: nbeval.EvaluationResult) -> None:
    lab = nbeval.demo_lab()
    path = tmp_path / "lab.json"
    lab.to_json(path)
    shell.ns["data"] = {
        "dataframe": lab.dataset.to_pandas(),
        "records": lab.dataset.to_records(),
        "dataset": lab.dataset,
        "lab": lab,
        "path_variable": str(path),
    }[kind]
    ran = shell.cell("%nbeval run data -e rouge,exact_match --no-progress")
    assert ran.success, ran.stdout
    want = expected if kind in ("lab", "path_variable") else nbeval.evaluate(lab.dataset, EVALUATORS, progress=False)
    _same_leaderboards(shell.ns["_nbeval"], want)


def test_data_from_a_file(shell: Shell, tmp_path: Path, expected: nbeval.EvaluationResult) -> None:
    path = tmp_path / "my lab.json"
    nbeval.demo_lab().to_json(path)
    ran = shell.cell(f"%nbeval run '{path}' -e rouge,exact_match --no-progress")
    assert ran.success, ran.stdout
    _same_leaderboards(shell.ns["_nbeval"], expected)


def test_a_variable_is_expanded_in_the_line(shell: Shell) -> None:
    shell.ns["ids"] = "rouge,exact_match"
    assert shell.cell("%nbeval run demo -e $ids --no-progress").success
    assert shell.ns["_nbeval"].evaluators == EVALUATORS


# -- one parser with the CLI --------------------------------------------------------------------

#: A value for each option of `nbeval run` that takes one. A new option of the CLI fails
#: test_every_option_of_nbeval_run_is_accepted until it is given a value here.
SAMPLE_VALUES = {
    "--evaluators": "rouge",
    "--out": "out-folder",
    "--judge": "some-model",
    "--scheduler": "tcp://127.0.0.1:9",
    "--run-dir": "run-folder",
    "--judge-base-url": "http://127.0.0.1:9/v1",
    "--embedder": "all-MiniLM-L6-v2",
    "--device": "cpu",
    "--fail-on": "threshold,flip",
    "--prices": '{"some-model": [0.00015, 0.0006]}',
}


def _cli_options() -> list[Arg]:
    return [a for a in cli_command("run").arguments if a.option_strings]


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    """The flags ``parser`` accepts, read from its help (no argparse internals)."""
    return set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", parser.format_help()))


@pytest.mark.parametrize("option", _cli_options(), ids=lambda a: a.option_strings[-1])
def test_every_option_of_nbeval_run_is_accepted(option: Arg) -> None:
    """Each option of ``nbeval run`` parses in ``%nbeval run`` to what the CLI makes of it."""
    flag = option.option_strings[-1]
    argv = ["demo", "-e", "rouge"]
    if option.takes_value:
        assert flag in SAMPLE_VALUES, f"give the new `nbeval run` option {flag} a value in SAMPLE_VALUES"
        argv += [flag, SAMPLE_VALUES[flag]]
    else:
        argv.append(flag)
    for name in option.option_strings:  # short and long spellings alike
        assert name in _flags(run_parser())
    magic = vars(run_parser().parse_args(argv))
    command = vars(cli.build_parser().parse_args(["run", *argv]))
    default = option.settings.get("default")
    assert magic[option.dest] == command[option.dest]
    assert magic[option.dest] != default or option.dest == "evaluators"
    # every other option keeps the CLI's default, except --out: the magic saves only when asked
    for dest, value in command.items():
        if dest not in ("out", "func", "command", option.dest):
            assert magic[dest] == value, dest


def test_a_flag_added_to_the_cli_is_accepted_by_the_magic(shell: Shell, capsys: pytest.CaptureFixture[str]) -> None:
    """One declaration of a flag (in the command object) reaches the CLI, the magic and its help."""

    class RunWithANewFlag(Run):
        arguments: tuple[Arg, ...] = (
            *Run.arguments,
            arg("--brand-new-flag", action="store_true", help="a flag for this test"),
        )

    assert not shell.cell("%nbeval run demo -e exact_match --dry-run --brand-new-flag").success
    original = cli_command("run")
    register(RunWithANewFlag())
    try:
        ran = shell.cell("%nbeval run demo -e exact_match --dry-run --brand-new-flag")
        assert ran.success, ran.stdout
        assert shell.cell("%nbeval run -h").stdout.count("--brand-new-flag") >= 1
        assert cli.main(["run", "demo", "-e", "exact_match", "--dry-run", "--no-progress", "--brand-new-flag"]) == 0
        assert "exact_match" in capsys.readouterr().out
    finally:
        register(original)
    assert not shell.cell("%nbeval run demo -e exact_match --dry-run --brand-new-flag").success


def test_help_is_the_cli_help_plus_the_magic_s_own(shell: Shell) -> None:
    ran = shell.cell("%nbeval run -h")
    assert ran.success
    assert ran.stdout.startswith("usage: %nbeval run")
    for flag in ("--fail-on-problems", "--judge-base-url", "--dry-run", "-o NAME"):
        assert flag in ran.stdout


# -- what the options do -------------------------------------------------------------------------


def test_dry_run_shows_the_plan_and_binds_nothing(shell: Shell) -> None:
    ran = shell.cell("%nbeval run demo -e exact_match,answer_correctness --dry-run --no-progress")
    assert ran.success, ran.stdout
    assert "_nbeval" not in shell.ns
    plan = nbeval.evaluate(nbeval.demo_lab(), ["exact_match", "answer_correctness"], dry_run=True, progress=False)
    assert ran.text() == str(plan)
    assert "no judge is configured" in ran.text()
    assert "<table" in ran.html() and "answer_correctness" in ran.html()


def test_judge_options_reach_the_run(shell: Shell) -> None:
    ran = shell.cell(
        "%nbeval run demo -e answer_correctness --dry-run --judge some-model --judge-base-url http://127.0.0.1:9/v1"
    )
    assert ran.success, ran.stdout
    assert "judge calls: 90" in ran.text() and "no judge is configured" not in ran.text()


def test_out_saves_the_result_and_the_report(shell: Shell, tmp_path: Path) -> None:
    ran = shell.cell(f"%nbeval run demo -e exact_match --no-progress --out {tmp_path / 'run'}")
    assert ran.success, ran.stdout
    assert (tmp_path / "run" / "report.html").is_file()
    loaded = nbeval.load_result(tmp_path / "run")
    _same_leaderboards(loaded, shell.ns["_nbeval"])
    assert f"saved the result to {tmp_path / 'run'}/" in ran.stdout


def test_without_out_nothing_is_written(shell: Shell, tmp_path: Path) -> None:
    assert shell.cell("%nbeval run demo -e exact_match --no-progress").success
    assert list(tmp_path.iterdir()) == []


def test_out_that_would_overwrite_the_input_fails_before_any_work(shell: Shell, tmp_path: Path) -> None:
    nbeval.demo_lab().to_json(tmp_path / "result.json")  # a name a saved result uses
    ran = shell.cell(f"%nbeval run {tmp_path / 'result.json'} -e exact_match --out {tmp_path}")
    assert not ran.success
    assert "_nbeval" not in shell.ns
    assert ran.stdout.strip().startswith(f"nbeval: error: --out {tmp_path} would overwrite the input")


def test_a_scheduler_that_is_not_dask_fails_the_cell_in_one_line(shell: Shell, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket
    import threading

    pytest.importorskip("distributed")
    monkeypatch.setenv("NBEVAL_SCHEDULER_TIMEOUT", "0.5")
    accepted: list[socket.socket] = []
    with socket.create_server(("127.0.0.1", 0)) as server:  # answers a connection with an HTTP reply

        def answer() -> None:
            conn, _ = server.accept()
            accepted.append(conn)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

        threading.Thread(target=answer, daemon=True).start()
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        ran = shell.cell(f"%nbeval run demo -e exact_match --no-progress --scheduler {address}")
    for conn in accepted:
        conn.close()
    assert not ran.success and "_nbeval" not in shell.ns
    lines = ran.stdout.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"nbeval: error: something answered at '{address}'"), ran.stdout
    assert "Traceback" not in ran.stdout + ran.stderr


def test_the_gate_fails_the_cell_in_one_line_and_keeps_the_result(shell: Shell) -> None:
    ran = shell.cell("%nbeval run demo -e rouge,text_matching --no-progress --fail-on threshold")
    assert not ran.success
    lines = ran.stdout.strip().splitlines()
    assert lines == [
        "not failing on: 1 perturbation flip (--fail-on threshold)",
        "nbeval: failing: 3 threshold breaches",
    ]
    assert "Traceback" not in ran.stdout + ran.stderr
    assert shell.ns["_nbeval"].evaluators == ["rouge", "text_matching"]  # bound before the gate trips
    assert shell.cell("%nbeval run demo -e rouge --no-progress --fail-on unrated").success  # none unrated


def test_json_output_of_evaluators_is_the_cli_s(shell: Shell) -> None:
    ran = shell.cell("%nbeval evaluators --json --family deterministic rouge")
    assert ran.success
    assert [d["id"] for d in json.loads(ran.stdout)] == ["rouge"]
