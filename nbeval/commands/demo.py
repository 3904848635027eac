"""``nbeval demo``: evaluate the shipped demo lab offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from nbeval.commands.base import Arg, Command, arg
from nbeval.commands.shared import no_progress_arg

__all__ = ["COMMAND", "Demo"]


class Demo(Command):
    """Evaluate the shipped demo lab offline, save it, print the summary."""

    name = "demo"
    help = "evaluate the shipped demo lab offline"
    order = 8
    arguments: tuple[Arg, ...] = (
        arg("--out", default="nbeval-demo", help="folder for the saved result and report.html"),
        arg("--no-embedding", action="store_true", help="skip embedding evaluators (faster)"),
        no_progress_arg(),
        arg(
            "--verbose",
            action="store_true",
            help="print the full summary (every metric with its interval, each problem), not the brief one",
        ),
    )

    def run(self, args: argparse.Namespace) -> int:
        """Run the demo and save it in ``--out``."""
        import nbeval
        from nbeval import application
        from nbeval.cli_commands import finish_run
        from nbeval.demo import demo_evaluators, demo_lab

        application.check_run_out(Path(args.out), [])  # a bad --out fails before the demo runs
        evaluators = demo_evaluators(include_embedding=not args.no_embedding)
        print(f"nbeval demo: {len(evaluators)} evaluators on the shipped demo lab (offline, no API key)\n")
        result = nbeval.evaluate(demo_lab(), evaluators, options=self.run_options(args))
        code = finish_run(result, Path(args.out), False, brief=not args.verbose)
        if not args.verbose:
            print("every metric with its interval, and each problem: nbeval demo --verbose, or open the report")
        return code


#: The ``nbeval demo`` subcommand; :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Demo()
