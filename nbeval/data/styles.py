"""Rows written in other tools' column styles, renamed to the LLM dataset's fields.

* agent-evaluation eval sets: ``request`` (text or a chat request), ``response``,
  ``expected_response``, ``retrieved_context``, ``expected_retrieved_context``, ``request_id``;
* DB-GPT evaluation records: ``query``, ``contexts``, ``prediction``, ``doc_name``;
* a test case given as a row: ``prompt`` and ``condition``.

Plain dicts in, plain dicts out; fields of no known style are kept as they are.
"""

from __future__ import annotations

from typing import Any

__all__ = ["normalize_record"]


def normalize_record(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` with its fields named as the LLM dataset names them (``rec`` itself when they are)."""
    if "input" not in rec and "request" in rec:
        return _from_agent_eval(rec)
    if "input" not in rec and "query" in rec:
        return _from_dbgpt(rec)
    if "input" not in rec and "prompt" in rec:  # a test case given as a row
        rec = dict(rec)
        rec["input"] = rec.pop("prompt")
        if "condition" in rec:
            rec["output_condition"] = rec.pop("condition")
    return rec


def _from_agent_eval(rec: dict[str, Any]) -> dict[str, Any]:
    """The agent-evaluation column style (request/response/...) in LLM-dataset names."""
    out = {
        k: v
        for k, v in rec.items()
        if k
        not in (
            "request",
            "response",
            "expected_response",
            "retrieved_context",
            "expected_retrieved_context",
            "request_id",
        )
    }
    req = rec.get("request")
    if isinstance(req, dict):  # a chat request: take the last user message as the prompt
        msgs = req.get("messages") or []
        users = [m.get("content") for m in msgs if isinstance(m, dict) and m.get("role") == "user"]
        out["request_raw"] = req
        req = users[-1] if users else req.get("query")
    out["input"] = req
    if "response" in rec:
        out["actual_output"] = rec["response"]
    if "expected_response" in rec:
        out["expected_output"] = rec["expected_response"]
    if "retrieved_context" in rec:
        out["context"] = rec["retrieved_context"]
    if "expected_retrieved_context" in rec:
        out["expected_context"] = rec["expected_retrieved_context"]
    if rec.get("request_id") is not None:
        out["key"] = rec["request_id"]
    return out


def _from_dbgpt(rec: dict[str, Any]) -> dict[str, Any]:
    """DB-GPT evaluation records: query / contexts / prediction / doc_name."""
    out = {k: v for k, v in rec.items() if k not in ("query", "contexts", "prediction", "doc_name")}
    out["input"] = rec.get("query")
    pred, ctx = rec.get("prediction"), rec.get("contexts")
    if isinstance(pred, list):  # a retrieval record: prediction = retrieved chunks, contexts = truth
        out["context"] = pred
        expected = list(ctx or [])
    else:
        if pred is not None:
            out["actual_output"] = pred
        if ctx is not None:
            out["context"] = ctx
        expected = []
    if rec.get("doc_name"):
        expected.append({"doc_uri": rec["doc_name"]})
    if expected:
        out["expected_context"] = expected
    return out
