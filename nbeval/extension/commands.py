"""What each ``%nbeval`` subcommand does: ``run``, ``evaluators``, ``show``, ``explore``, ``judge``,
``perturb``, ``generate``, ``diff`` and ``runs``.

Each takes the shell and the words after the subcommand, parses them with the CLI's parser
(:mod:`nbeval.extension.parsers`), and shows its output with IPython's display. Bad input raises
:class:`~nbeval.extension.parsers.MagicError` or an :class:`~nbeval.errors.NbevalError`; the magic
turns either into one line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from nbeval.extension.parsers import (
    MagicError,
    check_name,
    cli_subparser,
    evaluators_parser,
    explore_parser,
    generate_parser,
    judge_parser,
    parse,
    perturb_parser,
    run_parser,
    show_parser,
)

__all__ = [
    "diff",
    "evaluators",
    "explore",
    "generate",
    "judge",
    "perturb",
    "public_url",
    "resolve_data",
    "run",
    "runs",
    "show",
]

_NO_JUDGE = "no judge is configured: `%nbeval judge MODEL [--base-url URL]` sets one for this session"


def _display(obj: Any) -> None:
    from IPython.display import display

    display(obj)


def resolve_data(shell: Any, text: str) -> tuple[Any, str | None]:
    """What ``%nbeval run DATA`` evaluates, and the path read (``None`` for an object): a variable
    of the user's namespace, else an existing file, else ``demo`` (the shipped demo lab)."""
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


def run(shell: Any, words: Sequence[str]) -> None:
    """``%nbeval run DATA -e ID[,ID...] [options]``: evaluate, show the summary, bind the result."""
    from nbeval import application

    args = parse(run_parser(), words)
    if args is None:
        return
    name = check_name(args.bind_name, "-o", shell)
    data, path = resolve_data(shell, args.data)
    ids = [e.strip() for e in args.evaluators.split(",") if e.strip()]
    kwargs = application.evaluate_kwargs(args)  # the CLI's own mapping of options to evaluate()'s arguments

    import nbeval

    if args.dry_run:
        plan = application.plan(data, ids, **kwargs)
        _display(plan)
        if getattr(plan, "unconfigured_calls", 0):  # in the magics' terms, beside the plan's judge=...
            print(_NO_JUDGE)
        return
    out = Path(args.out) if args.out else None
    if out is not None:  # a bad --out fails before any work
        _check_out(out)
        application.check_run_out(out, [path] if path else [])
    result = nbeval.evaluate(data, ids, **kwargs)
    shell.user_ns[name] = result
    _display(result)
    if out is not None:
        report = application.save_run(result, out)
        print(f"saved the result to {out}/ and the report to {report}")
    if args.fail_on_problems:
        _gate(result, args.fail_on_problems)


def _check_out(out: Path) -> None:
    """``--out`` as a path the file system can take (no name too long), else one short line."""
    from nbeval.errors import DataError
    from nbeval.results.storage.files import check_path

    try:
        check_path(out)
    except DataError as exc:
        raise MagicError(f"--out: {exc}") from None


def perturb(shell: Any, words: Sequence[str]) -> None:
    """``%nbeval perturb DATA -p ID[,ID...] [--intensity ...] [--seed N] [--judge M] [--dry-run]``: a
    suite with perturbed copies of DATA's test cases, shown and bound to ``-o NAME`` (default
    ``_perturbed``); ``--dry-run`` shows the cases and the LLM perturbators' calls it would take."""
    import warnings

    import nbeval
    from nbeval import application
    from nbeval.cli_commands import perturb_kwargs

    args = parse(perturb_parser(), words)
    if args is None:
        return
    name = check_name(args.bind_name, "-o", shell)
    data, path = resolve_data(shell, args.suite)
    kwargs = perturb_kwargs(args)
    if args.dry_run:
        plan = nbeval.perturb(data, args.perturbators, dry_run=True, **kwargs)
        print(application.judge_plan_text(str(plan), magic=True))
        return
    if args.out:  # a bad --out fails before any work
        _check_out(Path(args.out))
        application.check_file_out(Path(args.out), [path] if path else [], "perturbed")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        suite = nbeval.perturb(data, args.perturbators, **kwargs)
    for w in caught:
        print(f"nbeval: note: {w.message}")
    shell.user_ns[name] = suite
    _display(suite)
    if args.out:
        suite.save(args.out)
        print(f"wrote the suite to {args.out}")


