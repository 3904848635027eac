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

from typing import Any

from IPython.core.completer import CompletionContext, SimpleCompletion, SimpleMatcherResult, context_matcher

__all__ = ["MATCHER_ID", "complete", "install", "uninstall"]

MATCHER_ID = "nbeval"
"""The identifier of nbeval's matcher in ``ipython.Completer.custom_matchers``."""

_FILE_MATCHER = "IPCompleter.file_matcher"
_HELP = ("-h", "--help")


def _evaluator_ids() -> list[str]:
    from nbeval.evaluators.registry import catalogue

    return sorted(catalogue())


def _offer(hint: str | None, shell: Any, token: str) -> tuple[list[tuple[str, str]], bool]:
    """What Tab offers for a value of the kind ``hint``.

    ``hint`` is an :class:`~nbeval.commands.base.Arg`'s ``complete``; also returns whether file
    names fit there too.
    """
    if hint in ("evaluator", "evaluators"):  # after -e, a comma starts a new id: the token is the part after it
        return [(i, "evaluator") for i in _evaluator_ids() if i.startswith(token)], False
    if hint == "family":
        families = sorted({s.family for s in _catalogue_specs()})
        return [(f, "family") for f in families if f.startswith(token)], False
    if hint == "result":
        names = [
            n for n, v in shell.user_ns.items() if not n.startswith("__") and type(v).__name__ == "EvaluationResult"
        ]
        return [(n, "variable") for n in sorted(names) if n.startswith(token)], False
    if hint == "data":
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
    if hint == "text":  # free words: nothing to offer, and no file name either
        return [], False
    return [], True  # a value with no list of its own: a path, a URL, a model name


def complete(shell: Any, line: str, token: str) -> tuple[list[tuple[str, str]], bool] | None:
    """The completions of ``token`` at the end of a ``%nbeval`` line.

    ``token`` is the word being typed and ``line`` the line up to the cursor. Returns
    ``(text, kind)`` pairs and whether file names fit there too; ``None`` when ``line`` is no
    ``%nbeval`` line. The subcommands, their options and what their values are come from the command
    objects (:mod:`nbeval.commands`).
    """
    from nbeval.commands import magic_command, magic_commands

    words = line.split()
    if not words or words[0] != "%nbeval":
        return None
    partial = "" if line[-1:].isspace() else words[-1]
    before = words[1:-1] if partial else words[1:]
    if not before:
        names = [c.magic.name for c in magic_commands() if c.magic is not None]
        return [(s, "subcommand") for s in names if s.startswith(token)], False
    sub, args = before[0], before[1:]
    command = magic_command(sub)
    if command is None:
        return None
    arguments = command.magic_arguments()
    flags = {flag: a for a in arguments for flag in a.option_strings}
    options = [*_HELP, *flags]
    previous = args[-1] if args else ""
    given = next((a for f, a in flags.items() if partial.startswith(f"{f}=")), None)
    if given is not None:  # --evaluators=rou
        return _offer(given.complete, shell, token)
    if partial.startswith("-"):
        return [(o, "option") for o in options if o.startswith(partial)], False
    if previous in flags and flags[previous].takes_value:
        return _offer(flags[previous].complete, shell, token)
    positionals = [
        w
        for i, w in enumerate(args)
        if not w.startswith("-") and (i == 0 or args[i - 1] not in flags or not flags[args[i - 1]].takes_value)
    ]
    places = [a for a in arguments if a.positional]
    if len(positionals) >= len(places):
        return [], False
    return _offer(places[len(positionals)].complete, shell, token)


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
