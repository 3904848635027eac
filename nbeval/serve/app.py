"""The service's routes: nbeval's own API under ``/v1`` and DB-GPT's evaluation endpoint.

::

    GET    /health                          open: is the service up
    GET    /v1/evaluators                   the catalogue
    POST   /v1/evaluations                  evaluate records or a lab; small runs answer at once
    GET    /v1/evaluations                  the jobs remembered
    GET    /v1/evaluations/{id}             a job: status, progress, and its result once finished
                                            (``scores`` a page at a time: ``?offset=&limit=``)
    DELETE /v1/evaluations/{id}             cancel a job
    GET    /v1/evaluations/{id}/report      the HTML report of a finished job
    POST   /api/v2/serve/evaluate/evaluation  DB-GPT's request and answer (see nbeval.serve.dbgpt)
    GET    /openapi.json, /docs, /redoc     the OpenAPI document and its pages (see nbeval.serve.docs)

Every route but ``/health`` needs ``Authorization: Bearer <token>``, or in a browser the cookie
the docs' sign-in form sets (see :mod:`nbeval.serve.guard`).
What a request may set is in :mod:`nbeval.serve.policy`, how its body is read in
:mod:`nbeval.serve.bodies`; jobs are kept as :mod:`nbeval.serve.jobs` says.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse

from nbeval._version import __version__
from nbeval.application import spec_dict
from nbeval.errors import DataError, NbevalError
from nbeval.options import RunOptions
from nbeval.serve.bodies import (
    EvaluationRequest,
    EvaluatorChoice,
    StrictJSONRoute,
    field_message,
    refused,
    request_errors,
    strict_json,
)
from nbeval.serve.budget import DEFAULT_MAX_JUDGE_CALLS, BoundedResources
from nbeval.serve.dbgpt import (
    DbgptRequest,
    ServiceUnavailable,
    dbgpt_data,
    dbgpt_evaluators,
    envelope,
    prepare_dbgpt,
)
from nbeval.serve.docs import add_docs
from nbeval.serve.guard import Guard
from nbeval.serve.hooks import (
    APP_GROUP,
    DOCUMENTS_GROUP,
    RETRIEVER_GROUP,
    CallableApp,
    EndpointApp,
    load_callable,
)
from nbeval.serve.jobs import Job, JobStore, QueueFull
from nbeval.serve.policy import (
    DEFAULT_MAX_TOKENS,
    SERVER_PARAMS,
    error_text,
)

__all__ = [
    "DBGPT_PATH",
    "SERVER_PARAMS",
    "EvaluationRequest",
    "EvaluatorChoice",
    "StrictJSONRoute",
    "create_app",
    "strict_json",
]

#: The path at which DB-GPT's evaluation API is served, for clients written against DB-GPT.
DBGPT_PATH = "/api/v2/serve/evaluate/evaluation"


def _as_app(app: Any) -> CallableApp | EndpointApp | None:
    if app is None or isinstance(app, (CallableApp, EndpointApp)):
        return app
    if isinstance(app, str):
        return CallableApp(load_callable(app, APP_GROUP, "application"))
    if callable(app):
        return CallableApp(app)
    msg = f"app must be a function, 'module:function', or an EndpointApp, not {type(app).__name__}"
    raise NbevalError(msg)


# ruff counts every route closure's branches in create_app; each route on its own is small.
def create_app(  # noqa: C901
    *,
    token: str | None,
    retriever: Callable[..., Any] | str | None = None,
    app: Any = None,
    documents: Callable[..., Any] | str | None = None,
    judge: Any = None,
    embedder: Any = None,
    device: str | None = None,
    cache: Any = False,
    max_body_bytes: int = 16 * 2**20,
    wait_rows: int = 200,
    workers: int = 2,
    chunk_rows: int = 32,
    keep_jobs: int = 200,
    keep_bytes: int = 2**30,
    data_dir: str | Path | None = None,
    max_scores: int = 100_000,
    page_scores: int = 1000,
    max_judge_tokens: int = DEFAULT_MAX_TOKENS,
    allow_models: bool = False,
    max_queued: int = 64,
    max_judge_calls: int = DEFAULT_MAX_JUDGE_CALLS,
) -> FastAPI:
    """The service as an ASGI application (run it with uvicorn).

    ``token``: the bearer token every route but ``/health`` requires (``None``: no authentication;
    :func:`nbeval.serve.server.serve` allows that only on a loopback address). ``retriever``: a
    function, ``module:function`` or an entry-point name, for ``recall`` scenes. ``documents``: the
    same, called as ``documents(doc_name)`` for a document's chunks, the texts DB-GPT's answers
    carry as ``contexts`` (see :mod:`nbeval.serve.dbgpt`). ``app``: the
    application of ``app`` scenes: a function, ``module:function``, an entry-point name or an
    :class:`~nbeval.serve.hooks.EndpointApp`. ``judge``, ``embedder``, ``device``, ``cache``: every
    run's shared resources, as for :func:`nbeval.evaluate`. ``max_body_bytes``: larger requests are
    refused with 413. ``wait_rows``: a request that does not say ``wait`` is answered when finished
    if it has at most this many dataset rows, else at once with a job id. ``workers`` runs go at
    once; ``chunk_rows`` rows are scored between two progress updates.

    Jobs are kept under ``data_dir`` (default :func:`~nbeval.serve.jobs.default_data_dir`): at
    most ``keep_jobs`` finished jobs and ``keep_bytes`` of result folders, the oldest forgotten
    first; they survive a restart. At most ``max_queued`` jobs wait for a worker (their requests
    on disk, not in memory); past them a request gets 503 with ``Retry-After``. A request may
    make at most ``max_scores`` scores (dataset rows × evaluators; 422 beyond). A job's
    ``scores`` are served ``page_scores`` at a time unless the client asks for fewer. A request
    may plan at most ``max_judge_calls`` judge calls (counted as the dry run counts them, before
    any is made; 422 beyond: see :mod:`~nbeval.serve.budget`).
    ``max_judge_tokens``: the most ``judge_params.max_tokens`` a request may ask for.
    ``allow_models``: let requests use evaluators that load a local model (or the default
    embedder when ``embedder`` is not given); without it they are refused, so no request makes
    the server load or download a model.
    """
    retriever_fn = load_callable(retriever, RETRIEVER_GROUP, "retriever") if isinstance(retriever, str) else retriever
    documents_fn = (
        load_callable(documents, DOCUMENTS_GROUP, "documents function") if isinstance(documents, str) else documents
    )
    application = _as_app(app)
    # the runs' options, built (and checked) once; each job's calls are bounded as it runs too:
    # the plan's count of later calls is an estimate
    run_options = RunOptions(judge=judge, embedder=embedder, device=device, cache=cache)
    store = JobStore(
        lambda: BoundedResources.from_options(run_options, max_calls=max_judge_calls),
        data_dir=data_dir,
        workers=workers,
        keep=keep_jobs,
        keep_bytes=keep_bytes,
        chunk_rows=chunk_rows,
        max_queued=max_queued,
    )

    def refusals(specs: list[Any], rows: int | None) -> JSONResponse | None:
        errors = request_errors(
            specs, max_tokens=max_judge_tokens, has_embedder=embedder is not None, allow_models=allow_models
        )
        if errors:
            detail = [{"loc": ["body", *f.split(".")], "msg": m, "type": "value_error"} for f, m in errors]
            message = "; ".join(f"body.{f}: {m}" for f, m in errors)
            return JSONResponse({"detail": detail, "message": message}, status_code=422)
        if rows is not None and rows * len(specs) > max_scores:
            return refused(
                "data",
                f"{rows} rows × {len(specs)} evaluators is over this server's limit of "
                f"{max_scores} scores per request; split the data",
            )
        return None

    def start_job(data: Any, evaluators: list[Any]) -> Job:
        job = store.start(data, evaluators, max_scores=max_scores, max_judge_calls=max_judge_calls)
        return job

    def shown(job: Job, offset: int = 0, limit: int | None = None) -> dict[str, Any]:
        limit = page_scores if limit is None else limit
        return job.view(store.scores(job, offset, limit), offset=offset, limit=limit)

    def queue_full(exc: QueueFull, body: dict[str, Any] | None = None) -> JSONResponse:
        return JSONResponse(
            body or {"detail": str(exc), "message": str(exc)},
            status_code=503,
            headers={"Retry-After": str(exc.retry_after)},
        )

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        yield
        store.shutdown()

    api = FastAPI(
        title="nbeval evaluation service",
        version=__version__,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,  # nbeval.serve.docs serves them, with no CDN
        description="Evaluate LLM and RAG applications over HTTP. Every route but /health needs "
        "`Authorization: Bearer <token>`; in a browser, signing in on /docs sets a "
        "cookie that stands in for it.",
    )
    api.router.route_class = StrictJSONRoute  # NaN and Infinity are not JSON: 422
    api.state.jobs = store
    api.state.limits = {
        "max_scores": max_scores,
        "max_judge_calls": max_judge_calls,
        "page_scores": page_scores,
        "max_judge_tokens": max_judge_tokens,
        "allow_models": allow_models,
    }

    @api.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        from fastapi.encoders import jsonable_encoder

        raw = exc.errors()
        errors = jsonable_encoder(raw, exclude={"input", "ctx", "url"})
        for shown_error, e in zip(errors, raw, strict=True):
            why = (e.get("ctx") or {}).get("error") if e.get("type") == "json_invalid" else None
            if why:  # say what is wrong with the JSON, not only that something is
                shown_error["msg"] = f"{shown_error.get('msg', 'invalid JSON')}: {why}"
        message = field_message(errors)
        body = {"detail": errors, "message": message}
        if request.url.path == DBGPT_PATH:
            body = {**envelope(error=message, code="E422"), **body}
        return JSONResponse(body, status_code=422)

    def _job_or_404(job_id: str) -> Job | JSONResponse:
        job = store.get(job_id)
        if job is None:
            return JSONResponse({"detail": f"no evaluation {job_id!r} (unknown, or forgotten)"}, status_code=404)
        return job

    # Routes that do not block are async: they are answered even while every worker thread waits.
    @api.get("/health", tags=["service"])
    async def health() -> dict[str, Any]:
        """Whether the service is up; needs no token."""
        return {"status": "ok", "version": __version__}

    @api.get("/v1/evaluators", tags=["nbeval"])
    def evaluators(family: str | None = None) -> list[dict[str, Any]]:
        """The evaluator catalogue, optionally one family."""
        from nbeval.evaluators.registry import list_evaluators

        return [spec_dict(s) for s in list_evaluators(family)]

    @api.post(
        "/v1/evaluations",
        tags=["nbeval"],
        status_code=200,
        responses={
            202: {"description": "accepted: poll GET /v1/evaluations/{id}"},
            422: {"description": "a bad request: the message names the field, row or evaluator"},
        },
    )
    async def start_evaluation(req: EvaluationRequest) -> JSONResponse:
        """Evaluate ``data`` or ``lab`` with ``evaluators``.

        Finished runs answer 200 with ``scores`` (the long table) and ``leaderboards``; others 202 with the job to poll.
        """
        specs = [e if isinstance(e, str) else (e.id, e.params) for e in req.evaluators]
        refused = refusals(specs, len(req.data) if req.data is not None else None)
        if refused is not None:
            return refused

        def start() -> Job:
            if req.lab is not None:
                from nbeval.data.model import TestLab

                return start_job(TestLab.from_json(req.lab), req.evaluator_specs())
            return start_job(req.data, req.evaluator_specs())

        try:
            job = await run_in_threadpool(start)  # reading and planning the rows takes time on large runs
        except QueueFull as exc:
            return queue_full(exc)
        except NbevalError as exc:
            field = ("data" if req.data is not None else "lab") if isinstance(exc, DataError) else "evaluators"
            text = error_text(exc)
            detail = [{"loc": ["body", field], "msg": text, "type": type(exc).__name__}]
            return JSONResponse({"detail": detail, "message": f"body.{field}: {text}"}, status_code=422)
        wait = req.wait if req.wait is not None else job.rows <= wait_rows
        while wait and not job.ended.is_set():  # waiting holds no thread
            await asyncio.sleep(0.02)
        return JSONResponse(
            shown(job),
            status_code=200 if job.ended.is_set() else 202,
            headers={"Location": f"/v1/evaluations/{job.id}"},
        )

    @api.get("/v1/evaluations", tags=["nbeval"])
    async def list_evaluations() -> list[dict[str, Any]]:
        """Every job remembered, oldest first, without results."""
        return [j.view(with_result=False) for j in store.jobs()]

    @api.get("/v1/evaluations/{job_id}", tags=["nbeval"], responses={404: {"description": "no such job"}})
    def get_evaluation(
        job_id: str,
        offset: int = Query(0, ge=0, description="first record of scores"),
        limit: int | None = Query(
            None, ge=1, le=max(page_scores, 1), description=f"records of scores (default {page_scores})"
        ),
    ) -> Any:
        """A job's status and progress, and its result once finished.

        Progress is ``done`` of ``total`` scores; the result is the ``leaderboards`` and a page of
        ``scores`` (``scores_page.next`` is the next page).
        """
        found = _job_or_404(job_id)
        return shown(found, offset, limit) if isinstance(found, Job) else found

    @api.delete("/v1/evaluations/{job_id}", tags=["nbeval"], responses={404: {"description": "no such job"}})
    async def cancel_evaluation(job_id: str) -> Any:
        """Cancel a job: it stops after the chunk in progress, and keeps what was scored."""
        store.cancel(job_id)
        found = _job_or_404(job_id)
        return found.view(with_result=False) if isinstance(found, Job) else found

    @api.get(
        "/v1/evaluations/{job_id}/report",
        tags=["nbeval"],
        response_class=HTMLResponse,
        responses={404: {"description": "no such job"}, 409: {"description": "not finished yet"}},
    )
    def report(job_id: str) -> Any:
        """The finished job's self-contained HTML report."""
        found = _job_or_404(job_id)
        if not isinstance(found, Job):
            return found
        result = store.result(found)
        if result is None:
            return JSONResponse({"detail": f"evaluation {job_id} is {found.status}; it has no report"}, status_code=409)
        return HTMLResponse(result.to_html())

    @api.post(DBGPT_PATH, tags=["DB-GPT"])
    async def dbgpt_evaluation(req: DbgptRequest) -> JSONResponse:
        """Answer DB-GPT's evaluation request in DB-GPT's envelope.

        The request holds ``scene_key``, ``scene_value``, ``context``, ``evaluate_metrics`` and
        ``datasets``.
        """
        try:
            errors = request_errors(
                dbgpt_evaluators(req),
                max_tokens=max_judge_tokens,
                has_embedder=embedder is not None,
                allow_models=allow_models,
            )
            if errors:
                return JSONResponse(envelope(error="; ".join(m for _, m in errors), code="E422"), status_code=422)
            run = await run_in_threadpool(
                prepare_dbgpt, req, retriever=retriever_fn, app=application, documents=documents_fn
            )
            job = await run_in_threadpool(start_job, run.records, run.evaluators)
        except ServiceUnavailable as exc:
            return JSONResponse(envelope(error=str(exc), code="E501"), status_code=501)
        except QueueFull as exc:
            return queue_full(exc, envelope(error=str(exc), code="E503"))
        except NbevalError as exc:
            return JSONResponse(envelope(error=error_text(exc), code="E422"), status_code=422)
        while not job.ended.is_set():
            await asyncio.sleep(0.02)
        if not job.has_result:
            return JSONResponse(
                envelope(error=job.error or f"the evaluation ended {job.status}", code="E500"), status_code=500
            )
        scores = await run_in_threadpool(store.scores, job)
        return JSONResponse(envelope(dbgpt_data(req, run, {"scores": scores})))

    def openapi() -> dict[str, Any]:
        """FastAPI's document, plus the bearer scheme every route but /health requires."""
        if api.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(title=api.title, version=api.version, description=api.description, routes=api.routes)
            if token is not None:
                bearer = {"bearer": {"type": "http", "scheme": "bearer"}}
                schema.setdefault("components", {})["securitySchemes"] = bearer
                schema["security"] = [{"bearer": []}]
                schema["paths"]["/health"]["get"]["security"] = []
            api.openapi_schema = schema
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]
    add_docs(api, token=token)
    api.add_middleware(Guard, token=token, max_body_bytes=max_body_bytes)
    return api
