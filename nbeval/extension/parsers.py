"""The magics' argument parsers, made from the command objects (:mod:`nbeval.commands`).

``%nbeval run`` parses with the arguments of ``nbeval run`` and ``%nbeval evaluators`` with those
of ``nbeval evaluators``: one :class:`~nbeval.commands.base.Command` declares them for both, so
a flag added to the CLI is accepted by the magic the moment it exists and the two never drift.
The magic adds only what a notebook needs on top (``-o NAME``, the name the result is bound to)
and writes files only when ``--out`` is given (the command's
:class:`~nbeval.commands.base.MagicSpelling` says so).

An argparse error never ends the kernel: :func:`parse` turns it into one :class:`MagicError`
line. :class:`MagicError`, :func:`check_name` and :func:`parse` live in
:mod:`nbeval.commands.notebook`, beside the commands that use them; they are named here too.
"""

from __future__ import annotations

import argparse

from nbeval.commands import cli_command, magic_command
from nbeval.commands.notebook import (
    DEFAULT_GENERATED,
    DEFAULT_PERTURBED,
    DEFAULT_RESULT,
    DEFAULT_SUITE,
    IPYTHON_NAMES,
    MagicError,
    check_name,
    parse,
)

__all__ = [
    "DEFAULT_GENERATED",
    "DEFAULT_PERTURBED",
    "DEFAULT_RESULT",
    "DEFAULT_SUITE",
    "IPYTHON_NAMES",
    "MagicError",
    "check_name",
    "cli_subparser",
    "evaluators_parser",
    "explore_parser",
    "generate_parser",
    "judge_parser",
    "magic_parser",
    "parse",
    "perturb_parser",
    "run_parser",
    "show_parser",
]


def cli_subparser(*path: str) -> argparse.ArgumentParser:
    """The parser of the CLI command ``nbeval <path...>`` (e.g. ``("run",)``, ``("evaluator", "show")``)."""
    return cli_command(" ".join(path)).cli_parser()


def magic_parser(name: str) -> argparse.ArgumentParser:
    """The parser of ``%nbeval <name>``."""
    command = magic_command(name)
    if command is None:
        raise KeyError(name)
    return command.magic_parser()


def run_parser() -> argparse.ArgumentParser:
    """The parser of ``%nbeval run``.

    ``nbeval run``'s arguments; DATA may also name a variable or ``demo``, ``--out`` saves only when
    given, and ``-o NAME`` binds the result.
    """
    return magic_parser("run")


def perturb_parser() -> argparse.ArgumentParser:
    """The parser of ``%nbeval perturb``.

    ``nbeval perturb``'s arguments; the data may also name a variable or ``demo``, ``--out`` writes
    only when given, and ``-o NAME`` binds the suite.
    """
    return magic_parser("perturb")


def generate_parser() -> argparse.ArgumentParser:
    """The parser of ``%nbeval generate``.

    ``nbeval generate``'s arguments; a document may also name a variable, ``--out`` writes only when
    given, and ``-o NAME`` binds the suite.
    """
    return magic_parser("generate")


def evaluators_parser() -> argparse.ArgumentParser:
    """``%nbeval evaluators [TEXT...]``: ``nbeval evaluators``'s arguments."""
    return magic_parser("evaluators")


def show_parser() -> argparse.ArgumentParser:
    """``%nbeval show ID``: ``nbeval evaluator show``'s arguments."""
    return magic_parser("show")


def explore_parser() -> argparse.ArgumentParser:
    """``%nbeval explore [NAME]``."""
    return magic_parser("explore")


def judge_parser() -> argparse.ArgumentParser:
    """``%nbeval judge [MODEL] [--base-url URL]``."""
    return magic_parser("judge")
