"""What each ``nbeval`` command does, once :mod:`nbeval.cli` has parsed its arguments.

One function per command (``evaluators``, ``evaluator show``, ``run``, ``complete``, ``perturb``,
``perturbators``, ``generate``, ``demo``, ``serve``), each taking the parsed ``argparse.Namespace`` and
returning the exit status; :func:`nbeval.cli.main` turns the errors they raise into exit status 2
and Ctrl-C into 130 (:class:`SavedInterrupt` says where the partial output went). What they share
with the magics and the service lives in :mod:`nbeval.application`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from nbeval import application
from nbeval.application import matching_specs, no_match_note
from nbeval.errors import NbevalError

__all__ = [
    "SavedInterrupt",
    "complete_command",
    "data_or_demo",
    "demo_command",
    "diff_command",
    "evaluator_show_command",
    "evaluators_command",
    "finish_run",
    "generate_command",
    "generate_kwargs",
    "interrupted_note",
    "perturb_command",
    "perturb_kwargs",
    "perturbators_command",
    "run_command",
    "runs_command",
    "saved_or_not",
    "serve_command",
]


def evaluators_command(args: argparse.Namespace) -> int:
    """``nbeval evaluators [TEXT...]``: the catalogue, by family (``--json``: as JSON)."""
    from nbeval.chat.config import judge_configured

    specs = matching_specs(args.family, args.text)
    judge_set = judge_configured()
    if args.json:
        print(json.dumps([application.spec_dict(s) for s in specs], indent=2))
        return 0
    if not specs:
        print(no_match_note(args.text, args.family, "nbeval evaluators"))
        return 0
    family = None
    for s in specs:
        if s.family != family:
            family = s.family
            print(f"\n[{family}]")
        metrics = ", ".join(f"{m.name}{'*' if m is s.primary else ''}" for m in s.metrics)
        needs = ", ".join(s.inputs)
        note = ""
        if s.needs_judge and not judge_set:
            note = "  (needs a judge)"
        print(f"  {s.id:<30} inputs: {needs:<42} metrics: {metrics}{note}")
    print(
        "\n* primary metric. Inputs: input, expected_output, context, expected_context, actual_output, "
        "output_condition, guidelines, categories; for agents and conversations: messages, "
        "expected_tool_calls, reference_topics."
    )
    if not judge_set and any(s.needs_judge for s in specs):
        print(
            "\nNo judge is configured, so the evaluators marked (needs a judge) cannot run yet.\n"
            + application.CLI_JUDGE_HELP
        )
    return 0


def evaluator_show_command(args: argparse.Namespace) -> int:
    """``nbeval evaluator show ID``: one evaluator in full, with its judge prompt."""
    from nbeval.evaluators.registry import get_class, get_spec

    spec = get_spec(args.id)
    print(f"{spec.id}  ({spec.family}, {spec.kind})\n\n{spec.description}\n")
    print(f"inputs:    {', '.join(spec.inputs)}")
    if spec.optional_inputs:
        print(f"optional:  {', '.join(spec.optional_inputs)}")
    if spec.resources:
        print(f"resources: {', '.join(spec.resources)}")
    if spec.params:
        print("params:")
        for p in spec.params.declared:  # each as a keyword argument with its default, its type and what it does
            print(f"  {p.name}={p.default!r}  ({p.type_name})" + (f"\n      {p.description}" if p.description else ""))
    print("metrics:")
    for m in spec.metrics:
        print(
            f"  {m.name:<28} {m.direction:<7} [{m.lo:g}, {m.hi:g}]  threshold {m.threshold}"
            f"{'  (primary)' if m is spec.primary else ''}"
        )
    cls = get_class(args.id)
    prompt_text = getattr(cls, "prompt_text", None)
    if callable(prompt_text):
        print("\n" + getattr(cls, "prompt_heading", "prompt (replace with prompt=...):") + "\n")
        print(prompt_text())
    return 0


def finish_run(result: Any, out: Path, fail_on_problems: bool | Sequence[str] | None, brief: bool = False) -> int:
    """Print and save the result (``brief``: :meth:`~nbeval.results.EvaluationResult.summary`'s
    brief form); with a gate (``True``: every kind, or the kinds of
    :data:`~nbeval.results.reporting.gate.GATE_KINDS` to fail on) say which kinds trip it, one line each,
    and return 1 if any does."""
    print(application.cli_terms(result.summary(brief=brief)))  # rows' errors say --batch, not batch=True
    report = application.save_run(result, out)
    print(f"\nsaved the result to {out}/\nand the report to {report}")
    verdict = application.run_gate(result, fail_on_problems)
    if verdict is None:
        return 0
    for line in verdict.lines():
        print(application.cli_terms(line))
    return 1 if verdict.tripped else 0


def data_or_demo(text: str) -> Any:
    """What a command's DATA names: the file ``text``, or the shipped demo lab for ``demo`` when
    no file of that name is in the current folder (a file named ``demo`` wins)."""
    if text == "demo" and not Path(text).exists():
        from nbeval.demo import demo_lab

        return demo_lab()
    return text


def run_command(args: argparse.Namespace) -> int:
    """``nbeval run DATA -e IDS``: evaluate, save the result and the report, apply the gate."""
    import nbeval
    from nbeval.engine import Interrupted

    evaluators = [e for e in args.evaluators.split(",") if e.strip()]
    kwargs = application.evaluate_kwargs(args)
    data = data_or_demo(args.data)
    if args.dry_run:
        print(application.cli_terms(str(application.plan(data, evaluators, **kwargs))))
        return 0
    application.check_run_out(Path(args.out), [data] if isinstance(data, str) else [])
    try:
        result = nbeval.evaluate(data, evaluators, **kwargs)
    except Interrupted as stop:  # Ctrl-C: what was scored is saved, the rest marked cancelled
        partial, out = stop.result, Path(args.out)
        saved_or_not(
            lambda: application.save_partial(partial, out),
            f"saved the partial result to {out}/ (the rows not scored are marked cancelled; "
            "nbeval.load_result reads it)",
            stop.batches,
        )
    return finish_run(result, Path(args.out), args.fail_on_problems)


class SavedInterrupt(KeyboardInterrupt):
    """Ctrl-C, after the partial output was saved: ``note`` says where (empty when saving failed);
    ``batches``: the batches left running at the provider (``--batch``)."""

    def __init__(self, note: str, batches: Sequence[str] = ()) -> None:
        super().__init__(note)
        self.note = note
        self.batches = tuple(batches)


def saved_or_not(save: Callable[[], Any], note: str, batches: Sequence[str] = ()) -> NoReturn:
    """After Ctrl-C: save the partial output, and go on with the interruption saying so (or not,
    when saving failed or was interrupted too), and which ``batches`` go on at the provider."""
    try:
        save()
    except (Exception, KeyboardInterrupt):
        raise SavedInterrupt("", batches) from None
    raise SavedInterrupt(note, batches) from None


def interrupted_note(exc: BaseException, again: str = "running the same command again") -> str:
    """The end of what Ctrl-C prints: the judge replies received are cached, and with ``--batch``
    the batches still running (and billed) at the provider, by id, and how to pick them up or cancel them."""
    batches = tuple(getattr(exc, "batches", ()))
    if not batches:
        return "judge replies received so far are cached, run again to resume"
    from nbeval.chat.batch_options import still_running

    return f"{still_running(batches, again)}; the replies received so far are cached"


def demo_command(args: argparse.Namespace) -> int:
    """``nbeval demo``: evaluate the shipped demo lab offline and save it."""
    import nbeval
    from nbeval.demo import demo_evaluators, demo_lab

    application.check_run_out(Path(args.out), [])  # a bad --out fails before the demo runs
    evaluators = demo_evaluators(include_embedding=not args.no_embedding)
    print(f"nbeval demo: {len(evaluators)} evaluators on the shipped demo lab (offline, no API key)\n")
    result = nbeval.evaluate(demo_lab(), evaluators, **application.evaluate_kwargs(args))
    code = finish_run(result, Path(args.out), False, brief=not args.verbose)
    if not args.verbose:
        print("every metric with its interval, and each problem: nbeval demo --verbose, or open the report")
    return code


def complete_command(args: argparse.Namespace) -> int:
    """``nbeval complete SUITE -m MODEL``: ask the models, write the completed lab."""
    from nbeval.chat.collect import collect
    from nbeval.data import jsonio
    from nbeval.data.model import TestSuite
    from nbeval.engine import Interrupted
    from nbeval.results.storage.files import write_aside

    if not args.dry_run:
        application.check_file_out(Path(args.out), [args.suite])
    suite = TestSuite.from_json(args.suite)
    models = {m: application.endpoint(m, args.base_url) for m in args.model}
    pending = collect(
        suite,
        models=models,
        system_prompt=args.system_prompt,
        concurrency=args.concurrency,
        cache=not args.no_cache,
        batch=args.batch,
        **({"prices": args.prices} if args.prices else {}),
    )
    if args.dry_run:
        print(application.cli_terms(str(pending.plan())))
        return 0
    try:
        lab = pending.complete(progress=not args.no_progress)
    except Interrupted as stop:  # Ctrl-C: the answers received are written, the rest marked cancelled
        partial = stop.result.to_json()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        saved_or_not(
            lambda: write_aside(args.out, lambda tmp: jsonio.write_json(partial, tmp)),
            f"wrote the partial lab to {args.out} (the cases not answered have the error 'cancelled')",
            stop.batches,
        )
    data = lab.to_json()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_aside(args.out, lambda tmp: jsonio.write_json(data, tmp))  # a failed write keeps the previous lab
    errors = [r.error for r in lab.dataset if r.error]
    print(
        f"asked {len(lab.models)} model(s) {len(suite.test_cases)} test case(s); {len(errors)} failed; wrote {args.out}"
    )
    if errors:  # the commonest, in the CLI's terms (an endpoint with no Batch API: run without --batch)
        error, times = Counter(errors).most_common(1)[0]
        print(f"the commonest error ({times}x): {application.cli_terms(error)}")
    return 0


def perturbators_command(args: argparse.Namespace) -> int:
    """``nbeval perturbators``: the perturbators (``--json``: as JSON)."""
    from nbeval.perturbation import list_perturbators

    classes = list_perturbators()
    if args.json:
        print(
            json.dumps(
                [
                    {"id": c.id, "name": c.name, "changes_meaning": c.changes_meaning, "description": c.description}
                    for c in classes
                ],
                indent=2,
            )
        )
        return 0
    rows = [(c.id, c.name, "changes meaning" if c.changes_meaning else "keeps meaning", c.description) for c in classes]
    widths = [max((len(r[i]) for r in rows), default=0) for i in range(3)]  # columns as wide as their longest
    for pid, name, meaning, description in rows:
        print(f"  {pid:<{widths[0]}}  {name:<{widths[1]}}  {meaning:<{widths[2]}}  {description}")
    print("\nUse: nbeval perturb SUITE -p ID[,ID...] --intensity low|medium|high --out FILE")
    print("     the llm_* ones ask a model: --judge MODEL [--judge-base-url URL]; --dry-run counts their calls")
    return 0


def perturb_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """A parsed ``perturb``'s options (the CLI's or the magic's) as :func:`nbeval.perturb`'s keyword
    arguments, the attacker of the LLM perturbators from ``--judge`` and ``--judge-base-url``."""
    kw: dict[str, Any] = {
        "intensity": args.intensity,
        "seed": args.seed,
        "keep_originals": not args.no_originals,
    }
    judge = application.judge_spec(args.judge, args.judge_base_url)
    if judge is not None:
        kw["judge"] = judge
    if getattr(args, "prices", None):
        kw["prices"] = args.prices
    return kw


def perturb_command(args: argparse.Namespace) -> int:
    """``nbeval perturb SUITE -p IDS``: write the suite with perturbed copies of its cases
    (``--dry-run``: count the cases and the LLM perturbators' calls, write nothing)."""
    import warnings

    from nbeval.data import jsonio
    from nbeval.perturbation import perturb, perturbed_count
    from nbeval.results.storage.files import write_aside

    data = data_or_demo(args.suite)
    kwargs = perturb_kwargs(args)
    if args.dry_run:
        print(application.cli_terms(str(perturb(data, args.perturbators, dry_run=True, **kwargs))))
        return 0
    application.check_file_out(Path(args.out), [data] if isinstance(data, str) else [], "perturbed")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        suite = perturb(data, args.perturbators, **kwargs)
    for w in caught:
        print(f"nbeval: note: {w.message}", file=sys.stderr)
    data = suite.to_json()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_aside(args.out, lambda tmp: jsonio.write_json(data, tmp))
    made = perturbed_count(suite)
    print(f"made {made} perturbed test case(s); {len(suite.test_cases)} in all; wrote {args.out}")
    return 0


def generate_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """A parsed ``generate``'s options (the CLI's or the magic's) as :func:`nbeval.generate`'s
    keyword arguments."""
    personas = []
    for text in args.persona or []:
        name, _, description = text.partition(":")
        personas.append({"name": name.strip(), "description": description.strip()})
    kw: dict[str, Any] = {
        "n": args.cases,
        "kinds": [k.strip() for k in args.kinds.split(",") if k.strip()],
        "personas": personas or None,
        "seed": args.seed,
        "chunk_size": args.chunk_size,
        "chunk_overlap": min(100, args.chunk_size // 10),
        "max_chars": getattr(args, "max_chars", 1_000_000),
        "max_pages": getattr(args, "max_pages", 1_000),
    }
    judge = application.judge_spec(args.judge, args.judge_base_url)
    if judge is not None:
        kw["judge"] = judge
    if args.no_cache:
        kw["cache"] = False
    if getattr(args, "no_progress", False):
        kw["progress"] = False
    if getattr(args, "batch", False):
        kw["batch"] = True
    if getattr(args, "prices", None):
        kw["prices"] = args.prices
    return kw


def generate_command(args: argparse.Namespace) -> int:
    """``nbeval generate DOCS... -n N``: write a test suite from documents with the judge."""
    import warnings

    import nbeval
    from nbeval.data import jsonio
    from nbeval.generation import summary_lines
    from nbeval.results.storage.files import write_aside

    kwargs = generate_kwargs(args)
    documents = [Path(d) for d in args.documents]  # paths, always: a missing one is an error, never a text
    if args.dry_run:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = nbeval.generate(documents, dry_run=True, **kwargs)
        for w in caught:
            print(f"nbeval: note: {w.message}", file=sys.stderr)
        print(application.cli_terms(str(plan)))
        return 0
    application.check_file_out(Path(args.out), args.documents, "suite")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        suite = nbeval.generate(documents, **kwargs)  # no case made: GenerationFailed, exit 2, --out untouched
    for w in caught:
        print(f"nbeval: note: {application.cli_terms(str(w.message))}", file=sys.stderr)
    data = suite.to_json()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    write_aside(args.out, lambda tmp: jsonio.write_json(data, tmp))
    for line in summary_lines(suite):
        print(line)
    print(f"wrote {args.out}")
    return 0


def serve_command(args: argparse.Namespace) -> int:
    """``nbeval serve``: run the evaluation service until it is stopped."""
    from nbeval.serve.hooks import EndpointApp
    from nbeval.serve.server import serve

    app: Any = args.app
    if args.app_base_url:
        if args.app:
            raise NbevalError("give --app or --app-base-url, not both")
        app = EndpointApp(args.app_base_url, args.app_model, api_key=os.environ.get("NBEVAL_APP_API_KEY"))
    elif args.app_model:
        raise NbevalError("--app-model names a model at --app-base-url; give --app-base-url too")
    judge = application.judge_spec(args.judge, args.judge_base_url)
    serve(
        host=args.host,
        port=args.port,
        token=args.token,
        no_auth=args.no_auth,
        retriever=args.retriever,
        documents=args.documents,
        app=app,
        judge=judge,
        max_body_bytes=args.max_body_bytes,
        workers=args.workers,
        data_dir=args.data_dir,
        keep_jobs=args.keep_jobs,
        keep_bytes=args.keep_bytes,
        max_scores=args.max_scores,
        max_judge_calls=args.max_judge_calls,
        max_judge_tokens=args.max_judge_tokens,
        allow_models=args.allow_models,
        limit_concurrency=args.limit_concurrency,
        timeout_keep_alive=args.timeout_keep_alive,
        header_timeout=args.header_timeout,
        body_timeout=args.body_timeout,
        max_header_bytes=args.max_header_bytes,
        max_queued=args.max_queued,
    )
    return 0


def diff_command(args: argparse.Namespace) -> int:
    """``nbeval diff BEFORE AFTER``: what changed between two saved runs, regressions first; exit 1
    with ``--fail-on-regression`` when the diff's gate trips (a regression, or nothing or too
    little compared: :mod:`nbeval.results.runs.diff_gate`)."""
    from nbeval.results.runs.diff import diff

    shared = {} if args.min_shared is None else {"min_shared": args.min_shared}
    found = diff(args.before, args.after, alpha=args.alpha, min_effect=args.min_effect, **shared)
    verdict = found.gate()
    if args.json:
        print(
            json.dumps(
                {
                    "warnings": list(getattr(found, "warnings", [])),
                    "table": json.loads(found.table.to_json(orient="records")),
                    "flips": json.loads(found.flips.to_json(orient="records")),
                    "coverage": json.loads(found.coverage.to_json(orient="records")),
                    "has_regressions": found.has_regressions,
                    "gate": {
                        "tripped": verdict.tripped,
                        "failing": list(verdict.failing),
                        "found": [dict(zip(("kind", "model_key", "evaluator"), f, strict=True)) for f in verdict.found],
                    },
                },
                indent=2,
            )
        )
    else:
        print(found.to_text())
    if args.fail_on_regression and verdict.tripped:
        for line in verdict.lines():
            print(f"nbeval: {line}", file=sys.stderr)
        return 1
    return 0


def runs_command(args: argparse.Namespace) -> int:
    """``nbeval runs FOLDER``: the saved runs in a folder, newest first."""
    from nbeval.results.runs.registry import runs

    table = runs(args.folder)
    if args.json:
        print(table.to_json(orient="records", indent=2, date_format="iso"))
    elif table.empty:
        print(f"no saved runs in {args.folder}")
    else:
        shown = [
            c
            for c in ("run", "started_at", "label", "models", "evaluators", "rows", "git_commit", "cost")
            if c in table.columns
        ]
        if table["unknown_usage_calls"].fillna(0).gt(0).any():  # some cost is a lower bound: say so
            shown.append("unknown_usage_calls")
        print(table[shown].to_string(index=False, max_colwidth=40))
    return 0
