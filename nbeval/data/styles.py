"""Rows written in other tools' column styles, renamed to the LLM dataset's fields.

* agent-evaluation eval sets: ``request`` (text or a chat request, whose messages become the
  row's ``messages`` with the response as the last turn), ``response``, ``expected_response``,
  ``retrieved_context``, ``expected_retrieved_context``, ``request_id``;
* ragas's multi-turn samples: ``user_input`` (a list of messages), ``reference``,
  ``reference_tool_calls``, ``reference_topics``;
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
    if "input" not in rec and isinstance(rec.get("user_input"), list):
        return _from_ragas_multi_turn(rec)
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
    if isinstance(req, dict) and isinstance(req.get("messages"), list):
        # a chat request: the conversation, with the response as the assistant's last turn;
        # the row's input is then its last user message (see nbeval.data.conversation)
        msgs = list(req["messages"])
        if isinstance(rec.get("response"), str):
            msgs.append({"role": "assistant", "content": rec["response"]})
        out["messages"] = msgs
        extra_request = {k: v for k, v in req.items() if k != "messages"}
        if extra_request:
            out["request_params"] = extra_request
        req = None
    elif isinstance(req, dict):
        req = req.get("query")
    if req is not None:
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


def _from_ragas_multi_turn(rec: dict[str, Any]) -> dict[str, Any]:
    """A record from ragas's multi-turn sample, its fields renamed to nbeval's.

    The sample's fields are ``user_input`` (the messages), ``reference`` (the goal or the expected
    answer), ``reference_tool_calls`` and ``reference_topics``.
    """
    renamed = {"user_input": "messages", "reference": "expected_output", "reference_tool_calls": "expected_tool_calls"}
    return {renamed.get(k, k): v for k, v in rec.items()}


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
