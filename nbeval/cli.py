"""The ``nbeval`` command: list evaluators, run an evaluation, run the demo.

    nbeval --version
    nbeval evaluators [TEXT...]            the catalogue (the evaluators containing every word of TEXT)
    nbeval evaluator show ID               one evaluator in full (with its judge prompt)
    nbeval run DATA -e rouge,bleu --out DIR   (DATA ``demo``: the shipped demo lab, unless a file is named so)
    nbeval complete SUITE -m MODEL [-m MODEL2] --base-url URL --out lab.json
    nbeval perturb SUITE -p typos,case [--intensity medium] [--seed 0] --out suite2.json
    nbeval perturbators                    the perturbators: ids, names, whether they change meaning
    nbeval generate DOCS... -n 50 --judge M --out suite.json   a test suite written from documents
    nbeval demo [--out DIR] [--verbose]
    nbeval diff BEFORE AFTER [--min-effect X] [--fail-on-regression] [--min-shared S]   two saved runs compared
    nbeval runs FOLDER                     the saved runs in a folder, newest first
    nbeval serve --host 127.0.0.1 --port 8080 --token T   the evaluation service (REST, DB-GPT compatible)

Exit status: 0 on success, 1 when the CI gate trips (``--fail-on-problems`` or ``--fail-on KINDS``:
threshold breaches, unrated rows, perturbation flips, errored rows, models and evaluators that
measured nothing; see :mod:`nbeval.results.reporting.gate`) or ``diff --fail-on-regression`` finds a
regression or compared nothing or too little (:mod:`nbeval.results.runs.diff_gate`), 2 on bad input,
130 when interrupted.

A thin adapter: this module builds the command line's grammar from the command objects
(:func:`build_parser`, a loop over :func:`nbeval.commands.all_commands`: each subcommand is one
module of :mod:`nbeval.commands`, with its arguments and what it does) and holds its exit
statuses (:func:`main`); what the commands share with the ``%nbeval`` magics and the service
(the judge from the options and the environment, the ``--out`` checks, saving a run, the gate,
an evaluator as JSON) lives in :mod:`nbeval.application`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from nbeval.application import (
    cli_terms,
    judge_error,
    judge_plan_text,
    matching_specs,
    no_match_note,
    spec_search_text,
)
from nbeval.cli_commands import SavedInterrupt, data_or_demo, interrupted_note
from nbeval.commands import Arg, Command, all_commands, arg
from nbeval.errors import JudgeNotConfigured, NbevalError

__all__ = [
    "build_parser",
    "cli_message",
    "data_or_demo",
    "judge_error",
    "judge_plan_text",
    "main",
    "matching_specs",
    "no_match_note",
    "program_arguments",
    "spec_search_text",
]


def program_arguments() -> tuple[Arg, ...]:
    """The arguments of ``nbeval`` itself, before a subcommand: ``--version``."""
    from nbeval import __version__

    return (
        arg("--version", action="version", version=f"nbeval {__version__}", help="print nbeval's version and exit"),
    )


def build_parser(commands: tuple[Command, ...] | None = None) -> argparse.ArgumentParser:
    """Build the ``nbeval`` argument parser.

    It has one subparser per command of :func:`nbeval.commands.all_commands` (or of ``commands``),
    each with the command's arguments, its ``func`` the command's ``run``.
    """
    p = argparse.ArgumentParser(prog="nbeval", description="Evaluate LLM and RAG applications.")
    for a in program_arguments():
        p.add_argument(*a.flags, **a.settings)
    top = p.add_subparsers(dest="command", required=True)
    groups: dict[str, Any] = {}  # a command's first word -> the subparsers below it (`evaluator show`)
    for command in commands if commands is not None else all_commands():
        if not command.cli:
            continue
        *parents, last = command.name.split()
        sub = top
        for depth, word in enumerate(parents):
            path = " ".join(parents[: depth + 1])
            if path not in groups:
                group = sub.add_parser(word, help=command.parent_help or None)
                groups[path] = group.add_subparsers(dest="action" if depth == 0 else f"action{depth}", required=True)
            sub = groups[path]
        parser = sub.add_parser(
            last,
            help=command.help,
            description=command.description,
            epilog=command.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter if command.epilog else argparse.HelpFormatter,
        )
        command.add_arguments(parser)
        parser.set_defaults(func=command.run)
    return p


def cli_message(exc: NbevalError, command: Command | None = None) -> str:
    """Word an error's message in the command line's terms.

    The run options it names (carried as data, see :class:`~nbeval.errors.NbevalError`) are spelled
    as the flags that set them, those of ``command`` (the one running) first, then of any other
    command; the Python API's other words (in text that carries no options: a row's error, a plan)
    go through :func:`cli_terms`.
    """
    commands = ([command] if command is not None else []) + list(all_commands())

    def spell(option: str, value: Any) -> str | None:
        return next((s for c in commands if (s := c.spell(option, value)) is not None), None)

    return cli_terms(exc.spelled(spell))


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``nbeval`` with the arguments ``argv`` (``sys.argv[1:]`` when None); return its exit status.

    The status is the command's own (0 on success, 1 when a CI gate trips), 2 when the judge is not
    configured or another :class:`~nbeval.errors.NbevalError` stops it (the message goes to
    stderr in the command line's terms) and 130 on Ctrl-C. Bad arguments exit through argparse
    (:class:`SystemExit`, status 2); other exceptions propagate.
    """
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except JudgeNotConfigured as exc:  # named in the CLI's terms: --judge, not judge=...
        print(f"nbeval: error: {judge_error(exc)}", file=sys.stderr)
        return 2
    except NbevalError as exc:  # in the CLI's terms too: --batch, --no-cache, not batch=True, cache=False
        print(f"nbeval: error: {cli_message(exc, getattr(args.func, '__self__', None))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, no traceback; replies already received stay cached
        saved = f"{exc.note}; " if isinstance(exc, SavedInterrupt) and exc.note else ""
        print(f"nbeval: interrupted; {saved}{interrupted_note(exc)}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
