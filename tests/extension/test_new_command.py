"""A new subcommand is one object: registered once, it is a command of ``nbeval``, a ``%nbeval``
subcommand with its own help, completed by Tab, and listed by the readers of the commands."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest

import nbeval.commands
from nbeval.cli import build_parser, main
from nbeval.commands import Command, MagicSpelling, all_commands, arg, magic_command, register, unregister
from nbeval.extension.completion import complete
from tests.extension.conftest import Shell


class Echo(Command):
    """A throwaway command: prints its words, upper-cased with ``--loud``, ``--times`` times."""

    name = "echo-for-test"
    help = "print the words given"
    arguments = (
        arg("words", nargs="+", help="what to print"),
        arg("--loud", action="store_true", help="in capitals"),
        arg("--times", type=int, default=1, help="how often"),
        arg("--evaluator", complete="evaluator", help="an evaluator id, for completion"),
    )
    magic = MagicSpelling("echo", "print the words given")

    def run(self, args: argparse.Namespace) -> int:
        text = " ".join(args.words)
        for _ in range(args.times):
            print(text.upper() if args.loud else text)
        return 0

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        shell.user_ns["_echoed"] = " ".join(args.words)
        return super().run_magic(shell, args)


@pytest.fixture
def echo() -> Iterator[Echo]:
    command = register(Echo())
    yield command
    unregister(command)


def test_a_registered_command_runs_on_the_command_line(echo: Echo, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["echo-for-test", "hello", "there", "--loud", "--times", "2"]) == 0
    assert capsys.readouterr().out == "HELLO THERE\nHELLO THERE\n"
    assert "echo-for-test" in build_parser().format_help()


def test_a_registered_command_is_a_magic_with_completion(echo: Echo, shell: Shell) -> None:
    ran = shell.cell("%nbeval echo hi --loud")
    assert ran.success, ran.stdout
    assert ran.stdout == "HI\n" and shell.ns["_echoed"] == "hi"
    assert "--times" in shell.cell("%nbeval echo -h").stdout
    assert "echo" in shell.cell("%nbeval").stdout
    found = complete(shell.ip, "%nbeval echo hi --l", "--l")
    assert found is not None and found[0] == [("--loud", "option")]
    found = complete(shell.ip, "%nbeval echo hi --evaluator exact_m", "exact_m")
    assert found is not None and found[0] == [("exact_match", "evaluator")]


def test_unregistered_it_is_gone(shell: Shell) -> None:
    command = register(Echo())
    unregister(command)
    assert magic_command("echo") is None
    with pytest.raises(SystemExit):
        main(["echo-for-test", "x"])
    assert not shell.cell("%nbeval echo x").success


def test_every_module_of_the_package_with_a_command_is_found() -> None:
    """The package's modules are the commands: a module that defines COMMAND is one, unlisted anywhere."""
    modules = [
        importlib.import_module(f"nbeval.commands.{m.name}") for m in pkgutil.iter_modules(nbeval.commands.__path__)
    ]
    defined = {id(m.COMMAND) for m in modules if hasattr(m, "COMMAND")}
    assert len(defined) >= 13  # the eleven commands of `nbeval` and the two of the magics alone
    assert defined == {id(c) for c in all_commands()}
