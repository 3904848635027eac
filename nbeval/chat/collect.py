"""Collecting answers: send every test case of a suite to every model and build a test lab.

    pending = nbeval.collect(suite, models={"gpt": "gpt-4o-mini", "my_rag": my_rag_function})
    pending.plan()          # how many calls, how many cached, before spending anything
    lab = pending.complete()

A model is anything :func:`~nbeval.chat.config.resolve_chat_model` accepts (an OpenAI-compatible
model name or settings dict, ``"hf:<path>"``, a chat model), or a Python function. A function is
called as a RAG system: it receives the prompt (a parameter named ``prompt``, ``input``,
``question`` or ``query``, else the first one) and, when it has parameters of these names, the
test's ``documents`` and the ``test_case``; it returns the answer text, an ``(answer, context)``
pair, or a dict with ``answer`` (or ``text``), ``context`` (chunk texts or ``{"content",
"doc_uri"}`` dicts) and optionally ``cost``. An agent returns the messages it produced instead (a
list in the OpenAI chat format, tool calls and results included, or a dict with ``messages``):
they become the row's ``messages``, after the user's prompt when the list does not start with
it, and the answer is the assistant's last text. Every call goes through a
:class:`~nbeval.chat.client.ChatClient`: bounded concurrency, retries, the reply cache (a
function's answer and context are cached together, under a fingerprint of its code and
configuration; wrap it as ``RagFunction(fn, cache_key="v1")`` when that cannot be taken, e.g. it
holds an open client) and cost accounting. A model that fails on a case leaves that row's
``error``, never a hole.

Progress moves with every answer (the bar's total is known from the start). ``complete(cancel=...)``
stops at once: no call starts after the event is set, the calls in flight finish and their
answers are kept, and every case not answered gets the error ``"cancelled"`` (the lab's
``extra["cancelled"]`` is then true; evaluating it skips those rows, saying why). Ctrl-C does the
same without waiting for the calls in flight, raising :class:`~nbeval.errors.Interrupted` with the
partial lab.
"""

from __future__ import annotations

import inspect
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nbeval.chat.base import ChatError, ChatModel, ChatReply, Message, Usage
from nbeval.chat.client import CallPlan, ChatClient, ChatFailure, ChatResult
from nbeval.chat.config import resolve_chat_model
from nbeval.chat.deadline import call_with_deadline
from nbeval.chat.fingerprint import FunctionIdentity, callable_name
from nbeval.chat.usage_read import reported_cost
from nbeval.data.conversation import case_conversation, check_messages, final_answer
from nbeval.errors import DataError
from nbeval.options import RunOptions
from nbeval.progress import progress_bar

if TYPE_CHECKING:
    import threading

    from nbeval.data.model import TestLab, TestSuite

__all__ = ["CANCELLED", "COLLECT_OPTIONS", "PendingLab", "RagFunction", "collect"]

_PROMPT_NAMES = ("prompt", "input", "question", "query", "text")

#: The ``error`` of a row whose case was never answered because the collection was cancelled.
CANCELLED = "cancelled"


