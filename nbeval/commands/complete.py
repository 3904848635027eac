"""``nbeval complete SUITE -m MODEL``: ask models to answer a suite and write the completed lab."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from nbeval.commands.base import Arg, Command, arg
from nbeval.commands.shared import batch_arg, no_cache_arg, no_progress_arg, positive_int, prices_arg

__all__ = ["COMMAND", "Complete"]


class Complete(Command):
    """Ask the models every test case of a suite; write the lab with their answers."""

    name = "complete"
    help = "ask models to answer a suite and write the completed lab"
    order = 4
    arguments: tuple[Arg, ...] = (
        arg("suite", help="test suite JSON"),
        arg(
            "-m",
            "--model",
            action="append",
            required=True,
            help="model name at the OpenAI-compatible endpoint (repeat for several), or hf:<path>",
        ),
        arg("--base-url", help="endpoint base URL (else NBEVAL_JUDGE_BASE_URL / OpenAI)"),
        arg("--system-prompt", help="system message sent before every prompt"),
        arg(
            "--concurrency",
            option="concurrency",
            type=positive_int,
            default=8,
            help="models asked at once (at least 1)",
        ),
        arg("--out", default="lab.json", help="where to write the completed lab"),
        no_cache_arg("do not reuse cached answers"),
        arg("--dry-run", action="store_true", help="count the calls; ask nothing"),
        batch_arg(
            "ask through the endpoint's Batch API (about half the price, answers within hours; "
            "interrupted, run the same command again to resume waiting)"
        ),
        prices_arg(),
        no_progress_arg(),
    )

    def run(self, args: argparse.Namespace) -> int:
        """Ask the models (``--dry-run``: count the calls), write the lab to ``--out``."""
        from nbeval import application
        from nbeval.chat.collect import collect
        from nbeval.cli_commands import saved_or_not
        from nbeval.data import jsonio
        from nbeval.data.model import TestSuite
        from nbeval.engine import Interrupted
        from nbeval.results.storage.files import write_aside

        if not args.dry_run:
            application.check_file_out(Path(args.out), [args.suite])
        options = self.run_options(args)
        suite = TestSuite.from_json(args.suite)
        models = {m: application.endpoint(m, args.base_url) for m in args.model}
        pending = collect(
            suite,
            models=models,
            system_prompt=args.system_prompt,
            concurrency=options.concurrency,
            cache=options.cache,
            batch=options.batch,
            **({"prices": options.prices} if options.prices else {}),
        )
        if args.dry_run:
            print(application.cli_terms(str(pending.plan())))
            return 0
        try:
            lab = pending.complete(progress=options.progress)
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
            f"asked {len(lab.models)} model(s) {len(suite.test_cases)} test case(s); "
            f"{len(errors)} failed; wrote {args.out}"
        )
        if errors:  # the commonest, in the CLI's terms (an endpoint with no Batch API: run without --batch)
            error, times = Counter(errors).most_common(1)[0]
            print(f"the commonest error ({times}x): {application.cli_terms(error)}")
        return 0


#: The ``nbeval complete`` subcommand; :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Complete()
