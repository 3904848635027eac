"""Issue 35 (19b): cancelling a cluster run is quiet. It used to return while partitions still ran
(their judge calls waiting on the cluster-wide slots), so the workers and the scheduler logged
tracebacks (``CancelledError``) as the tasks were cancelled and the cluster closed."""

from __future__ import annotations

import gc
import logging
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import nbeval
from tests.scale.test_dask_runs import _logging_judge, _records

distributed = pytest.importorskip("distributed")
cloudpickle = pytest.importorskip("cloudpickle")
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.slow


@pytest.mark.timeout(300)
def test_cancelling_a_cluster_run_logs_no_tracebacks(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="distributed")
    caplog.set_level(logging.WARNING, logger="nbeval")
    stop = threading.Event()
    log = tmp_path / "calls.log"

    def after_the_first_partition(_live: Any, done: int, _total: int) -> None:
        if done > 0:
            stop.set()

    gc.collect()  # earlier tests' garbage is finalized here, not on the client's event loop thread
    # The cluster is the test's own, started here: its worker processes write to the captured
    # stderr, and its shutdown (where the tracebacks showed) happens inside the test.
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(2, timeout=120)
        res = nbeval.evaluate(
            _records(40)[:80],
            ["safety"],
            judge=_logging_judge(log, 1.0),
            cache=False,
            chunk_rows=2,
            concurrency=2,
            progress=False,
            scheduler=client,
            cancel=stop,
            on_progress=after_the_first_partition,
        )
    out, err = capfd.readouterr()
    assert res.meta["cancelled"] is True
    logged = caplog.text + out + err
    assert "Traceback" not in logged and "CancelledError" not in logged, logged[-3000:]
    primary = res.scores[res.scores["metric"] == res.primary_metric("safety")]
    assert len(primary) == 80 and 0 < primary["skip_reason"].eq("cancelled").fillna(False).sum() < 80
