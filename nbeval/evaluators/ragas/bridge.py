"""Run a ragas metric with nbeval answering every model call it makes.

A ragas 0.4 metric (``ragas.metrics.collections``) is an ``async`` method that awaits its LLM
(``agenerate(prompt, response_model)``) and its embeddings (``aembed_text(s)``) one call after
another. The adapters here implement those two ragas interfaces without doing any I/O: each call
*hands a request out* of the coroutine (``_Handoff``). :meth:`Session.drive` steps the coroutine by
hand (``send``), turns each handed-out call into nbeval requests and yields them, so the engine
answers them like any judge's or embedder's: cached, batched across rows, bounded in concurrency,
retried, timed out, counted and priced, with keys redacted. No event loop and no HTTP client of
ragas's or instructor's is involved.

Structured output follows ragas's own client exactly (``instructor`` in JSON mode, which is what
``ragas.llms.llm_factory`` builds for OpenAI-compatible models): the same system message with the
output's JSON schema, the same ``response_format``, the same parser, and the same follow-up message
when a reply does not fit the schema, for up to ``attempts`` calls in all. A reply that still does
not fit raises :class:`ParseFailure` with every raw reply kept; it is never turned into a number.
"""

from __future__ import annotations

import json
from collections.abc import Coroutine, Generator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from instructor import Mode, Provider
from instructor.v2.core.errors import AsyncValidationError, ResponseParsingError
from instructor.v2.core.registry import mode_registry
from openai.types.chat import ChatCompletion
from pydantic import BaseModel, ValidationError
from ragas.embeddings.base import BaseRagasEmbedding
from ragas.llms.base import InstructorBaseRagasLLM

from nbeval.errors import EvaluatorError
from nbeval.evaluators.ragas.standin import standin_reply
from nbeval.request_kinds import DRY_RUN_MODEL, Chat, Embed, Request

__all__ = ["ParseFailure", "RagasEmbeddings", "RagasLLM", "SchemaOnce", "Session", "Step", "render_schemas_once"]

#: What instructor treats as "the reply does not fit the schema: ask again".
_PARSE_ERRORS: tuple[type[BaseException], ...] = (
    ValidationError,
    json.JSONDecodeError,
    ResponseParsingError,
    AsyncValidationError,
)


@dataclass(frozen=True)
class _StructuredCall:
    prompt: str
    response_model: type[BaseModel]


@dataclass(frozen=True)
class _EmbedCall:
    texts: tuple[str, ...]


class _Handoff:
    """An awaitable that passes ``call`` to whoever steps the coroutine and resumes with the answer."""

    __slots__ = ("call",)

    def __init__(self, call: _StructuredCall | _EmbedCall) -> None:
        self.call = call

    def __await__(self) -> Generator[Any, Any, Any]:
        return (yield self.call)


class RagasLLM(InstructorBaseRagasLLM):
    """ragas's structured-output LLM interface, answered by nbeval's judge layer (see :meth:`Session.drive`)."""

    def generate(self, prompt: str, response_model: type[Any]) -> Any:
        """Refuse with an :class:`EvaluatorError`: nbeval runs ragas metrics through ``ascore()`` only."""
        msg = "nbeval runs ragas metrics through ascore(); the synchronous generate() is not used"
        raise EvaluatorError(msg)

    async def agenerate(self, prompt: str, response_model: type[Any]) -> Any:
        """Hand the structured call out of the coroutine and resume with the parsed reply to ``prompt``."""
        return await _Handoff(_StructuredCall(prompt, response_model))


class RagasEmbeddings(BaseRagasEmbedding):
    """ragas's embeddings interface, answered by the run's embedder (see :meth:`Session.drive`)."""

    def __init__(self) -> None:
        super().__init__(cache=None)

    def embed_text(self, text: str, **kwargs: Any) -> list[float]:
        """Refuse with an :class:`EvaluatorError`: nbeval runs ragas metrics through ``ascore()`` only."""
        msg = "nbeval runs ragas metrics through ascore(); the synchronous embed_text() is not used"
        raise EvaluatorError(msg)

    async def aembed_text(self, text: str, **kwargs: Any) -> Any:
        """Hand the embedding of ``text`` out of the coroutine and resume with its vector."""
        return (await _Handoff(_EmbedCall((text,))))[0]

    async def aembed_texts(self, texts: list[str], **kwargs: Any) -> Any:
        """Hand the embedding of ``texts`` out of the coroutine and resume with their vectors."""
        return await _Handoff(_EmbedCall(tuple(texts)))


