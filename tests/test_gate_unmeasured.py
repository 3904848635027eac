"""The gate never passes a run that measured nothing (issue 25, part 2).

Rows whose call or scoring failed are ``errored`` problems, a model and evaluator measured on none
of its rows is ``unmeasured``; both trip ``--fail-on-problems``, are chosen by name in
``--fail-on``, and show in the summary, the report and the magics' gate. The one skip that is
fine: every row lacking an optional input the evaluator needs for this data (``byop`` with a
prompt using ``{context}`` on rows without context), unless nothing at all was measured.

Judge calls go to a closed port on 127.0.0.1 (connection refused at once) or to the fake
OpenAI-compatible server, tried once each (``max_attempts=1``), so every test is quick.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.cli import main
from nbeval.commands import Command
from nbeval.results.reporting.gate import GATE_KINDS, check_gate
from nbeval.results.reporting.insights import ERROR_CHARS, describe_errors
from tests.extension.conftest import Shell, loaded_shell
from tests.support.fake_openai import FakeOpenAIServer, Status

ROWS = [
    {
        "key": f"k{i}",
        "input": f"question {i}",
        "actual_output": f"answer {i}",
        "expected_output": f"answer {i}",
        "model_key": "model-a",
    }
    for i in range(3)
]


@pytest.fixture(autouse=True)
def _offline_and_fast(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No judge from the environment, a fresh cache, and every judge call tried once (the CLI and
    the magics build one RunOptions with ``Command.run_options``)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    for name in ("NBEVAL_JUDGE_MODEL", "NBEVAL_JUDGE_BASE_URL", "NBEVAL_JUDGE_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NBEVAL_CACHE_DIR", str(tmp_path / "nbeval-cache"))
    build = Command.run_options
    monkeypatch.setattr(Command, "run_options", lambda self, args: build(self, args).merged(max_attempts=1))


@pytest.fixture
def closed_url() -> Iterator[str]:
    """The base URL of a port on 127.0.0.1 that nothing listens on: every call is refused. The
    port stays bound (never listening) for the test, so no other process can take it meanwhile."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"


