"""What the service calls on the user's behalf.

A retriever (``recall`` scenes), a documents function (the chunks of a named document) and an
application (``app`` scenes), plugged in as Python callables, ``module:function`` names or entry
points.

A retriever is called as ``retriever(query, top_k)`` (plus ``scene_value=`` when it takes a
parameter of that name, e.g. to pick a knowledge space) and returns chunks, best first: texts, or
dicts with the text under ``content`` (or ``text``) and the document under ``doc_uri`` (or
``doc_name``). A documents function is called as ``documents(doc_name)`` (plus ``scene_value=``
when it takes it) and returns that document's chunks in the same forms, as DB-GPT reads them from
its knowledge base to check retrieved chunks against. An application is a callable called as
``app(query)`` plus those of ``top_k=``, ``contexts=`` (the retrieved chunks), ``prompt=``,
``model=`` and ``scene_value=`` it has parameters for, which returns the answer text, an
``(answer, chunks)`` pair or a dict with ``answer`` and ``contexts``; or an OpenAI-compatible
endpoint (:class:`EndpointApp`), which is sent the question and, when a retriever is configured,
the chunks it retrieved.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from nbeval.errors import NbevalError

__all__ = [
    "APP_GROUP",
    "DOCUMENTS_GROUP",
    "RETRIEVER_GROUP",
    "AppAnswer",
    "CallableApp",
    "EndpointApp",
    "document_chunks",
    "load_callable",
    "normalize_chunks",
    "retrieve",
]

#: Entry-point groups where installed packages offer retrievers, documents functions and
#: applications by name.
RETRIEVER_GROUP = "nbeval.retrievers"
DOCUMENTS_GROUP = "nbeval.documents"
APP_GROUP = "nbeval.apps"


def load_callable(spec: str, group: str, what: str) -> Callable[..., Any]:
    """The callable ``spec`` names.

    ``package.module:function`` (dots after the colon reach attributes), or the name of an entry
    point in ``group``. ``what`` names it in errors.
    """
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            msg = f"cannot load the {what} {spec!r}: {exc}"
            raise NbevalError(msg) from None
    else:
        from importlib.metadata import entry_points

        found = list(entry_points(group=group, name=spec))
        if not found:
            names = sorted(ep.name for ep in entry_points(group=group))
            msg = (
                f"no {what} named {spec!r}: give module:function, or the name of an entry point in "
                f"'{group}' ({', '.join(names) if names else 'none is installed'})"
            )
            raise NbevalError(msg)
        obj = found[0].load()
    if not callable(obj):
        msg = f"the {what} {spec!r} is a {type(obj).__name__}, not a function"
        raise NbevalError(msg)
    fn: Callable[..., Any] = obj
    return fn


def normalize_chunks(items: Any, who: str) -> list[dict[str, str]]:
    """Chunks as ``{"content": ..., "doc_uri": ...}`` dicts (either key may be absent)."""
    if items is None:
        return []
    if isinstance(items, (str, Mapping)) or not isinstance(items, Sequence):
        msg = f"{who} returned {type(items).__name__}; return a list of chunks (texts or dicts)"
        raise NbevalError(msg)
    chunks = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            chunks.append({"content": item})
            continue
        if isinstance(item, Mapping):
            content = item.get("content", item.get("text", item.get("page_content")))
            doc = item.get("doc_uri", item.get("doc_name", item.get("source")))
            if content is not None or doc is not None:
                chunk = {}
                if content is not None:
                    chunk["content"] = str(content)
                if doc is not None:
                    chunk["doc_uri"] = str(doc)
                chunks.append(chunk)
                continue
        msg = (
            f"{who} returned a chunk #{i + 1} of type {type(item).__name__}; a chunk is a text or a "
            "dict with 'content' and/or 'doc_uri'"
        )
        raise NbevalError(msg)
    return chunks


def _call(fn: Callable[..., Any], args: Sequence[Any], extra: Mapping[str, Any]) -> Any:
    """``fn(*args)`` plus the ``extra`` keywords ``fn`` has a parameter for."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    takes_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = {k: v for k, v in extra.items() if takes_all or k in params}
    return fn(*args, **kwargs)


def retrieve(
    retriever: Callable[..., Any], query: str, top_k: int, scene_value: str | None = None
) -> list[dict[str, str]]:
    """Call the retriever for ``query`` and return at most ``top_k`` chunks."""
    out = _call(retriever, (query, top_k), {"scene_value": scene_value})
    return normalize_chunks(out, "the retriever")[:top_k]


def document_chunks(
    documents: Callable[..., Any], doc_name: str, scene_value: str | None = None
) -> list[dict[str, str]]:
    """Call the documents function for ``doc_name`` and return the document's chunks.

    Each chunk has its ``doc_uri`` set to ``doc_name`` when the function does not name one.
    """
    out = normalize_chunks(_call(documents, (doc_name,), {"scene_value": scene_value}), "the documents function")
    return [{**c, "doc_uri": c.get("doc_uri", doc_name)} for c in out]


