"""The pieces of a batched run (:mod:`nbeval.chat.batch`): one client's requests and their
results (:class:`Part`), one batch waited on (:class:`Live`), and the small steps around them:
a request's parameters as sent, requests cut into batches, a batch file read line by line."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nbeval.chat.accounting import ChatResult
from nbeval.chat.base import ChatError, ChatReply
from nbeval.chat.batch_api import BatchAPI, BatchState
from nbeval.chat.batch_results import BatchResults
from nbeval.chat.batch_store import BatchStore
from nbeval.chat.batch_watch import Watch
from nbeval.chat.client import SAMPLE_PARAM, ChatClient, _as_request
from nbeval.chat.secrets import redact

__all__ = ["Live", "Part", "chunks", "quietly", "read_file", "sent", "warn_one_by_one"]

_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()


class Part:
    """One client's requests and their results."""

    def __init__(
        self, client: ChatClient, requests: Sequence[Any], on_done: Callable[[int, ChatResult], None] | None
    ) -> None:
        self.client = client
        self.requests = requests
        self.reqs = [_as_request(r) for r in requests]
        self.results: list[ChatResult | None] = [None] * len(self.reqs)
        self.on_done = on_done
        self.waiting: dict[str, list[int]] = {}
        """Cache key -> the requests waiting for its answer."""

    def deliver(self, key: str, result: ChatResult, *, fresh: bool, cached: bool = False) -> None:
        idxs = self.waiting.pop(key, None)
        if not idxs:
            return
        client = self.client
        if isinstance(result, ChatReply):
            client._account(result, len(idxs), cached=cached)
        elif not result.cancelled:
            client._fail(result, len(idxs))
        if fresh:
            client._bump(attempts=1)
        for i in idxs:
            self.results[i] = result
            if self.on_done is not None:
                self.on_done(i, result)


@dataclass
class Live:
    """A batch being waited on."""

    submission: str
    batch_id: str
    keys: frozenset[str]
    client: ChatClient
    api: BatchAPI
    store: BatchStore
    state: BatchState | None = None
    misses: int = 0
    watch: Watch | None = None


def sent(params: dict[str, Any]) -> dict[str, Any]:
    """A request's parameters as sent: without the sample number, which only tells copies apart."""
    return {k: v for k, v in params.items() if k != SAMPLE_PARAM}


def read_file(api: BatchAPI, file_id: str, kind: str, results: BatchResults) -> None:
    """Hand each line of file ``file_id`` (the batch's ``kind`` file) to ``results`` as it arrives."""
    count = iter(range(1, 1 << 62))
    api.read(file_id, lambda raw: results.add(raw, f"line {next(count)} of its {kind} file"))


def chunks(lines: list[tuple[str, bytes]], max_lines: int, max_bytes: int) -> list[list[tuple[str, bytes]]]:
    chunks: list[list[tuple[str, bytes]]] = []
    size = 0
    for item in lines:
        if not chunks or len(chunks[-1]) >= max_lines or (chunks[-1] and size + len(item[1]) > max_bytes):
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += len(item[1])
    return chunks


def quietly(fn: Callable[[], BatchState | None]) -> BatchState | None:
    try:
        return fn()
    except ChatError:
        return None


def warn_one_by_one(client: ChatClient) -> None:
    name = getattr(client.model, "name", type(client.model).__name__)
    msg = (
        f"nbeval: batch=True: {name!r} is not an OpenAI-compatible endpoint, which alone has a Batch API; "
        "its calls are made one by one"
    )
    with _WARNED_LOCK:
        if msg in _WARNED:
            return
        _WARNED.add(msg)
    warnings.warn(redact(msg), RuntimeWarning, stacklevel=4)
