"""The subcommands of ``nbeval`` and ``%nbeval``, one :class:`~nbeval.commands.base.Command` each.

Each module of this package (``run.py``, ``diff.py``, ...) defines one command and names it
``COMMAND``; :func:`all_commands` finds them there, so a new subcommand is one new module. The
command line (:func:`nbeval.cli.build_parser`), the magics, their Tab completion and the
option-coverage test all read these objects. :func:`register` adds a command from elsewhere (a
plugin, a test) and :func:`unregister` takes it away again.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TypeVar

from nbeval.commands.base import Arg, Command, MagicSpelling, arg

__all__ = [
    "Arg",
    "Command",
    "MagicSpelling",
    "all_commands",
    "arg",
    "cli_command",
    "magic_command",
    "magic_commands",
    "register",
    "unregister",
]

_C = TypeVar("_C", bound=Command)

_registered: dict[str, Command] = {}
_found = False


def _find() -> None:
    global _found
    if _found:
        return
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        command = getattr(module, "COMMAND", None)
        if isinstance(command, Command):
            _registered.setdefault(_key(command), command)
    _found = True


def _key(command: Command) -> str:
    return command.name or f"%{command.magic.name if command.magic else ''}"


def register(command: _C) -> _C:
    """Add ``command`` to the commands (replacing one of the same name); return it."""
    _find()
    _registered[_key(command)] = command
    return command


def unregister(command: Command) -> None:
    """Take ``command`` away again (nothing happens when it is not there)."""
    _find()
    if _registered.get(_key(command)) is command:
        del _registered[_key(command)]


def all_commands() -> tuple[Command, ...]:
    """Every command, by ``order`` then name."""
    _find()
    return tuple(sorted(_registered.values(), key=lambda c: (c.order, c.name)))


def magic_commands() -> tuple[Command, ...]:
    """The commands ``%nbeval`` has, in the order of its list of subcommands."""
    found = [c for c in all_commands() if c.magic is not None]
    return tuple(sorted(found, key=lambda c: c.magic.order if c.magic else 0.0))


def cli_command(name: str) -> Command:
    """The command ``nbeval <name>`` (``"run"``, ``"evaluator show"``); ``KeyError`` when there is none."""
    for command in all_commands():
        if command.cli and command.name == name:
            return command
    raise KeyError(name)


def magic_command(name: str) -> Command | None:
    """The command ``%nbeval <name>``, or ``None`` when there is none."""
    for command in all_commands():
        if command.magic is not None and command.magic.name == name:
            return command
    return None
