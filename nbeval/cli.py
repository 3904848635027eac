"""The ``nbeval`` command: list evaluators, run an evaluation, run the demo.

    nbeval --version
    nbeval evaluators [TEXT...]            the catalogue (the evaluators containing every word of TEXT)
    nbeval evaluator show ID               one evaluator in full (with its judge prompt)
    nbeval run DATA -e rouge,bleu --out DIR   (DATA ``demo``: the shipped demo lab, unless a file is named so)
    nbeval complete SUITE -m MODEL [-m MODEL2] --base-url URL --out lab.json
    nbeval perturb SUITE -p typos,case [--intensity medium] [--seed 0] --out suite2.json
    nbeval perturbators                    the perturbators: ids, names, whether they change meaning
    nbeval generate DOCS... -n 50 --judge M --out suite.json   a test suite written from documents
    nbeval demo [--out DIR] [--verbose]
    nbeval diff BEFORE AFTER [--min-effect X] [--fail-on-regression] [--min-shared S]   two saved runs compared
    nbeval runs FOLDER                     the saved runs in a folder, newest first
    nbeval serve --host 127.0.0.1 --port 8080 --token T   the evaluation service (REST, DB-GPT compatible)

Exit status: 0 on success, 1 when the CI gate trips (``--fail-on-problems`` or ``--fail-on KINDS``:
threshold breaches, unrated rows, perturbation flips, errored rows, models and evaluators that
measured nothing; see :mod:`nbeval.results.reporting.gate`) or ``diff --fail-on-regression`` finds a
regression or compared nothing or too little (:mod:`nbeval.results.runs.diff_gate`), 2 on bad input,
130 when interrupted.

A thin adapter: this module holds the command line's grammar (:func:`build_parser`) and its
exit statuses (:func:`main`); what each command does is in :mod:`nbeval.cli_commands`, and what
it shares with the ``%nbeval`` magics and the service (the judge from the options and the
environment, the ``--out`` checks, saving a run, the gate, an evaluator as JSON) lives in
:mod:`nbeval.application`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from nbeval.application import (
    cli_terms,
    judge_error,
    judge_plan_text,
    matching_specs,
    no_match_note,
    spec_search_text,
)
from nbeval.cli_commands import (
    SavedInterrupt,
    complete_command,
    data_or_demo,
    demo_command,
    diff_command,
    evaluator_show_command,
    evaluators_command,
    generate_command,
    interrupted_note,
    perturb_command,
    perturbators_command,
    run_command,
    runs_command,
    serve_command,
)
from nbeval.errors import JudgeNotConfigured, NbevalError

__all__ = [
    "build_parser",
    "data_or_demo",
    "judge_error",
    "judge_plan_text",
    "main",
    "matching_specs",
    "no_match_note",
    "spec_search_text",
]


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        msg = f"expected a whole number of at least 1, got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _gate_kinds(text: str) -> tuple[str, ...]:
    """``--fail-on`` value: comma-separated kinds from :data:`~nbeval.results.reporting.gate.GATE_KINDS`."""
    from nbeval.results.reporting.gate import parse_gate_kinds

    try:
        return parse_gate_kinds(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _prices(text: str) -> dict[str, tuple[float, ...]]:
    """``--prices`` value: :func:`~nbeval.application.read_prices` (a JSON or YAML file, or JSON text)."""
    from nbeval.application import read_prices

    try:
        return read_prices(text)
    except NbevalError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--prices ").removeprefix("--prices: ")) from None


def _add_prices(parser: argparse.ArgumentParser) -> None:
    from nbeval.application import PRICES_HELP

    parser.add_argument("--prices", type=_prices, metavar="FILE_OR_JSON", help=PRICES_HELP)


def build_parser() -> argparse.ArgumentParser:
    from nbeval import __version__

    p = argparse.ArgumentParser(prog="nbeval", description="Evaluate LLM and RAG applications.")
    p.add_argument(
        "--version", action="version", version=f"nbeval {__version__}", help="print nbeval's version and exit"
    )
    sub = p.add_subparsers(dest="command", required=True)

    cat = sub.add_parser("evaluators", help="list the evaluator catalogue")
    cat.add_argument(
        "text",
        nargs="*",
        help="keep the evaluators whose id, family, kind, inputs, metrics or "
        "description contain every word (case-insensitive)",
    )
    cat.add_argument("--family", help="only this family (deterministic, embedding, judge, ...)")
    cat.add_argument("--json", action="store_true", help="machine-readable output")
    cat.set_defaults(func=evaluators_command)

    one = sub.add_parser("evaluator", help="show one evaluator")
    one_sub = one.add_subparsers(dest="action", required=True)
    show = one_sub.add_parser("show", help="show an evaluator's inputs, metrics and prompt")
    show.add_argument("id", help="the evaluator's id (`nbeval evaluators` lists them)")
    show.set_defaults(func=evaluator_show_command)

    run = sub.add_parser(
        "run",
        help="evaluate a dataset or lab file (a suite has no answers yet: `nbeval complete` it first)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "CI gate: with --fail-on-problems (or --fail-on KINDS) the exit status is 1 when the result\n"
            "has a problem of a chosen kind, and one line per kind says what tripped it:\n"
            "  threshold  a model's aggregate of an evaluator's primary metric is on the wrong side of\n"
            "             its threshold\n"
            "  unrated    some rows could not be rated (the judge's reply could not be parsed, or a\n"
            "             regexp() condition timed out): they are neither passes nor fails, the\n"
            "             aggregates are measured without them (n/N), and they trip the gate by default\n"
            "             as 'unrated', not as failed rows; --fail-on threshold,flip lets them through\n"
            "  flip       a perturbed test case passes where its original fails, or the reverse\n"
            "  errored    rows whose call (to the judge, a model) or scoring failed; the line names\n"
            "             the commonest errors\n"
            "  unmeasured a model and evaluator measured on none of its rows (all errored, skipped\n"
            "             or unrated); every row skipped for an optional input it lacks is fine,\n"
            "             unless the whole run measured nothing\n"
            "A run that measured nothing at all fails every gate, whatever --fail-on chooses.\n"
            "Exit status: 0 on success, 1 when the gate trips, 2 on bad input."
        ),
    )
    run.add_argument(
        "data",
        help="JSON, JSONL, CSV or Parquet file in any shape nbeval reads, or `demo` for the "
        "shipped demo lab (a file named demo in the current folder wins)",
    )
    run.add_argument("-e", "--evaluators", required=True, help="comma-separated evaluator ids")
    run.add_argument("--out", default="nbeval-out", help="folder for the saved result and report.html")
    run.add_argument(
        "--judge",
        action="append",
        metavar="MODEL",
        help="judge model name (OpenAI-compatible endpoint); repeat it for a jury (--judge a --judge b: every "
        "judge rates every row and the majority verdict wins, as judge=[...] in Python)",
    )
    run.add_argument(
        "--judge-base-url",
        action="append",
        metavar="URL",
        help="base URL of the judge's endpoint, for --judge or NBEVAL_JUDGE_MODEL (default: NBEVAL_JUDGE_BASE_URL); "
        "with a jury, once for every judge or once per --judge, in the same order",
    )
    run.add_argument("--embedder", help="sentence-transformers model name or path")
    run.add_argument("--device", help="cpu, cuda, ... (default: automatic)")
    run.add_argument("--no-cache", action="store_true", help="do not use the judge reply cache")
    run.add_argument("--dry-run", action="store_true", help="count rows and judge calls; score nothing")
    run.add_argument(
        "--scheduler",
        help="Dask scheduler address (tcp://host:8786): score the rows on its workers "
        "(pip install 'nbeval[dask]'); gives up after NBEVAL_SCHEDULER_TIMEOUT seconds (default 10) "
        "if no scheduler answers there",
    )
    gate = run.add_mutually_exclusive_group()
    gate.add_argument(
        "--fail-on-problems",
        action="store_const",
        const=True,
        default=None,
        help="exit 1 when any problem is found: threshold breaches, unrated rows, flips, "
        "errored rows, models and evaluators that measured nothing (for CI)",
    )
    gate.add_argument(
        "--fail-on",
        dest="fail_on_problems",
        type=_gate_kinds,
        metavar="KINDS",
        help="exit 1 only on problems of these kinds (comma-separated, from the list below); "
        "the others are listed but do not fail the run",
    )
    run.add_argument(
        "--batch",
        action="store_true",
        help="send the judge calls through the endpoint's Batch API (about half the price, answers within "
        "hours; interrupted, run the same command again to resume waiting)",
    )
    _add_prices(run)
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(func=run_command)

    comp = sub.add_parser("complete", help="ask models to answer a suite and write the completed lab")
    comp.add_argument("suite", help="test suite JSON")
    comp.add_argument(
        "-m",
        "--model",
        action="append",
        required=True,
        help="model name at the OpenAI-compatible endpoint (repeat for several), or hf:<path>",
    )
    comp.add_argument("--base-url", help="endpoint base URL (else NBEVAL_JUDGE_BASE_URL / OpenAI)")
    comp.add_argument("--system-prompt", help="system message sent before every prompt")
    comp.add_argument("--concurrency", type=_positive_int, default=8, help="models asked at once (at least 1)")
    comp.add_argument("--out", default="lab.json", help="where to write the completed lab")
    comp.add_argument("--no-cache", action="store_true", help="do not reuse cached answers")
    comp.add_argument("--dry-run", action="store_true", help="count the calls; ask nothing")
    comp.add_argument(
        "--batch",
        action="store_true",
        help="ask through the endpoint's Batch API (about half the price, answers within hours; "
        "interrupted, run the same command again to resume waiting)",
    )
    _add_prices(comp)
    comp.add_argument("--no-progress", action="store_true", help="no progress bar")
    comp.set_defaults(func=complete_command)

    pert = sub.add_parser("perturb", help="write a suite with perturbed copies of a suite's test cases")
    pert.add_argument(
        "suite",
        help="test suite, lab or dataset file (its test cases are perturbed), or `demo` "
        "for the shipped demo lab (a file named demo in the current folder wins)",
    )
    pert.add_argument(
        "-p", "--perturbators", required=True, help="comma-separated perturbator ids (`nbeval perturbators` lists them)"
    )
    pert.add_argument(
        "--intensity",
        choices=("low", "medium", "high"),
        default="low",
        help="how much each perturbation changes (default: low)",
    )
    pert.add_argument("--seed", type=int, default=0, help="random seed; the same seed writes the same suite")
    pert.add_argument("--no-originals", action="store_true", help="write only the perturbed test cases")
    pert.add_argument(
        "--judge", help="the model the LLM perturbators (llm_*) ask to write the attacks (OpenAI-compatible endpoint)"
    )
    pert.add_argument(
        "--judge-base-url",
        help="base URL of the judge's endpoint, for --judge or NBEVAL_JUDGE_MODEL (default: NBEVAL_JUDGE_BASE_URL)",
    )
    pert.add_argument(
        "--dry-run", action="store_true", help="count the cases and the LLM perturbators' calls; ask and write nothing"
    )
    _add_prices(pert)
    pert.add_argument("--out", default="perturbed.json", help="where to write the suite")
    pert.set_defaults(func=perturb_command)

    gen = sub.add_parser("generate", help="write a test suite from documents with a judge model")
    gen.add_argument("documents", nargs="+", help="files or folders to write questions from (.txt, .md, .html, .pdf)")
    gen.add_argument("-n", "--cases", type=_positive_int, default=20, help="test cases to write (default: 20)")
    gen.add_argument(
        "--kinds",
        default="single_hop,multi_hop",
        help="comma-separated kinds of question: single_hop (one chunk answers it), multi_hop (it needs "
        "two related chunks) (default: both, in equal numbers)",
    )
    gen.add_argument(
        "--persona",
        action="append",
        metavar="NAME[: DESCRIPTION]",
        help="who asks the questions, e.g. 'new employee: started this week' (repeat for several)",
    )
    gen.add_argument("--seed", type=int, default=0, help="random seed; the same seed writes the same suite")
    gen.add_argument(
        "--chunk-size", type=_positive_int, default=1000, help="characters per chunk of a document (default: 1000)"
    )
    gen.add_argument(
        "--max-chars",
        type=_positive_int,
        default=1_000_000,
        help="the most characters of one document; past it reading stops with an error (default: 1000000)",
    )
    gen.add_argument("--max-pages", type=_positive_int, default=1_000, help="the most pages of one PDF (default: 1000)")
    gen.add_argument("--judge", help="the model that writes the questions (OpenAI-compatible endpoint)")
    gen.add_argument(
        "--judge-base-url",
        help="base URL of the judge's endpoint, for --judge or NBEVAL_JUDGE_MODEL (default: NBEVAL_JUDGE_BASE_URL)",
    )
    gen.add_argument("--out", default="generated.json", help="where to write the suite (default: generated.json)")
    gen.add_argument("--no-cache", action="store_true", help="do not reuse cached judge replies")
    gen.add_argument("--dry-run", action="store_true", help="count the judge calls and tokens; ask nothing")
    gen.add_argument("--no-progress", action="store_true", help="no progress bar")
    gen.add_argument(
        "--batch",
        action="store_true",
        help="ask the judge through its endpoint's Batch API (about half the price, answers within hours; "
        "interrupted, run the same command again to resume waiting)",
    )
    _add_prices(gen)
    gen.set_defaults(func=generate_command)

    perts = sub.add_parser("perturbators", help="list the perturbators")
    perts.add_argument("--json", action="store_true", help="machine-readable output")
    perts.set_defaults(func=perturbators_command)

    demo = sub.add_parser("demo", help="evaluate the shipped demo lab offline")
    demo.add_argument("--out", default="nbeval-demo", help="folder for the saved result and report.html")
    demo.add_argument("--no-embedding", action="store_true", help="skip embedding evaluators (faster)")
    demo.add_argument("--no-progress", action="store_true", help="no progress bar")
    demo.add_argument(
        "--verbose",
        action="store_true",
        help="print the full summary (every metric with its interval, each problem), not the brief one",
    )
    demo.set_defaults(func=demo_command)

    dif = sub.add_parser("diff", help="compare two saved runs: regressions, improvements, flipped rows")
    dif.add_argument("before", help="the earlier run's result folder")
    dif.add_argument("after", help="the later run's result folder")
    dif.add_argument(
        "--min-effect",
        type=float,
        default=0.0,
        help="a significant change smaller than this is not called a regression (default 0)",
    )
    dif.add_argument("--alpha", type=float, default=0.05, help="significance level after Holm (default 0.05)")
    dif.add_argument(
        "--fail-on-regression",
        action="store_true",
        help="exit 1 on a regression, and when nothing or too little was compared (for CI)",
    )
    dif.add_argument(
        "--min-shared",
        type=float,
        default=None,
        help="with --fail-on-regression, fail when the rows measured in both runs are fewer than this share "
        "of the rows either run measured, per model and evaluator (default 0.5)",
    )
    dif.add_argument("--json", action="store_true", help="machine-readable output")
    dif.set_defaults(func=diff_command)

    rns = sub.add_parser("runs", help="list the saved runs in a folder, newest first")
    rns.add_argument("folder", help="a folder holding saved result folders")
    rns.add_argument("--json", action="store_true", help="machine-readable output")
    rns.set_defaults(func=runs_command)

    srv = sub.add_parser(
        "serve",
        help="run the evaluation service: nbeval's REST API and DB-GPT's endpoint",
        description="Every route but GET /health needs 'Authorization: Bearer TOKEN'. "
        "API docs at /docs and /openapi.json.",
    )
    srv.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    srv.add_argument("--port", type=int, default=8080, help="port (default: 8080)")
    srv.add_argument(
        "--token",
        help="the bearer token clients must send (default: NBEVAL_SERVE_TOKEN, which "
        "other users cannot read from the process list)",
    )
    srv.add_argument(
        "--no-auth", action="store_true", help="no token at all; allowed only on a loopback --host such as 127.0.0.1"
    )
    srv.add_argument(
        "--retriever",
        help="retriever for DB-GPT recall scenes: module:function or an entry point "
        "in nbeval.retrievers, called as retriever(query, top_k)",
    )
    srv.add_argument(
        "--documents",
        help="a document's chunks for DB-GPT recall scenes (the texts answers carry as "
        "contexts): module:function or an entry point in nbeval.documents, "
        "called as documents(doc_name)",
    )
    srv.add_argument(
        "--app",
        help="application for DB-GPT app scenes: module:function or an entry point in "
        "nbeval.apps, called as app(query)",
    )
    srv.add_argument(
        "--app-base-url", help="or: the application's OpenAI-compatible endpoint (key: NBEVAL_APP_API_KEY)"
    )
    srv.add_argument("--app-model", help="model name at --app-base-url (a request's context.model overrides it)")
    srv.add_argument("--judge", help="judge model name for judge evaluators (OpenAI-compatible endpoint)")
    srv.add_argument("--judge-base-url", help="base URL of the judge's endpoint (default: NBEVAL_JUDGE_BASE_URL)")
    srv.add_argument(
        "--max-body-bytes",
        type=_positive_int,
        default=16 * 2**20,
        help="larger request bodies are refused with 413 (default: 16 MiB)",
    )
    srv.add_argument("--workers", type=_positive_int, default=2, help="evaluations run at once (default: 2)")
    srv.add_argument(
        "--data-dir", help="where jobs and their results are kept across restarts (default: ~/.cache/nbeval/serve)"
    )
    srv.add_argument("--keep-jobs", type=_positive_int, default=200, help="finished jobs kept (default: 200)")
    srv.add_argument(
        "--keep-bytes",
        type=_positive_int,
        default=2**30,
        help="bytes of finished results kept; the oldest go first (default: 1 GiB)",
    )
    srv.add_argument(
        "--max-scores",
        type=_positive_int,
        default=100_000,
        help="the most scores (rows x evaluators) one request may ask for (default: 100000)",
    )
    srv.add_argument(
        "--max-judge-calls",
        type=_positive_int,
        default=10_000,
        help="the most judge calls one request may plan, counted as the dry run does (default: 10000)",
    )
    srv.add_argument(
        "--max-judge-tokens",
        type=_positive_int,
        default=4096,
        help="the most judge_params.max_tokens a request may ask for (default: 4096)",
    )
    srv.add_argument(
        "--allow-models",
        action="store_true",
        help="let requests use evaluators that load a local model (downloaded if not cached)",
    )
    srv.add_argument(
        "--max-queued",
        type=_positive_int,
        default=64,
        help="evaluations that may wait for a worker; past them a request gets 503 with Retry-After "
        "(default: 64; waiting requests are kept on disk, under --data-dir)",
    )
    srv.add_argument(
        "--limit-concurrency",
        type=_positive_int,
        default=200,
        help="connections held at most (fewer if ulimit -n is low): a new one pushes out those "
        "waiting longest for a request head, or gets 503 when all are busy (default: 200)",
    )
    srv.add_argument(
        "--timeout-keep-alive",
        type=_positive_int,
        default=5,
        help="seconds an idle keep-alive connection stays open (default: 5)",
    )
    srv.add_argument(
        "--header-timeout",
        type=_positive_int,
        default=10,
        help="seconds a client has to send a whole request head (default: 10)",
    )
    srv.add_argument(
        "--body-timeout",
        type=_positive_int,
        default=60,
        help="seconds a client has, from its request head, to send the whole body; then 408 (default: 60)",
    )
    srv.add_argument(
        "--max-header-bytes",
        type=_positive_int,
        default=64 * 1024,
        help="the largest request head accepted (default: 64 KiB)",
    )
    srv.set_defaults(func=serve_command)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except JudgeNotConfigured as exc:  # named in the CLI's terms: --judge, not judge=...
        print(f"nbeval: error: {judge_error(exc)}", file=sys.stderr)
        return 2
    except NbevalError as exc:  # in the CLI's terms too: --batch, --no-cache, not batch=True, cache=False
        print(f"nbeval: error: {cli_terms(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, no traceback; replies already received stay cached
        saved = f"{exc.note}; " if isinstance(exc, SavedInterrupt) and exc.note else ""
        print(f"nbeval: interrupted; {saved}{interrupted_note(exc)}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
