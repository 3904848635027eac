"""The engine: ``nbeval.evaluate(data, evaluators)``.

A run has three steps, which :func:`evaluate` chains and which a caller (a worker, a resumable
job) may drive itself:

* :func:`plan_run` checks the configuration, raising every error before anything is spent, and
  plans which rows each evaluator can score (skipping, with the reason, rows that lack an input or
  lie beyond ``max_rows``). It returns a :class:`RunState`.
* :func:`run_chunk` drives every evaluator's scoring over the next chunk of dataset rows and
  answers the requests they yield in batched rounds (see :mod:`nbeval.runtime`); each row's
  outcome goes to the run's :class:`~nbeval.results.live.LiveResult` as it finishes (a judge-based
  row as its last reply arrives), in small batches (:class:`~nbeval.progress.ProgressThrottle`),
  and the run's ``on_progress`` hears of each batch: progress moves with the answers, not with
  the chunks.
* :func:`finish` collects everything into an :class:`~nbeval.results.EvaluationResult`.

A run is configured by one :class:`~nbeval.options.RunOptions` (``options=``, the keywords on
top): :func:`evaluate` and :func:`plan_evaluation` (its dry run, ``nbeval.plan``) build it once
and hand it down: the run's :class:`~nbeval.runtime.Resources` are made from it
(``Resources.from_options``) and a Dask run ships it to the workers.

One bad row or one failed call never stops the run: it becomes that row's error.

Cancel (the ``cancel`` event) stops the run at once: no judge call starts after it (the calls in
flight finish and their rows are scored), and every row not scored is reported as ``cancelled``.
A run whose every row finished is not marked cancelled, whenever the event was set. Ctrl-C in
:func:`evaluate` does the same without waiting for the calls in flight, and raises
:class:`Interrupted`, which holds the partial result.

The engine's modules: :mod:`~nbeval.engine.planning` (plan a run, :class:`RunState`),
:mod:`~nbeval.engine.drive` (the generator driver, shared with the Dask workers),
:mod:`~nbeval.engine.cases` (case-level evaluators: a test case scored once every model's row of it
is reached, in the chunk of its last row, its outcome filed on each row),
:mod:`~nbeval.engine.run` (chunks, finish, :func:`evaluate`), :mod:`~nbeval.engine.dry_run`
(:class:`Plan`), :mod:`~nbeval.engine.interrupts` (Ctrl-C held while outcomes are filed) and
:mod:`~nbeval.engine.dask_run` (the same run partitioned across a Dask cluster).
"""

from __future__ import annotations

from nbeval.data.inputs import to_dataset
from nbeval.engine.dry_run import Plan, first_requests, plan, planned_requests
from nbeval.engine.planning import RunState, plan_run
from nbeval.engine.run import CHUNK_ROWS, evaluate, finish, plan_evaluation, run_chunk
from nbeval.errors import Interrupted
from nbeval.results.live import LiveResult
from nbeval.results.outcome import RowOutcome

__all__ = [
    "CHUNK_ROWS",
    "Interrupted",
    "LiveResult",
    "Plan",
    "RowOutcome",
    "RunState",
    "evaluate",
    "finish",
    "first_requests",
    "plan",
    "plan_evaluation",
    "plan_run",
    "planned_requests",
    "run_chunk",
    "to_dataset",
]
