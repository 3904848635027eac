"""The DB-GPT evaluation endpoint: ``POST /api/v2/serve/evaluate/evaluation``.

A request names a scene (``recall``: evaluate a retriever; ``app``: evaluate an application's
answers), the scene's id (``scene_value``: a knowledge space, an app), settings (``context``:
``top_k``, ``prompt``, ``model``), metric names and a dataset of ``{query, doc_name}`` items.
DB-GPT's metric names map to nbeval evaluators (:data:`METRICS`); any other name is taken as an
nbeval evaluator id and reported on its primary metric.

The answer keeps DB-GPT's envelope, ``{"success", "err_code", "err_msg", "data"}``, where
``data`` holds one list per dataset item with one entry per metric, the fields of DB-GPT's
``EvaluationResult`` (``dbgpt/core/interface/evaluation.py``) filled as DB-GPT's own service
fills them: ``prediction`` (for ``recall`` the retrieved chunks' texts, for ``app`` the answer),
``contexts`` (for ``recall`` the texts of the expected document's chunks, the ground truth the
retrieved chunks are checked against; for ``app`` the chunks the answer drew on), ``score``,
``passing``, ``metric_name``, ``prediction_cost`` (an integer, as DB-GPT declares it: 0 for
``recall``, which DB-GPT leaves at its default; for ``app`` the milliseconds the application
took, 0 when unknown), ``query``, ``raw_dataset`` (the item, plus ``contexts`` for ``recall``
and the retrieved texts as ``factual`` for ``app``), ``feedback`` (the evaluator's rationale)
and ``error`` (nbeval's own addition: why there is no score, when there is none).

DB-GPT takes a document's chunks from its knowledge base. nbeval asks the ``documents``
function the service was started with (``documents(doc_name)``, plus ``scene_value=`` when it
takes it; see :mod:`nbeval.serve.hooks`), which also lets a retriever that returns bare texts be
matched by text as DB-GPT matches; without one, ``contexts`` holds the chunks of the expected
document among those retrieved for the item (those with its ``doc_uri``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from nbeval.chat.secrets import redact
from nbeval.errors import NbevalError
from nbeval.serve.hooks import AppAnswer, CallableApp, EndpointApp, document_chunks, retrieve

__all__ = [
    "METRICS",
    "DbgptContext",
    "DbgptItem",
    "DbgptRequest",
    "DbgptRun",
    "ServiceUnavailable",
    "dbgpt_data",
    "dbgpt_evaluators",
    "envelope",
    "prepare_dbgpt",
]

#: DB-GPT metric name -> (nbeval evaluator id, metric reported as the score).
METRICS: dict[str, tuple[str, str]] = {
    "RetrieverHitRateMetric": ("retriever_hit_rate", "hit_rate"),
    "RetrieverMRRMetric": ("retriever_mrr", "mrr"),
    "RetrieverSimilarityMetric": ("retriever_similarity", "similarity"),
    "AnswerRelevancyMetric": ("answer_relevancy_score", "score"),
}
#: Evaluators that read ``top_k`` from the request's context.
_TOP_K_EVALUATORS = ("retriever_hit_rate", "retriever_mrr")


class ServiceUnavailable(NbevalError):
    """The service was not started with what the request needs (a retriever, an application)."""


class DbgptContext(BaseModel):
    """Settings of one evaluation."""

    model_config = ConfigDict(extra="allow")

    top_k: int = Field(5, ge=1, le=1000, description="chunks to retrieve per query")
    prompt: str | None = Field(
        None, max_length=100_000, description="system prompt sent to the application (app scenes)"
    )
    model: str | None = Field(None, max_length=200, description="model name at the application endpoint")


class DbgptItem(BaseModel):
    """One question, and the document its answer is in."""

    model_config = ConfigDict(extra="allow")

    query: str = Field(min_length=1, description="the user's question")
    doc_name: str | None = Field(None, description="the document that answers it (the expected retrieval)")


class DbgptRequest(BaseModel):
    """A DB-GPT evaluation request."""

    model_config = ConfigDict(coerce_numbers_to_str=True)  # a space or app id may come as a number

    scene_key: Literal["recall", "app"] = Field(description="recall: a retriever; app: an application")
    scene_value: str = Field(description="the knowledge space (recall) or application (app) evaluated")
    context: DbgptContext = Field(default_factory=DbgptContext)  # type: ignore[arg-type]
    evaluate_metrics: list[str] = Field(min_length=1, description="DB-GPT metric names or nbeval evaluator ids")
    datasets: list[DbgptItem] = Field(min_length=1, max_length=10_000)

    @field_validator("evaluate_metrics")
    @classmethod
    def _known_metrics(cls, names: list[str]) -> list[str]:
        from nbeval.evaluators.registry import get_spec

        unknown = []
        for name in names:
            if name in METRICS:
                continue
            try:
                get_spec(name)
            except Exception:
                unknown.append(name)
        if unknown:
            msg = (
                f"unknown metric {', '.join(map(repr, unknown))}; use {', '.join(METRICS)} "
                "or an nbeval evaluator id (GET /v1/evaluators)"
            )
            raise ValueError(msg)
        if len(set(names)) != len(names):
            raise ValueError("a metric is named twice")
        return names


def envelope(data: Any = None, *, error: str | None = None, code: str | None = None) -> dict[str, Any]:
    """DB-GPT's answer envelope."""
    return {"success": error is None, "err_code": code, "err_msg": error, "data": data}


