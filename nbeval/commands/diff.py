"""``nbeval diff BEFORE AFTER`` and ``%nbeval diff``: what changed between two runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from nbeval.commands.base import Arg, Command, MagicSpelling, arg

__all__ = ["COMMAND", "Diff"]


def _run_of(shell: Any, text: str) -> Any:
    """A run for ``%nbeval diff``: the result bound to a variable named ``text``, else a folder."""
    from nbeval.commands.notebook import MagicError
    from nbeval.results import EvaluationResult

    bound = shell.user_ns.get(text) if text.isidentifier() else None
    if isinstance(bound, EvaluationResult):
        return bound
    if not Path(text).is_dir():
        msg = f"{text!r} is neither a result variable nor a saved result folder; save a run with result.save(DIR)"
        raise MagicError(msg)
    return text


class Diff(Command):
    """Regressions, improvements and flipped rows between two runs; ``--fail-on-regression`` gates on them."""

    name = "diff"
    help = "compare two saved runs: regressions, improvements, flipped rows"
    order = 9
    arguments: tuple[Arg, ...] = (
        arg("before", help="the earlier run's result folder"),
        arg("after", help="the later run's result folder"),
        arg(
            "--min-effect",
            type=float,
            default=0.0,
            help="a significant change smaller than this is not called a regression (default 0)",
        ),
        arg("--alpha", type=float, default=0.05, help="significance level after Holm (default 0.05)"),
        arg(
            "--fail-on-regression",
            action="store_true",
            help="exit 1 on a regression, and when nothing or too little was compared (for CI)",
        ),
        arg(
            "--min-shared",
            type=float,
            default=None,
            help="with --fail-on-regression, fail when the rows measured in both runs are fewer than this share "
            "of the rows either run measured, per model and evaluator (default 0.5)",
        ),
        arg("--json", action="store_true", help="machine-readable output"),
    )
    magic = MagicSpelling("diff", "what changed between two runs (variables or saved folders), bound to _diff", order=8)

    def run(self, args: argparse.Namespace) -> int:
        """Print the diff, regressions first.

        Exit 1 with ``--fail-on-regression`` when its gate trips (a regression, or nothing or too
        little compared: :mod:`nbeval.results.runs.diff_gate`).
        """
        from nbeval.results.runs.diff import diff

        shared = {} if args.min_shared is None else {"min_shared": args.min_shared}
        found = diff(args.before, args.after, alpha=args.alpha, min_effect=args.min_effect, **shared)
        verdict = found.gate()
        if args.json:
            gate = {
                "tripped": verdict.tripped,
                "failing": list(verdict.failing),
                "found": [dict(zip(("kind", "model_key", "evaluator"), f, strict=True)) for f in verdict.found],
            }
            document = {
                "warnings": list(getattr(found, "warnings", [])),
                "table": json.loads(found.table.to_json(orient="records")),
                "flips": json.loads(found.flips.to_json(orient="records")),
                "coverage": json.loads(found.coverage.to_json(orient="records")),
                "has_regressions": found.has_regressions,
                "gate": gate,
            }
            print(json.dumps(document, indent=2))
        else:
            print(found.to_text())
        if args.fail_on_regression and verdict.tripped:
            for line in verdict.lines():
                print(f"nbeval: {line}", file=sys.stderr)
            return 1
        return 0

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """The diff of two runs (result variables or saved folders), shown and bound to ``_diff``."""
        from nbeval.commands.notebook import MagicError, show
        from nbeval.results.runs.diff import diff as run_diff

        shared = {} if args.min_shared is None else {"min_shared": args.min_shared}
        before, after = _run_of(shell, args.before), _run_of(shell, args.after)
        found = run_diff(before, after, alpha=args.alpha, min_effect=args.min_effect, **shared)
        shell.user_ns["_diff"] = found
        if args.json:
            print(found.table.to_json(orient="records", indent=2))
        else:
            show(found)
        verdict = found.gate()
        if args.fail_on_regression and verdict.tripped:  # nothing or too little compared fails too
            msg = f"{'; '.join(verdict.failing)} (--fail-on-regression); see _diff.regressions and _diff.coverage"
            raise MagicError(msg)
        return None


#: The ``nbeval diff`` subcommand (``%nbeval diff`` too); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Diff()
