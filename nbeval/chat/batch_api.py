"""The OpenAI-compatible Batch API of one endpoint.

Upload a JSONL of requests, create a batch, poll it, read its output and error files (streamed, line
by line), cancel it.

The calls go through the same ``openai`` client as the endpoint's chat calls (its base URL, key,
default headers and query, none of them ever shown), one call per method, no retries of its own
(:mod:`nbeval.chat.batch` retries). A failed call raises :class:`~nbeval.chat.base.ChatError`
(``retryable`` for timeouts, dropped connections, 408/409/429 and 5xx), its text redacted.

The wire format (OpenAI's, which vLLM, Groq, Together, Mistral and others follow): each input
line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body": {...}}``; each
output or error line ``{"id", "custom_id", "response": {"status_code", "body"} | null, "error":
{"code", "message"} | null}``.
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from nbeval.chat.base import ChatError
from nbeval.chat.batch_lines import OutputLine, read_lines, split_lines
from nbeval.chat.openai_chat import OpenAIChat
from nbeval.chat.secrets import redact

__all__ = [
    "ENDPOINT",
    "METADATA_KEY",
    "TERMINAL",
    "BatchAPI",
    "BatchState",
    "OutputLine",
    "read_lines",
    "why_unanswered",
]

#: The endpoint every line of a batch goes to.
ENDPOINT = "/v1/chat/completions"

#: The batch metadata key carrying nbeval's submission id (how a batch created just before a crash
#: is found again).
METADATA_KEY = "nbeval_submission"

#: Statuses after which a batch changes no more.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})

_T = TypeVar("_T")

#: Bytes read from a streamed file at a time.
_CHUNK = 1 << 16


@dataclass(frozen=True)
class BatchState:
    """A batch as the provider last described it."""

    id: str
    status: str
    """``validating``, ``in_progress``, ``finalizing``, ``completed``, ``failed``, ``expired``,
    ``cancelling`` or ``cancelled``."""
    total: int = 0
    completed: int = 0
    failed: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    errors: tuple[str, ...] = ()
    """Why a batch ``failed`` (its input was refused), one line per error."""
    submission: str | None = None
    """The nbeval submission id in its metadata, if any."""
    created_at: float | None = None
    """When the provider created it (seconds since the epoch), if it says."""
    expires_at: float | None = None
    """When its completion window ends (seconds since the epoch), if the provider says."""

    @property
    def terminal(self) -> bool:
        """Whether the batch has finished for good.

        Completed, failed, expired or cancelled: no further poll can change it.
        """
        return self.status in TERMINAL

    @classmethod
    def of(cls, batch: Any) -> BatchState:
        """From the SDK's ``Batch`` (or any object or mapping with its fields).

        A field of the wrong type is read as missing (a count as 0), never an exception: the provider's answer is
        untrusted.
        """
        get = _getter(batch)
        count = _getter(get("request_counts"))
        errors = get("errors")
        data = errors.get("data") if isinstance(errors, Mapping) else getattr(errors, "data", None)
        lines = []
        for e in data if isinstance(data, list | tuple) else ():
            eget = _getter(e)
            where = f" (line {eget('line')})" if eget("line") is not None else ""
            lines.append(redact(f"{eget('code') or 'error'}{where}: {eget('message') or ''}".strip()))
        metadata = get("metadata")
        submission = metadata.get(METADATA_KEY) if isinstance(metadata, Mapping) else None
        return cls(
            id=str(get("id")),
            status=str(get("status")),
            total=_count(count("total")),
            completed=_count(count("completed")),
            failed=_count(count("failed")),
            output_file_id=_file_id(get("output_file_id")),
            error_file_id=_file_id(get("error_file_id")),
            errors=tuple(lines),
            submission=submission if isinstance(submission, str) else None,
            created_at=_seconds(get("created_at")),
            expires_at=_seconds(get("expires_at")),
        )

    def counts_text(self) -> str:
        """The batch's progress in words, such as ``"12/40 done, 1 failed"``."""
        done = f"{self.completed}/{self.total} done" if self.total else "0 done"
        return done + (f", {self.failed} failed" if self.failed else "")


def _getter(obj: Any) -> Callable[[str], Any]:
    """A field reader for a mapping or an object (``None`` for a field it lacks)."""
    if isinstance(obj, Mapping):
        return lambda k: obj.get(k)
    return lambda k: getattr(obj, k, None)


