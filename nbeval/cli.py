"""The ``nbeval`` command: list evaluators, run an evaluation, run the demo.

    nbeval evaluators                      the catalogue
    nbeval evaluator show ID               one evaluator in full (with its judge prompt)
    nbeval run DATA -e rouge,bleu --out DIR
    nbeval complete SUITE -m MODEL [-m MODEL2] --base-url URL --out lab.json
    nbeval demo [--out DIR]

Exit status: 0 on success, 1 when ``--fail-on-problems`` finds problems, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["build_parser", "main"]


def _print_catalogue(args: argparse.Namespace) -> int:
    from nbeval.chat.config import judge_configured
    from nbeval.evaluators.registry import list_evaluators

    specs = list_evaluators(args.family)
    judge_set = judge_configured()
    if args.json:
        print(json.dumps([_spec_dict(s) for s in specs], indent=2))
        return 0
    family = None
    for s in sorted(specs, key=lambda s: (s.family, s.id)):
        if s.family != family:
            family = s.family
            print(f"\n[{family}]")
        metrics = ", ".join(f"{m.name}{'*' if m is s.primary else ''}" for m in s.metrics)
        needs = ", ".join(s.inputs)
        note = ""
        if s.needs_judge and not judge_set:
            note = "  (needs a judge)"
        print(f"  {s.id:<30} inputs: {needs:<42} metrics: {metrics}{note}")
    print("\n* primary metric. Inputs: input, expected_output, context, expected_context, actual_output, "
          "output_condition, guidelines, categories.")
    if not judge_set and any(s.needs_judge for s in specs):
        from nbeval.chat.config import judge_help_text

        print("\nNo judge is configured, so the evaluators marked (needs a judge) cannot run yet.\n"
              + judge_help_text())
    return 0


def _spec_dict(s: Any) -> dict[str, Any]:
    return {"id": s.id, "family": s.family, "kind": s.kind, "inputs": list(s.inputs),
            "optional_inputs": list(s.optional_inputs), "resources": list(s.resources), "params": dict(s.params),
            "description": s.description,
            "metrics": [{"name": m.name, "direction": m.direction, "range": [m.lo, m.hi], "threshold": m.threshold,
                         "primary": m is s.primary} for m in s.metrics]}


def _show_evaluator(args: argparse.Namespace) -> int:
    from nbeval.evaluators.registry import get_class, get_spec

    spec = get_spec(args.id)
    d = _spec_dict(spec)
    print(f"{spec.id}  ({spec.family}, {spec.kind})\n\n{spec.description}\n")
    print(f"inputs:    {', '.join(spec.inputs)}")
    if spec.optional_inputs:
        print(f"optional:  {', '.join(spec.optional_inputs)}")
    if spec.resources:
        print(f"resources: {', '.join(spec.resources)}")
    if spec.params:
        print(f"params:    {', '.join(f'{k}={v!r}' for k, v in spec.params.items())}")
    print("metrics:")
    for m in d["metrics"]:
        lo, hi = m["range"]
        print(f"  {m['name']:<28} {m['direction']:<7} [{lo:g}, {hi:g}]  threshold {m['threshold']}"
              f"{'  (primary)' if m['primary'] else ''}")
    cls = get_class(args.id)
    prompt_text = getattr(cls, "prompt_text", None)
    if callable(prompt_text):
        print("\nprompt (replace with prompt=...):\n")
        print(prompt_text())
    return 0


def _endpoint(model: str, base_url: str | None) -> Any:
    """A chat model spec: the name alone, or with the endpoint it lives at."""
    return {"model": model, "base_url": base_url} if base_url else model


def _evaluate_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    kw: dict[str, Any] = {"progress": not args.no_progress}
    if getattr(args, "judge", None):
        kw["judge"] = _endpoint(args.judge, getattr(args, "judge_base_url", None))
    if getattr(args, "embedder", None):
        kw["embedder"] = args.embedder
    if getattr(args, "device", None):
        kw["device"] = args.device
    if getattr(args, "no_cache", False):
        kw["cache"] = False
    return kw


def _finish(result: Any, out: Path, fail_on_problems: bool) -> int:
    print(result.summary())
    result.save(out)
    result.to_html(out / "report.html")
    print(f"\nsaved the result to {out}/ and the report to {out / 'report.html'}")
    if fail_on_problems and len(result.problems):
        return 1
    return 0


def _run(args: argparse.Namespace) -> int:
    import nbeval

    evaluators = [e for e in args.evaluators.split(",") if e.strip()]
    kwargs = _evaluate_kwargs(args)
    if args.dry_run:
        print(nbeval.evaluate(args.data, evaluators, dry_run=True, **kwargs))
        return 0
    result = nbeval.evaluate(args.data, evaluators, **kwargs)
    return _finish(result, Path(args.out), args.fail_on_problems)


def _demo(args: argparse.Namespace) -> int:
    import nbeval
    from nbeval.demo import demo_evaluators, demo_lab

    evaluators = demo_evaluators(include_embedding=not args.no_embedding)
    print(f"nbeval demo: {len(evaluators)} evaluators on the shipped demo lab (offline, no API key)\n")
    result = nbeval.evaluate(demo_lab(), evaluators, **_evaluate_kwargs(args))
    return _finish(result, Path(args.out), False)


def _complete(args: argparse.Namespace) -> int:
    from nbeval.chat.collect import collect
    from nbeval.data.model import TestSuite

    suite = TestSuite.from_json(args.suite)
    models = {m: _endpoint(m, args.base_url) for m in args.model}
    pending = collect(suite, models=models, system_prompt=args.system_prompt,
                      concurrency=args.concurrency, cache=not args.no_cache)
    if args.dry_run:
        print(pending.plan())
        return 0
    lab = pending.complete(progress=not args.no_progress)
    lab.to_json(args.out)
    failed = sum(1 for r in lab.dataset if r.error)
    print(f"asked {len(lab.models)} model(s) {len(suite.test_cases)} test case(s); {failed} failed; wrote {args.out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nbeval", description="Evaluate LLM and RAG applications.")
    sub = p.add_subparsers(dest="command", required=True)

    cat = sub.add_parser("evaluators", help="list the evaluator catalogue")
    cat.add_argument("--family", help="only this family (deterministic, embedding, judge, ...)")
    cat.add_argument("--json", action="store_true", help="machine-readable output")
    cat.set_defaults(func=_print_catalogue)

    one = sub.add_parser("evaluator", help="show one evaluator")
    one_sub = one.add_subparsers(dest="action", required=True)
    show = one_sub.add_parser("show", help="show an evaluator's inputs, metrics and prompt")
    show.add_argument("id")
    show.set_defaults(func=_show_evaluator)

    run = sub.add_parser("run", help="evaluate a dataset, lab or suite file")
    run.add_argument("data", help="JSON, JSONL or CSV file in any shape nbeval reads")
    run.add_argument("-e", "--evaluators", required=True, help="comma-separated evaluator ids")
    run.add_argument("--out", default="nbeval-out", help="folder for the saved result and report.html")
    run.add_argument("--judge", help="judge model name (OpenAI-compatible endpoint)")
    run.add_argument("--judge-base-url",
                     help="base URL of the judge's endpoint (with --judge; else NBEVAL_JUDGE_BASE_URL)")
    run.add_argument("--embedder", help="sentence-transformers model name or path")
    run.add_argument("--device", help="cpu, cuda, ... (default: automatic)")
    run.add_argument("--no-cache", action="store_true", help="do not use the judge reply cache")
    run.add_argument("--dry-run", action="store_true", help="count rows and judge calls; score nothing")
    run.add_argument("--fail-on-problems", action="store_true", help="exit 1 when any problem is found (for CI)")
    run.add_argument("--no-progress", action="store_true")
    run.set_defaults(func=_run)

    comp = sub.add_parser("complete", help="ask models to answer a suite and write the completed lab")
    comp.add_argument("suite", help="test suite JSON")
    comp.add_argument("-m", "--model", action="append", required=True,
                      help="model name at the OpenAI-compatible endpoint (repeat for several), or hf:<path>")
    comp.add_argument("--base-url", help="endpoint base URL (else NBEVAL_JUDGE_BASE_URL / OpenAI)")
    comp.add_argument("--system-prompt", help="system message sent before every prompt")
    comp.add_argument("--concurrency", type=int, default=8)
    comp.add_argument("--out", default="lab.json", help="where to write the completed lab")
    comp.add_argument("--no-cache", action="store_true", help="do not reuse cached answers")
    comp.add_argument("--dry-run", action="store_true", help="count the calls; ask nothing")
    comp.add_argument("--no-progress", action="store_true")
    comp.set_defaults(func=_complete)

    demo = sub.add_parser("demo", help="evaluate the shipped demo lab offline")
    demo.add_argument("--out", default="nbeval-demo", help="folder for the saved result and report.html")
    demo.add_argument("--no-embedding", action="store_true", help="skip embedding evaluators (faster)")
    demo.add_argument("--no-progress", action="store_true")
    demo.set_defaults(func=_demo)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    from nbeval.errors import NbevalError

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except NbevalError as exc:
        print(f"nbeval: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: one line, no traceback; replies already received stay cached
        print("nbeval: interrupted; judge replies received so far are cached, run again to resume",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