@dataclass
class Step:
    """One structured call ragas made: what it asked for and what it got."""

    name: str
    """The ragas output model asked for, e.g. ``NLIStatementOutput``."""
    output: dict[str, Any] | None
    """The parsed reply (``None`` when no reply fitted)."""
    attempts: int
    """Calls made for it (more than one when a reply did not fit the schema)."""
    raw: list[str] = field(default_factory=list)
    """The raw replies that did not fit, in order."""
    error: str | None = None
    """Why the last reply did not fit."""

    def to_dict(self) -> dict[str, Any]:
        """Give the step as a JSON-ready dict: its name, output and attempts.

        The unread replies and the error are added when there were any.
        """
        out: dict[str, Any] = {"step": self.name, "output": self.output, "attempts": self.attempts}
        if self.raw:
            out["unparsed_replies"] = list(self.raw)
        if self.error:
            out["error"] = self.error
        return out


class ParseFailure(Exception):
    """No reply to one of ragas's calls fitted its output schema within the allowed attempts."""

    def __init__(self, step: Step) -> None:
        self.step = step
        super().__init__(
            f"the judge's reply to ragas's {step.name} request did not fit its schema after "
            f"{step.attempts} attempt(s): {step.error}"
        )


class Session:
    """The model calls of one row: the settings they are sent with and what came back."""

    def __init__(self, *, judge: Any, judge_params: Mapping[str, Any], embedder: Any, attempts: int) -> None:
        self.judge = judge
        self.judge_params = dict(judge_params)
        self.embedder = embedder
        self.attempts = attempts
        self.steps: list[Step] = []
        """Every structured call, in order (what the rationale shows)."""
        self.replies: list[Any] = []
        """Every ``ChatReply`` received (usage and cost per row)."""
        self._asked: dict[str, int] = {}

    def drive(self, coro: Coroutine[Any, Any, Any]) -> Generator[Request, Any, Any]:
        """Step ragas's coroutine ``coro`` to its end, yielding an nbeval request for each model call it makes.

        Returns what the coroutine returns. A failed request's ``ResourceError`` and a
        :class:`ParseFailure` propagate (the coroutine is closed).
        """
        answer: Any = None
        try:
            while True:
                try:
                    call = coro.send(answer)
                except StopIteration as stop:
                    return stop.value
                if isinstance(call, _StructuredCall):
                    answer = yield from self._structured(call)
                elif isinstance(call, _EmbedCall):
                    answer = yield Embed(call.texts, model=self.embedder)
                else:  # ragas awaited something of its own (a sleep, a task): not answerable here
                    msg = (
                        f"ragas awaited {type(call).__name__}, which nbeval cannot answer; this ragas "
                        "version is not supported (nbeval[ragas] pins a working one)"
                    )
                    raise EvaluatorError(msg)
        finally:
            coro.close()

    def _structured(self, call: _StructuredCall) -> Generator[Request, Any, Any]:
        handlers = _json_mode()
        model = call.response_model
        system, extra = _json_request(model)
        if system is not None:
            messages = [{"role": "system", "content": system}, {"role": "user", "content": call.prompt}]
        else:  # a request layout other than [system, user]: let instructor build each one
            _, kwargs = handlers.request_handler(model, {"messages": [{"role": "user", "content": call.prompt}]})
            messages, extra = list(kwargs.pop("messages")), kwargs
        params = {**self.judge_params, **extra}
        step = Step(model.__name__, None, 0)
        self.steps.append(step)
        while True:
            # ragas asks the very same thing again to collect several replies (answer_relevancy's
            # strictness): each repeat is a separate sample, not a cache hit of the first.
            key = json.dumps([messages, params], sort_keys=True, default=repr)
            sample = self._asked.get(key, 0)
            self._asked[key] = sample + 1
            reply = yield Chat(tuple(messages), params, model=self.judge, sample=sample)
            self.replies.append(reply)
            step.attempts += 1
            # A dry run answers with an empty placeholder; a plausible stand-in reply lets ragas
            # go on, so the later calls are counted too (an estimate).
            text = standin_reply(messages) if reply.model == DRY_RUN_MODEL else reply.text
            completion = _completion(text, reply.model)
            try:
                parsed = handlers.response_parser(
                    response=completion,
                    response_model=model,
                    validation_context=None,
                    strict=None,
                    stream=False,
                    is_async=True,
                )
            except _PARSE_ERRORS as exc:
                step.raw.append(text)
                step.error = _first_line(exc)
                if step.attempts >= self.attempts:
                    raise ParseFailure(step) from None
                again = handlers.reask_handler(kwargs={"messages": list(messages)}, response=completion, exception=exc)
                messages = list(again["messages"])
                continue
            step.output = parsed.model_dump(mode="json")
            step.error = None
            return parsed


