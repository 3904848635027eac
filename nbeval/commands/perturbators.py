"""``nbeval perturbators``: the perturbators, their ids and whether they change meaning."""

from __future__ import annotations

import argparse
import json

from nbeval.commands.base import Arg, Command, arg

__all__ = ["COMMAND", "Perturbators"]


class Perturbators(Command):
    """The perturbators (``--json``: as JSON)."""

    name = "perturbators"
    help = "list the perturbators"
    order = 7
    arguments: tuple[Arg, ...] = (arg("--json", action="store_true", help="machine-readable output"),)

    def run(self, args: argparse.Namespace) -> int:
        """Print the perturbators, one a line, and how to use them."""
        from nbeval.perturbation import list_perturbators

        classes = list_perturbators()
        if args.json:
            found = [
                {"id": c.id, "name": c.name, "changes_meaning": c.changes_meaning, "description": c.description}
                for c in classes
            ]
            print(json.dumps(found, indent=2))
            return 0
        rows = [
            (c.id, c.name, "changes meaning" if c.changes_meaning else "keeps meaning", c.description) for c in classes
        ]
        widths = [max((len(r[i]) for r in rows), default=0) for i in range(3)]  # columns as wide as their longest
        for pid, name, meaning, description in rows:
            print(f"  {pid:<{widths[0]}}  {name:<{widths[1]}}  {meaning:<{widths[2]}}  {description}")
        print("\nUse: nbeval perturb SUITE -p ID[,ID...] --intensity low|medium|high --out FILE")
        print("     the llm_* ones ask a model: --judge MODEL [--judge-base-url URL]; --dry-run counts their calls")
        return 0


#: The ``nbeval perturbators`` subcommand; :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Perturbators()
