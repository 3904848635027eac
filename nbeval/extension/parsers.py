"""The magics' argument parsers, taken from the command line's own (:func:`nbeval.cli.build_parser`).

``%nbeval run`` parses with the parser of ``nbeval run`` and ``%nbeval evaluators`` with that of
``nbeval evaluators``, built afresh on each use, so a flag added to the CLI is accepted by the
magic the moment it exists and the two never drift. The magic adds only what a notebook needs on
top (``-o NAME``, the name the result is bound to) and writes files only when ``--out`` is given.

An argparse error never ends the kernel: :func:`parse` turns it into one :class:`MagicError` line.
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import io
import keyword
import re
from collections.abc import Sequence
from typing import Any

from nbeval.errors import NbevalError

__all__ = [
    "DEFAULT_GENERATED",
    "DEFAULT_PERTURBED",
    "DEFAULT_RESULT",
    "DEFAULT_SUITE",
    "IPYTHON_NAMES",
    "MagicError",
    "check_name",
    "cli_subparser",
    "evaluators_parser",
    "explore_parser",
    "generate_parser",
    "judge_parser",
    "parse",
    "perturb_parser",
    "run_parser",
    "show_parser",
]

DEFAULT_RESULT = "_nbeval"
"""The name ``%nbeval run`` binds its result to unless ``-o NAME`` says otherwise."""
DEFAULT_SUITE = "_suite"
"""The name ``%%nbeval_suite`` binds its suite to unless the magic's line names one."""
DEFAULT_PERTURBED = "_perturbed"
"""The name ``%nbeval perturb`` binds its suite to unless ``-o NAME`` says otherwise."""
DEFAULT_GENERATED = "_generated"
"""The name ``%nbeval generate`` binds its suite to unless ``-o NAME`` says otherwise."""


class MagicError(NbevalError):
    """Bad input to a magic. IPython shows it as one line, ``prefix`` then the message, with no
    traceback (``nbeval: error: ...``, as the command line prints its errors)."""

    def __init__(self, message: str, *, prefix: str = "nbeval: error: ") -> None:
        super().__init__(message)
        self.prefix = prefix

    def _render_traceback_(self) -> list[str]:  # IPython's hook for a custom traceback
        return [f"{self.prefix}{self}"]


def cli_subparser(*path: str) -> argparse.ArgumentParser:
    """The parser of the CLI command ``nbeval <path...>`` (e.g. ``("run",)``, ``("evaluator", "show")``),
    from a freshly built :func:`nbeval.cli.build_parser`."""
    from nbeval import cli

    parser = cli.build_parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def run_parser() -> argparse.ArgumentParser:
    """``nbeval run``'s parser as ``%nbeval run``: DATA may also name a variable or ``demo``,
    ``--out`` saves only when given, and ``-o NAME`` binds the result."""
    return _binding_parser(
        "run",
        data=(
            "data",
            "a file nbeval reads (JSON, JSONL, CSV), a variable holding a DataFrame, a list of "
            "records, a dataset or a lab, or `demo` for the shipped demo lab",
        ),
        out_help="also save the result and report.html in this folder (default: save nothing)",
        bound=("result", DEFAULT_RESULT),
    )


def perturb_parser() -> argparse.ArgumentParser:
    """``nbeval perturb``'s parser as ``%nbeval perturb``: the data may also name a variable or
    ``demo``, ``--out`` writes only when given, and ``-o NAME`` binds the suite."""
    return _binding_parser(
        "perturb",
        data=("suite", "a suite, lab or dataset file, a variable holding one, or `demo` for the demo lab"),
        out_help="also write the suite to this JSON file (default: write nothing)",
        bound=("suite", DEFAULT_PERTURBED),
    )


def generate_parser() -> argparse.ArgumentParser:
    """``nbeval generate``'s parser as ``%nbeval generate``: a document may also name a variable
    (holding paths, strings or ``{content, doc_uri}`` dicts), ``--out`` writes only when given, and
    ``-o NAME`` binds the suite."""
    return _binding_parser(
        "generate",
        data=(
            "documents",
            "files or folders (.txt, .md, .html, .pdf), or variables holding paths, texts or "
            "{'content', 'doc_uri'} dicts",
        ),
        out_help="also write the suite to this JSON file (default: write nothing)",
        bound=("suite", DEFAULT_GENERATED),
    )


def _binding_parser(
    command: str, *, data: tuple[str, str], out_help: str, bound: tuple[str, str]
) -> argparse.ArgumentParser:
    """The CLI's ``nbeval <command>`` parser for a magic that binds what it makes: the data
    argument (``data``: its dest and new help) also takes a variable or ``demo``, ``--out`` writes
    only when given, and ``-o NAME`` (``bound``: what is bound, the default name) is added."""
    parser = cli_subparser(command)
    parser.prog = f"%nbeval {command}"
    parser.set_defaults(out=None)
    for action in parser._actions:
        if action.dest == data[0]:
            action.help = data[1]
        elif action.dest == "out":
            action.help = out_help
    parser.add_argument(
        "-o",
        "--name",
        dest="bind_name",
        default=bound[1],
        metavar="NAME",
        help=f"bind the {bound[0]} to this variable (default: {bound[1]})",
    )
    return parser


def evaluators_parser() -> argparse.ArgumentParser:
    """``nbeval evaluators [TEXT...]``'s parser as ``%nbeval evaluators [TEXT...]``."""
    parser = cli_subparser("evaluators")
    parser.prog = "%nbeval evaluators"
    return parser


def show_parser() -> argparse.ArgumentParser:
    """``nbeval evaluator show``'s parser as ``%nbeval show ID``."""
    parser = cli_subparser("evaluator", "show")
    parser.prog = "%nbeval show"
    return parser


def explore_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="%nbeval explore", description="open the case explorer on a result")
    parser.add_argument(
        "name", nargs="?", default=DEFAULT_RESULT, help=f"the variable holding the result (default: {DEFAULT_RESULT})"
    )
    return parser


def judge_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="%nbeval judge",
        description="set the judge of this session (NBEVAL_JUDGE_MODEL, NBEVAL_JUDGE_BASE_URL); "
        "with no MODEL, say which judge is set",
    )
    parser.add_argument("model", nargs="?", help="model name at an OpenAI-compatible endpoint, or hf:<name or path>")
    parser.add_argument(
        "--base-url",
        help="the endpoint's base URL ('' for OpenAI's own; default: keep the current NBEVAL_JUDGE_BASE_URL)",
    )
    return parser


def parse(parser: argparse.ArgumentParser, words: Sequence[str]) -> argparse.Namespace | None:
    """``words`` parsed by ``parser``; ``None`` when they asked for the help (printed). An argparse
    error raises :class:`MagicError` with argparse's own one-line message."""
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
    names of ``shell``'s namespace when given)."""
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
