"""``nbeval generate DOCS… -n N`` and ``%nbeval generate``: a test suite written from documents."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

from nbeval.commands.base import Arg, Command, MagicSpelling, arg
from nbeval.commands.notebook import DEFAULT_GENERATED
from nbeval.commands.shared import (
    batch_arg,
    changed_options,
    judge_args,
    no_cache_arg,
    no_progress_arg,
    positive_int,
    prices_arg,
)

__all__ = ["COMMAND", "Generate"]


class Generate(Command):
    """Write (in a notebook: bind) a test suite the judge writes from documents."""

    name = "generate"
    help = "write a test suite from documents with a judge model"
    order = 6
    arguments: tuple[Arg, ...] = (
        arg("documents", nargs="+", help="files or folders to write questions from (.txt, .md, .html, .pdf)"),
        arg("-n", "--cases", type=positive_int, default=20, help="test cases to write (default: 20)"),
        arg(
            "--kinds",
            default="single_hop,multi_hop",
            help="comma-separated kinds of question: single_hop (one chunk answers it), multi_hop (it needs "
            "two related chunks) (default: both, in equal numbers)",
        ),
        arg(
            "--persona",
            action="append",
            metavar="NAME[: DESCRIPTION]",
            help="who asks the questions, e.g. 'new employee: started this week' (repeat for several)",
        ),
        arg("--seed", type=int, default=0, help="random seed; the same seed writes the same suite"),
        arg(
            "--chunk-size",
            type=positive_int,
            default=1000,
            help="characters per chunk of a document (default: 1000)",
        ),
        arg(
            "--max-chars",
            type=positive_int,
            default=1_000_000,
            metavar="N",
            help="the most characters of one document; past it reading stops with an error (default: 1000000)",
        ),
        arg("--max-pages", type=positive_int, default=1_000, help="the most pages of one PDF (default: 1000)"),
        *judge_args(
            "the model that writes the questions (OpenAI-compatible endpoint)",
            "base URL of the judge's endpoint, for --judge or NBEVAL_JUDGE_MODEL (default: NBEVAL_JUDGE_BASE_URL)",
        ),
        arg("--out", default="generated.json", help="where to write the suite (default: generated.json)"),
        no_cache_arg("do not reuse cached judge replies"),
        arg("--dry-run", action="store_true", help="count the judge calls and tokens; ask nothing"),
        no_progress_arg(),
        batch_arg(
            "ask the judge through its endpoint's Batch API (about half the price, answers within hours; "
            "interrupted, run the same command again to resume waiting)"
        ),
        prices_arg(),
    )
    magic = MagicSpelling(
        "generate",
        "a test suite written from DOCS (files, folders or variables) by the judge: -n N [--dry-run] [--batch]",
        order=7,
        help={
            "documents": "files or folders (.txt, .md, .html, .pdf), or variables holding paths, texts or "
            "{'content', 'doc_uri'} dicts",
            "out": "also write the suite to this JSON file (default: write nothing)",
        },
        defaults={"out": None},
        extra=(
            arg(
                "-o",
                "--name",
                dest="bind_name",
                default=DEFAULT_GENERATED,
                metavar="NAME",
                help=f"bind the suite to this variable (default: {DEFAULT_GENERATED})",
            ),
        ),
    )

    def keywords(self, args: argparse.Namespace) -> dict[str, Any]:
        """Return the parsed options as :func:`nbeval.generate`'s keyword arguments.

        The options are the CLI's or the magic's: the function's own, and the run options the flags
        set.
        """
        personas = []
        for text in args.persona or []:
            name, _, description = text.partition(":")
            personas.append({"name": name.strip(), "description": description.strip()})
        own: dict[str, Any] = {
            "n": args.cases,
            "kinds": [k.strip() for k in args.kinds.split(",") if k.strip()],
            "personas": personas or None,
            "seed": args.seed,
            "chunk_size": args.chunk_size,
            "chunk_overlap": min(100, args.chunk_size // 10),
            "max_chars": args.max_chars,
            "max_pages": args.max_pages,
        }
        return {**own, **changed_options(self.run_options(args))}

    def run(self, args: argparse.Namespace) -> int:
        """Write the suite to ``--out`` (``--dry-run``: count the calls and tokens, ask nothing)."""
        import nbeval
        from nbeval import application
        from nbeval.data import jsonio
        from nbeval.generation import summary_lines
        from nbeval.results.storage.files import write_aside

        kwargs = self.keywords(args)
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

    def run_magic(self, shell: Any, args: argparse.Namespace) -> Any:
        """Generate the suite in a notebook, show it and bind it to ``-o NAME``.

        DOCS may name variables holding paths, texts or ``{content, doc_uri}`` dicts; ``--dry-run``
        shows the calls and tokens it would take.
        """
        import nbeval
        from nbeval import application
        from nbeval.commands.notebook import check_name, check_out, show
        from nbeval.generation import summary_lines

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
        kwargs = self.keywords(args)
        if args.dry_run:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                plan = nbeval.generate(documents, dry_run=True, **kwargs)
            for w in caught:
                print(f"nbeval: note: {w.message}")
            print(application.judge_plan_text(str(plan), magic=True))
            return None
        if args.out:  # a bad --out fails before any work
            check_out(Path(args.out))
            paths = [str(d) for d in documents if isinstance(d, (str, Path))]
            application.check_file_out(Path(args.out), paths, "suite")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            suite = nbeval.generate(documents, **kwargs)
        for w in caught:
            print(f"nbeval: note: {w.message}")
        shell.user_ns[name] = suite
        show(suite)
        for line in summary_lines(suite):
            print(line)
        if args.out:
            suite.save(args.out)
            print(f"wrote the suite to {args.out}")
        return None


#: The ``nbeval generate`` subcommand (``%nbeval generate`` too); :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Generate()