class RagFunction(FunctionIdentity):
    """A Python function answering test cases, wrapped as a chat model.

    Its reply text carries the answer and the retrieved context as JSON, so both go through the
    cache together.

    Cached like :class:`~nbeval.chat.callable_chat.CallableChat`: under a fingerprint of the
    function's code and configuration (partial arguments, closure values, object state), or, when
    that cannot be taken reliably, not at all unless ``cache_key=`` names the configuration. A
    call that overruns its ``timeout`` is abandoned and reported as a timeout.
    """

    identity_kind = "rag"

    def __init__(
        self, fn: Callable[..., Any], name: str | None = None, *, cache: bool = True, cache_key: Any = None
    ) -> None:
        self.fn = fn
        self.name = name or callable_name(fn)
        self.cache = cache
        self.cache_key = cache_key
        try:
            params = list(inspect.signature(fn).parameters.values())
        except (TypeError, ValueError):  # a builtin without a signature: pass the prompt positionally
            params = []
        named = [p.name for p in params if p.name in _PROMPT_NAMES]
        self._prompt_arg = named[0] if named else (params[0].name if params else None)
        self._extras = {p.name for p in params} & {"documents", "test_case", "messages"}

    def __repr__(self) -> str:
        return f"RagFunction({self.name!r})"

    def chat(self, messages: Sequence[Message], *, timeout: float | None = None, **params: Any) -> ChatReply:
        """Ask the wrapped RAG function the last message's content.

        Its answer is returned as a reply, with the context, cost and produced fields it gave back.
        """
        prompt = str(messages[-1]["content"])
        kwargs = {k: params[k] for k in self._extras if k in params}
        if "messages" in self._extras:  # the conversation so far (sent as "history": chat() has messages)
            kwargs["messages"] = list(params.get("history") or [{"role": "user", "content": messages[-1]["content"]}])
        started = time.perf_counter()
        out = (
            self._call(prompt, kwargs)
            if timeout is None
            else call_with_deadline(lambda: self._call(prompt, kwargs), timeout, self.name)
        )
        answer, context, cost, produced = _unpack(out, self.name)
        if produced is not None:
            produced = _with_prompt(produced, prompt)
            answer = final_answer(produced) or ""
        payload = json.dumps({"answer": answer, "context": context, "messages": produced}, ensure_ascii=False)
        return ChatReply(payload, Usage(), self.name, duration_s=time.perf_counter() - started, cost=cost)

    def _call(self, prompt: str, kwargs: dict[str, Any]) -> Any:
        try:
            return self.fn(**kwargs, **{self._prompt_arg: prompt}) if self._prompt_arg else self.fn(prompt, **kwargs)
        except (TimeoutError, ConnectionError) as e:
            raise ChatError(f"{self.name}: {type(e).__name__}: {e}", retryable=True) from e
        except Exception as e:
            raise ChatError(f"{self.name} raised {type(e).__name__}: {e}") from e


def _unpack(out: Any, name: str) -> tuple[str, list[Any] | None, float | None, list[dict[str, Any]] | None]:
    """(answer, context, cost, messages) of what a function returned."""
    if isinstance(out, str):
        return out, None, None, None
    if isinstance(out, tuple) and len(out) == 2:
        return str(out[0]), list(out[1] or []), None, None
    if isinstance(out, list) and out and all(isinstance(m, Mapping) for m in out):
        return "", None, None, _agent_messages(out, name)
    if isinstance(out, Mapping):
        answer = out.get("answer", out.get("text", out.get("actual_output")))
        messages = _agent_messages(out["messages"], name) if out.get("messages") is not None else None
        if answer is not None or messages is not None:
            ctx = out.get("context", out.get("contexts"))
            cost, _ = reported_cost(out.get("cost"))  # a cost no call can have (-2000, NaN) is unknown
            return (
                "" if answer is None else str(answer),
                None if ctx is None else list(ctx),
                cost,
                messages,
            )
    msg = (
        f"{name} returned {type(out).__name__}; return the answer text, (answer, context), a dict with "
        "'answer', or an agent's messages (a list of {'role', 'content'} dicts)"
    )
    raise ChatError(msg)


def _agent_messages(value: Any, name: str) -> list[dict[str, Any]]:
    """An agent's messages in the OpenAI chat format; a malformed one fails this answer, saying where."""
    try:
        return check_messages(value, f"the messages {name} returned", None)
    except DataError as exc:
        raise ChatError(str(exc)) from None


def _with_prompt(messages: list[dict[str, Any]], prompt: str) -> list[dict[str, Any]]:
    """``messages`` after the user's prompt, unless the agent's list holds a user message already."""
    if any(m["role"] == "user" for m in messages):
        return messages
    return [{"role": "user", "content": prompt}, *messages]


