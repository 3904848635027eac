"""``nbeval perturb SUITE -p IDS`` and ``%nbeval perturb``: perturbed copies of a suite's test cases."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from nbeval.commands.base import Arg, Command, MagicSpelling, arg
from nbeval.commands.notebook import DEFAULT_PERTURBED
from nbeval.commands.shared import changed_options, judge_args, prices_arg

__all__ = ["COMMAND", "Perturb"]


class Perturb(Command):
    """Write (in a notebook: bind) a suite with perturbed copies of DATA's test cases."""

    name = "perturb"
    help = "write a suite with perturbed copies of a suite's test cases"
    order = 5
    arguments: tuple[Arg, ...] = (
        arg(
            "suite",
            complete="data",
            help="test suite, lab or dataset file (its test cases are perturbed), or `demo` "
            "for the shipped demo lab (a file named demo in the current folder wins)",
        ),
        arg(
            "-p",
            "--perturbators",
            required=True,
            help="comma-separated perturbator ids (`nbeval perturbators` lists them)",
        ),
        arg(
            "--intensity",
            choices=("low", "medium", "high"),
            default="low",
            help="how much each perturbation changes (default: low)",
        ),
        arg("--seed", type=int, default=0, help="random seed; the same seed writes the same suite"),
        arg("--no-originals", action="store_true", help="write only the perturbed test cases"),
        *judge_args(
            "the model the LLM perturbators (llm_*) ask to write the attacks (OpenAI-compatible endpoint)",
            "base URL of the judge's endpoint, for --judge or NBEVAL_JUDGE_MODEL (default: NBEVAL_JUDGE_BASE_URL)",
        ),
        arg(
            "--dry-run",
            action="store_true",
            help="count the cases and the LLM perturbators' calls; ask and write nothing",
        ),
        prices_arg(),
        arg("--out", default="perturbed.json", help="where to write the suite"),
    )
    magic = MagicSpelling(
        "perturb",
        "perturbed copies of DATA's test cases: -p ID[,ID...] [--intensity low|medium|high] [--dry-run]",
        order=6,
        help={
            "suite": "a suite, lab or dataset file, a variable holding one, or `demo` for the demo lab",
            "out": "also write the suite to this JSON file (default: write nothing)",
        },
        defaults={"out": None},
        extra=(
            arg(
                "-o",
                "--name",
                dest="bind_name",
                default=DEFAULT_PERTURBED,
                metavar="NAME",
                help=f"bind the suite to this variable (default: {DEFAULT_PERTURBED})",
            ),
        ),
    )

    def keywords(self, args: argparse.Namespace) -> dict[str, Any]:
        """Return the parsed options as :func:`nbeval.perturb`'s keyword arguments.

        The options are the CLI's or the magic's: the function's own, and the run options the flags
        set (the attacker of the LLM perturbators from ``--judge`` and ``--judge-base-url``,
        ``--prices``).
        """
        own = {"intensity": args.intensity, "seed": args.seed, "keep_originals": not args.no_originals}
        return {**own, **changed_options(self.run_options(args))}

    def run(self, args: argparse.Namespace) -> int:
        """Write the suite to ``--out`` (``--dry-run``: count the cases and calls, write nothing)."""
        from nbeval import application
        from nbeval.cli_commands import data_or_demo
        from nbeval.data import jsonio
        from nbeval.perturbation import perturb, perturbed_count
        from nbeval.results.storage.files import write_aside

        data = data_or_demo(args.suite)
        kwargs = self.keywords(args)
        if args.dry_run:
            print(application.cli_terms(str(perturb(data, args.perturbators, dry_run=True, **kwargs))))
            return 0
        application.check_file_out(Path(args.out), [data] if isinstance(data, str) else [], "perturbed")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            suite = perturb(data, args.perturbators, **kwargs)
        for w in caught:
            print(f"nbeval: note: {w.message}", file=sys.stderr)
        written = suite.to_json()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_aside(args.out, lambda tmp: jsonio.write_json(written, tmp))
        made = perturbed_count(suite)
        print(f"made {made} perturbed test case(s); {len(suite.test_cases)} in all; wrote {args.out}")
        return 0

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """The suite, shown and bound to ``-o NAME``; ``--dry-run`` shows the cases and calls it would take."""
        import nbeval
        from nbeval import application
        from nbeval.commands.notebook import check_name, check_out, resolve_data, show

        name = check_name(args.bind_name, "-o", shell)
        data, path = resolve_data(shell, args.suite)
        kwargs = self.keywords(args)
        if args.dry_run:
            plan = nbeval.perturb(data, args.perturbators, dry_run=True, **kwargs)
            print(application.judge_plan_text(str(plan), magic=True))
            return None
        if args.out:  # a bad --out fails before any work
            check_out(Path(args.out))
            application.check_file_out(Path(args.out), [path] if path else [], "perturbed")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            suite = nbeval.perturb(data, args.perturbators, **kwargs)
        for w in caught:
            print(f"nbeval: note: {w.message}")
        shell.user_ns[name] = suite
        show(suite)
        if args.out:
            suite.save(args.out)
            print(f"wrote the suite to {args.out}")
        return None


#: The ``nbeval perturb`` subcommand (``%nbeval perturb`` too); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Perturb()