_PROBE = "\x00nbeval-probe\x00"


@lru_cache(maxsize=None)
def _json_request(model: type[BaseModel]) -> tuple[str | None, dict[str, Any]]:
    """Work out the system message and extra parameters instructor's JSON mode adds for ``model``.

    They are worked out once per output model (building them renders the model's JSON schema, which
    is slow); ``(None, {})`` when instructor lays the request out other than as [system, user prompt].
    """
    _, kwargs = _json_mode().request_handler(model, {"messages": [{"role": "user", "content": _PROBE}]})
    messages = kwargs.pop("messages")
    if (
        len(messages) == 2
        and messages[0].get("role") == "system"
        and isinstance(messages[0].get("content"), str)
        and messages[1] == {"role": "user", "content": _PROBE}
    ):
        return messages[0]["content"], kwargs
    return None, {}


class SchemaOnce:
    """Stands in for a ragas prompt's ``output_model``, rendering its JSON schema once.

    The prompt only reads the model's JSON schema (``to_string`` renders it on every call, which is
    slow); anything else goes to the model.
    """

    def __init__(self, model: type[BaseModel]) -> None:
        self._model = model
        self._schema = model.model_json_schema()

    def model_json_schema(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Give the wrapped model's JSON schema.

        Called without arguments, it is the one computed once; otherwise a fresh one.
        """
        # The same dict every time: ragas only serialises it (a copy per call costs as much as
        # the rendering it saves).
        return self._schema if not (args or kwargs) else self._model.model_json_schema(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Build an instance of the wrapped model, as calling the model itself does."""
        return self._model(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        if name in ("_model", "_schema"):  # not set yet: a copy being unpickled looks up __setstate__
            raise AttributeError(name)
        return getattr(self._model, name)


def render_schemas_once(metric: Any) -> Any:
    """``metric`` with each of its prompt objects reading its output schema from :class:`SchemaOnce`."""
    from ragas.prompt.metrics.base_prompt import BasePrompt

    for prompt in vars(metric).values():
        if isinstance(prompt, BasePrompt) and not isinstance(prompt.output_model, SchemaOnce):
            prompt.output_model = SchemaOnce(prompt.output_model)  # type: ignore[assignment]
    return metric


def _json_mode() -> Any:
    """instructor's handlers for OpenAI-compatible JSON mode (what ragas's llm_factory uses)."""
    return mode_registry.get_handlers(Provider.OPENAI, Mode.JSON)


def _completion(text: str, model: str) -> ChatCompletion:
    """A reply's text as the completion object instructor's parser reads."""
    return ChatCompletion.model_validate(
        {
            "id": "nbeval",
            "object": "chat.completion",
            "created": 0,
            "model": model or "judge",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        }
    )


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return " ".join(lines[:2])[:300] if lines else type(exc).__name__
