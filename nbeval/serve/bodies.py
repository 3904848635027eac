"""What a request to nbeval's own API may hold, and how it is read.

JSON is parsed strictly (:func:`strict_json`: no ``NaN`` or ``Infinity``), the request bodies are
pydantic models, and the refusals (422) a request's evaluators earn under :mod:`nbeval.serve.policy`
each name the field.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from starlette.responses import Response

from nbeval.errors import DataError
from nbeval.serve.policy import SERVER_PARAMS, lone_surrogate, model_refusal, param_errors

__all__ = [
    "EvaluationRequest",
    "EvaluatorChoice",
    "StrictJSONRoute",
    "field_message",
    "refused",
    "request_errors",
    "strict_json",
]

_SURROGATE = "holds text that cannot be encoded as UTF-8 (a lone surrogate such as '\\ud800')"


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def strict_json(body: bytes) -> Any:
    """``body`` parsed as JSON proper.

    ``NaN``, ``Infinity`` and ``-Infinity`` (which Python's parser takes) raise
    :class:`json.JSONDecodeError`, as any other syntax error.
    """
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError:
        raise
    except ValueError as e:
        name = str(e)
        pos = max(text.find(name), 0)
        msg = f"{name} is not valid JSON (send a number, or null for a missing value)"
        raise json.JSONDecodeError(msg, text, pos) from None


class _StrictJSONRequest(Request):
    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            self._json = strict_json(await self.body())
        return self._json


class StrictJSONRoute(APIRoute):
    """A route whose JSON body is parsed strictly.

    With :func:`strict_json`: ``NaN`` or ``Infinity`` in a request is refused with 422, like any
    other invalid JSON.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler for the route, given a request whose JSON body refuses ``NaN`` and ``Infinity``."""
        handler = super().get_route_handler()

        async def strict(request: Request) -> Response:
            return await handler(_StrictJSONRequest(request.scope, request.receive))

        return strict


class EvaluatorChoice(BaseModel):
    """An evaluator with parameters."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, description="evaluator id (GET /v1/evaluators)")
    params: dict[str, Any] = Field(default_factory=dict, description="its parameters, e.g. {'threshold': 0.5}")

    @field_validator("id")
    @classmethod
    def _encodable_id(cls, value: str) -> str:
        if lone_surrogate(value):
            raise DataError(f"the id {_SURROGATE}")
        return value

    @field_validator("params")
    @classmethod
    def _client_params(cls, params: dict[str, Any]) -> dict[str, Any]:
        refused = sorted(SERVER_PARAMS & set(params))
        if refused:
            msg = f"parameter {', '.join(refused)} is set by the server, not by a request"
            raise DataError(msg)
        if lone_surrogate(params):
            raise DataError(f"a parameter {_SURROGATE}")
        return params


class EvaluationRequest(BaseModel):
    """What to evaluate (``data`` records or a ``lab``) and with which evaluators."""

    model_config = ConfigDict(extra="forbid")

    data: list[dict[str, Any]] | None = Field(
        None, description="records: input, expected_output, actual_output, context, expected_context, model_key, ..."
    )
    lab: dict[str, Any] | None = Field(None, description="a test lab as JSON")
    evaluators: list[str | EvaluatorChoice] = Field(min_length=1, max_length=200)
    wait: bool | None = Field(
        None,
        description="true: answer when finished; false: answer at once with the job; unset: wait for small runs only",
    )

    @field_validator("evaluators")
    @classmethod
    def _encodable_ids(cls, evaluators: list[str | EvaluatorChoice]) -> list[str | EvaluatorChoice]:
        for i, e in enumerate(evaluators):
            if isinstance(e, str) and lone_surrogate(e):
                raise DataError(f"evaluator {i} {_SURROGATE}")
        return evaluators

    @model_validator(mode="after")
    def _one_source(self) -> EvaluationRequest:
        if (self.data is None) == (self.lab is None):
            raise DataError("give exactly one of 'data' (a list of records) or 'lab' (a test lab)")
        if self.data is not None and not self.data:
            raise DataError("'data' is empty; give at least one record")
        return self

    def evaluator_specs(self) -> list[Any]:
        """The requested evaluators as :func:`nbeval.evaluate` takes them.

        Each is an id, or a dict of an id and its parameters.
        """
        return [e if isinstance(e, str) else {"id": e.id, **e.params} for e in self.evaluators]


def field_message(errors: list[Any]) -> str:
    """Validation errors in one line, each led by the field it is about (``body.datasets.0.query``)."""
    parts = []
    for e in errors:
        where = ".".join(str(p) for p in e.get("loc", ()))
        parts.append(f"{where}: {e.get('msg', 'invalid')}" if where else str(e.get("msg", "invalid")))
    return "; ".join(parts)


def refused(field: str, message: str) -> JSONResponse:
    """A 422 answer naming ``body.<field>`` and what is wrong with it."""
    detail = [{"loc": ["body", *field.split(".")], "msg": message, "type": "value_error"}]
    return JSONResponse({"detail": detail, "message": f"body.{field}: {message}"}, status_code=422)


def request_errors(
    specs: list[Any], *, max_tokens: int, has_embedder: bool, allow_models: bool
) -> list[tuple[str, str]]:
    """What a request's evaluators may not do, as ``(field, message)`` pairs.

    Under :mod:`nbeval.serve.policy`; ``specs`` are ids or ``(id, params)`` pairs.
    """
    from nbeval.evaluators.registry import get_spec

    errors = []
    for i, item in enumerate(specs):
        name, params = (item, {}) if isinstance(item, str) else item
        errors += [
            (f"evaluators.{i}.params.{where}", msg) for where, msg in param_errors(params, max_tokens=max_tokens)
        ]
        try:
            spec = get_spec(name)
        except Exception:  # unknown: planning says so, with the known ones
            continue
        refusal = model_refusal(spec, has_embedder=has_embedder, allow_models=allow_models)
        if refusal:
            errors.append((f"evaluators.{i}", refusal))
    return errors