def generate(shell: Any, words: Sequence[str]) -> None:
    """``%nbeval generate DOCS... -n N [--judge M] [--dry-run]``: a test suite written from DOCS
    (files, folders, or variables holding paths, texts or ``{content, doc_uri}`` dicts) by the
    judge, shown and bound to ``-o NAME`` (default ``_generated``); ``--dry-run`` shows the calls
    and tokens it would take."""
    import warnings

    import nbeval
    from nbeval import application
    from nbeval.cli_commands import generate_kwargs
    from nbeval.generation import summary_lines

    args = parse(generate_parser(), words)
    if args is None:
        return
    name = check_name(args.bind_name, "-o", shell)
    documents: list[Any] = []
    for word in args.documents:
        value = shell.user_ns.get(word) if word.isidentifier() else None
        if value is None:  # not a variable: a path (a missing one is an error, never a text)
            documents.append(Path(word))
        elif isinstance(value, (list, tuple)):
            documents.extend(value)
        else:
            documents.append(value)
    kwargs = generate_kwargs(args)
    if args.dry_run:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = nbeval.generate(documents, dry_run=True, **kwargs)
        for w in caught:
            print(f"nbeval: note: {w.message}")
        print(application.judge_plan_text(str(plan), magic=True))
        return
    if args.out:  # a bad --out fails before any work
        _check_out(Path(args.out))
        application.check_file_out(Path(args.out), [str(d) for d in documents if isinstance(d, (str, Path))], "suite")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        suite = nbeval.generate(documents, **kwargs)
    for w in caught:
        print(f"nbeval: note: {w.message}")
    shell.user_ns[name] = suite
    _display(suite)
    for line in summary_lines(suite):
        print(line)
    if args.out:
        suite.save(args.out)
        print(f"wrote the suite to {args.out}")


def _gate(result: Any, fail_on: Literal[True] | Sequence[str]) -> None:
    """The CI gate of ``--fail-on-problems`` / ``--fail-on`` (:func:`nbeval.results.reporting.gate.check_gate`,
    as the CLI): a :class:`MagicError` (so a failed cell, as the CLI's exit status 1) naming what
    tripped it; the kinds not chosen are listed."""
    from nbeval import application

    verdict = application.run_gate(result, fail_on)
    if verdict is None:
        return
    for line in verdict.ignored_lines():
        print(line)
    if verdict.tripped:
        msg = f"failing: {'; '.join(verdict.failing)}"
        raise MagicError(msg, prefix="nbeval: ")


def evaluators(shell: Any, words: Sequence[str]) -> Any:
    """``%nbeval evaluators [TEXT...] [--family F] [--json]``: the catalogue as a DataFrame, keeping
    the evaluators that contain every word of TEXT (case-insensitive)."""
    from nbeval import application
    from nbeval.chat.config import judge_configured

    args = parse(evaluators_parser(), words)
    if args is None:
        return None
    specs = application.matching_specs(args.family, args.text)  # the filter of `nbeval evaluators TEXT`
    if args.json:
        print(json.dumps([application.spec_dict(s) for s in specs], indent=2))
        return None
    import pandas as pd

    rows = [
        {
            "id": s.id,
            "family": s.family,
            "kind": s.kind,
            "inputs": ", ".join(s.inputs),
            "metrics": ", ".join(f"{m.name}{'*' if m is s.primary else ''}" for m in s.metrics),
            "needs judge": s.needs_judge,
            "description": s.description,
        }
        for s in specs
    ]
    if not specs:
        print(application.no_match_note(args.text, args.family, "%nbeval evaluators"))
    elif any(s.needs_judge for s in specs) and not judge_configured():
        print(_NO_JUDGE)
    return pd.DataFrame(rows, columns=["id", "family", "kind", "inputs", "metrics", "needs judge", "description"])


def show(shell: Any, words: Sequence[str]) -> None:
    """``%nbeval show ID``: one evaluator in full, as ``nbeval evaluator show ID`` prints it."""
    args = parse(show_parser(), words)
    if args is not None:
        args.func(args)


def explore(shell: Any, words: Sequence[str]) -> None:
    """``%nbeval explore [NAME]``: the notebook kit's case explorer on the result bound to NAME."""
    from nbeval.results import EvaluationResult
    from nbeval.results.renderers import get_renderer

    args = parse(explore_parser(), words)
    if args is None:
        return
    name = check_name(args.name, "NAME")
    if name not in shell.user_ns:
        msg = f"no result named {name}: run `%nbeval run DATA -e ID -o {name}` first"
        raise MagicError(msg)
    result = shell.user_ns[name]
    if not isinstance(result, EvaluationResult):
        msg = f"{name} is a {type(result).__name__}, not an evaluation result: run `%nbeval run DATA -e ID -o {name}`"
        raise MagicError(msg)
    make = get_renderer("case_explorer")
    if make is None:
        msg = (
            "no case explorer is registered; the notebook kit provides it: pip install 'nbeval[widgets]', "
            f"or show one directly with nbeval.widgets.CaseExplorer({name})"
        )
        raise MagicError(msg)
    _display(make(result))


