"""What the ``%nbeval`` side of the commands shares.

Bad input as one line (:class:`MagicError`), the names a magic may bind (:func:`check_name`),
parsing a magic's words (:func:`parse`), the data a magic names (:func:`resolve_data`), ``--out``
checks, showing an object and the CI gate.

It imports nothing of IPython's at import time (``IPython.display`` loads when something is
shown), so the commands can carry their magic's behaviour beside the command line's.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import io
import keyword
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from nbeval.errors import NbevalError

__all__ = [
    "DEFAULT_GENERATED",
    "DEFAULT_PERTURBED",
    "DEFAULT_RESULT",
    "DEFAULT_SUITE",
    "IPYTHON_NAMES",
    "NO_JUDGE",
    "MagicError",
    "check_name",
    "check_out",
    "gate",
    "parse",
    "resolve_data",
    "show",
]

DEFAULT_RESULT = "_nbeval"
"""The name ``%nbeval run`` binds its result to unless ``-o NAME`` says otherwise."""
DEFAULT_SUITE = "_suite"
"""The name ``%%nbeval_suite`` binds its suite to unless the magic's line names one."""
DEFAULT_PERTURBED = "_perturbed"
"""The name ``%nbeval perturb`` binds its suite to unless ``-o NAME`` says otherwise."""
DEFAULT_GENERATED = "_generated"
"""The name ``%nbeval generate`` binds its suite to unless ``-o NAME`` says otherwise."""

#: What a magic says when a judge is needed and none is set.
NO_JUDGE = "no judge is configured: `%nbeval judge MODEL [--base-url URL]` sets one for this session"


class MagicError(NbevalError):
    """Bad input to a magic.

    IPython shows it as one line, ``prefix`` then the message, with no traceback (``nbeval: error: ...``, as the command
    line prints its errors).
    """

    def __init__(self, message: str, *, prefix: str = "nbeval: error: ") -> None:
        super().__init__(message)
        self.prefix = prefix

    def _render_traceback_(self) -> list[str]:  # IPython's hook for a custom traceback
        return [f"{self.prefix}{self}"]


def parse(parser: argparse.ArgumentParser, words: Sequence[str]) -> argparse.Namespace | None:
    """``words`` parsed by ``parser``; ``None`` when they asked for the help (printed).

    An argparse error raises :class:`MagicError` with argparse's own one-line message.
    """
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            return parser.parse_args(list(words))
    except SystemExit as exc:
        if not exc.code:  # -h/--help: the help is printed on stdout
            return None
        lines = [line for line in err.getvalue().splitlines() if line.strip()]
        raise MagicError(lines[-1] if lines else f"{parser.prog}: error: bad arguments", prefix="") from None


#: Names IPython keeps in the user's namespace for itself (its history, its output cache, its
#: helpers); binding a result there breaks the session, or is overwritten by the next output.
IPYTHON_NAMES = frozenset(
    {"In", "Out", "exit", "quit", "get_ipython", "open", "_ih", "_oh", "_dh", "_", "__", "___", "_i", "_ii", "_iii"}
)
_OUTPUT_CACHE = re.compile(r"_i?\d+")


def check_name(name: str, what: str, shell: Any = None) -> str:
    """``name`` if a magic may bind something to it, else a :class:`MagicError` saying why.

    Refused: what is not an identifier or is a keyword; a dunder (``__builtins__``, ``__name__``:
    Python's own); a built-in's name (``print``, ``list``: later cells would call the result);
    IPython's names (:data:`IPYTHON_NAMES`, ``_1``/``_i1`` of its output cache, and the hidden
    names of ``shell``'s namespace when given).
    """
    if not name.isidentifier() or keyword.iskeyword(name):
        msg = f"{what} {name!r} is not a valid variable name; use letters, digits and _ (e.g. result_a)"
        raise MagicError(msg)
    hidden = getattr(shell, "user_ns_hidden", None) or {}
    why = None
    if name.startswith("__") and name.endswith("__"):
        why = "a name Python keeps for itself"
    elif name in IPYTHON_NAMES or _OUTPUT_CACHE.fullmatch(name) or name in hidden:
        why = "a name IPython uses"
    elif hasattr(builtins, name):
        why = f"the name of Python's built-in {name}, which later cells would no longer reach"
    if why is not None:
        msg = f"{what} {name!r} is {why}; choose another name (e.g. result_a)"
        raise MagicError(msg)
    return name


def show(obj: Any) -> None:
    """Show ``obj`` with IPython's display."""
    from IPython.display import display

    display(obj)


def resolve_data(shell: Any, text: str) -> tuple[Any, str | None]:
    """Find what ``%nbeval run DATA`` evaluates, and the path read.

    DATA is a variable of the user's namespace, else an existing file, else ``demo`` (the shipped
    demo lab); the path is ``None`` for an object.
    """
    if text.isidentifier() and text in shell.user_ns:
        value = shell.user_ns[text]
        if isinstance(value, (str, os.PathLike)):
            return value, os.fspath(value)
        return value, None
    try:
        exists = Path(text).expanduser().exists()
    except (OSError, ValueError) as exc:  # a name too long, a loop of links, an embedded NUL
        from nbeval.results.storage.files import path_problem, shown_path

        msg = path_problem(exc, text) if isinstance(exc, OSError) else f"cannot use {shown_path(text)!r}: {exc}"
        raise MagicError(msg) from None
    if exists:
        return str(Path(text).expanduser()), str(Path(text).expanduser())
    if text == "demo":
        from nbeval.demo import demo_lab

        return demo_lab(), None
    msg = (
        f"no file or variable named {text!r}: give a file path, a variable holding a DataFrame, a list of "
        "records, a dataset or a lab, or `demo` for the shipped demo lab"
    )
    raise MagicError(msg)


def check_out(out: Path) -> None:
    """``--out`` as a path the file system can take (no name too long), else one short line."""
    from nbeval.errors import DataError
    from nbeval.results.storage.files import check_path

    try:
        check_path(out)
    except DataError as exc:
        raise MagicError(f"--out: {exc}") from None


def gate(result: Any, fail_on: Literal[True] | Sequence[str]) -> None:
    """Apply the CI gate of ``--fail-on-problems`` / ``--fail-on`` in a notebook.

    As the CLI does (:func:`nbeval.results.reporting.gate.check_gate`), raising a
    :class:`MagicError` (so a failed cell, as the CLI's exit status 1) naming what tripped it; the
    kinds not chosen are listed.
    """
    from nbeval import application

    verdict = application.run_gate(result, fail_on)
    if verdict is None:
        return
    for line in verdict.ignored_lines():
        print(line)
    if verdict.tripped:
        msg = f"failing: {'; '.join(verdict.failing)}"
        raise MagicError(msg, prefix="nbeval: ")
