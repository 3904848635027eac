"""``%nbeval evaluators``, ``show``, ``explore`` and ``judge``, and bad input in one line."""

from __future__ import annotations

import contextlib
import io
import os

import pandas as pd
import pytest

import nbeval
from nbeval import cli
from nbeval.commands import magic_commands
from nbeval.results import renderers
from tests.extension.conftest import Shell

# -- bad input: one line, no traceback, the kernel lives on ------------------------------------------

BAD = {
    "%nbeval run demo -e rogue": "nbeval: error: no evaluator 'rogue'; did you mean 'rouge'?",
    "%nbeval run demo": "%nbeval run: error: the following arguments are required: -e/--evaluators",
    "%nbeval run demo -e rouge --fail-on bogus": (
        "%nbeval run: error: argument --fail-on: unknown problem kind 'bogus'; choose from threshold, unrated, flip, "
        "errored, unmeasured"
    ),
    "%nbeval run demo -e rouge --no-such-flag": "%nbeval run: error: unrecognized arguments: --no-such-flag",
    "%nbeval run nowhere.json -e rouge": (
        "nbeval: error: no file or variable named 'nowhere.json': give a file "
        "path, a variable holding a DataFrame, a list of records, a dataset or "
        "a lab, or `demo` for the shipped demo lab"
    ),
    "%nbeval run demo -e rouge -o 2nd": (
        "nbeval: error: -o '2nd' is not a valid variable name; use letters, digits and _ (e.g. result_a)"
    ),
    "%nbeval run 'demo -e rouge": (
        "nbeval: error: cannot read the magic's line (No closing quotation); close the quotes"
    ),
    "%nbeval show rogue": "nbeval: error: no evaluator 'rogue'; did you mean 'rouge'?",
    "%nbeval show": "%nbeval show: error: the following arguments are required: id",
    "%nbeval explore": "nbeval: error: no result named _nbeval: run `%nbeval run DATA -e ID -o _nbeval` first",
    "%nbeval judge ' '": "nbeval: error: the judge's model name is empty: `%nbeval judge MODEL [--base-url URL]`",
    "%%nbeval_suite a b\n- prompt: x": "%%nbeval_suite: error: one NAME at most, got 'a b'",
}


@pytest.mark.parametrize("line", list(BAD))
def test_bad_input_shows_one_line(shell: Shell, line: str) -> None:
    ran = shell.cell(line)
    assert not ran.success
    assert ran.stdout.strip() == BAD[line]
    assert ran.stderr == "" and ran.outputs == []
    assert shell.cell("1 + 1").result == 2


def test_a_suite_is_no_data_to_run(shell: Shell) -> None:
    shell.ns["suite"] = nbeval.TestSuite.from_dict({"tests": [{"test_cases": [{"prompt": "q"}]}]})
    ran = shell.cell("%nbeval run suite -e rouge")
    assert not ran.success
    assert ran.stdout.startswith("nbeval: error: a test suite has no answers to evaluate")


def test_bad_input_raises_an_nbeval_error_when_called_from_code(shell: Shell) -> None:
    with pytest.raises(nbeval.NbevalError, match="no evaluator 'rogue'"):
        shell.ip.run_line_magic("nbeval", "run demo -e rogue")


#: nbeval's own subcommands of %nbeval, in the order its usage lists them (a command added by a new
#: module of nbeval/commands/ may come anywhere between them).
BUILT_IN = ["run", "evaluators", "show", "explore", "judge", "perturb", "generate", "diff", "runs"]


def _subcommands() -> list[str]:
    """The subcommands %nbeval has, read from the command objects; nbeval's own among them, in order."""
    names = [c.magic.name for c in magic_commands() if c.magic is not None]
    assert [n for n in names if n in BUILT_IN] == BUILT_IN
    return names


def test_no_subcommand_prints_the_usage(shell: Shell) -> None:
    ran = shell.cell("%nbeval")
    assert ran.success
    assert ran.stdout.startswith("usage: %nbeval {" + ",".join(_subcommands()) + "}")
    assert "%%nbeval_suite" in ran.stdout


def test_an_unknown_subcommand_names_the_closest_and_every_one(shell: Shell) -> None:
    ran = shell.cell("%nbeval runn demo")
    assert not ran.success
    assert ran.stdout.strip() == (
        "%nbeval: error: unknown subcommand 'runn'; did you mean 'run'? (choose from " + ", ".join(_subcommands()) + ")"
    )
    assert ran.stderr == "" and ran.outputs == []


# -- evaluators and show ----------------------------------------------------------------------------


