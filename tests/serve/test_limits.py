"""Request bodies over the limit are refused with 413, whether their size is announced or not."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.serve.conftest import LiveService

LIMIT = 2000


@pytest.fixture
def small(start_service: Callable[..., LiveService]) -> LiveService:
    return start_service(max_body_bytes=LIMIT)


def _body(size: int) -> bytes:
    """A valid evaluation request of exactly ``size`` bytes (padded inside the answer text)."""
    base: dict[str, Any] = {
        "data": [{"input": "q", "expected_output": "x", "actual_output": ""}],
        "evaluators": ["exact_match"],
    }
    pad = size - len(json.dumps(base).encode())
    base["data"][0]["actual_output"] = "x" * pad
    out = json.dumps(base).encode()
    assert len(out) == size
    return out


def test_a_body_at_the_limit_is_accepted(small: LiveService) -> None:
    r = small.client.post("/v1/evaluations", content=_body(LIMIT), headers={"content-type": "application/json"})
    assert r.status_code == 200, r.text


def test_a_body_one_byte_over_is_refused(small: LiveService) -> None:
    r = small.client.post("/v1/evaluations", content=_body(LIMIT + 1), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert str(LIMIT) in r.json()["detail"]
    assert small.client.get("/v1/evaluations").json() == [], "nothing was started"


def test_a_chunked_body_without_a_length_is_cut_off_at_the_limit(small: LiveService) -> None:
    body = _body(LIMIT * 3)

    def chunks() -> Iterator[bytes]:  # a generator: httpx sends it chunked, with no Content-Length
        for i in range(0, len(body), 500):
            yield body[i : i + 500]

    r = small.client.post("/v1/evaluations", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert "content-length" not in {k.lower() for k in r.request.headers}


def test_the_dbgpt_endpoint_has_the_same_limit(small: LiveService) -> None:
    body = {
        "scene_key": "recall",
        "scene_value": "s",
        "evaluate_metrics": ["RetrieverMRRMetric"],
        "datasets": [{"query": "q" * LIMIT, "doc_name": "d"}],
    }
    assert small.client.post("/api/v2/serve/evaluate/evaluation", json=body).status_code == 413


def test_the_token_is_checked_before_the_size(small: LiveService) -> None:
    r = small.anonymous.post("/v1/evaluations", content=_body(LIMIT + 1), headers={"content-type": "application/json"})
    assert r.status_code == 401
