"""Batched judging in a partitioned run: every worker's requests of a round, sent by the client, one batch per model.

With ``batch=True`` a partitioned run (:mod:`nbeval.engine.dask_parts`) scores in rounds. In a
round the workers score their buckets from the reply cache alone and write the requests it lacks
to the round's folder instead of sending them
(:func:`~nbeval.engine.dask_part_tasks.score_bucket`); a bucket that lacks nothing writes its part.
Then the client sends the round's requests of every bucket through the providers' Batch APIs
(:func:`send_round`): per model, a slice of :data:`SEND_SLICE` requests at a time is sent without
waiting, and once all are sent each is waited for. So the round's batches run at the provider
together, one per model (and per 50,000 requests, the provider's limit), never one per worker or
bucket, and the client holds one slice of requests at a time. The answers go to the reply cache;
the error of a request a batch could not answer goes to ``batch/failed.json``, and the next
round answers that request with it. The next round scores the waiting buckets again: a judge that
asks in steps (its next question built from the last answer) takes a round per step. A run stopped
while its batches wait finds them again when it is run again (the batch store of
:mod:`nbeval.chat.batch`): nothing is asked twice.
"""

from __future__ import annotations

import json
import os
import pickle
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nbeval.errors import NbevalError
from nbeval.results.storage.partitions import FAILED_FILE, batch_folder

__all__ = ["MAX_ROUNDS", "SEND_SLICE", "next_round", "send_round"]

#: Requests of one model the client holds at once while it sends a round's batches.
SEND_SLICE = 50_000
#: Rounds a batched run takes at most (a judge asking in more steps than this is stopped).
MAX_ROUNDS = 20


def next_round(batch_round: int) -> int:
    """The round after ``batch_round``; an error past :data:`MAX_ROUNDS`."""
    if batch_round >= MAX_ROUNDS:
        msg = (
            f"the batched run still had requests after {MAX_ROUNDS} rounds (one round per step of a judge's "
            "questions); run it again to go on from the parts written, or with batch=False"
        )
        raise NbevalError(msg)
    return batch_round + 1


def send_round(
    resources: Any, run_dir: Path, batch_round: int, cancel: threading.Event | None, live: Any = None
) -> int:
    """Send every request the workers wrote for round ``batch_round``, wait for the answers, and return how many.

    Answers go to the reply cache (the workers read it next round); failed requests' errors to
    :data:`~nbeval.results.storage.partitions.FAILED_FILE`. ``live`` (the run's live view) gets a
    status line while the batches wait.
    """
    from nbeval.chat.accounting import ChatFailure
    from nbeval.chat.batch import run_batches
    from nbeval.request_kinds.chat import ChatHandler

    folder = batch_folder(run_dir, batch_round)
    failed_path = batch_folder(run_dir) / FAILED_FILE
    failed: dict[str, str] = json.loads(failed_path.read_text(encoding="utf-8")) if failed_path.is_file() else {}
    handler = ChatHandler()
    asked = sent = 0
    for wait in (False, True):  # every slice sent first, then each waited for
        for model, requests in _slices(folder):
            client = handler.client(resources, model)
            if wait and live is not None:
                live.status = f"round {batch_round}: waiting for the batches of {client.model.name} at the provider"
            results = run_batches([(client, requests, None)], resources.batch, cancel=cancel, wait=wait)[0]
            if not wait:
                sent += sum(isinstance(r, ChatFailure) for r in results)  # the rest the client's cache held
                continue
            asked += len(requests)
            for request, result in zip(requests, results, strict=True):
                if isinstance(result, ChatFailure) and not result.cancelled:
                    failed[client.cache_key_of(request)] = result.error
    if asked and not sent and not (cancel is not None and cancel.is_set()):
        cache = getattr(client.cache, "path", "the reply cache")
        msg = (
            f"the workers asked again for {asked} answers the reply cache ({cache}) already holds: they cannot "
            "read it (another machine, or storage that does not share SQLite's files); give cache= a path every "
            "worker reads, or run with batch=False"
        )
        raise NbevalError(msg)
    if failed:
        tmp = failed_path.with_name(f".{failed_path.name}.tmp")
        tmp.write_text(json.dumps(failed), encoding="utf-8")
        os.replace(tmp, failed_path)
    if live is not None:
        live.status = ""
    return asked


def _slices(folder: Path) -> Iterator[tuple[Any, list[Any]]]:
    """The round's requests by model, :data:`SEND_SLICE` at most at a time, read bucket file by bucket file."""
    from nbeval.runtime.handlers import model_key

    by_model: dict[str, tuple[Any, list[Any]]] = {}
    for path in sorted(folder.glob("b-*.pkl")) if folder.is_dir() else ():
        with open(path, "rb") as fh:
            requests = pickle.load(fh)
        for r in requests:
            got = by_model.setdefault(model_key(r.model), (r.model, []))
            got[1].append(r)
            if len(got[1]) >= SEND_SLICE:
                yield got[0], got[1]
                by_model.pop(model_key(r.model))
    for model, requests in by_model.values():
        yield model, requests
