"""DB-GPT's evaluation endpoint: recall scenes call the plugged-in retriever, app scenes the
application; scores come back in DB-GPT's envelope, one list per dataset item."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, Optional, TypeVar, Union

import pytest
from pydantic import BaseModel, ConfigDict, Field

from nbeval.serve.hooks import EndpointApp
from tests.serve import plugins
from tests.serve.conftest import LiveService
from tests.support.fake_openai import FakeOpenAIServer, Recorded

PATH = "/api/v2/serve/evaluate/evaluation"
T = TypeVar("T")
AWEL, INSTALL = "what is AWEL", "how do I install DB-GPT with pip"


def _recall(top_k: int, metrics: list[str], datasets: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "scene_key": "recall",
        "scene_value": "space-1",
        "context": {"top_k": top_k},
        "evaluate_metrics": metrics,
        "datasets": datasets
        or [
            {"query": AWEL, "doc_name": "awel.md"},
            {"query": INSTALL, "doc_name": "awel.md"},
            {"query": "boom", "doc_name": "awel.md"},
        ],
    }


@pytest.fixture
def recall_service(start_service: Callable[..., LiveService]) -> LiveService:
    return start_service(retriever=plugins.retriever)


def test_recall_scores_hit_rate_and_mrr(recall_service: LiveService) -> None:
    r = recall_service.client.post(PATH, json=_recall(2, ["RetrieverHitRateMetric", "RetrieverMRRMetric"]))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["success"] is True and body["err_code"] is None and body["err_msg"] is None
    data = body["data"]
    assert len(data) == 3 and all(len(item) == 2 for item in data)
    # Worked by hand from plugins.CHUNKS: "what is AWEL" ranks awel.md first (hit 1, MRR 1); the
    # install question ranks install.md first and awel.md second (hit 1, MRR 1/2).
    assert [(e["metric_name"], e["score"]) for e in data[0]] == [
        ("RetrieverHitRateMetric", 1.0),
        ("RetrieverMRRMetric", 1.0),
    ]
    assert [e["score"] for e in data[1]] == [1.0, 0.5]
    first = data[1][0]
    # without a documents function, contexts are the retrieved chunks of the expected document (texts)
    assert first["query"] == INSTALL and first["contexts"] == [plugins.CHUNKS[0]["content"]]
    assert first["prediction"] == [plugins.CHUNKS[1]["content"], plugins.CHUNKS[0]["content"]]
    assert first["raw_dataset"] == {"query": INSTALL, "doc_name": "awel.md", "contexts": first["contexts"]}
    assert all(e["prediction_cost"] == 0 for item in data for e in item)  # as DB-GPT: an integer, never null
    assert first["passing"] is True and "rank 2" in first["feedback"]
    # one failing query never stops the others
    assert [e["score"] for e in data[2]] == [None, None]
    assert "the index is down" in data[2][0]["error"]


def test_recall_honours_top_k(recall_service: LiveService) -> None:
    body = recall_service.client.post(
        PATH, json=_recall(1, ["RetrieverHitRateMetric", "RetrieverMRRMetric", "document_recall"])
    ).json()
    # with one chunk the install question retrieves only install.md: no hit
    assert [e["score"] for e in body["data"][1]] == [0.0, 0.0, 0.0]
    assert len(body["data"][1][0]["prediction"]) == 1
    assert [e["score"] for e in body["data"][0]] == [1.0, 1.0, 1.0]


def _judge(prompt: str) -> str:
    """Grades 1 the answers to the install question, 5 the others."""
    return "1\noff the point" if f"About {INSTALL!r}" in prompt else "5\nanswers the question"


def test_app_scene_asks_the_application_and_the_judge_grades(start_service: Callable[..., LiveService]) -> None:
    svc = start_service(retriever=plugins.retriever, app=plugins.app, judge=_judge)
    body = svc.client.post(
        PATH,
        json={
            "scene_key": "app",
            "scene_value": "app-1",
            "context": {"top_k": 2},
            "evaluate_metrics": ["AnswerRelevancyMetric"],
            "datasets": [{"query": AWEL, "doc_name": "awel.md"}, {"query": INSTALL, "doc_name": "install.md"}],
        },
    ).json()
    assert body["success"] is True
    awel, install = body["data"][0][0], body["data"][1][0]
    assert awel["prediction"] == f"About {AWEL!r}: {plugins.CHUNKS[0]['content']}"
    assert awel["contexts"] == [plugins.CHUNKS[0]["content"], plugins.CHUNKS[2]["content"]]
    assert (awel["score"], awel["passing"], awel["feedback"]) == (5.0, True, "answers the question")
    assert (install["score"], install["passing"], install["feedback"]) == (1.0, False, "off the point")
    assert isinstance(awel["prediction_cost"], int) and awel["prediction_cost"] >= 0


def test_app_scene_through_an_openai_compatible_endpoint(
    start_service: Callable[..., LiveService], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NBEVAL_JUDGE_API_KEY", "sk-judge-secret")  # the judge's, never sent to the application

    def reply(req: Recorded) -> str:
        return "AWEL is a workflow language" if req.body and req.model != "judge-model" else "4\nclose enough"

    with FakeOpenAIServer(reply) as fake:
        svc = start_service(
            retriever=plugins.retriever,
            app=EndpointApp(fake.url, "default-app"),
            judge={"model": "judge-model", "base_url": fake.url},
        )
        body = svc.client.post(
            PATH,
            json={
                "scene_key": "app",
                "scene_value": "app-1",
                "context": {"top_k": 1, "prompt": "Answer briefly.", "model": "app-model"},
                "evaluate_metrics": ["AnswerRelevancyMetric"],
                "datasets": [{"query": AWEL, "doc_name": "awel.md"}],
            },
        ).json()
        asked = [r for r in fake.requests if r.body and r.model == "app-model"]
        graded = [r for r in fake.requests if r.body and r.model == "judge-model"]
    entry = body["data"][0][0]
    assert (entry["prediction"], entry["score"], entry["feedback"]) == (
        "AWEL is a workflow language",
        4.0,
        "close enough",
    )
    assert len(asked) == 1 and len(graded) == 1
    assert asked[0].messages[0] == {"role": "system", "content": "Answer briefly."}
    assert "sk-judge-secret" not in str(asked[0].headers) and "sk-judge-secret" in str(graded[0].headers)
    assert plugins.CHUNKS[0]["content"] in asked[0].last_content and AWEL in asked[0].last_content
    assert "AWEL is a workflow language" in graded[0].last_content


def test_a_failing_application_is_that_item_s_error(start_service: Callable[..., LiveService]) -> None:
    def app(query: str) -> str:
        if query == "explode":
            raise ValueError("no answer today")
        return "fine"

    svc = start_service(app=app, judge=_judge, retriever=plugins.retriever)
    body = svc.client.post(
        PATH,
        json={
            "scene_key": "app",
            "scene_value": "a",
            "evaluate_metrics": ["AnswerRelevancyMetric"],
            "datasets": [{"query": "explode"}, {"query": AWEL}, {"query": "boom"}],
        },
    ).json()
    assert body["data"][0][0]["score"] is None and "no answer today" in body["data"][0][0]["error"]
    assert body["data"][1][0]["score"] == 5.0
    # the retriever failed on "boom": its error is kept and the application is not asked
    assert "the index is down" in body["data"][2][0]["error"] and body["data"][2][0]["prediction"] is None


def test_a_scene_without_its_hook_is_501(service: LiveService) -> None:
    r = service.client.post(PATH, json=_recall(2, ["RetrieverMRRMetric"]))
    assert r.status_code == 501
    assert r.json()["success"] is False and "--retriever" in r.json()["err_msg"]
    r = service.client.post(PATH, json={**_recall(2, ["AnswerRelevancyMetric"]), "scene_key": "app"})
    assert r.status_code == 501 and "--app" in r.json()["err_msg"]


BAD = [
    ({"scene_key": "chat"}, "body.scene_key"),
    ({"scene_value": None}, "body.scene_value"),
    ({"evaluate_metrics": ["NoSuchMetric"]}, "body.evaluate_metrics"),
    ({"evaluate_metrics": []}, "body.evaluate_metrics"),
    ({"context": {"top_k": 0}}, "body.context.top_k"),
    ({"datasets": [{"doc_name": "x.md"}]}, "body.datasets.0.query"),
    ({"datasets": []}, "body.datasets"),
]


@pytest.mark.parametrize(("change", "field"), BAD)
def test_bad_requests_get_422_in_the_envelope(recall_service: LiveService, change: dict[str, Any], field: str) -> None:
    r = recall_service.client.post(PATH, json={**_recall(2, ["RetrieverMRRMetric"]), **change})
    assert r.status_code == 422
    body = r.json()
    assert body["success"] is False and body["data"] is None
    assert field in body["err_msg"], body["err_msg"]


def test_a_numeric_scene_value_is_taken_as_text(recall_service: LiveService) -> None:
    body = recall_service.client.post(PATH, json={**_recall(2, ["RetrieverMRRMetric"]), "scene_value": 42}).json()
    assert body["success"] is True and body["data"][0][0]["score"] == 1.0


def test_unknown_metrics_are_listed_with_the_known_ones(recall_service: LiveService) -> None:
    msg = recall_service.client.post(PATH, json=_recall(2, ["RetrieverMRRMetric", "Nope"])).json()["err_msg"]
    assert "'Nope'" in msg and "RetrieverHitRateMetric" in msg


def test_concurrent_dbgpt_requests_keep_their_own_top_k(recall_service: LiveService) -> None:
    def one(top_k: int) -> tuple[int, list[Any]]:
        body = recall_service.client.post(PATH, json=_recall(top_k, ["RetrieverMRRMetric"])).json()
        return top_k, body["data"]

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(one, [1, 2, 3, 1, 2, 3]))
    for top_k, data in answers:
        assert data[1][0]["score"] == (0.0 if top_k == 1 else 0.5)
        assert len(data[1][0]["prediction"]) == top_k


# -- DB-GPT's own answer model -----------------------------------------------------------------
# Copied from DB-GPT's published code: EvaluationResult and BaseEvaluationResult from
# dbgpt/core/interface/evaluation.py (eosphoros-ai/DB-GPT), and the envelope Result from
# dbgpt/serve/core/schemas.py. Strict, as a client that validates what it reads would be.


class _BaseEvaluationResult(BaseModel):
    model_config = ConfigDict(strict=True)

    prediction: Optional[Union[str, Any]] = Field(None)
    contexts: Optional[Union[str, Sequence[str], Any]] = Field(None)
    score: Optional[float] = Field(None)
    passing: Optional[bool] = Field(True)
    metric_name: Optional[str] = Field(None)
    prediction_cost: int = 0


class _EvaluationResult(_BaseEvaluationResult):
    query: Optional[Union[str, Any]] = Field(None)
    raw_dataset: Optional[Any] = Field(None)
    feedback: Optional[str] = Field(None)


class _Result(BaseModel, Generic[T]):
    model_config = ConfigDict(strict=True)

    success: bool = Field(...)
    err_code: Optional[str] = Field(None)
    err_msg: Optional[str] = Field(None)
    data: Optional[T] = Field(None)


def test_recall_answers_validate_against_dbgpts_model(start_service: Callable[..., LiveService]) -> None:
    svc = start_service(retriever=plugins.retriever, documents=plugins.documents)
    r = svc.client.post(PATH, json=_recall(2, ["RetrieverHitRateMetric", "RetrieverMRRMetric"]))
    body = _Result[list[list[_EvaluationResult]]].model_validate_json(r.text)  # raises on prediction_cost: null
    assert body.success and body.data is not None
    install = body.data[1][0]
    assert install.prediction_cost == 0  # what DB-GPT's retriever evaluation leaves it at
    # contexts: the texts of the expected document's chunks (DB-GPT's ground truth), not its name
    awel_texts = [plugins.CHUNKS[0]["content"], plugins.CHUNKS[2]["content"]]
    assert install.raw_dataset is not None
    assert install.contexts == awel_texts and install.raw_dataset["contexts"] == awel_texts
    assert (install.score, body.data[1][1].score) == (1.0, 0.5)
    # the item the retriever failed on still validates: no score, and the reason
    failed = r.json()["data"][2][0]
    assert failed["score"] is None and failed["prediction_cost"] == 0 and "the index is down" in failed["error"]


def test_app_answers_validate_against_dbgpts_model(start_service: Callable[..., LiveService]) -> None:
    svc = start_service(retriever=plugins.retriever, app=plugins.app, judge=_judge)
    r = svc.client.post(
        PATH,
        json={
            "scene_key": "app",
            "scene_value": "app-1",
            "context": {"top_k": 2},
            "evaluate_metrics": ["AnswerRelevancyMetric"],
            "datasets": [{"query": AWEL, "doc_name": "awel.md"}, {"query": "boom"}],
        },
    )
    body = _Result[list[list[_EvaluationResult]]].model_validate_json(r.text)
    assert body.data is not None
    awel, boom = body.data[0][0], body.data[1][0]
    assert awel.prediction_cost >= 0 and boom.prediction_cost == 0  # milliseconds; 0 when never answered
    assert awel.contexts == [plugins.CHUNKS[0]["content"], plugins.CHUNKS[2]["content"]]
    assert awel.raw_dataset is not None and awel.raw_dataset["factual"] == awel.contexts


def test_documents_let_bare_text_chunks_match_as_dbgpt_matches(start_service: Callable[..., LiveService]) -> None:
    def texts_only(query: str, top_k: int) -> list[str]:  # a retriever that names no document
        return [c["content"] for c in plugins.retriever(query, top_k)]

    without = start_service(retriever=texts_only).client.post(PATH, json=_recall(2, ["RetrieverMRRMetric"])).json()
    assert without["data"][1][0]["score"] == 0.0 and without["data"][1][0]["contexts"] == []
    svc = start_service(retriever=texts_only, documents="tests.serve.plugins:documents")
    body = svc.client.post(PATH, json=_recall(2, ["RetrieverMRRMetric"])).json()
    assert body["data"][1][0]["score"] == 0.5  # the awel.md chunk at rank 2, matched on its text
    assert body["data"][1][0]["contexts"] == [plugins.CHUNKS[0]["content"], plugins.CHUNKS[2]["content"]]

    def broken(doc_name: str) -> list[str]:
        raise OSError("the knowledge base is offline")

    failing = start_service(retriever=plugins.retriever, documents=broken)
    body = failing.client.post(PATH, json=_recall(2, ["RetrieverMRRMetric"])).json()
    assert "the knowledge base is offline" in body["data"][0][0]["error"]
    assert body["data"][0][0]["score"] == 1.0  # the document's name still matches
