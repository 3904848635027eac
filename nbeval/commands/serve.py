"""``nbeval serve``: the evaluation service (nbeval's REST API and DB-GPT's endpoint)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from nbeval.commands.base import Arg, Command, arg
from nbeval.commands.shared import judge_args, positive_int

__all__ = ["COMMAND", "Serve"]


class Serve(Command):
    """Run the evaluation service until it is stopped."""

    name = "serve"
    help = "run the evaluation service: nbeval's REST API and DB-GPT's endpoint"
    description = (
        "Every route but GET /health needs 'Authorization: Bearer TOKEN'. API docs at /docs and /openapi.json."
    )
    order = 11
    arguments: tuple[Arg, ...] = (
        arg("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)"),
        arg("--port", type=int, default=8080, help="port (default: 8080)"),
        arg(
            "--token",
            help="the bearer token clients must send (default: NBEVAL_SERVE_TOKEN, which "
            "other users cannot read from the process list)",
        ),
        arg(
            "--no-auth",
            action="store_true",
            help="no token at all; allowed only on a loopback --host such as 127.0.0.1",
        ),
        arg(
            "--retriever",
            help="retriever for DB-GPT recall scenes: module:function or an entry point "
            "in nbeval.retrievers, called as retriever(query, top_k)",
        ),
        arg(
            "--documents",
            help="a document's chunks for DB-GPT recall scenes (the texts answers carry as "
            "contexts): module:function or an entry point in nbeval.documents, "
            "called as documents(doc_name)",
        ),
        arg(
            "--app",
            help="application for DB-GPT app scenes: module:function or an entry point in "
            "nbeval.apps, called as app(query)",
        ),
        arg("--app-base-url", help="or: the application's OpenAI-compatible endpoint (key: NBEVAL_APP_API_KEY)"),
        arg("--app-model", help="model name at --app-base-url (a request's context.model overrides it)"),
        *judge_args(
            "judge model name for judge evaluators (OpenAI-compatible endpoint)",
            "base URL of the judge's endpoint (default: NBEVAL_JUDGE_BASE_URL)",
        ),
        arg(
            "--max-body-bytes",
            type=positive_int,
            default=16 * 2**20,
            help="larger request bodies are refused with 413 (default: 16 MiB)",
        ),
        arg("--workers", type=positive_int, default=2, help="evaluations run at once (default: 2)"),
        arg(
            "--data-dir", help="where jobs and their results are kept across restarts (default: ~/.cache/nbeval/serve)"
        ),
        arg("--keep-jobs", type=positive_int, default=200, help="finished jobs kept (default: 200)"),
        arg(
            "--keep-bytes",
            type=positive_int,
            default=2**30,
            help="bytes of finished results kept; the oldest go first (default: 1 GiB)",
        ),
        arg(
            "--max-scores",
            type=positive_int,
            default=100_000,
            help="the most scores (rows x evaluators) one request may ask for (default: 100000)",
        ),
        arg(
            "--max-judge-calls",
            type=positive_int,
            default=10_000,
            help="the most judge calls one request may plan, counted as the dry run does (default: 10000)",
        ),
        arg(
            "--max-judge-tokens",
            type=positive_int,
            default=4096,
            help="the most judge_params.max_tokens a request may ask for (default: 4096)",
        ),
        arg(
            "--allow-models",
            action="store_true",
            help="let requests use evaluators that load a local model (downloaded if not cached)",
        ),
        arg(
            "--max-queued",
            type=positive_int,
            default=64,
            help="evaluations that may wait for a worker; past them a request gets 503 with Retry-After "
            "(default: 64; waiting requests are kept on disk, under --data-dir)",
        ),
        arg(
            "--limit-concurrency",
            type=positive_int,
            default=200,
            help="connections held at most (fewer if ulimit -n is low): a new one pushes out those "
            "waiting longest for a request head, or gets 503 when all are busy (default: 200)",
        ),
        arg(
            "--timeout-keep-alive",
            type=positive_int,
            default=5,
            help="seconds an idle keep-alive connection stays open (default: 5)",
        ),
        arg(
            "--header-timeout",
            type=positive_int,
            default=10,
            help="seconds a client has to send a whole request head (default: 10)",
        ),
        arg(
            "--body-timeout",
            type=positive_int,
            default=60,
            help="seconds a client has, from its request head, to send the whole body; then 408 (default: 60)",
        ),
        arg(
            "--max-header-bytes",
            type=positive_int,
            default=64 * 1024,
            help="the largest request head accepted (default: 64 KiB)",
        ),
    )

    def run(self, args: argparse.Namespace) -> int:
        """Serve until stopped."""
        from nbeval.errors import NbevalError
        from nbeval.serve.hooks import EndpointApp
        from nbeval.serve.server import serve

        app: Any = args.app
        if args.app_base_url:
            if args.app:
                raise NbevalError("give --app or --app-base-url, not both")
            app = EndpointApp(args.app_base_url, args.app_model, api_key=os.environ.get("NBEVAL_APP_API_KEY"))
        elif args.app_model:
            raise NbevalError("--app-model names a model at --app-base-url; give --app-base-url too")
        judge = self.run_options(args).judge
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


#: The ``nbeval serve`` subcommand; :func:`nbeval.commands.all_commands` finds it here.
COMMAND = Serve()
