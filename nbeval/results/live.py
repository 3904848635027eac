"""LiveResult: a run's result while it runs, what ``evaluate(on_progress=...)`` hands its callback.

The engine files each finished batch of outcomes with :meth:`LiveResult.add`, in time
proportional to the batch. Nothing is recomputed from the start of the run: per (evaluator, model)
the running aggregates fold in only the scores added since they were last read, so reading them
after every batch costs each score once over the whole run. Tables are built only when asked:
:attr:`~LiveResult.aggregates` and :meth:`~LiveResult.leaderboard` have one row per
(evaluator, model, metric); :meth:`~LiveResult.result` builds the full
:class:`~nbeval.results.EvaluationResult` so far, converting each outcome to long-table rows once
and reusing the rows converted for earlier calls.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nbeval.errors import NotFound
from nbeval.evaluators.base import Aggregate, Evaluator, Score
from nbeval.results.aggregates import add_aggregate_rows, aggregates_table, metrics_table
from nbeval.results.storage.columnar import ScoreSpool

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.data.model import LlmDataset, Row, TestLab
    from nbeval.results.outcome import RowOutcome
    from nbeval.results.result import EvaluationResult

__all__ = ["LiveResult"]

#: Scores of a plain-mean group kept unfolded at most: past this, ``add`` folds them into the
#: running sums and lets them go, so a long run without readers holds no per-row objects.
_MAX_UNFOLDED = 4096


class _Group:
    """One (evaluator, model): its outcomes so far and the running sums of its metrics."""

    __slots__ = ("counts", "folded", "n", "rows", "scores", "sums")

    def __init__(self, metrics: Sequence[str]) -> None:
        self.n = 0
        """Outcomes so far, skipped ones included (the aggregate's ``N``)."""
        self.rows: list[Row] = []
        self.scores: list[Score] = []
        """The scored rows and their scores, in the order they finished (for a plain mean, only
        those not yet folded into ``sums`` and ``counts``)."""
        self.folded = 0
        """How many scores were folded into ``sums`` and ``counts`` (and, for a plain mean, let go)."""
        self.sums: dict[str, float] = dict.fromkeys(metrics, 0)
        self.counts: dict[str, int] = dict.fromkeys(metrics, 0)


class LiveResult:
    """The result of a run so far, updated by the engine after every batch of rows.

    ``done`` and ``total`` count scores (one per row and evaluator, skipped ones included).
    ``aggregates``, ``leaderboard()`` and ``value()`` cost one row per evaluator, model and metric
    (plus the scores added since the last read; an evaluator with its own ``aggregate``, such as
    classification's macro F1, recomputes it over its rows so far). ``result()`` and ``scores``
    build the long table of the rows finished so far (in the order they finished), each outcome
    converted once over the run (as it is added, into a :class:`~nbeval.results.storage.columnar.ScoreSpool`
    on disk, so the run keeps no per-row objects for it). A read writes no file and converts only
    the scores finished since the last one (reading each spooled part file at most once), appending
    them to the long table it built then: once read, the live view holds that table (categorical
    keys and names), shared with the result it handed out. Safe to read from another thread while
    the run adds to it.
    """

    def __init__(
        self,
        evaluators: Sequence[Evaluator],
        dataset: LlmDataset,
        *,
        total: int,
        lab: TestLab | None = None,
        row_pos: Mapping[int, int] | None = None,
    ) -> None:
        self.done = 0
        """Scores finished so far."""
        self.total = total
        """Scores the run will make."""
        self.dataset = dataset
        """The rows being evaluated."""
        self.status = ""
        """What the run waits for while no row finishes, in words; with ``batch=True`` the
        provider's batches' states and counts (``"batch batch_abc: in_progress, 40/100 done"``)."""
        self._evs = list(evaluators)
        self._position = {id(ev): k for k, ev in enumerate(self._evs)}
        self._plain_mean = [type(ev).aggregate is Evaluator.aggregate for ev in self._evs]
        self._lab = lab
        self._lock = threading.RLock()
        self._groups: dict[tuple[int, str], _Group] = {}
        self._version = 0
        self._cache: dict[str, tuple[int, Any]] = {}
        self._empty: EvaluationResult | None = None
        self._spool = ScoreSpool(
            self._evs, row_pos if row_pos is not None else {id(r): i for i, r in enumerate(dataset.rows)}
        )
        self._model_order: dict[str, int] | None = None

    def __repr__(self) -> str:
        return f"LiveResult({self.done}/{self.total} scores, {len(self._evs)} evaluators)"

    # -- what the engine calls ----------------------------------------------------------------

    def add(self, outcomes: Iterable[RowOutcome]) -> None:
        """File finished (scored, errored or skipped) outcomes; each must be final."""
        outcomes = list(outcomes)
        with self._lock:
            self._spool.add(outcomes)
            for o in outcomes:
                k = self._position[id(o.evaluator)]
                g = self._groups.get((k, o.row.model_key))
                if g is None:
                    g = self._groups[(k, o.row.model_key)] = _Group([m.name for m in o.evaluator.spec.metrics])
                g.n += 1
                if o.score is not None:
                    if not self._plain_mean[k]:  # the evaluator's own aggregate needs every row
                        g.rows.append(o.row)
                    g.scores.append(o.score)
                    if self._plain_mean[k] and len(g.scores) > _MAX_UNFOLDED:
                        self._aggregate(k, g)
            self.done += len(outcomes)
            self._version += 1

    # -- cheap views (one row per evaluator, model and metric) --------------------------------

    @property
    def evaluators(self) -> list[str]:
        """The evaluators' names, in the run's order."""
        return [ev.name for ev in self._evs]

    @property
    def model_keys(self) -> list[str]:
        """The models with at least one finished score, in dataset order."""
        with self._lock:
            return list(dict.fromkeys(mk for _, mk in self._ordered_groups()))

    def value(self, evaluator: str, model_key: str, metric: str | None = None) -> float | None:
        """The running aggregate of ``metric`` (default: the primary) for one evaluator and model."""
        with self._lock:
            k = self._index(evaluator)
            ev = self._evs[k]
            name = metric or ev.spec.primary.name
            ev.spec.metric(name)  # raises on an unknown metric
            g = self._groups.get((k, model_key))
            a = self._aggregate(k, g).get(name) if g is not None else None
            return None if a is None or a.value is None else float(a.value)

    @property
    def aggregates(self) -> pd.DataFrame:
        """Per model, evaluator and metric so far: the columns of ``EvaluationResult.aggregates``."""
        return self._aggregate_table()[0].copy()

    @property
    def metrics(self) -> pd.DataFrame:
        """What each reported metric is: the columns of ``EvaluationResult.metrics``."""
        return metrics_table(self._evs)

    def leaderboard(self, evaluator: str | None = None, metric: str | None = None) -> pd.DataFrame:
        """The leaderboard so far, as :meth:`EvaluationResult.leaderboard` draws it."""
        from nbeval.results.result import EvaluationResult

        with self._lock:
            base = self._empty_result()
            view = EvaluationResult(
                base.scores,
                self._aggregate_table()[0],
                base.metrics,
                self.dataset,
                meta=dict(base.meta),
                model_labels=base.model_labels,
            )
            return view.leaderboard(evaluator, metric)

    # -- the full result (the long table so far) ----------------------------------------------

    @property
    def scores(self) -> pd.DataFrame:
        """The long table of the scores finished so far (see :meth:`result`)."""
        return self.result().scores

    def result(self) -> EvaluationResult:
        """An :class:`EvaluationResult` of everything finished so far (rows in the order they finished).

        Cached until the next batch; each outcome is converted once over the run, and a read after a batch costs that
        batch (plus appending it to the table read before).
        """
        from nbeval.results.result import EvaluationResult

        with self._lock:
            hit = self._cache.get("result")
            if hit is not None and hit[0] == self._version:
                cached: EvaluationResult = hit[1]
                return cached
            base = self._empty_result()
            scores = self._spool.scores()
            aggregates, explanations = self._aggregate_table()
            result = EvaluationResult(
                scores,
                aggregates.copy(),
                base.metrics.copy(),
                self.dataset,
                meta=dict(base.meta),
                explanations=explanations,
                model_labels=dict(base.model_labels),
            )
            self._cache["result"] = (self._version, result)
            return result

    def final_tables(self) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
        """Return the long table, the aggregates and the explanations of the finished result.

        The long table comes in a finished result's order (by evaluator, then dataset row): what
        :func:`nbeval.engine.finish` builds the result from.
        """
        with self._lock:
            aggregates, explanations = self._aggregate_table()
            return self._spool.scores(ordered=True), aggregates.copy(), explanations

    def write_part(self, path: Any) -> tuple[Any, dict[tuple[int, str], tuple[int, list[Row], list[Score]]]]:
        """Write the long table so far to ``path`` (Parquet, order columns kept) for a partitioned run.

        Returns the Arrow table written and, per (evaluator position, model key), the group's
        outcome count ``N`` and, for an evaluator with its own ``aggregate``, its scored rows and
        their scores (empty lists for a plain mean, whose values are in the table).
        """
        with self._lock:
            table = self._spool.write_ordered(path)
            groups = {
                km: (g.n, list(g.rows), list(g.scores) if not self._plain_mean[km[0]] else [])
                for km, g in self._groups.items()
            }
            return table, groups

    # -- internals ----------------------------------------------------------------------------

    def _index(self, evaluator: str) -> int:
        for k, ev in enumerate(self._evs):
            if ev.name == evaluator:
                return k
        msg = f"no evaluator '{evaluator}' in this run; it has {self.evaluators}"
        raise NotFound(msg)

    def _empty_result(self) -> EvaluationResult:
        """The result of no outcomes: the metrics table, meta, model labels and long-table columns."""
        from nbeval.results.result import EvaluationResult

        if self._empty is None:
            self._empty = EvaluationResult.from_outcomes([], self._evs, self.dataset, lab=self._lab)
        return self._empty

    def _ordered_groups(self) -> list[tuple[int, str]]:
        """Group keys in the order a finished result lists them: by evaluator, then model in dataset order."""
        if self._model_order is None:
            models = dict.fromkeys(r.model_key for r in self.dataset.rows)
            self._model_order = {mk: i for i, mk in enumerate(models)}
        order = self._model_order
        return sorted(self._groups, key=lambda km: (km[0], order.get(km[1], len(order))))

    def _aggregate(self, k: int, g: _Group) -> dict[str, Aggregate]:
        """The group's aggregates: a running mean folded forward, or the evaluator's own aggregate."""
        if not g.scores and not g.folded:
            return {}
        if not self._plain_mean[k]:
            return self._evs[k].aggregate(g.rows, g.scores)
        for s in g.scores:  # what Evaluator.aggregate computes, one new score at a time
            for name in g.sums:
                v = s.values.get(name)
                if v is not None and not (isinstance(v, float) and math.isnan(v)):
                    g.sums[name] += v
                    g.counts[name] += 1
        g.folded += len(g.scores)
        g.scores.clear()
        return {name: Aggregate(g.sums[name] / n if n else None, n) for name, n in g.counts.items()}

    def _aggregate_table(self) -> tuple[pd.DataFrame, dict[str, dict[str, Any]]]:
        with self._lock:
            hit = self._cache.get("aggregates")
            if hit is not None and hit[0] == self._version:
                found: tuple[pd.DataFrame, dict[str, dict[str, Any]]] = hit[1]
                return found
            rows: list[list[Any]] = []
            explanations: dict[str, dict[str, Any]] = {}
            for k, model_key in self._ordered_groups():
                g = self._groups[(k, model_key)]
                add_aggregate_rows(rows, explanations, self._evs[k], model_key, self._aggregate(k, g), g.n)
            table = aggregates_table(rows)
            self._cache["aggregates"] = (self._version, (table, explanations))
            return table, explanations
