"""What a subcommand is: its arguments as data, what it does, and how the magics spell it.

A :class:`Command` declares its arguments as :class:`Arg` values (the flags, argparse's keywords,
the run option a flag sets, a completion hint), so that every reader works from the same table:
:func:`nbeval.cli.build_parser` adds them to the parser, ``%nbeval`` parses its words with them
(:meth:`Command.magic_parser`), Tab completion offers them, :meth:`Command.run_options` turns the
parsed flags into one :class:`~nbeval.options.RunOptions`, and an error naming a run option is
shown with the flag that sets it (:meth:`Command.spell`). None of them looks inside argparse.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from nbeval.options import RunOptions

__all__ = ["Arg", "Command", "MagicSpelling", "arg"]

#: argparse actions whose flag takes no value.
_VALUELESS = frozenset({"store_true", "store_false", "store_const", "append_const", "count", "version", "help"})


@dataclass(frozen=True)
class Arg:
    """One argument of a command, as ``argparse`` adds it.

    Its ``flags`` (``("-e", "--evaluators")``, or ``("data",)`` for a positional one) and the
    keywords of ``argparse``'s ``add_argument`` (``settings``).

    ``option`` names the :class:`~nbeval.options.RunOptions` field the argument sets, with
    ``sets`` the value a flag without a value gives it (``--no-cache``: ``cache=False``) and
    ``read`` a function of the parsed arguments for a value made of several flags (the judge of
    ``--judge`` and ``--judge-base-url``). ``complete`` says what Tab offers for its value
    (``"evaluators"``, ``"evaluator"``, ``"family"``, ``"result"``, ``"data"``; ``"text"``: nothing,
    not even file names; ``None``: file names); ``group`` names
    the mutually exclusive group it belongs to.
    """

    flags: tuple[str, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)
    option: str | None = None
    sets: Any = None
    read: Callable[[argparse.Namespace], Any] | None = None
    complete: str | None = None
    group: str | None = None

    @property
    def positional(self) -> bool:
        """Whether the argument is given by its place, not by a flag."""
        return not self.flags[0].startswith("-")

    @property
    def option_strings(self) -> tuple[str, ...]:
        """Its flags (none for a positional argument)."""
        return () if self.positional else self.flags

    @property
    def spelling(self) -> str:
        """How it is named in messages: its first long flag (``--evaluators``), else its flag or name."""
        longs = [f for f in self.flags if f.startswith("--")]
        return (longs or list(self.flags))[0]

    @property
    def dest(self) -> str:
        """The attribute of the parsed arguments that holds its value."""
        if "dest" in self.settings:
            return str(self.settings["dest"])
        return self.spelling.lstrip("-").replace("-", "_")

    @property
    def takes_value(self) -> bool:
        """Whether a flag is followed by a value (a positional argument always is one)."""
        return self.settings.get("action") not in _VALUELESS and self.settings.get("nargs") != 0

    @property
    def help(self) -> str:
        """Its help text."""
        return str(self.settings.get("help") or "")

    def with_help(self, text: str) -> Arg:
        """The same argument with another help text."""
        return replace(self, settings={**self.settings, "help": text})


def arg(
    *flags: str,
    option: str | None = None,
    sets: Any = None,
    read: Callable[[argparse.Namespace], Any] | None = None,
    complete: str | None = None,
    group: str | None = None,
    **settings: Any,
) -> Arg:
    """An :class:`Arg`, written as ``add_argument`` is called: ``arg("--seed", type=int, default=0, help=...)``."""
    return Arg(tuple(flags), settings, option=option, sets=sets, read=read, complete=complete, group=group)


@dataclass(frozen=True)
class MagicSpelling:
    """How ``%nbeval`` spells a command.

    ``%nbeval <name>``, ``summary`` in the magic's usage, ``help`` (argument dest -> help) where the
    magic means something else by an argument, ``defaults`` it changes (``out=None``: save only when
    asked), and ``extra`` arguments of its own (``-o NAME``). ``order`` places it in the magic's
    list of subcommands.
    """

    name: str
    summary: str
    order: float = 100.0
    help: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    extra: tuple[Arg, ...] = ()


class Command:
    """One subcommand of ``nbeval`` (and of ``%nbeval``).

    Its words on the command line (``name``: ``"run"``, ``"evaluator show"``; ``cli`` False for a
    command only the magics have), its ``help``, its ``arguments``, and :meth:`run`; ``magic`` (a
    :class:`MagicSpelling`) when ``%nbeval`` has it too, run by :meth:`run_magic`. ``order`` places
    it in the lists of commands (smaller first).

    A subclass sets the class attributes and overrides :meth:`run` (and :meth:`run_magic` where
    the notebook does something else than print what the command line prints).
    """

    name: str = ""
    help: str = ""
    description: str | None = None
    epilog: str | None = None
    #: The help of the word before the last, for a command of two words (``evaluator`` of ``evaluator show``).
    parent_help: str = ""
    arguments: tuple[Arg, ...] = ()
    magic: MagicSpelling | None = None
    cli: bool = True
    order: float = 100.0

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the command's arguments (and its mutually exclusive groups) to ``parser``."""
        _add(parser, self.arguments)

    def run(self, args: argparse.Namespace) -> int:
        """Do what the command does with the parsed ``args``; return the exit status."""
        raise NotImplementedError(f"the command {self.name!r} has no run()")

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """``%nbeval <name>``: by default what the command line does (its output printed)."""
        self.run(args)
        return None

    # -- the readers -------------------------------------------------------------------------------

    def cli_parser(self, prog: str | None = None) -> argparse.ArgumentParser:
        """A parser of the command's own arguments, as ``nbeval <name>`` parses them."""
        parser = argparse.ArgumentParser(
            prog=prog or f"nbeval {self.name}",
            description=self.description,
            epilog=self.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter if self.epilog else argparse.HelpFormatter,
        )
        self.add_arguments(parser)
        return parser

    def magic_arguments(self) -> tuple[Arg, ...]:
        """The arguments of ``%nbeval <magic name>``: the command's, with the magic's help, and its own."""
        if self.magic is None:
            return ()
        notes = self.magic.help
        own = tuple(a.with_help(notes[a.dest]) if a.dest in notes else a for a in self.arguments)
        return own + self.magic.extra

    def magic_parser(self) -> argparse.ArgumentParser:
        """The parser of ``%nbeval <magic name>``."""
        if self.magic is None:
            raise ValueError(f"{self.name!r} is no %nbeval subcommand")
        parser = argparse.ArgumentParser(
            prog=f"%nbeval {self.magic.name}",
            description=self.description,
            epilog=self.epilog,
            formatter_class=argparse.RawDescriptionHelpFormatter if self.epilog else argparse.HelpFormatter,
        )
        _add(parser, self.magic_arguments())
        if self.magic.defaults:
            parser.set_defaults(**self.magic.defaults)
        return parser

    def run_options(self, args: argparse.Namespace) -> RunOptions:
        """Return the :class:`~nbeval.options.RunOptions` the parsed ``args`` ask for.

        Every argument that names an ``option`` sets it when given (a flag to its ``sets``, a value
        to itself, a ``read`` to what it reads); the others keep RunOptions' defaults.
        """
        changes: dict[str, Any] = {}
        for a in self.arguments:
            if a.option is None or a.option in changes:
                continue
            if a.read is not None:
                value = a.read(args)
            elif not a.takes_value:
                value = a.sets if getattr(args, a.dest, None) else None
            else:
                value = getattr(args, a.dest, None)
            if value is not None:
                changes[a.option] = value
        return RunOptions().merged(**changes)

    def spell(self, option: str, value: Any) -> str | None:
        """Spell ``option`` set to ``value`` with the command's flags.

        ``option`` is a run option, or a parameter a flag sets under the same name: ``("cache",
        False)`` is ``--no-cache``, ``("batch", True)`` ``--batch``, ``("max_pages", 40)``
        ``--max-pages 40``, ``("max_chars", ...)`` ``--max-chars N`` (any value: the flag and its
        metavar); ``None`` when no flag of the command says it.
        """
        for a in self.arguments:
            if a.positional or option not in (a.option, a.dest):
                continue
            if not a.takes_value:
                if a.sets == value or (a.option is None and value is True):
                    return a.spelling
            elif a.read is None:
                if value is not ...:
                    return f"{a.spelling} {value}"
                metavar = a.settings.get("metavar")
                return f"{a.spelling} {metavar}" if metavar else a.spelling
        return None


def _add(parser: argparse.ArgumentParser, arguments: Sequence[Arg]) -> None:
    groups: dict[str, Any] = {}
    for a in arguments:
        target: Any = parser
        if a.group is not None:
            if a.group not in groups:
                groups[a.group] = parser.add_mutually_exclusive_group()
            target = groups[a.group]
        target.add_argument(*a.flags, **a.settings)
