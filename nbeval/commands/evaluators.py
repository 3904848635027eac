"""``nbeval evaluators [TEXT...]`` and ``%nbeval evaluators``: the evaluator catalogue."""

from __future__ import annotations

import argparse
import json
from typing import Any

from nbeval.commands.base import Arg, Command, MagicSpelling, arg

__all__ = ["COMMAND", "Evaluators"]


class Evaluators(Command):
    """The catalogue, by family, filtered by TEXT (``--json``: as JSON; in a notebook: a table)."""

    name = "evaluators"
    help = "list the evaluator catalogue"
    order = 1
    arguments: tuple[Arg, ...] = (
        arg(
            "text",
            nargs="*",
            complete="text",
            help="keep the evaluators whose id, family, kind, inputs, metrics or "
            "description contain every word (case-insensitive)",
        ),
        arg("--family", complete="family", help="only this family (deterministic, embedding, judge, ...)"),
        arg("--json", action="store_true", help="machine-readable output"),
    )
    magic = MagicSpelling("evaluators", "the evaluator catalogue as a table, filtered by TEXT", order=2)

    def run(self, args: argparse.Namespace) -> int:
        """Print the catalogue, by family, with each evaluator's inputs and metrics."""
        from nbeval import application
        from nbeval.chat.config import judge_configured

        specs = application.matching_specs(args.family, args.text)
        judge_set = judge_configured()
        if args.json:
            print(json.dumps([application.spec_dict(s) for s in specs], indent=2))
            return 0
        if not specs:
            print(application.no_match_note(args.text, args.family, "nbeval evaluators"))
            return 0
        family = None
        for s in specs:
            if s.family != family:
                family = s.family
                print(f"\n[{family}]")
            metrics = ", ".join(f"{m.name}{'*' if m is s.primary else ''}" for m in s.metrics)
            needs = ", ".join(s.inputs)
            note = ""
            if s.needs_judge and not judge_set:
                note = "  (needs a judge)"
            print(f"  {s.id:<30} inputs: {needs:<42} metrics: {metrics}{note}")
        print(
            "\n* primary metric. Inputs: input, expected_output, context, expected_context, actual_output, "
            "output_condition, guidelines, categories; for agents and conversations: messages, "
            "expected_tool_calls, reference_topics."
        )
        if not judge_set and any(s.needs_judge for s in specs):
            print(
                "\nNo judge is configured, so the evaluators marked (needs a judge) cannot run yet.\n"
                + application.CLI_JUDGE_HELP
            )
        return 0

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """The catalogue as a DataFrame (``--json``: printed as JSON)."""
        from nbeval import application
        from nbeval.chat.config import judge_configured
        from nbeval.commands.notebook import NO_JUDGE

        specs = application.matching_specs(args.family, args.text)  # the filter of `nbeval evaluators TEXT`
        if args.json:
            print(json.dumps([application.spec_dict(s) for s in specs], indent=2))
            return None
        import pandas as pd

        rows = [
            {
                "id": s.id,
                "family": s.family,
                "kind": s.kind,
                "inputs": ", ".join(s.inputs),
                "metrics": ", ".join(f"{m.name}{'*' if m is s.primary else ''}" for m in s.metrics),
                "needs judge": s.needs_judge,
                "description": s.description,
            }
            for s in specs
        ]
        if not specs:
            print(application.no_match_note(args.text, args.family, "%nbeval evaluators"))
        elif any(s.needs_judge for s in specs) and not judge_configured():
            print(NO_JUDGE)
        return pd.DataFrame(rows, columns=["id", "family", "kind", "inputs", "metrics", "needs judge", "description"])


#: The ``nbeval evaluators`` subcommand (``%nbeval evaluators``); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Evaluators()
