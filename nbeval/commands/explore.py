"""``%nbeval explore [NAME]``: the notebook kit's case explorer on a result (the magics only)."""

from __future__ import annotations

import argparse
from typing import Any

from nbeval.commands.base import Arg, Command, MagicSpelling, arg
from nbeval.commands.notebook import DEFAULT_RESULT

__all__ = ["COMMAND", "Explore"]


class Explore(Command):
    """Open the case explorer on the result bound to NAME."""

    name = "explore"
    help = "open the case explorer on a result"
    description = help
    cli = False
    order = 12
    arguments: tuple[Arg, ...] = (
        arg(
            "name",
            nargs="?",
            default=DEFAULT_RESULT,
            complete="result",
            help=f"the variable holding the result (default: {DEFAULT_RESULT})",
        ),
    )
    magic = MagicSpelling("explore", "open the case explorer on a result (default: _nbeval)", order=4)

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """Show the case explorer on the result bound to ``args.name``."""
        from nbeval.commands.notebook import MagicError, check_name, show
        from nbeval.results import EvaluationResult
        from nbeval.results.renderers import get_renderer

        name = check_name(args.name, "NAME")
        if name not in shell.user_ns:
            msg = f"no result named {name}: run `%nbeval run DATA -e ID -o {name}` first"
            raise MagicError(msg)
        result = shell.user_ns[name]
        if not isinstance(result, EvaluationResult):
            kind = type(result).__name__
            msg = f"{name} is a {kind}, not an evaluation result: run `%nbeval run DATA -e ID -o {name}`"
            raise MagicError(msg)
        make = get_renderer("case_explorer")
        if make is None:
            msg = (
                "no case explorer is registered; the notebook kit provides it: pip install 'nbeval[widgets]', "
                f"or show one directly with nbeval.widgets.CaseExplorer({name})"
            )
            raise MagicError(msg)
        show(make(result))
        return None


#: The ``%nbeval explore`` subcommand (the magics only); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Explore()
