"""Scoring a planned run chunk by chunk: what a local run and a partitioned run's workers both do.

:func:`run_chunk` scores the next rows of a :class:`~nbeval.engine.planning.RunState`;
:func:`settle` files what is left once the chunks are done (the rows never started, when the run
was cancelled, as cancelled).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from nbeval.data.model import Row
from nbeval.engine.cases import case_end
from nbeval.engine.drive import Scoring, cancel_row, drive, row_outcomes, start_case, start_row, unfinished
from nbeval.engine.interrupts import whole
from nbeval.engine.planning import RunState
from nbeval.evaluators.case import is_case_level
from nbeval.options import DEFAULT_CHUNK_ROWS
from nbeval.results.outcome import RowOutcome

__all__ = ["CHUNK_ROWS", "run_chunk", "settle"]

#: Rows scored together in one batch of rounds. Large enough that embedder and judge batches are
#: full; small enough that the rows' cached values are let go of regularly. (Progress and Cancel do
#: not wait for a chunk's end.)
CHUNK_ROWS = DEFAULT_CHUNK_ROWS


def run_chunk(state: RunState, chunk_rows: int = CHUNK_ROWS) -> list[RowOutcome]:
    """Score the next ``chunk_rows`` dataset rows with every evaluator.

    Their requests are answered in batched rounds; each outcome is filed in ``state.live`` as it
    finishes (``state.on_progress`` hears of it, throttled). Returns the chunk's outcomes, every one
    filed.

    A cancel stops it before the next row, round or judge call: the rows started and not
    finished are filed as ``cancelled`` (the rows not started are left to :func:`settle`). On an
    exception (Ctrl-C), the rows started and not finished are filed as ``cancelled`` too.
    """
    hi = state.next_row + max(1, int(chunk_rows))
    pending: list[tuple[Any, Scoring]] = []
    chunk: list[RowOutcome] = []
    filed: set[int] = set()

    def file(out: Scoring) -> None:
        for one in row_outcomes(out):
            state.file(one, note=filed)

    try:
        for k, (ev, todo) in enumerate(state.planned):
            case_level = is_case_level(ev)
            while state.cursors[k] < len(todo) and not state.cancelled():
                start = state.cursors[k]
                end = case_end(todo, start) if case_level else start + 1
                if state.row_index[id(todo[end - 1])] >= hi:  # a case waits for its last row's chunk
                    break
                gen, out = start_case(ev, todo[start:end]) if is_case_level(ev) else start_row(ev, todo[start])
                with whole:
                    state.cursors[k] = end
                    chunk.extend(row_outcomes(out))
                if gen is None:
                    file(out)
                else:
                    pending.append((gen, out))
        if not state.cancelled():
            state.next_row = hi
        drive(pending, state.resources, state.cancelled, file)
    except BaseException:  # Ctrl-C: what is unfinished is cancelled and filed, and nobody is called
        for gen, out in pending:
            if unfinished(out):
                cancel_row(gen, out)
        for one in chunk:
            if unfinished(one):
                cancel_row(None, one)
        state.flush(report=False, more=[o for o in chunk if id(o) not in filed])
        raise
    state.flush()
    _release_row_caches(o.row for o in chunk)
    return chunk


#: The derived values a Row caches (``functools.cached_property``, e.g. its parsed condition).
_ROW_CACHES = tuple(name for name, v in vars(Row).items() if isinstance(v, functools.cached_property))


def _release_row_caches(rows: Iterable[Row]) -> None:
    """Let go of what scored rows cached.

    A row recomputes it if asked again: kept, a run of a million rows would hold a parse tree per
    row for nothing.
    """
    for row in rows:
        cached = getattr(row, "__dict__", None)
        if cached:
            for name in _ROW_CACHES:
                cached.pop(name, None)


def settle(state: RunState) -> None:
    """File what is kept aside, and the rows never started (a cancelled run) as cancelled."""
    state.flush()
    if state.cancelled() or state.interrupted:
        rest = [
            RowOutcome(ev, r, skip_reason="cancelled")
            for k, (ev, todo) in enumerate(state.planned)
            for r in todo[state.cursors[k] :]
        ]
        state.record(rest)
        state.cursors = [len(todo) for _, todo in state.planned]
