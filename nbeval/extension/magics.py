"""The magics: ``%nbeval SUBCOMMAND ...`` and ``%%nbeval_suite [NAME]``.

Bad input shows one line and no traceback, as the command line does: an
:class:`~nbeval.errors.NbevalError` (or an ``OSError`` about a path given: a name too long, no
permission) becomes ``nbeval: error: ...`` and an argparse error keeps argparse's own line
(``%nbeval run: error: ...``). A name to bind (``-o NAME``, ``%%nbeval_suite NAME``) that Python
or IPython needs is refused (see :func:`~nbeval.commands.notebook.check_name`). The cell still
fails, so a notebook run under nbval or in CI stops there.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Callable
from typing import Any, TypeVar

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from nbeval.errors import JudgeNotConfigured, NbevalError

__all__ = ["NbevalMagics", "subcommands", "usage"]


def subcommands() -> dict[str, str]:
    """``%nbeval``'s subcommands and what each does.

    Every command of :func:`nbeval.commands.all_commands` that has a magic spelling (the usage text
    and Tab completion read this).
    """
    from nbeval.commands import magic_commands

    return {c.magic.name: c.magic.summary for c in magic_commands() if c.magic is not None}


def usage() -> str:
    """What ``%nbeval`` alone (or ``%nbeval -h``) prints."""
    found = subcommands()
    return (
        "usage: %nbeval {"
        + ",".join(found)
        + "} ...\n\n"
        + "\n".join(f"  %nbeval {name:<11} {text}" for name, text in found.items())
        + (
            "\n  %%nbeval_suite [NAME]  a cell of test cases (YAML or JSON) bound to NAME (default: _suite)"
            "\n\n`%nbeval SUBCOMMAND -h` says more."
        )
    )


_F = TypeVar("_F", bound=Callable[..., Any])


def _one_line_errors(fn: _F) -> _F:
    """Show nbeval's errors, path errors and interruptions as a one-line :class:`MagicError`.

    Turns an nbeval error, an error of the file system about a path (a name too long, no
    permission), or an interrupted run into a :class:`MagicError`, shown as one line.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from nbeval.commands.notebook import MagicError  # loaded on first use: %load_ext stays light

        try:
            return fn(*args, **kwargs)
        except MagicError:
            raise
        except JudgeNotConfigured as exc:  # named in the magics' terms: %nbeval judge, not judge=...
            from nbeval.application import judge_error

            raise MagicError(judge_error(exc, magic=True)) from None
        except NbevalError as exc:
            raise MagicError(str(exc)) from None
        except OSError as exc:
            if exc.filename is None:  # not about a path the user gave: a traceback says more
                raise
            from nbeval.results.storage.files import path_problem

            raise MagicError(path_problem(exc)) from None
        except KeyboardInterrupt as exc:  # as the CLI says it; replies already received stay cached
            from nbeval.cli_commands import interrupted_note

            msg = f"interrupted; {interrupted_note(exc, 'running the same magic again')}"
            raise MagicError(msg, prefix="nbeval: ") from None

    return wrapper  # type: ignore[return-value]


def _split(line: str) -> list[str]:
    from nbeval.commands.notebook import MagicError

    try:
        return shlex.split(line)
    except ValueError as exc:  # an unclosed quote
        msg = f"cannot read the magic's line ({exc}); close the quotes"
        raise MagicError(msg) from None


@magics_class
class NbevalMagics(Magics):
    """``%nbeval`` and ``%%nbeval_suite``."""

    @line_magic
    @_one_line_errors
    def nbeval(self, line: str) -> Any:
        """Evaluate and look things up from a notebook: %nbeval SUBCOMMAND ... (the subcommands below).

        %nbeval run DATA -e ID[,ID...] [options]   evaluate; shows the summary, binds _nbeval (-o NAME)
        %nbeval evaluators [TEXT]                  the catalogue as a searchable table
        %nbeval show ID                            one evaluator in full
        %nbeval explore [NAME]                     the case explorer on a result
        %nbeval judge MODEL [--base-url URL]       this session's judge
        %nbeval perturb DATA -p ID[,ID...]         perturbed test cases, bound to _perturbed (-o NAME)
        %nbeval diff BEFORE AFTER                  what changed between two runs, bound to _diff
        %nbeval runs FOLDER                        the saved runs in a folder, newest first

        `%nbeval SUBCOMMAND -h` lists a subcommand's options (those of `nbeval run` for run).
        """
        from nbeval.commands import magic_command
        from nbeval.commands.notebook import MagicError, parse

        words = _split(line)
        if not words or words[0] in ("-h", "--help", "help"):
            print(usage())
            return None
        sub, rest = words[0], words[1:]
        command = magic_command(sub)
        if command is None:
            import difflib

            known = subcommands()
            close = difflib.get_close_matches(sub, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            msg = f"unknown subcommand {sub!r}{hint} (choose from {', '.join(known)})"
            raise MagicError(msg, prefix="%nbeval: error: ")
        args = parse(command.magic_parser(), rest)
        if args is None:  # -h: the help is printed
            return None
        return command.run_magic(self.shell, args)

    @cell_magic
    @_one_line_errors
    def nbeval_suite(self, line: str, cell: str) -> None:
        """Turn a cell of test cases in YAML or JSON into a test suite: %%nbeval_suite [NAME].

        Each case is a mapping: prompt (or input), expected_output (or expected / answer),
        condition, categories, and any other test-case field (key, guidelines, ...). A whole suite
        (a mapping with "tests") is read as well. The suite is bound to NAME (default: _suite);
        an error names the line of the cell.
        """
        from nbeval.commands.notebook import DEFAULT_SUITE, MagicError, check_name
        from nbeval.extension.suite_cell import parse_suite

        words = _split(line)
        if len(words) > 1:
            msg = f"one NAME at most, got {' '.join(words)!r}"
            raise MagicError(msg, prefix="%%nbeval_suite: error: ")
        name = check_name(words[0] if words else DEFAULT_SUITE, "NAME", self.shell)
        suite = parse_suite(cell, name=name)
        assert self.shell is not None
        self.shell.user_ns[name] = suite
        from IPython.display import display

        display(suite)