class PendingLab:
    """A suite and the models to ask; :meth:`complete` asks them and returns the lab."""

    def __init__(
        self,
        suite: TestSuite,
        models: Any,
        *,
        system_prompt: str | None = None,
        params: Mapping[str, Any] | None = None,
        **client_settings: Any,
    ) -> None:
        _check_settings(client_settings)
        self.suite = suite
        self.system_prompt = system_prompt
        self.params = dict(params or {})
        batch = [client_settings.pop(k, None) for k in _BATCH_SETTINGS]
        self.batch = batch[0]
        """``batch=True``: :meth:`complete` sends the requests through the Batch API (see there)."""
        self.batch_settings = {"poll_s": batch[1], "discount": batch[2]}
        from nbeval.chat.batch_options import batch_options

        batch_options(True, batch[1], batch[2])  # a bad batch_poll_s or batch_discount fails here, not later
        self.client_settings = client_settings
        self.models: dict[str, ChatModel] = _models(models)
        if not suite.test_cases:
            msg = "the suite has no test cases to send"
            raise DataError(msg)
        self._clients: dict[str, ChatClient] = {}

    def client(self, key: str) -> ChatClient:
        """The chat client that asks the model ``key`` for its answers.

        Made on first use from the shared client settings and the model's own, which win.
        """
        if key not in self._clients:
            from nbeval.chat.judge_settings import client_settings_of

            # a model's own dict settings (max_attempts, concurrency, timeout) win for its calls
            own = client_settings_of(self.models[key])
            self._clients[key] = ChatClient(self.models[key], **{**self.client_settings, **own})
        return self._clients[key]

    def requests(self, key: str) -> list[tuple[list[dict[str, str]], dict[str, Any]]]:
        """The chat requests for model ``key``, one per test case, in suite order."""
        is_fn = isinstance(self.models[key], RagFunction)
        out = []
        for test in self.suite.tests:
            for case in test.test_cases:
                history = _case_messages(case)
                msgs = history or [{"role": "user", "content": case.prompt}]
                if self.system_prompt and not is_fn and not any(m["role"] == "system" for m in msgs):
                    msgs.insert(0, {"role": "system", "content": self.system_prompt})
                params = dict(self.params)
                if is_fn:
                    params = {"documents": list(test.documents), "test_case": case.to_json(), "history": history}
                out.append((msgs, params))
        return out

    def plan(self) -> CallPlan:
        """Count the calls, cached answers and rough tokens over every model, calling nothing.

        With prices, the cost one call at a time and with ``batch=True`` (``est_batch_cost``: the
        price's batch part, else less ``batch_discount``; a function is called one by one either
        way).
        """
        from nbeval.chat.batch_options import with_batch_cost

        discount = self.batch_settings["discount"]
        plans = [with_batch_cost(self.client(k), self.client(k).plan(self.requests(k)), discount) for k in self.models]
        total = plans[0]
        for p in plans[1:]:
            total = total + p
        return total

    def complete(
        self,
        progress: bool = True,
        *,
        cancel: threading.Event | None = None,
        batch: bool | None = None,
        on_status: Callable[[str], None] | None = None,
    ) -> TestLab:
        """Ask every model every test case; failures become the rows' errors.

        ``cancel``: an event that stops the collection at once: no call starts after it is set
        (calls in flight finish and are kept); the cases not answered get the error
        ``"cancelled"`` and the lab's ``extra["cancelled"]`` is true. Ctrl-C raises
        :class:`~nbeval.errors.Interrupted` whose ``.result`` is the partial lab.

        ``batch=True`` (or ``collect(..., batch=True)``): the requests go through the endpoints'
        Batch APIs (:mod:`nbeval.chat.batch`: every model's batch sent at once and polled until it
        is over; a stopped collection resumes its batches; ``cancel`` cancels them at the provider).
        The bar shows the batches' states and counts, and ``on_status(text)`` is told them too
        (``"batch batch_abc: in_progress, 40/100 done, 2 failed"``) each time they are polled.
        """
        cases = [(t, c) for t in self.suite.tests for c in t.test_cases]
        bar = progress_bar(len(cases) * len(self.models), progress, desc="collecting answers", unit="answer")
        answers: dict[str, list[ChatResult | None]] = {}
        if batch if batch is not None else self.batch:
            return self._complete_batched(cases, bar, answers, cancel, on_status)
        try:
            for key in self.models:
                got: list[ChatResult | None] = [None] * len(cases)
                answers[key] = got

                def arrived(i: int, result: ChatResult, got: list[ChatResult | None] = got) -> None:
                    got[i] = result
                    bar.update(1)

                answers[key] = list(self.client(key).run_many(self.requests(key), on_done=arrived, cancel=cancel))
        except KeyboardInterrupt:
            from nbeval.errors import Interrupted

            bar.close()
            raise Interrupted(self._lab(cases, answers)) from None
        bar.close()
        return self._lab(cases, answers)

    def _complete_batched(
        self,
        cases: list[tuple[Any, Any]],
        bar: Any,
        answers: dict[str, list[ChatResult | None]],
        cancel: threading.Event | None,
        on_status: Callable[[str], None] | None,
    ) -> TestLab:
        from nbeval.chat.batch import run_batches
        from nbeval.chat.batch_options import batch_options

        options = batch_options(True, self.batch_settings["poll_s"], self.batch_settings["discount"])
        assert options is not None
        show = getattr(bar, "set_postfix_str", None)

        def status(text: str) -> None:
            if show is not None:
                show(text)
            if on_status is not None:
                on_status(text)

        options.on_status = status
        jobs = []
        for key in self.models:
            answers[key] = [None] * len(cases)

            def arrived(i: int, result: ChatResult, got: list[ChatResult | None] = answers[key]) -> None:
                got[i] = result
                bar.update(1)

            jobs.append((self.client(key), self.requests(key), arrived))
        try:
            for key, results in zip(self.models, run_batches(jobs, options, cancel=cancel), strict=True):
                answers[key] = list(results)
        except KeyboardInterrupt as stop:  # the batches go on at the provider: the next complete() resumes them
            from nbeval.chat.batch_options import still_running
            from nbeval.errors import Interrupted

            bar.close()
            batches = tuple(getattr(stop, "batches", ()))
            note = still_running(batches, "running the same complete(batch=True) again") if batches else ""
            raise Interrupted(self._lab(cases, answers), batches=batches, note=note) from None
        bar.close()
        return self._lab(cases, answers)

    def _lab(self, cases: list[tuple[Any, Any]], answers: Mapping[str, Sequence[ChatResult | None]]) -> TestLab:
        """The lab of ``answers`` (per model, per case; a case without one was cancelled)."""
        from nbeval.chat.openai_chat import OpenAIChat, public_url
        from nbeval.data.model import LlmDataset, ModelInfo, Row, TestLab

        rows, infos = [], []
        cancelled = 0
        for key, model in self.models.items():
            results = answers.get(key) or [None] * len(cases)
            for (test, case), result in zip(cases, results, strict=True):
                row = Row.from_test_case(case, corpus=test.documents, model_key=key)
                if result is None or (isinstance(result, ChatFailure) and result.cancelled):
                    cancelled += 1
                    rows.append(row.with_answer(actual_output=None, error=CANCELLED))
                else:
                    rows.append(_answered(row, result, isinstance(model, RagFunction)))
            connection = public_url(model.base_url) if isinstance(model, OpenAIChat) and model.base_url else None
            infos.append(
                ModelInfo(
                    key=key,
                    name=key,
                    model_type="rag" if isinstance(model, RagFunction) else "llm",
                    llm_model_name=getattr(model, "name", key),
                    connection=connection,
                )
            )
        usage = {k: c.usage_totals().to_dict() for k, c in self._clients.items()}
        extra: dict[str, Any] = {"usage": usage, **({"cancelled": True} if cancelled else {})}
        return TestLab(
            name=self.suite.name,
            description=self.suite.description,
            raw_dataset=self.suite.to_dataset(),
            dataset=LlmDataset(rows),
            models=infos,
            llm_model_names=[i.llm_model_name or i.key for i in infos],
            extra=extra,
        )