def _metric(name: str) -> tuple[str, str]:
    if name in METRICS:
        return METRICS[name]
    from nbeval.evaluators.registry import get_spec

    spec = get_spec(name)
    return spec.id, spec.primary.name


def _texts(chunks: list[dict[str, str]] | None) -> list[str]:
    return [c.get("content", c.get("doc_uri", "")) for c in chunks or []]


def _expected_texts(doc_name: str | None, ans: AppAnswer, known: list[dict[str, str]] | None) -> list[str]:
    """The texts of the expected document's chunks.

    From the documents function (``known``), else those of the chunks retrieved for the item that
    come from it.
    """
    if not doc_name:
        return []
    if known is not None:
        return [c["content"] for c in known if "content" in c]
    found = [c["content"] for c in ans.contexts or [] if c.get("doc_uri") == doc_name and "content" in c]
    return list(dict.fromkeys(found))


def _milliseconds(seconds: float | None) -> int:
    return 0 if seconds is None else round(seconds * 1000)


@dataclass
class DbgptRun:
    """A request made ready to evaluate: the records built from what was retrieved and answered."""

    records: list[dict[str, Any]]
    evaluators: list[Any]
    answers: list[AppAnswer]
    """Per dataset item: the chunks retrieved, the application's answer, or why there is none."""
    documents: list[list[dict[str, str]] | None]
    """Per dataset item: the expected document's chunks from the documents function (``None``
    without one, or without a ``doc_name``)."""
    chosen: list[tuple[str, str]]
    """Per requested metric: the evaluator id and the metric reported as its score."""


