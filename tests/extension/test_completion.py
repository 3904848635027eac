"""Tab completion inside the magics, through IPython's own completer."""

from __future__ import annotations

import pytest
from IPython.core.completer import provisionalcompleter

import nbeval
from nbeval.commands import cli_command, magic_commands
from nbeval.extension.completion import MATCHER_ID
from tests.extension.conftest import Shell


def _complete(shell: Shell, line: str) -> list[str]:
    """What Tab offers at the end of ``line`` (the completer's texts, as a front end gets them)."""
    with provisionalcompleter():
        return [c.text for c in shell.ip.Completer.completions(line, len(line))]


def test_subcommands(shell: Shell) -> None:
    offered = _complete(shell, "%nbeval ")
    # every subcommand the command objects give %nbeval, sorted, nbeval's own among them
    assert offered == sorted(c.magic.name for c in magic_commands() if c.magic is not None)
    assert {"diff", "evaluators", "explore", "generate", "judge", "perturb", "run", "runs", "show"} <= set(offered)
    starting_e = _complete(shell, "%nbeval e")
    assert starting_e == [n for n in offered if n.startswith("e")] and {"evaluators", "explore"} <= set(starting_e)


@pytest.mark.parametrize(
    "line",
    [
        "%nbeval run demo -e ",
        "%nbeval run demo --evaluators ",
        "%nbeval run demo --evaluators=",
        "%nbeval run demo -e rouge,",
        "%nbeval show ",
    ],
)
def test_evaluator_ids(shell: Shell, line: str) -> None:
    assert _complete(shell, line) == sorted(nbeval.catalogue())


def test_evaluator_ids_by_prefix(shell: Shell) -> None:
    assert _complete(shell, "%nbeval run demo -e rou") == ["rouge"]
    assert _complete(shell, "%nbeval run demo -e rouge,exa") == ["exact_match"]
    assert _complete(shell, "%nbeval show pii_") == ["pii_leakage"]
    # the older entry point as well (`shell.complete`, pending deprecation in IPython)
    line = "%nbeval run demo -e rouge,bl"
    with pytest.warns(PendingDeprecationWarning):
        assert shell.ip.complete("", line, len(line)) == ("bl", ["bleu"])


def test_the_options_of_nbeval_run(shell: Shell) -> None:
    offered = _complete(shell, "%nbeval run demo -e rouge -")
    cli_options = {"-h", "--help", *(o for a in cli_command("run").arguments for o in a.option_strings)}
    assert cli_options <= set(offered)
    assert {"-o", "--name"} <= set(offered)
    assert _complete(shell, "%nbeval run demo -e rouge --no-") == ["--no-cache", "--no-progress"]
    assert _complete(shell, "%nbeval judge m --b") == ["--base-url"]
    assert _complete(shell, "%nbeval evaluators --family ") == sorted({s.family for s in nbeval.list_evaluators()})


def test_data_and_result_names_from_the_namespace(shell: Shell) -> None:
    shell.ns["my_lab"] = nbeval.demo_lab()
    shell.ns["my_rows"] = [{"input": "q", "actual_output": "a"}]
    shell.ns["my_number"] = 3
    offered = _complete(shell, "%nbeval run my")
    assert "my_lab" in offered and "my_rows" in offered and "my_number" not in offered
    assert "demo" in _complete(shell, "%nbeval run d")
    assert shell.cell("%nbeval run demo -e exact_match --no-progress -o my_result").success
    assert _complete(shell, "%nbeval explore my") == ["my_result"]


def test_other_lines_complete_as_before(shell: Shell) -> None:
    assert "print" in _complete(shell, "prin")
    assert "%nbeval" in _complete(shell, "%nbev")


def test_loading_twice_adds_one_matcher_and_unloading_removes_it(shell: Shell) -> None:
    def ours() -> list[object]:
        return [m for m in shell.ip.Completer.custom_matchers if getattr(m, "matcher_identifier", None) == MATCHER_ID]

    nbeval.load_ipython_extension(shell.ip)
    nbeval.load_ipython_extension(shell.ip)
    assert len(ours()) == 1
    nbeval.unload_ipython_extension(shell.ip)
    assert ours() == []
    assert _complete(shell, "%nbeval run demo -e rou") != ["rouge"]
    nbeval.load_ipython_extension(shell.ip)  # the fixture unloads it again