def _count(value: Any) -> int:
    """A count the provider gave; 0 for one that is no whole non-negative number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value) if math.isfinite(value) and value >= 0 else 0


def _seconds(value: Any) -> float | None:
    """A time the provider gave (seconds since the epoch); ``None`` for one that is not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _file_id(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


class BatchAPI:
    """The Batch API of ``model``'s endpoint, each call bounded by ``timeout`` seconds."""

    def __init__(self, model: OpenAIChat, timeout: float) -> None:
        self.model = model
        self.timeout = timeout

    def upload(self, data: bytes) -> str:
        """``POST /files`` (purpose ``batch``): the id of the uploaded JSONL file."""
        client = self.model._get_client()
        out = self._call(
            "upload the batch's requests",
            lambda: client.files.create(
                file=("nbeval-batch.jsonl", data, "application/jsonl"), purpose="batch", timeout=self.timeout
            ),
        )
        return str(out.id)

    def create(self, input_file_id: str, submission: str, completion_window: str) -> BatchState:
        """``POST /batches``: the new batch, tagged with nbeval's ``submission`` id."""
        client = self.model._get_client()
        out = self._call(
            "create the batch",
            lambda: client.batches.create(
                input_file_id=input_file_id,
                endpoint=ENDPOINT,
                completion_window=completion_window,
                metadata={METADATA_KEY: submission},
                timeout=self.timeout,
            ),
        )
        return BatchState.of(out)

    def retrieve(self, batch_id: str) -> BatchState:
        """``GET /batches/{id}``."""
        client = self.model._get_client()
        return BatchState.of(
            self._call("poll the batch", lambda: client.batches.retrieve(batch_id, timeout=self.timeout))
        )

    def cancel(self, batch_id: str) -> BatchState:
        """``POST /batches/{id}/cancel``."""
        client = self.model._get_client()
        return BatchState.of(
            self._call("cancel the batch", lambda: client.batches.cancel(batch_id, timeout=self.timeout))
        )

    def read(self, file_id: str, on_line: Callable[[bytes], None]) -> None:
        """Stream a file's content line by line to ``on_line``.

        ``GET /files/{id}/content``, streamed: ``on_line(line)`` for each line as it arrives, so
        a large file is never held whole. A file broken off midway raises a retryable
        :class:`ChatError` (the lines it gave were handed on).
        """
        client = self.model._get_client()

        def stream() -> None:
            with client.files.with_streaming_response.content(file_id, timeout=self.timeout) as response:
                for line in split_lines(response.iter_bytes(_CHUNK)):
                    on_line(line)

        self._call("read the batch's results", stream)

    def find(self, submission: str, limit: int = 100) -> BatchState | None:
        """Find the batch created for ``submission`` among the newest ``limit``.

        The batch whose metadata names ``submission``, if any: one created just before the run
        stopped, whose id never reached the store.
        """
        client = self.model._get_client()
        page = self._call("list the batches", lambda: client.batches.list(limit=limit, timeout=self.timeout))
        for batch in getattr(page, "data", None) or []:
            state = BatchState.of(batch)
            if state.submission == submission:
                return state
        return None

    def _call(self, what: str, fn: Callable[[], _T]) -> _T:
        import openai

        model = self.model
        try:
            return fn()
        except openai.APITimeoutError:
            raise ChatError(model._describe(f"could not {what}: timed out"), retryable=True) from None
        except openai.APIConnectionError as e:
            cause = e.__cause__ or e
            msg = model._describe(f"could not {what}: connection failed ({type(cause).__name__}: {cause})")
            raise ChatError(msg, retryable=True) from None
        except _transport_errors() as e:  # a streamed body broken off after its headers came
            msg = model._describe(f"could not {what}: connection failed ({type(e).__name__}: {e})")
            raise ChatError(msg, retryable=True) from None
        except openai.APIStatusError as e:
            err = model._status_error(e)
            raise ChatError(
                redact(f"{err} (could not {what})"),
                retryable=err.retryable,
                retry_after=err.retry_after,
                status=err.status,
                rate_limited=err.rate_limited,
            ) from None


@functools.cache
def _transport_errors() -> tuple[type[Exception], ...]:
    """The errors a streamed body broken off midway raises in the HTTP libraries.

    Those of the libraries the ``openai`` client may read a body with (``httpx2`` from openai 3 on,
    ``httpx`` before), which the SDK does not wrap once the response has begun.
    """
    errors: list[type[Exception]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        error = getattr(module, "HTTPError", None)
        if isinstance(error, type) and issubclass(error, Exception):
            errors.append(error)
    return tuple(errors)


def why_unanswered(state: BatchState, window: str) -> str:
    """Why a finished batch (``state``, sent with the completion ``window``) has no answer to a request."""
    again = (
        "run again: batch=True sends the requests it did not answer in a new batch, batch=False asks them "
        "one by one (the answers it gave are cached)"
    )
    if state.status == "expired":
        return f"batch {state.id} expired (its {window} window passed) before this request was answered; {again}"
    if state.status == "cancelled":
        return f"batch {state.id} was cancelled at the provider before this request was answered; {again}"
    if state.status == "failed":
        return f"batch {state.id} failed at the provider: {'; '.join(state.errors) or 'no reason given'}"
    return f"batch {state.id} ended ({state.status}) without an answer to this request"