def prepare_dbgpt(
    req: DbgptRequest,
    *,
    retriever: Callable[..., Any] | None,
    app: CallableApp | EndpointApp | None,
    documents: Callable[..., Any] | None = None,
) -> DbgptRun:
    """Ask the hooks about every item and build the records and evaluators to run.

    Calls the retriever for every item (for ``app`` scenes the application too; for ``recall``
    scenes with a ``documents`` function, that for every ``doc_name``). Blocks while they answer.
    """
    top_k = req.context.top_k
    if req.scene_key == "recall" and retriever is None:
        raise ServiceUnavailable("recall scenes need a retriever; start the service with --retriever module:function")
    if req.scene_key == "app" and app is None:
        raise ServiceUnavailable(
            "app scenes need an application; start the service with --app module:function "
            "or --app-base-url URL --app-model NAME"
        )
    queries = [item.query for item in req.datasets]
    answers = [AppAnswer() for _ in queries]
    if retriever is not None:
        for ans, q in zip(answers, queries, strict=True):
            try:
                ans.contexts = retrieve(retriever, q, top_k, req.scene_value)
            except Exception as exc:  # one failing query never stops the others
                ans.error = redact(f"the retriever failed: {type(exc).__name__}: {exc}")
    if req.scene_key == "app" and app is not None:
        ok = [i for i, a in enumerate(answers) if a.error is None]  # an item whose retrieval failed is not asked
        asked = app.ask(
            [queries[i] for i in ok],
            [answers[i].contexts for i in ok],
            top_k=top_k,
            prompt=req.context.prompt,
            model=req.context.model,
            scene_value=req.scene_value,
        )
        for i, answer in zip(ok, asked, strict=True):
            if answer.error is not None:  # an application's error may carry a DSN or a key: never echoed
                answer.error = redact(answer.error)
            answers[i] = answer

    known: list[list[dict[str, str]] | None] = [None] * len(queries)
    if documents is not None and req.scene_key == "recall":
        for i, got in enumerate(_lookup_documents(req, documents)):
            if isinstance(got, str):  # the lookup failed: the item says so, and is still scored on doc_name
                answers[i].error = answers[i].error or got
            else:
                known[i] = got

    records = []
    for i, (item, ans) in enumerate(zip(req.datasets, answers, strict=True)):
        record: dict[str, Any] = {
            "key": f"item-{i}",
            "model_key": req.scene_value or "model",
            "input": item.query,
            "context": ans.contexts or [],
        }
        if item.doc_name:
            # The document, and its chunks' texts for retrieved chunks that name no document.
            record["expected_context"] = [
                {"doc_uri": item.doc_name},
                *({"content": c["content"], "doc_uri": item.doc_name} for c in known[i] or [] if "content" in c),
            ]
        if ans.answer is not None:
            record["actual_output"] = ans.answer
        if ans.error is not None:
            record["error"] = ans.error
        records.append(record)
    chosen = [_metric(m) for m in req.evaluate_metrics]
    evaluators = [(ev, {"top_k": top_k}) if ev in _TOP_K_EVALUATORS else ev for ev, _ in chosen]
    return DbgptRun(records, evaluators, answers, known, chosen)


def dbgpt_evaluators(req: DbgptRequest) -> list[str]:
    """The nbeval evaluator ids a request's metrics run (for the service's checks)."""
    return [_metric(m)[0] for m in req.evaluate_metrics]


def _lookup_documents(req: DbgptRequest, documents: Callable[..., Any]) -> list[list[dict[str, str]] | str | None]:
    """Each item's document chunks, from ``documents``.

    Each document is asked once; an item gets the error text when the call failed, or ``None`` when
    it has no ``doc_name``.
    """
    found: dict[str, list[dict[str, str]] | str] = {}
    for name in dict.fromkeys(item.doc_name for item in req.datasets if item.doc_name):
        try:
            found[name] = document_chunks(documents, name, req.scene_value)
        except Exception as exc:  # one failing lookup never stops the others
            found[name] = redact(f"the documents function failed: {type(exc).__name__}: {exc}")
    return [found[item.doc_name] if item.doc_name else None for item in req.datasets]


def dbgpt_data(req: DbgptRequest, run: DbgptRun, payload: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """DB-GPT's ``data`` from the evaluation's payload.

    Built from :func:`~nbeval.serve.payload.result_payload`: per dataset item, one entry per
    requested metric.
    """
    found = {(s["key"], s["evaluator"], s["metric"]): s for s in payload["scores"]}
    recall = req.scene_key == "recall"
    data = []
    for i, (item, ans, known) in enumerate(zip(req.datasets, run.answers, run.documents, strict=True)):
        raw = item.model_dump(exclude_none=True)
        if recall:
            contexts = _expected_texts(item.doc_name, ans, known)
            raw = {**raw, "contexts": contexts}
        else:
            contexts = _texts(ans.contexts)
            raw = {**raw, "factual": contexts}
        entries = []
        for name, (ev, metric) in zip(req.evaluate_metrics, run.chosen, strict=True):
            s = found.get((f"item-{i}", ev, metric), {})
            entries.append(
                {
                    "prediction": _texts(ans.contexts) if recall else ans.answer,
                    "contexts": contexts,
                    "score": s.get("value"),
                    "passing": s.get("passed"),
                    "metric_name": name,
                    "prediction_cost": 0 if recall else _milliseconds(ans.seconds),
                    "query": item.query,
                    "raw_dataset": raw,
                    "feedback": s.get("rationale"),
                    "error": ans.error or s.get("error") or s.get("skip_reason"),
                }
            )
        data.append(entries)
    return data
