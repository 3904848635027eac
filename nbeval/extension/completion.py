"""Tab completion inside the magics: subcommands, option names, evaluator ids and variable names.

    %nbeval r<Tab>                     run
    %nbeval run demo -e rou<Tab>       rouge            (after -e/--evaluators, also after a comma)
    %nbeval run demo --no<Tab>         --no-cache --no-progress   (the options of `nbeval run`)
    %nbeval show exa<Tab>              exact_match
    %nbeval explore <Tab>              the variables holding a result

A matcher of IPython's completer API (version 2) added by :func:`install`. Where it has nothing
to offer (a file name for DATA or --out) IPython's own matchers answer as usual.
"""

from __future__ import annotations

import argparse
from typing import Any

from IPython.core.completer import CompletionContext, SimpleCompletion, SimpleMatcherResult, context_matcher

__all__ = ["MATCHER_ID", "complete", "install", "uninstall"]

MATCHER_ID = "nbeval"
"""The identifier of nbeval's matcher in ``ipython.Completer.custom_matchers``."""

_EVALUATOR_OPTIONS = ("-e", "--evaluators")
_FILE_MATCHER = "IPCompleter.file_matcher"


def _evaluator_ids() -> list[str]:
    from nbeval.evaluators.registry import catalogue

    return sorted(catalogue())


def _options(parser: argparse.ArgumentParser) -> tuple[list[str], set[str]]:
    """Every option string of ``parser``, and those that take a value."""
    names: list[str] = []
    takes_value: set[str] = set()
    for action in parser._actions:
        names += action.option_strings
        if action.option_strings and action.nargs != 0:
            takes_value.update(action.option_strings)
    return names, takes_value


def _parser(sub: str) -> argparse.ArgumentParser | None:
    from nbeval.extension import parsers

    return {
        "run": parsers.run_parser,
        "evaluators": parsers.evaluators_parser,
        "show": parsers.show_parser,
        "explore": parsers.explore_parser,
        "judge": parsers.judge_parser,
    }.get(sub, lambda: None)()


def complete(shell: Any, line: str, token: str) -> tuple[list[tuple[str, str]], bool] | None:
    """Completions of ``token`` (the word being typed) at the end of ``line`` (the line up to the
    cursor), as ``(text, kind)`` pairs, and whether file names fit there too; ``None`` when
    ``line`` is no ``%nbeval`` line."""
    from nbeval.extension.magics import SUBCOMMANDS

    words = line.split()
    if not words or words[0] != "%nbeval":
        return None
    partial = "" if line[-1:].isspace() else words[-1]
    before = words[1:-1] if partial else words[1:]
    if not before:
        return [(s, "subcommand") for s in SUBCOMMANDS if s.startswith(token)], False
    sub, args = before[0], before[1:]
    parser = _parser(sub)
    if parser is None:
        return None
    options, takes_value = _options(parser)
    previous = args[-1] if args else ""
    if sub == "run" and (previous in _EVALUATOR_OPTIONS or partial.startswith("--evaluators=")):
        return [(i, "evaluator") for i in _evaluator_ids() if i.startswith(token)], False
    if partial.startswith("-"):
        return [(o, "option") for o in options if o.startswith(partial)], False
    if previous in takes_value:
        if sub == "evaluators" and previous == "--family":
            families = sorted({s.family for s in _catalogue_specs()})
            return [(f, "family") for f in families if f.startswith(token)], False
        return [], True  # a value: a path, a URL, a model name
    positionals = [
        w for i, w in enumerate(args) if not w.startswith("-") and (i == 0 or args[i - 1] not in takes_value)
    ]
    if sub == "show" and not positionals:
        return [(i, "evaluator") for i in _evaluator_ids() if i.startswith(token)], False
    if sub == "explore" and not positionals:
        names = [
            n for n, v in shell.user_ns.items() if not n.startswith("__") and type(v).__name__ == "EvaluationResult"
        ]
        return [(n, "variable") for n in sorted(names) if n.startswith(token)], False
    if sub == "run" and not positionals:
        kinds = ("TestLab", "LlmDataset", "DataFrame")
        names = [
            "demo",
            *sorted(
                n
                for n, v in shell.user_ns.items()
                if not n.startswith("_")
                and (type(v).__name__ in kinds or (isinstance(v, list) and v and isinstance(v[0], dict)))
            ),
        ]
        return [(n, "data") for n in names if n.startswith(token)], True  # or a file
    return [], False


def _catalogue_specs() -> list[Any]:
    from nbeval.evaluators.registry import list_evaluators

    return list_evaluators()


def _matcher(shell: Any) -> Any:
    # IPython types context_matcher as a functools.partial, whose call mypy reads as Any.
    @context_matcher(identifier=MATCHER_ID)  # type: ignore[untyped-decorator]
    def nbeval_matcher(context: CompletionContext) -> SimpleMatcherResult:
        answer = complete(shell, context.text_until_cursor.lstrip(), context.token)
        if answer is None:  # not a %nbeval line: leave it to the other matchers
            return {"completions": [], "suppress": False}
        found, files = answer
        # Python names and magics make no sense inside the magic's line; file names may.
        return {
            "completions": [SimpleCompletion(text, type=kind) for text, kind in found],
            "suppress": True,
            "do_not_suppress": {_FILE_MATCHER} if files else set(),
        }

    return nbeval_matcher


def install(ipython: Any) -> None:
    """Add nbeval's matcher to ``ipython``'s completer (replacing one added before)."""
    uninstall(ipython)
    ipython.Completer.custom_matchers.append(_matcher(ipython))


def uninstall(ipython: Any) -> None:
    """Remove nbeval's matcher from ``ipython``'s completer."""
    matchers = ipython.Completer.custom_matchers
    matchers[:] = [m for m in matchers if getattr(m, "matcher_identifier", None) != MATCHER_ID]