_BATCH_SETTINGS = ("batch", "batch_poll_s", "batch_discount")
#: The options of :meth:`PendingLab.complete`, which :func:`collect` does not take.
_COMPLETE_OPTIONS = ("progress", "cancel", "on_status")


def _check_settings(settings: Mapping[str, Any]) -> None:
    """Refuse, before anything is asked, a setting that neither a client nor a batch takes.

    A setting must be a :class:`~nbeval.chat.client.ChatClient` setting or a batch setting.
    """
    import difflib

    from nbeval.errors import BadParameter

    known = [p for p in inspect.signature(ChatClient.__init__).parameters if p not in ("self", "model")]
    known += [*_BATCH_SETTINGS, "system_prompt", "params"]
    for name in settings:
        if name in known:
            continue
        if name in _COMPLETE_OPTIONS:
            msg = (
                f"collect() takes no {name}=: it is an option of .complete(), which asks the models; "
                f"write nbeval.collect(suite, models).complete({name}=...)"
            )
            raise BadParameter(msg)
        close = difflib.get_close_matches(name, [*known, *_COMPLETE_OPTIONS], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        msg = f"collect() has no option {name!r}{hint}; it takes {', '.join(sorted(known))}"
        raise BadParameter(msg)


def _case_messages(case: Any) -> list[dict[str, Any]]:
    """A test case's conversation so far, ending with its prompt (``[]`` for a single prompt)."""
    return case_conversation(case.extra.get("messages"), case.prompt, "test case", case.resolved_key)


def _answered(row: Any, result: Any, is_fn: bool) -> Any:
    from nbeval.data.model import Chunk

    if isinstance(result, ChatFailure):
        return row.with_answer(actual_output=None, error=result.error)
    answer, context, messages = result.text, None, None
    if is_fn:
        try:
            data = json.loads(result.text)
            answer, context, messages = data["answer"], data.get("context"), data.get("messages")
        except (ValueError, KeyError, TypeError):  # a cache entry some other program wrote
            return row.with_answer(
                actual_output=None,
                error=f"the function's answer could not be read back from the cache: {result.text[:80]!r}",
            )
    chunks = (
        []
        if context is None
        else [
            Chunk(content=c.get("content"), doc_uri=c.get("doc_uri"))
            if isinstance(c, Mapping)
            else Chunk(content=str(c))
            for c in context
        ]
    )
    if messages is None and row.messages:  # a chat model answered the conversation: its reply ends it
        messages = [*row.messages, {"role": "assistant", "content": answer}]
    # A reply repaired on its way in (text that could not be encoded) says so on its row.
    return row.with_answer(
        actual_output=answer,
        messages=messages or [],
        context=chunks,
        actual_duration=result.duration_s,
        cost=result.cost,
        warnings=[*row.warnings, *getattr(result, "warnings", ())],
    )


def _models(models: Any) -> dict[str, ChatModel]:
    if isinstance(models, Mapping):
        items = list(models.items())
    else:
        if isinstance(models, (str, bytes)) or not isinstance(models, Sequence):
            models = [models]
        items = [m if isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], str) else (None, m) for m in models]
    out: dict[str, ChatModel] = {}
    for key, spec in items:
        if callable(spec) and not isinstance(spec, ChatModel) and not hasattr(spec, "run_many"):
            model: ChatModel = RagFunction(spec, name=key)
        else:
            model = resolve_chat_model(spec, required=True)
        key = key or getattr(model, "name", None) or f"model_{len(out) + 1}"
        if key in out:
            msg = f"two models are called {key!r}; pass a dict {{key: model}} to name them apart"
            raise DataError(msg)
        out[key] = model
    if not out:
        msg = "no models given; pass models=[...] (model names, settings dicts or functions)"
        raise DataError(msg)
    return out


