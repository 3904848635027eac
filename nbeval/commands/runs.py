"""``nbeval runs FOLDER`` and ``%nbeval runs``: the saved runs in a folder, newest first."""

from __future__ import annotations

import argparse
from typing import Any

from nbeval.commands.base import Arg, Command, MagicSpelling, arg

__all__ = ["COMMAND", "Runs"]


class Runs(Command):
    """The saved runs in a folder, newest first (``--json``: as JSON; in a notebook: a table)."""

    name = "runs"
    help = "list the saved runs in a folder, newest first"
    order = 10
    arguments: tuple[Arg, ...] = (
        arg("folder", help="a folder holding saved result folders"),
        arg("--json", action="store_true", help="machine-readable output"),
    )
    magic = MagicSpelling("runs", "the saved runs in a FOLDER, newest first", order=9)

    def run(self, args: argparse.Namespace) -> int:
        """Print the runs as a table."""
        from nbeval.results.runs.registry import runs

        table = runs(args.folder)
        if args.json:
            print(table.to_json(orient="records", indent=2, date_format="iso"))
        elif table.empty:
            print(f"no saved runs in {args.folder}")
        else:
            columns = ("run", "started_at", "label", "models", "evaluators", "rows", "git_commit", "cost")
            shown = [c for c in columns if c in table.columns]
            if table["unknown_usage_calls"].fillna(0).gt(0).any():  # some cost is a lower bound: say so
                shown.append("unknown_usage_calls")
            print(table[shown].to_string(index=False, max_colwidth=40))
        return 0

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """The runs as a table shown in the notebook."""
        from nbeval.commands.notebook import show
        from nbeval.results.runs.registry import runs as list_runs

        table = list_runs(args.folder)
        if args.json:
            print(table.to_json(orient="records", indent=2, date_format="iso"))
        else:
            show(table)
        return None


#: The ``nbeval runs`` subcommand (``%nbeval runs`` too); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Runs()
