"""Arguments and value types several commands share.

A whole number of at least 1, ``--prices``, ``--fail-on``'s kinds, the judge flags,
``--no-progress``, ``--no-cache``, ``--batch``.
"""

from __future__ import annotations

import argparse
from typing import Any

from nbeval.commands.base import Arg, arg
from nbeval.errors import NbevalError
from nbeval.options import RunOptions

__all__ = [
    "batch_arg",
    "changed_options",
    "dry_run_arg",
    "gate_kinds",
    "judge_args",
    "no_cache_arg",
    "no_progress_arg",
    "positive_int",
    "prices",
    "prices_arg",
]


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"expected a whole number of at least 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def gate_kinds(text: str) -> tuple[str, ...]:
    """``--fail-on`` value: comma-separated kinds from :data:`~nbeval.results.reporting.gate.GATE_KINDS`."""
    from nbeval.results.reporting.gate import parse_gate_kinds

    try:
        return parse_gate_kinds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def prices(text: str) -> dict[str, tuple[float, ...]]:
    """``--prices`` value: :func:`~nbeval.application.read_prices` (a JSON or YAML file, or JSON text)."""
    from nbeval.application import read_prices

    try:
        return read_prices(text)
    except NbevalError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--prices ").removeprefix("--prices: ")) from None


def prices_arg() -> Arg:
    """``--prices FILE_OR_JSON``: the run option ``prices``."""
    from nbeval.application import PRICES_HELP

    return arg("--prices", option="prices", type=prices, metavar="FILE_OR_JSON", help=PRICES_HELP)


def no_progress_arg() -> Arg:
    """``--no-progress``: the run option ``progress=False``."""
    return arg("--no-progress", option="progress", sets=False, action="store_true", help="no progress bar")


def no_cache_arg(help: str) -> Arg:
    """``--no-cache``: the run option ``cache=False``."""
    return arg("--no-cache", option="cache", sets=False, action="store_true", help=help)


def batch_arg(help: str) -> Arg:
    """``--batch``: the run option ``batch=True``."""
    return arg("--batch", option="batch", sets=True, action="store_true", help=help)


def dry_run_arg(help: str) -> Arg:
    """``--dry-run``: count, spend nothing (``dry_run=True`` in Python)."""
    return arg("--dry-run", action="store_true", help=help)


def _judge(args: argparse.Namespace) -> Any:
    from nbeval.application import judge_spec

    return judge_spec(getattr(args, "judge", None), getattr(args, "judge_base_url", None))


def judge_args(judge_help: str, base_url_help: str) -> tuple[Arg, Arg]:
    """``--judge MODEL`` and ``--judge-base-url URL``: together the run option ``judge``."""
    return (
        arg("--judge", option="judge", read=_judge, help=judge_help),
        arg("--judge-base-url", option="judge", read=_judge, help=base_url_help),
    )


def changed_options(options: RunOptions) -> dict[str, Any]:
    """Return the options set to other than their default, as keyword arguments.

    For the functions that do not take ``options=`` yet.
    """
    defaults = RunOptions()
    return {name: value for name, value in options.as_dict().items() if value != getattr(defaults, name)}