def collect(
    suite: TestSuite | str | os.PathLike[str] | dict[str, Any],
    models: Any,
    *,
    system_prompt: str | None = None,
    params: Mapping[str, Any] | None = None,
    options: RunOptions | Mapping[str, Any] | None = None,
    **settings: Any,
) -> PendingLab:
    """Pair a test suite with the models to ask, ready to count and make the calls.

    ``.plan()`` counts the calls, ``.complete()`` makes them and returns the filled
    :class:`~nbeval.data.model.TestLab` (``nbeval.collect(suite, models=[...])``).

    The options are keyword-only. A run option that does not apply (``judge``, ``embedder``,
    ``device``, ``scheduler``, ``chunk_rows``; ``progress``, which is :meth:`PendingLab.complete`'s)
    set in ``options`` is a :class:`~nbeval.errors.BadParameter`, as is any other unknown option, at
    once (``progress``, ``cancel`` and ``on_status`` belong to :meth:`PendingLab.complete`).

    Args:
        suite: A :class:`~nbeval.data.model.TestSuite`, or what reads as one (as for
            :func:`nbeval.evaluate` and :func:`nbeval.perturb`): the path of a suite file, a suite's
            JSON text or its parsed dict (one test or one test case too).
        models: The models to ask: one model, a list of them (or of ``(key, model)`` pairs) or a
            dict ``{key: model}``. Each is what :func:`~nbeval.chat.config.resolve_chat_model`
            accepts, or a Python function called as a RAG system (see the module's docs).
        system_prompt: Sent before each prompt to chat models (not to functions).
        params: Generation parameters, sent with each request to a chat model.
        options: A :class:`~nbeval.options.RunOptions` (or a mapping of its names) holding those of
            the run options that apply to the calls made here (:data:`COLLECT_OPTIONS`); a keyword
            wins over it.
        **settings: Any :class:`~nbeval.chat.client.ChatClient` setting (``concurrency``,
            ``timeout``, ``max_attempts``, ``cache``, ``prices``, ``seed``...), and ``batch=True``
            (with ``batch_poll_s`` and ``batch_discount``, as :func:`nbeval.evaluate` takes them) to
            collect through the Batch API.

    Returns:
        The pending lab: :meth:`PendingLab.plan` counts its calls, :meth:`PendingLab.complete`
        makes them.

    Raises:
        DataError: When ``suite`` does not read as a test suite or has no test cases, or when
            ``models`` is empty or gives two models the same key.
    """
    given = {name: settings.pop(name) for name in list(settings) if name in COLLECT_OPTIONS}
    opts = RunOptions.of(options, **given).only(COLLECT_OPTIONS, "collect()", _NOT_COLLECT_OPTIONS)
    chosen = {name: getattr(opts, name) for name in COLLECT_OPTIONS if getattr(opts, name) is not None}
    if "prices" in chosen:
        chosen["prices"] = dict(chosen["prices"])
    return PendingLab(_as_suite(suite), models, system_prompt=system_prompt, params=params, **chosen, **settings)