def public_url(url: str) -> str:
    """What ``%nbeval judge`` shows of a base URL, which the notebook keeps once printed: scheme,
    host, port and path (as :func:`nbeval.chat.secrets.redact_url` leaves them: no user
    information, whose secrets it registers for masking). The query string is never shown, secret
    names or not (keys also ride as ``?code=`` or SAS parameters): a note says it was left out."""
    from urllib.parse import urlsplit, urlunsplit

    from nbeval.chat.secrets import redact_url

    try:
        public = urlsplit(redact_url(url))
    except ValueError:  # a bracket left open, a port that is not a number
        return "a base URL that does not parse (not shown; it should look like https://host/v1)"
    if not public.netloc:
        return "a base URL without a host (not shown; it should look like https://host/v1)"
    shown = urlunsplit((public.scheme, public.netloc, public.path, "", ""))
    return f"{shown} (query string not shown)" if public.query or "?" in url else shown


def judge(shell: Any, words: Sequence[str]) -> None:
    """``%nbeval judge [MODEL] [--base-url URL]``: set this session's judge through the environment
    variables every later run reads; say which judge is set. A key is never printed, nor the
    base URL's user information or query string (see :func:`public_url`)."""
    from nbeval.application import ENV_BASE_URL, ENV_KEYS, ENV_MODEL

    args = parse(judge_parser(), words)
    if args is None:
        return
    if args.model is not None:
        if not args.model.strip():
            msg = "the judge's model name is empty: `%nbeval judge MODEL [--base-url URL]`"
            raise MagicError(msg)
        os.environ[ENV_MODEL] = args.model.strip()
    if args.base_url is not None:
        if args.base_url.strip():
            os.environ[ENV_BASE_URL] = args.base_url.strip()
        else:
            os.environ.pop(ENV_BASE_URL, None)
    model, base_url = os.environ.get(ENV_MODEL), os.environ.get(ENV_BASE_URL)
    if not model and not base_url:
        print("no judge is set: `%nbeval judge MODEL [--base-url URL]` sets one for this session")
        return
    if (model or "").startswith("hf:"):
        print(f"judge: {model} (a local Hugging Face model)")
        return
    where = f"at {public_url(base_url)}" if base_url else "at OpenAI's API"
    key = next((k for k in ENV_KEYS if os.environ.get(k)), None)
    print(
        f"judge: {model or '(no model name yet: %nbeval judge MODEL)'} {where}; "
        f"API key: {f'from {key}' if key else 'none set'}"
    )


def _run_of(shell: Any, text: str) -> Any:
    """A run for ``%nbeval diff``: the result bound to a variable named ``text``, else a folder."""
    from nbeval.results import EvaluationResult

    bound = shell.user_ns.get(text) if text.isidentifier() else None
    if isinstance(bound, EvaluationResult):
        return bound
    if not Path(text).is_dir():
        msg = f"{text!r} is neither a result variable nor a saved result folder; save a run with result.save(DIR)"
        raise MagicError(msg)
    return text


def diff(shell: Any, words: Sequence[str]) -> None:
    """``%nbeval diff BEFORE AFTER [--min-effect X] [--alpha A] [--fail-on-regression] [--min-shared S]``: what changed
    between two runs (result variables or saved folders), shown and bound to ``_diff``."""
    from nbeval.results.runs.diff import diff as run_diff

    args = parse(cli_subparser("diff"), words)
    if args is None:
        return
    shared = {} if args.min_shared is None else {"min_shared": args.min_shared}
    found = run_diff(
        _run_of(shell, args.before), _run_of(shell, args.after), alpha=args.alpha, min_effect=args.min_effect, **shared
    )
    shell.user_ns["_diff"] = found
    if args.json:
        print(found.table.to_json(orient="records", indent=2))
    else:
        _display(found)
    verdict = found.gate()
    if args.fail_on_regression and verdict.tripped:  # nothing or too little compared fails too
        msg = f"{'; '.join(verdict.failing)} (--fail-on-regression); see _diff.regressions and _diff.coverage"
        raise MagicError(msg)


def runs(shell: Any, words: Sequence[str]) -> None:
    """``%nbeval runs FOLDER``: the saved runs in FOLDER, newest first, as a table."""
    from nbeval.results.runs.registry import runs as list_runs

    args = parse(cli_subparser("runs"), words)
    if args is None:
        return
    table = list_runs(args.folder)
    if args.json:
        print(table.to_json(orient="records", indent=2, date_format="iso"))
    else:
        _display(table)