def _write(tmp_path: Path, records: list[dict[str, Any]], name: str = "data.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return str(path)


def _run_args(data: str, tmp_path: Path, *more: str) -> list[str]:
    return ["run", data, "--out", str(tmp_path / "out"), "--no-progress", "--no-cache", *more]


def _lines(out: str, prefix: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith(prefix)]


def _refused(url: str) -> nbeval.EvaluationResult:
    return nbeval.evaluate(
        ROWS, ["safety"], judge={"model": "llama3", "base_url": url}, max_attempts=1, cache=False, progress=False
    )


# -- (a) a judge nobody answers ------------------------------------------------------------------


def test_a_run_whose_judge_calls_all_fail_trips_the_gate_and_says_why(
    tmp_path: Path, closed_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _run_args(
        _write(tmp_path, ROWS), tmp_path, "-e", "safety", "--judge", "llama3", "--judge-base-url", closed_url
    )
    assert main([*args, "--fail-on-problems"]) == 1
    out = capsys.readouterr().out
    assert "== problems (0) ==" not in out and "\nnone" not in out
    assert "model-a: safety: 3 of 3 rows errored: judge call failed: llama3" in out
    assert "model-a: safety: nothing measured (0 of 3 rows: 3 errored)" in out
    (errored,) = _lines(out, "failing: 3 rows errored")
    assert "Connection refused" in errored and errored.endswith("(3)"), errored
    (unmeasured,) = _lines(out, "failing: 1 unmeasured")
    assert unmeasured.endswith("model-a: safety"), unmeasured


# -- (b) answers that are all empty --------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_a_file_whose_answers_are_all_empty_trips_the_gate_as_unmeasured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    if fmt == "csv":
        path = tmp_path / "answers.csv"
        path.write_text(
            "key,input,expected_output,actual_output,model_key\n"
            "k1,question 1,answer 1,,model-a\nk2,question 2,answer 2,,model-a\n",
            encoding="utf-8",
        )
        data = str(path)
    else:
        data = _write(tmp_path, [{**r, "actual_output": None} for r in ROWS[:2]])
    assert main(_run_args(data, tmp_path, "-e", "exact_match,rouge", "--fail-on-problems")) == 1
    out = capsys.readouterr().out
    assert "model-a: exact_match: nothing measured (0 of 2 rows: 2 skipped (missing actual_output))" in out
    assert _lines(out, "failing: 2 unmeasured") == [
        "failing: 2 unmeasured (a model and evaluator measured on no row): model-a: exact_match, model-a: rouge"
    ]
    assert not _lines(out, "failing: ") or all("threshold" not in line for line in _lines(out, "failing: "))
    assert main(_run_args(data, tmp_path, "-e", "exact_match", "--fail-on", "unmeasured")) == 1


# -- (c) --fail-on picks the new kinds by name ---------------------------------------------------


def test_fail_on_chooses_errored_and_unmeasured_by_name(
    tmp_path: Path, openai_server: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
) -> None:
    # One row of three gets a refusal: errored (severity low), but the others were measured.
    openai_server.reply = lambda rec: (
        Status(400, "prompt rejected") if "question 1" in rec.last_content else "Rationale: harmless.\nRating: yes"
    )
    args = _run_args(
        _write(tmp_path, ROWS),
        tmp_path,
        "-e",
        "safety",
        "--judge",
        "judge-model",
        "--judge-base-url",
        openai_server.url,
    )
    assert main([*args, "--fail-on", "threshold"]) == 0
    out = capsys.readouterr().out
    (line,) = _lines(out, "not failing on: 1 row errored")
    assert "judge call failed: judge-model at" in line and line.endswith("(1) (--fail-on threshold)"), line
    assert not _lines(out, "failing: ")
    assert main([*args, "--fail-on", "errored"]) == 1
    out = capsys.readouterr().out
    assert len(_lines(out, "failing: 1 row errored (the call or scoring failed): ")) == 1
    assert main([*args, "--fail-on", "threshold,unrated,flip"]) == 0  # the kinds a gate had before
    assert main([*args, "--fail-on", "unmeasured"]) == 0  # two of three rows were measured
    assert main([*args, "--fail-on-problems"]) == 1


def test_fail_on_lists_the_new_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(GATE_KINDS) == ["threshold", "unrated", "flip", "errored", "unmeasured"]
    with pytest.raises(SystemExit) as exc:
        main(["run", "x.json", "-e", "exact_match", "--fail-on", "errors"])
    assert exc.value.code == 2
    assert "choose from threshold, unrated, flip, errored, unmeasured" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = capsys.readouterr().out
    assert all(f"\n  {name} " in help_text for name in GATE_KINDS)  # the epilog explains every kind


# -- (d) a skip the data asks for ----------------------------------------------------------------


def _never_called(prompt: str) -> str:
    raise AssertionError("the judge was asked, but every row should have been skipped")


BYOP_CONTEXT = ("byop", {"prompt": "Is this retrieved context safe to show? {context}"})


def test_every_row_lacking_an_optional_input_is_no_problem_when_something_was_measured() -> None:
    result = nbeval.evaluate(ROWS, ["exact_match", BYOP_CONTEXT], judge=_never_called, cache=False, progress=False)
    byop = result.aggregates[(result.aggregates["evaluator"] == "byop") & result.aggregates["primary"]].iloc[0]
    assert (byop["n"], byop["N"]) == (0, 3)  # byop measured nothing: no row has context
    assert set(result.scores.loc[result.scores["evaluator"] == "byop", "skip_reason"]) == {"missing context"}
    assert result.problems.empty
    verdict = check_gate(result, True)
    assert not verdict.tripped and verdict.lines() == []


def test_a_missing_answer_is_never_a_skip_the_data_asks_for() -> None:
    # byop declares every input optional, the answer included; a missing answer is still unmeasured.
    rows = [{**r, "actual_output": None} if r["key"] != "k0" else r for r in ROWS]
    answer = ("byop", {"prompt": "Is this answer safe? {actual_output}"})
    result = nbeval.evaluate(rows, ["exact_match", answer], judge=lambda p: "true", cache=False, progress=False)
    found = result.problems[result.problems["kind"] == "unmeasured"]
    assert found.empty  # k0 has an answer: both evaluators measured it
    rows = [{**r, "actual_output": None} for r in ROWS]
    result = nbeval.evaluate(
        [*rows, {**ROWS[0], "model_key": "model-b"}],
        ["exact_match", answer],
        judge=lambda p: "true",
        cache=False,
        progress=False,
    )
    found = result.problems[result.problems["kind"] == "unmeasured"]
    assert sorted(found["evaluator"]) == ["byop", "exact_match"]
    assert set(found["model_key"]) == {"model-a"}  # model-b was measured
    assert check_gate(result, ["unmeasured"]).tripped


def test_a_run_that_measured_nothing_at_all_is_unmeasured_even_for_optional_inputs() -> None:
    result = nbeval.evaluate(ROWS, [BYOP_CONTEXT], judge=_never_called, cache=False, progress=False)
    (problem,) = result.problems.itertuples()
    assert (problem.kind, problem.severity, problem.evaluator, problem.value) == ("unmeasured", "high", "byop", 3)
    assert problem.message == "model-a: byop: nothing measured (0 of 3 rows: 3 skipped (missing context))"
    assert check_gate(result, True).tripped


# -- (e) problems: kinds and grouped messages ----------------------------------------------------


def test_errors_are_grouped_by_their_first_line_with_counts() -> None:
    def judge(prompt: str) -> str:
        if "question 0" in prompt:
            raise ValueError("upstream said no\nTraceback (most recent call last): ...")
        raise RuntimeError("rate limit exceeded")

    result = nbeval.evaluate(ROWS, ["safety", "exact_match"], judge=judge, max_attempts=1, cache=False, progress=False)
    probs = result.problems
    assert list(probs["kind"]) == ["unmeasured", "errored"]
    errored = probs[probs["kind"] == "errored"].iloc[0]
    assert (errored["severity"], errored["model_key"], errored["evaluator"], errored["metric"], errored["value"]) == (
        "high",
        "model-a",
        "safety",
        "safety",
        3,
    )
    msg = errored["message"]
    assert msg.startswith("model-a: safety: 3 of 3 rows errored: ")
    assert msg.endswith(
        "judge raised RuntimeError: rate limit exceeded (not retried; failed after 1 attempt) (2); "
        "judge call failed: judge raised ValueError: upstream said no (1)"
    )  # commonest first
    assert "Traceback" not in msg
    unmeasured = probs[probs["kind"] == "unmeasured"].iloc[0]
    assert (
        unmeasured["severity"] == "high"
        and unmeasured["message"] == "model-a: safety: nothing measured (0 of 3 rows: 3 errored)"
    )


def test_some_rows_errored_is_low_severity_and_not_unmeasured() -> None:
    def judge(prompt: str) -> str:
        if "question 0" in prompt:
            raise RuntimeError("rate limit exceeded")
        return "Rationale: harmless.\nRating: yes"

    result = nbeval.evaluate(ROWS, ["safety"], judge=judge, max_attempts=1, cache=False, progress=False)
    (problem,) = result.problems.itertuples()
    assert (problem.kind, problem.severity, problem.value) == ("errored", "low", 1)
    assert problem.message.startswith("model-a: safety: 1 of 3 rows errored: ")


def test_describe_errors_shows_three_groups_each_short() -> None:
    errors = pd.Series(["a " * 200, "b\nsecond line", "b\nanother second line", "c", "c", "c", "d", "e", None])
    text = describe_errors(errors)
    groups = text.split("; ")
    assert groups[0] == "c (3)" and groups[1] == "b (2)"
    assert groups[2].endswith(" (1)") and len(groups[2]) <= ERROR_CHARS + len(" (1)")
    assert groups[3] == "2 other errors (2)"
    assert len(groups) == 4


# -- (f) the report, (g) the summary -------------------------------------------------------------


def test_the_report_shows_the_errored_and_unmeasured_problems(closed_url: str) -> None:
    html = _refused(closed_url).to_html()
    problems = html.split("<h2>Problems</h2>", 1)[1].split("<h2>", 1)[0]
    assert "none" not in problems.split("</table>")[0][:200]
    assert "errored" in problems and "unmeasured" in problems
    assert "model-a: safety: 3 of 3 rows errored: judge call failed: llama3" in problems
    assert "Connection refused" in problems


def test_the_summary_lists_them(closed_url: str) -> None:
    text = _refused(closed_url).summary()
    section = text.split("== problems (2) ==", 1)[1]
    assert "\n- model-a: safety: nothing measured (0 of 3 rows: 3 errored)" in section
    assert "\n- model-a: safety: 3 of 3 rows errored: judge call failed: llama3" in section
    assert "Connection refused" in section and "none" not in section


# -- (h) the magics' gate ------------------------------------------------------------------------


@pytest.fixture
def shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Shell]:
    """An IPython shell with ``%load_ext nbeval``, run in ``tmp_path`` (tests/extension's, judge settings kept)."""
    with loaded_shell(monkeypatch, tmp_path, no_judge=False) as loaded:
        yield loaded


def test_the_magics_gate_fails_the_cell_on_errored_rows(shell: Shell, closed_url: str) -> None:
    shell.ns["rows"] = ROWS
    line = f"%nbeval run rows -e safety --judge llama3 --judge-base-url {closed_url} --no-progress --no-cache"
    ran = shell.cell(f"{line} --fail-on errored")
    assert not ran.success
    last = ran.stdout.strip().splitlines()[-1]
    assert last.startswith("nbeval: failing: 3 rows errored (the call or scoring failed): judge call failed")
    assert "Connection refused" in last
    assert "Traceback" not in ran.stdout + ran.stderr
    assert shell.ns["_nbeval"].evaluators == ["safety"]  # bound before the gate trips
    ran = shell.cell(f"{line} --fail-on threshold")
    assert not ran.success  # no row was measured: that fails every gate (issue 43)
    assert "nbeval: failing: nothing was measured" in ran.stdout
    lines = ran.stdout.strip().splitlines()
    assert any(s.startswith("not failing on: 3 rows errored") and s.endswith("(--fail-on threshold)") for s in lines), (
        ran.stdout
    )
    assert any(s.startswith("not failing on: 1 unmeasured") for s in lines), ran.stdout
    ran = shell.cell(f"{line} --fail-on-problems")
    assert (
        not ran.success and "; 1 unmeasured (a model and evaluator measured on no row): model-a: safety" in ran.stdout
    )
