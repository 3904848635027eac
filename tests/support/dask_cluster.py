"""A Dask cluster inside the test process, shut down within a bound.

``with LocalCluster(...) as cluster, Client(cluster) as client:`` closes the cluster with no
deadline: after a test has failed (or pytest-timeout has interrupted it), a worker thread still
stuck in a task would hold the whole test run there. Here the client and the cluster are each
closed within :data:`CLOSE_TIMEOUT_S`, and the scheduler and workers serve HTTP on loopback only.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["CLOSE_TIMEOUT_S", "in_process_client"]

#: Seconds the client, then the cluster, may take to close.
CLOSE_TIMEOUT_S = 30.0


@contextlib.contextmanager
def in_process_client(n_workers: int = 2, threads_per_worker: int = 1) -> Iterator[Any]:
    """A ``distributed.Client`` of a ``LocalCluster`` whose workers are threads of this process
    (no dashboard); the test is skipped where Dask is not installed."""
    distributed = pytest.importorskip("distributed")
    # What earlier tests left in reference cycles (OpenAI clients among them, whose finalizers close
    # their connections) is finalized here, not by a collection that happens to run on the
    # cluster's event loop thread, which the workers' tasks all wait on.
    gc.collect()
    cluster = distributed.LocalCluster(
        n_workers=n_workers,
        threads_per_worker=threads_per_worker,
        processes=False,
        dashboard_address=None,
        # Without a dashboard the scheduler and each worker still serve health routes over HTTP, on
        # every interface (the scheduler on port 8787): on a free port of loopback instead.
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
        worker_dashboard_address="127.0.0.1:0",
    )
    try:
        client = distributed.Client(cluster, timeout=CLOSE_TIMEOUT_S)
        try:
            yield client
        finally:
            client.close(timeout=CLOSE_TIMEOUT_S)
    finally:
        cluster.close(timeout=CLOSE_TIMEOUT_S)