def test_evaluators_is_a_searchable_table(shell: Shell) -> None:
    everything = shell.cell("%nbeval evaluators").result
    assert isinstance(everything, pd.DataFrame)
    assert sorted(everything["id"]) == sorted(nbeval.catalogue())
    leaks = shell.cell("%nbeval evaluators LEAK").result
    assert set(leaks["id"]) >= {"pii_leakage", "sensitive_data_leakage"}
    assert all("leak" in " ".join(map(str, row)).lower() for row in leaks.itertuples())
    both = shell.cell("%nbeval evaluators leak pii").result
    assert "pii_leakage" in set(both["id"]) and len(both) < len(leaks)
    judges = shell.cell("%nbeval evaluators --family judge").result
    assert set(judges["family"]) == {"judge"} and judges["needs judge"].any()
    row = everything.set_index("id").loc["rouge"]
    assert row["metrics"] == "rouge_1, rouge_2, rouge_l*, rouge_lsum"
    assert row["inputs"] == "expected_output, actual_output"


def test_evaluators_says_when_nothing_matches(shell: Shell) -> None:
    ran = shell.cell("%nbeval evaluators zzzz")
    assert ran.result.empty
    assert "no evaluator matches 'zzzz'" in ran.stdout


def test_show_prints_what_the_cli_prints(shell: Shell) -> None:
    for id in ("rouge", "answer_correctness"):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert cli.main(["evaluator", "show", id]) == 0
        ran = shell.cell(f"%nbeval show {id}")
        assert ran.success
        assert ran.stdout == printed.getvalue()


# -- explore ---------------------------------------------------------------------------------------


def test_explore_opens_the_kit_s_case_explorer_on_the_bound_result(
    shell: Shell, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nbeval.widgets import CaseExplorer

    opened: list[CaseExplorer] = []

    def case_explorer(result: nbeval.EvaluationResult) -> CaseExplorer:
        opened.append(CaseExplorer(result))
        return opened[-1]

    monkeypatch.setitem(renderers._RENDERERS, "case_explorer", case_explorer)
    assert shell.cell("%nbeval run demo -e exact_match --no-progress -o mine").success
    ran = shell.cell("%nbeval explore mine")
    assert ran.success, ran.stdout
    assert [e.result for e in opened] == [shell.ns["mine"]]
    assert len(ran.outputs) == 1 and "CaseExplorer" in ran.text()


def test_explore_without_the_kit_says_what_to_do(shell: Shell, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(renderers, "_RENDERERS", {})
    monkeypatch.setattr(renderers, "_entry_points_read", True)
    assert shell.cell("%nbeval run demo -e exact_match --no-progress").success
    ran = shell.cell("%nbeval explore")
    assert not ran.success
    assert ran.stdout.strip() == (
        "nbeval: error: no case explorer is registered; the notebook kit provides it: "
        "pip install 'nbeval[widgets]', or show one directly with "
        "nbeval.widgets.CaseExplorer(_nbeval)"
    )


def test_explore_needs_a_result(shell: Shell) -> None:
    shell.ns["lab"] = nbeval.demo_lab()
    ran = shell.cell("%nbeval explore lab")
    assert ran.stdout.strip() == (
        "nbeval: error: lab is a TestLab, not an evaluation result: run `%nbeval run DATA -e ID -o lab`"
    )


# -- judge -----------------------------------------------------------------------------------------


def test_judge_sets_the_session_s_judge_and_never_prints_a_key(shell: Shell, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-very-secret-123")
    assert shell.cell("%nbeval judge").stdout.startswith("no judge is set")
    ran = shell.cell("%nbeval judge llama3 --base-url http://127.0.0.1:9/v1")
    assert ran.success
    assert os.environ["NBEVAL_JUDGE_MODEL"] == "llama3"
    assert os.environ["NBEVAL_JUDGE_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert ran.stdout == "judge: llama3 at http://127.0.0.1:9/v1; API key: from NBEVAL_JUDGE_API_KEY\n"
    assert "secret" not in ran.stdout
    # a later run uses it: the plan counts no unconfigured judge call
    plan = shell.cell("%nbeval run demo -e answer_correctness --dry-run").text()
    assert "judge calls: 90" in plan and "no judge is configured" not in plan
    # a new model keeps the endpoint; an empty --base-url goes back to OpenAI's own
    assert shell.cell("%nbeval judge qwen2").stdout.startswith("judge: qwen2 at http://127.0.0.1:9/v1")
    ran = shell.cell("%nbeval judge gpt-4o-mini --base-url ''")
    assert ran.stdout == "judge: gpt-4o-mini at OpenAI's API; API key: from NBEVAL_JUDGE_API_KEY\n"
    assert "NBEVAL_JUDGE_BASE_URL" not in os.environ
    assert shell.cell("%nbeval judge hf:tiny-model").stdout == "judge: hf:tiny-model (a local Hugging Face model)\n"


def test_an_interrupted_run_says_so_in_one_line(shell: Shell, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(nbeval, "evaluate", interrupted)
    ran = shell.cell("%nbeval run demo -e rouge")
    assert not ran.success
    assert ran.stdout.strip() == "nbeval: interrupted; judge replies received so far are cached, run again to resume"