#: The run options (:class:`~nbeval.options.RunOptions`) :func:`collect` takes: those of its calls.
COLLECT_OPTIONS = (
    "cache",
    "concurrency",
    "timeout",
    "max_attempts",
    "prices",
    "batch",
    "batch_poll_s",
    "batch_discount",
)
#: Why each other run option is refused by :func:`collect`.
_NOT_COLLECT_OPTIONS = {
    "progress": "it is an option of .complete(), which asks the models: .complete(progress=...)",
    "judge": "collect asks its models=, no judge; the judge grades the answers in nbeval.evaluate",
    "embedder": "collecting answers embeds nothing",
    "device": "give a local model's device in its settings, e.g. {'model': 'hf:...', 'device': 'cuda'}",
    "scheduler": "answers are collected on this machine",
    "run_dir": "answers are collected on this machine",
    "chunk_rows": "it is how nbeval.evaluate scores rows",
}


def _as_suite(suite: Any) -> TestSuite:
    """``suite`` as a :class:`~nbeval.data.model.TestSuite` (read from a path, JSON text or a dict)."""
    from nbeval.data.model import TestSuite

    if isinstance(suite, TestSuite):
        return suite
    if isinstance(suite, (str, os.PathLike, dict)):
        from nbeval.data.readers import load

        loaded = load(suite)
        if isinstance(loaded, TestSuite):
            return loaded
        what = "a test lab (already answered)" if type(loaded).__name__ == "TestLab" else "a dataset of rows"
        msg = (
            f"collect needs a test suite (an object with 'tests', one test or one test case); "
            f"{suite if isinstance(suite, (str, os.PathLike)) and len(str(suite)) < 200 else 'this'} is {what}"
        )
        raise DataError(msg)
    msg = f"collect needs a test suite or the path of one, not {type(suite).__name__}"
    raise DataError(msg)
