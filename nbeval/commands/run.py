"""``nbeval run DATA -e IDS`` and ``%nbeval run``: evaluate, save, apply the CI gate."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from nbeval.commands.base import Arg, Command, MagicSpelling, arg
from nbeval.commands.notebook import DEFAULT_RESULT
from nbeval.commands.shared import (
    batch_arg,
    gate_kinds,
    no_cache_arg,
    no_progress_arg,
    prices_arg,
)

__all__ = ["COMMAND", "Run"]

_EPILOG = (
    "CI gate: with --fail-on-problems (or --fail-on KINDS) the exit status is 1 when the result\n"
    "has a problem of a chosen kind, and one line per kind says what tripped it:\n"
    "  threshold  a model's aggregate of an evaluator's primary metric is on the wrong side of\n"
    "             its threshold\n"
    "  unrated    some rows could not be rated (the judge's reply could not be parsed, or a\n"
    "             regexp() condition timed out): they are neither passes nor fails, the\n"
    "             aggregates are measured without them (n/N), and they trip the gate by default\n"
    "             as 'unrated', not as failed rows; --fail-on threshold,flip lets them through\n"
    "  flip       a perturbed test case passes where its original fails, or the reverse\n"
    "  errored    rows whose call (to the judge, a model) or scoring failed; the line names\n"
    "             the commonest errors\n"
    "  unmeasured a model and evaluator measured on none of its rows (all errored, skipped\n"
    "             or unrated); every row skipped for an optional input it lacks is fine,\n"
    "             unless the whole run measured nothing\n"
    "A run that measured nothing at all fails every gate, whatever --fail-on chooses.\n"
    "Exit status: 0 on success, 1 when the gate trips, 2 on bad input."
)


def _jury(args: argparse.Namespace) -> Any:
    from nbeval.application import jury_spec

    return jury_spec(getattr(args, "judge", None), getattr(args, "judge_base_url", None))


def _evaluator_ids(args: argparse.Namespace) -> list[str]:
    return [e.strip() for e in args.evaluators.split(",") if e.strip()]


class Run(Command):
    """Evaluate a dataset or lab; save the result and its report; apply the CI gate."""

    name = "run"
    help = "evaluate a dataset or lab file (a suite has no answers yet: `nbeval complete` it first)"
    epilog = _EPILOG
    order = 3
    arguments: tuple[Arg, ...] = (
        arg(
            "data",
            complete="data",
            help="JSON, JSONL, CSV or Parquet file in any shape nbeval reads, or `demo` for the "
            "shipped demo lab (a file named demo in the current folder wins)",
        ),
        arg("-e", "--evaluators", required=True, complete="evaluators", help="comma-separated evaluator ids"),
        arg("--out", default="nbeval-out", help="folder for the saved result and report.html"),
        arg(
            "--judge",
            option="judge",
            read=_jury,
            action="append",
            metavar="MODEL",
            help="judge model name (OpenAI-compatible endpoint); repeat it for a jury (--judge a --judge b: every "
            "judge rates every row and the majority verdict wins, as judge=[...] in Python)",
        ),
        arg(
            "--judge-base-url",
            option="judge",
            read=_jury,
            action="append",
            metavar="URL",
            help="base URL of the judge's endpoint, for --judge or NBEVAL_JUDGE_MODEL (default: "
            "NBEVAL_JUDGE_BASE_URL); with a jury, once for every judge or once per --judge, in the same order",
        ),
        arg("--embedder", option="embedder", help="sentence-transformers model name or path"),
        arg("--device", option="device", help="cpu, cuda, ... (default: automatic)"),
        no_cache_arg("do not use the judge reply cache"),
        arg("--dry-run", action="store_true", help="count rows and judge calls; score nothing"),
        arg(
            "--scheduler",
            option="scheduler",
            help="Dask scheduler address (tcp://host:8786): score the rows on its workers "
            "(pip install 'nbeval[dask]'); gives up after NBEVAL_SCHEDULER_TIMEOUT seconds (default 10) "
            "if no scheduler answers there",
        ),
        arg(
            "--run-dir",
            option="run_dir",
            help="with --scheduler and a Parquet or JSONL file: a folder every worker can read and write, "
            "where the workers keep the run's parts (the client holds no rows); run again with the same "
            "folder to resume a run stopped midway",
        ),
        arg(
            "--fail-on-problems",
            group="gate",
            action="store_const",
            const=True,
            default=None,
            help="exit 1 when any problem is found: threshold breaches, unrated rows, flips, "
            "errored rows, models and evaluators that measured nothing (for CI)",
        ),
        arg(
            "--fail-on",
            group="gate",
            dest="fail_on_problems",
            type=gate_kinds,
            metavar="KINDS",
            help="exit 1 only on problems of these kinds (comma-separated, from the list below); "
            "the others are listed but do not fail the run",
        ),
        batch_arg(
            "send the judge calls through the endpoint's Batch API (about half the price, answers within "
            "hours; interrupted, run the same command again to resume waiting)"
        ),
        prices_arg(),
        no_progress_arg(),
    )
    magic = MagicSpelling(
        "run",
        "evaluate DATA (a file, a variable, or demo) with -e ID[,ID...]; the options of `nbeval run`",
        order=1,
        help={
            "data": "a file nbeval reads (JSON, JSONL, CSV), a variable holding a DataFrame, a list of "
            "records, a dataset or a lab, or `demo` for the shipped demo lab",
            "out": "also save the result and report.html in this folder (default: save nothing)",
        },
        defaults={"out": None},
        extra=(
            arg(
                "-o",
                "--name",
                dest="bind_name",
                default=DEFAULT_RESULT,
                metavar="NAME",
                help=f"bind the result to this variable (default: {DEFAULT_RESULT})",
            ),
        ),
    )

    def run(self, args: argparse.Namespace) -> int:
        """Evaluate (``--dry-run``: print the plan), save the result and report in ``--out``, apply the gate."""
        import nbeval
        from nbeval import application
        from nbeval.cli_commands import data_or_demo, finish_run, saved_or_not
        from nbeval.engine import Interrupted

        evaluators = _evaluator_ids(args)
        options = self.run_options(args)
        data = data_or_demo(args.data)
        if args.dry_run:
            print(application.cli_terms(str(application.plan(data, evaluators, options=options))))
            return 0
        application.check_run_out(Path(args.out), [data] if isinstance(data, str) else [])
        try:
            result = nbeval.evaluate(data, evaluators, options=options)
        except Interrupted as stop:  # Ctrl-C: what was scored is saved, the rest marked cancelled
            partial, out = stop.result, Path(args.out)
            saved_or_not(
                lambda: application.save_partial(partial, out),
                f"saved the partial result to {out}/ (the rows not scored are marked cancelled; "
                "nbeval.load_result reads it)",
                stop.batches,
            )
        return finish_run(result, Path(args.out), args.fail_on_problems)

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """Evaluate DATA (a variable, a file or ``demo``), show the summary and bind the result."""
        import nbeval
        from nbeval import application
        from nbeval.commands.notebook import NO_JUDGE, check_name, check_out, gate, resolve_data, show

        name = check_name(args.bind_name, "-o", shell)
        data, path = resolve_data(shell, args.data)
        ids = _evaluator_ids(args)
        options = self.run_options(args)  # the same RunOptions the command line builds
        if args.dry_run:
            plan = application.plan(data, ids, options=options)
            show(plan)
            if getattr(plan, "unconfigured_calls", 0):  # in the magics' terms, beside the plan's judge=...
                print(NO_JUDGE)
            return None
        out = Path(args.out) if args.out else None
        if out is not None:  # a bad --out fails before any work
            check_out(out)
            application.check_run_out(out, [path] if path else [])
        result = nbeval.evaluate(data, ids, options=options)
        shell.user_ns[name] = result
        show(result)
        if out is not None:
            report = application.save_run(result, out)
            print(f"saved the result to {out}/ and the report to {report}")
        if args.fail_on_problems:
            gate(result, args.fail_on_problems)
        return None


#: The ``nbeval run`` subcommand (``%nbeval run`` too); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Run()