@dataclass
class AppAnswer:
    """An application's answer to one question, or why there is none."""

    answer: str | None = None
    contexts: list[dict[str, str]] | None = None
    """The chunks the answer was based on, when the application says (or the retriever found them)."""
    error: str | None = None
    seconds: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _unpack(out: Any) -> tuple[str, list[dict[str, str]] | None]:
    if isinstance(out, str):
        return out, None
    if isinstance(out, tuple) and len(out) == 2:
        return str(out[0]), normalize_chunks(list(out[1] or []), "the application")
    if isinstance(out, Mapping):
        answer = out.get("answer", out.get("text"))
        if answer is not None:
            ctx = out.get("contexts", out.get("context"))
            return str(answer), None if ctx is None else normalize_chunks(list(ctx), "the application")
    msg = f"the application returned {type(out).__name__}; return the answer text, (answer, chunks) or a dict"
    raise NbevalError(msg)


class CallableApp:
    """An application that is a Python function (see the module docstring); ``workers`` questions are asked at once.

    A question whose call raises gets that error as its answer's ``error``.
    """

    def __init__(self, fn: Callable[..., Any], workers: int = 4) -> None:
        self.fn = fn
        self.workers = max(1, workers)

    def ask(
        self,
        queries: Sequence[str],
        contexts: Sequence[list[dict[str, str]] | None],
        *,
        top_k: int,
        prompt: str | None = None,
        model: str | None = None,
        scene_value: str | None = None,
    ) -> list[AppAnswer]:
        """Ask the function each of ``queries``, ``workers`` at a time.

        Each query goes with its ``contexts`` entry, and ``top_k``, ``prompt``, ``model`` and
        ``scene_value`` where the function takes them; one answer per query, in order, with its
        latency.
        """
        import time

        def one(i: int) -> AppAnswer:
            start = time.perf_counter()
            extra = {
                "top_k": top_k,
                "contexts": contexts[i],
                "prompt": prompt,
                "model": model,
                "scene_value": scene_value,
            }
            try:
                answer, ctx = _unpack(_call(self.fn, (queries[i],), extra))
            except Exception as exc:
                return AppAnswer(error=f"the application failed: {type(exc).__name__}: {exc}")
            return AppAnswer(answer, ctx if ctx is not None else contexts[i], seconds=time.perf_counter() - start)

        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(one, range(len(queries))))


class EndpointApp:
    """An application behind an OpenAI-compatible chat endpoint.

    The request's ``prompt`` is sent as the system message; retrieved chunks, when there are any, go before the
    question. Only ``api_key`` is sent to it: never the judge's key from the environment.
    """

    def __init__(
        self,
        base_url: str,
        model: str | None,
        api_key: str | None = None,
        *,
        concurrency: int = 4,
        timeout: float = 60.0,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.api_key = api_key
        self.concurrency = max(1, concurrency)
        self.timeout = timeout

    def ask(
        self,
        queries: Sequence[str],
        contexts: Sequence[list[dict[str, str]] | None],
        *,
        top_k: int,
        prompt: str | None = None,
        model: str | None = None,
        scene_value: str | None = None,
    ) -> list[AppAnswer]:
        """Ask the OpenAI-compatible endpoint each of ``queries``.

        Its ``contexts`` entry is put into the prompt; one answer per query, in order, a failed
        call's answer carrying the error.
        """
        from nbeval.chat.client import ChatClient, ChatFailure
        from nbeval.chat.openai_chat import OpenAIChat

        name = model or self.model
        if not name:
            msg = "no model for the application endpoint: start the service with --app-model or send context.model"
            raise NbevalError(msg)
        chat = OpenAIChat(name, base_url=self.base_url, api_key=self.api_key or "no-key", timeout=self.timeout)
        client = ChatClient(chat, concurrency=self.concurrency, max_attempts=2, cache=False, timeout=self.timeout)
        requests = [_messages(q, ctx, prompt) for q, ctx in zip(queries, contexts, strict=True)]
        out = []
        for reply, ctx in zip(client.run_many(requests), contexts, strict=True):
            if isinstance(reply, ChatFailure):
                out.append(AppAnswer(error=f"the application endpoint failed: {reply.error}"))
            else:
                out.append(AppAnswer(reply.text, ctx, seconds=reply.duration_s))
        return out


def _messages(query: str, chunks: list[dict[str, str]] | None, prompt: str | None) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": prompt}] if prompt else []
    if chunks:
        refs = "\n\n".join(f"[{i}] {c.get('content', c.get('doc_uri', ''))}" for i, c in enumerate(chunks, 1))
        messages.append({"role": "user", "content": f"References:\n{refs}\n\nQuestion: {query}"})
    else:
        messages.append({"role": "user", "content": query})
    return messages
