"""A run, chunk by chunk.

:func:`~nbeval.engine.chunks.run_chunk` scores the next rows of a planned run, :func:`finish` builds the
result, and :func:`evaluate` chains plan, chunks and finish with a progress bar, Cancel and Ctrl-C. A file
given with ``scheduler=`` goes to :func:`~nbeval.engine.dask_parts.run_partitioned` instead.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, overload

from nbeval.data.inputs import to_dataset
from nbeval.engine.chunks import CHUNK_ROWS, run_chunk, settle
from nbeval.engine.interrupts import holding_interrupts
from nbeval.engine.planning import RunState, plan_run, seat_jury
from nbeval.errors import BadParameter, Interrupted
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.options import RunKeywords, RunOptions
from nbeval.progress import progress_bar
from nbeval.results.live import LiveResult
from nbeval.runtime import Resources

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from nbeval.engine.dry_run import Plan
    from nbeval.results import EvaluationResult

__all__ = ["CHUNK_ROWS", "evaluate", "finish", "plan_evaluation", "run_chunk", "settle"]


def finish(state: RunState) -> EvaluationResult:
    """The run's result: rows never started (a cancelled run) are reported as cancelled, not lost.

    It is marked cancelled only when some row was: a cancel that came after every row finished changes nothing.
    """
    settle(state)
    return _result(state, state.cancelled_count > 0)


def _result(state: RunState, cancelled: bool) -> EvaluationResult:
    """Build the finished result from the live view.

    Its spooled long table (in dataset order) and its aggregates, which equal
    ``EvaluationResult.from_outcomes`` of every outcome.
    """
    from nbeval.results import EvaluationResult
    from nbeval.results.aggregates import metrics_table, model_labels, run_meta

    scores, aggregates, explanations = state.live.final_tables()
    usage = state.resources.usage_totals()
    if state.cluster_usage:
        from nbeval.engine.dask_run import merge_usage

        usage = merge_usage(usage, state.cluster_usage)
    from nbeval.results.run_facts import run_facts

    duration = time.perf_counter() - state.started
    facts = run_facts(state.start_facts, state.dataset, state.evaluators, state.resources)
    meta = run_meta(state.evaluators, duration_s=duration, usage=usage, cancelled=cancelled, run=facts)
    return EvaluationResult(
        scores,
        aggregates,
        metrics_table(state.evaluators),
        state.dataset,
        meta=meta,
        explanations=explanations,
        model_labels=model_labels(state.lab),
    )


@overload
def evaluate(
    data: Any,
    evaluators: Any,
    *,
    options: RunOptions | Mapping[str, Any] | None = None,
    dry_run: Literal[False] = False,
    cancel: threading.Event | None = None,
    on_progress: Callable[[LiveResult, int, int], None] | None = None,
    **keywords: Unpack[RunKeywords],
) -> EvaluationResult: ...
@overload
def evaluate(
    data: Any,
    evaluators: Any,
    *,
    options: RunOptions | Mapping[str, Any] | None = None,
    dry_run: Literal[True],
    cancel: threading.Event | None = None,
    on_progress: Callable[[LiveResult, int, int], None] | None = None,
    **keywords: Unpack[RunKeywords],
) -> Plan: ...
@overload
def evaluate(
    data: Any,
    evaluators: Any,
    *,
    options: RunOptions | Mapping[str, Any] | None = None,
    dry_run: bool,
    cancel: threading.Event | None = None,
    on_progress: Callable[[LiveResult, int, int], None] | None = None,
    **keywords: Unpack[RunKeywords],
) -> EvaluationResult | Plan: ...


def evaluate(
    data: Any,
    evaluators: Any,
    *,
    options: RunOptions | Mapping[str, Any] | None = None,
    dry_run: bool = False,
    cancel: threading.Event | None = None,
    on_progress: Callable[[LiveResult, int, int], None] | None = None,
    **keywords: Any,
) -> EvaluationResult | Plan:
    """Evaluate ``data`` with ``evaluators`` and return an :class:`EvaluationResult`.

    Every run option is also a keyword (``judge=``, ``concurrency=``...), which wins over ``options``,
    and a keyword left out leaves ``options`` as it is. ``embedder``/``judge``/``device`` choose the
    run's shared resources (each evaluator may override with its own ``embedder=``/``judge=``). A judge
    is a model name (OpenAI-compatible; ``NBEVAL_JUDGE_BASE_URL`` or ``{"model": ..., "base_url": ...}``),
    a Python function, a local GGUF model (``"gguf:<path>"``, run by llama.cpp in this process),
    or a local Hugging Face model: ``"hf:<name or path>"`` on ``device``, or
    ``{"provider": "hf", "model": ..., "device": "cuda", "dtype": "bfloat16", "max_new_tokens": 256}``.
    ``cache``: the judge reply cache (``True``, ``False``, a folder or a file). ``timeout`` bounds
    each whole call in seconds (a judge's own ``{"timeout": ...}`` wins for its calls);
    ``max_attempts`` counts retries included; ``prices`` maps a model to USD per 1k prompt and
    completion tokens. The progress bar (``progress=True``) moves with ``on_progress``.

    ``scheduler``: a ``dask.distributed.Client`` or a scheduler address (``"tcp://host:8786"``)
    partitions the rows across the cluster's workers (``pip install 'nbeval[dask]'``); the result
    equals a local run's, row for row. Each worker loads heavy models once; judge calls share one
    ``concurrency`` limit across the cluster; workers only read the reply cache and the client
    stores the replies they fetched. See :mod:`nbeval.engine.dask_run`. Given the *path* of a
    Parquet or JSONL file, or a Dask DataFrame, the workers read the rows themselves and write the
    result's parts in ``run_dir`` (a folder every worker can read and write; a new temporary one by
    default): the client holds no rows, the result's long table is read from the parts when first
    asked for, and a run stopped midway resumes from the parts written when run again with the same
    ``run_dir`` (see :mod:`nbeval.engine.dask_parts`).

    ``batch=True``: the judge calls go through the endpoints' OpenAI-compatible Batch APIs (about
    half the price; answers within hours): one batch per judge model and round, the rows all in one
    chunk unless ``chunk_rows`` says otherwise (see :mod:`nbeval.chat.batch`). Cached requests are
    not sent, identical ones once; a run stopped while it waits (Ctrl-C, a kernel restart) and
    started again polls the same batch, never sending it twice; ``cancel`` cancels the batch at the
    provider, Ctrl-C does not. ``batch_poll_s`` is the first wait between two polls (10 s; it grows
    by half each poll); ``batch_discount`` the share of a price a batched call saves where
    ``prices`` gives no batch price as ``(prompt, completion, batch_prompt, batch_completion)``
    (0.5). The progress bar shows the batches' states and counts (``batch batch_abc: in_progress,
    40/100 done, 2 failed``), as does ``live.status``, and ``on_progress`` is called at each poll
    while the run waits (a Cancel button's event, ``cancel``, cancels the batches). A judge that is no
    OpenAI-compatible endpoint (a function, a local model) is called one by one, with a warning.

    The scores are spooled to Parquet as they finish and no per-row object is kept, so a run's
    memory is the dataset's plus the finished long table (categorical keys and names).

    Args:
        data: What to evaluate: an :class:`LlmDataset`, a :class:`TestLab`, a pandas DataFrame, a list
            of records, or a path to any file nbeval reads.
        evaluators: Ids (``["rouge", "bleu"]`` or ``"rouge,bleu"``), configured objects
            (``nbeval.evaluator("rouge", threshold=0.5)``), or ``(id, params)`` pairs.
        options: A :class:`~nbeval.options.RunOptions` (or a mapping of its names) configuring the run;
            ``None`` for the defaults.
        dry_run: The older spelling of :func:`nbeval.plan` (the one dry run): ``True`` still returns
            the :class:`Plan` of what the run would do and spend, without scoring, and warns
            (:class:`DeprecationWarning`).
        cancel: An event that stops the run at once: no judge call starts after it is set (calls in
            flight finish and their rows are scored), and the partial result is returned, every row
            not scored marked ``cancelled`` (a run whose rows had all finished is returned as it is,
            not marked cancelled).
        on_progress: Called as ``on_progress(live, done, total)`` once before anything is scored
            (``done`` counts the rows skipped at once; ``total`` is the run's) and then as rows finish,
            with ``done`` of ``total`` scores finished: after every score in a small run, about 100
            times over a large one, at least every quarter second while rows finish, and once every
            score is in (:class:`~nbeval.progress.ProgressThrottle`). ``live`` is one
            :class:`~nbeval.results.live.LiveResult` for the whole run, updated in time proportional
            to what finished: its ``aggregates``, ``leaderboard()`` and ``value(evaluator, model_key)``
            are the running per-model aggregates (cheap to read at every call), and ``live.result()``
            builds the :class:`EvaluationResult` of everything finished so far when it is wanted.
        **keywords: Run options by name (the fields of :class:`~nbeval.options.RunOptions`), each
            winning over ``options``.

    Returns:
        The :class:`EvaluationResult` of the run (the partial one when ``cancel`` stopped it); with
        ``dry_run=True``, the :class:`Plan`. Without ``dry_run`` the return is always an
        :class:`EvaluationResult`.

    Raises:
        BadParameter: When an option has a bad value (``concurrency=0``) or an unknown name, naming
            it, before anything is read or spent; and when ``batch=True`` is combined with
            ``scheduler`` for data the workers cannot read themselves (rows in memory).
        Interrupted: On Ctrl-C, which stops without waiting for the calls in flight; its ``.result``
            is the partial result.
    """
    from nbeval.chat.batch_options import batch_options

    opts = RunOptions.of(options, **keywords)
    if dry_run:
        warnings.warn(
            "evaluate(..., dry_run=True) is nbeval.plan(data, evaluators, ...) now, with the same options; "
            "it returns the same Plan",
            DeprecationWarning,
            stacklevel=2,
        )
        return plan_evaluation(data, evaluators, opts)
    batching = batch_options(opts.batch, opts.batch_poll_s, opts.batch_discount)
    resources = Resources.from_options(opts, batch=batching)
    if opts.scheduler is not None:
        from nbeval.engine.dask_parts import run_partitioned

        parted = run_partitioned(data, evaluators, opts, resources, cancel=cancel, on_progress=on_progress)
        if parted is not None:  # a file the workers read themselves; otherwise the client reads it (below)
            return parted
    if batching is not None and opts.scheduler is not None:
        msg = (
            "{batch} with {scheduler} batches the judge calls of a file the workers read themselves (a Parquet "
            "or JSONL path they can open, or a Dask DataFrame); give the data that way, or run without a scheduler"
        )
        raise BadParameter(msg, options={"batch": ("batch", True), "scheduler": ("scheduler", ...)})
    state = plan_run(data, evaluators, resources=resources, cancel=cancel, keep_outcomes=False)
    bar = progress_bar(state.total, opts.progress)
    shown = 0
    chunk_rows = opts.chunk_rows
    if batching is not None:
        batching.on_status = _status_reporter(state, bar, on_progress)  # the batches' states and counts
        if chunk_rows == CHUNK_ROWS:  # one batch per round for the whole run, not per chunk
            chunk_rows = max(1, len(state.dataset.rows))

    def report() -> None:
        nonlocal shown
        bar.update(state.done - shown)
        shown = state.done
        if on_progress is not None:
            on_progress(state.live, state.done, state.total)

    try:
        if opts.scheduler is not None:
            from nbeval.engine.dask_run import run_on_cluster

            state.cluster_usage = run_on_cluster(state, opts, on_batch=lambda _n: report())
        else:
            state.on_progress = report
            state.flush(report=True)  # the first report: the total, and the rows skipped at once
        with holding_interrupts():
            while not state.finished:
                run_chunk(state, chunk_rows)
    except KeyboardInterrupt as stop:
        if opts.scheduler is not None:  # the cluster's partitions are not tracked row by row
            raise
        state.interrupted = True
        state.on_progress = None
        again = "running the same evaluate(..., batch=True) again"
        raise Interrupted(finish(state), **_left_running(stop, again)) from None
    finally:
        bar.close()
    return finish(state)


def plan_evaluation(
    data: Any, evaluators: Any, options: RunOptions | Mapping[str, Any] | None = None, **keywords: Unpack[RunKeywords]
) -> Plan:
    """Plan what :func:`evaluate` with the same arguments would do and spend, scoring nothing.

    This is the :class:`Plan` of :func:`nbeval.plan`. Every option is taken: ``progress``,
    ``scheduler``, ``chunk_rows`` and ``batch_poll_s`` change nothing in a plan (it is counted here,
    at once, wherever and however the rows would be scored), so a call can switch between the two
    unchanged.
    """
    from nbeval.engine.dry_run import plan

    opts = RunOptions.of(options, **keywords)
    dataset, _ = to_dataset(data)
    resources = Resources.from_options(opts)
    evs = seat_jury(resolve_evaluators(evaluators), resources)
    return plan(dataset, evs, resources, batch_discount=opts.batch_discount)  # the resources carry the rest


def _left_running(stop: KeyboardInterrupt, again: str) -> dict[str, Any]:
    """:class:`Interrupted`'s ``batches`` and ``note`` for the batches Ctrl-C left running, if any."""
    from nbeval.chat.batch_options import still_running

    batches = tuple(getattr(stop, "batches", ()))
    return {"batches": batches, "note": still_running(batches, again)} if batches else {}


def _status_reporter(
    state: RunState, bar: Any, on_progress: Callable[[LiveResult, int, int], None] | None
) -> Callable[[str], None]:
    """Make the callback a batched run calls at each poll with its batches' states and counts.

    It updates the bar's text and ``live.status``, and calls ``on_progress`` (no row finishes while
    the run waits).
    """
    show = getattr(bar, "set_postfix_str", None)

    def on_status(text: str) -> None:
        state.live.status = text
        if show is not None:
            show(text)
        if on_progress is not None:
            on_progress(state.live, state.done, state.total)

    return on_status
