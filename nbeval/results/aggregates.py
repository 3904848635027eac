"""The one builder of per-model aggregates, and of a result's metrics table and run facts.

A finished result (:meth:`EvaluationResult.from_outcomes`, :func:`nbeval.engine.finish`) and the
live view of a run (:class:`~nbeval.results.live.LiveResult`) build their tables here, so the two
can never disagree on a column, a dtype or what passes.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from nbeval._version import __version__
from nbeval.results.record import FORMAT_VERSION, EvaluatorEntry, RunFacts, RunRecord, RunUsage

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.data.model import TestLab
    from nbeval.evaluators.base import Aggregate, Evaluator

__all__ = [
    "AGGREGATE_COLUMNS",
    "FORMAT_VERSION",
    "METRIC_COLUMNS",
    "PASSED_DTYPE",
    "add_aggregate_rows",
    "aggregates_table",
    "metrics_table",
    "model_labels",
    "passes",
    "run_meta",
    "run_record",
]

#: The columns of a result's aggregates table (one row per model, evaluator and metric), in order.
AGGREGATE_COLUMNS = [
    "model_key",
    "evaluator",
    "metric",
    "value",
    "n",
    "N",
    "passed",
    "direction",
    "threshold",
    "primary",
]
#: The columns of a result's metrics table (one row per evaluator and metric: its declaration), in order.
METRIC_COLUMNS = [
    "evaluator",
    "evaluator_id",
    "family",
    "kind",
    "metric",
    "direction",
    "lo",
    "hi",
    "threshold",
    "primary",
    "description",
]
#: The dtype of the ``passed`` columns: pandas' nullable boolean, ``<NA>`` where a pass is
#: unknowable (no value, or no threshold). Test with ``.eq(True)`` / ``.eq(False)`` or
#: ``pd.isna``; ``if passed:`` on ``<NA>`` raises.
PASSED_DTYPE = "boolean"


def passes(value: float | None, threshold: float | None, higher: bool) -> bool | None:
    """Tell whether ``value`` meets ``threshold`` in the metric's direction.

    ``None`` when either is missing (a pass is then unknowable, neither pass nor fail).
    """
    if value is None or threshold is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return bool(value >= threshold) if higher else bool(value <= threshold)


def metrics_table(evaluators: Sequence[Evaluator]) -> pd.DataFrame:
    """What each metric of ``evaluators`` is: direction, range, threshold used, primary."""
    import pandas as pd

    rows = [
        [
            ev.name,
            ev.id,
            ev.spec.family,
            ev.spec.kind,
            m.name,
            m.direction,
            m.lo,
            m.hi,
            ev.thresholds.get(m.name),
            # one primary per evaluator (spec.primary: the first flagged), as load_result requires
            m is ev.spec.primary,
            m.description,
        ]
        for ev in evaluators
        for m in ev.spec.metrics
    ]
    return pd.DataFrame(rows, columns=METRIC_COLUMNS)


def add_aggregate_rows(
    rows: list[list[Any]],
    explanations: dict[str, dict[str, Any]],
    ev: Evaluator,
    model_key: str,
    aggs: Mapping[str, Aggregate],
    n_rows: int,
) -> None:
    """Append one model's aggregates of ``ev`` to ``rows`` and their details to ``explanations``.

    One row per metric, in the spec's order; a metric with no aggregate has no value and ``n`` 0 of
    ``n_rows``. The details go to ``explanations[evaluator][model_key][metric]``.
    """
    for m in ev.spec.metrics:
        a = aggs.get(m.name)
        value = None if a is None else a.value
        t = ev.thresholds.get(m.name)
        rows.append(
            [
                model_key,
                ev.name,
                m.name,
                value,
                0 if a is None else a.n,
                n_rows,
                passes(value, t, m.direction == "higher"),
                m.direction,
                t,
                m.primary or m is ev.spec.primary,
            ]
        )
        if a is not None and a.details:
            explanations.setdefault(ev.name, {}).setdefault(model_key, {})[m.name] = a.details


def aggregates_table(rows: list[list[Any]]) -> pd.DataFrame:
    """The aggregates table of ``rows`` (from :func:`add_aggregate_rows`), typed as a result's."""
    import pandas as pd

    table = pd.DataFrame(rows, columns=AGGREGATE_COLUMNS)
    table["value"] = table["value"].astype(float)
    table["passed"] = table["passed"].astype(PASSED_DTYPE)
    return table


def _jsonable(params: dict[str, Any]) -> dict[str, Any]:
    """Return ``params`` as JSON that is the same in every session.

    A value JSON cannot hold becomes text that is the same in every session (a function its
    ``module.qualname``, another object its ``repr`` without a memory address), so a diff of two
    runs does not report an unchanged judge function as a changed parameter.
    """
    out = {}
    for k, v in params.items():
        try:
            json.dumps(v)
            out[k] = v
        except TypeError:
            if callable(v) and hasattr(v, "__qualname__"):
                from nbeval.chat.fingerprint import describe_callable

                out[k] = f"<function {describe_callable(v)}>"
            else:
                out[k] = _MEMORY_ADDRESS.sub("", repr(v))
    return out


#: `` at 0x7f3a…`` in a default ``repr``: different in every session.
_MEMORY_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def run_record(
    evaluators: Sequence[Evaluator],
    *,
    duration_s: float | None = None,
    usage: Mapping[str, Any] | None = None,
    cancelled: bool = False,
    run: Mapping[str, Any] | None = None,
) -> RunRecord:
    """Build a new result's record (:class:`~nbeval.results.record.RunRecord`).

    The record holds this nbeval's version and format, the duration, the usage totals, whether it
    was cancelled, the evaluators with their parameters and (``run``, when given:
    :func:`nbeval.results.run_facts.run_facts`) what the run measured and how.
    """
    return RunRecord(
        format_version=FORMAT_VERSION,
        nbeval_version=__version__,
        duration_s=duration_s,
        cancelled=cancelled,
        usage=RunUsage.from_meta(usage or {}, source="the run's usage totals", hint="a request kind's usage is wrong"),
        evaluators=tuple(EvaluatorEntry(name=ev.name, id=ev.id, params=_jsonable(ev.params)) for ev in evaluators),
        run=None if run is None else RunFacts.from_meta(run, source="the run's facts", hint="a run fact is wrong"),
    )


def run_meta(
    evaluators: Sequence[Evaluator],
    *,
    duration_s: float | None = None,
    usage: dict[str, Any] | None = None,
    cancelled: bool = False,
    run: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`run_record` in its JSON form (``result.meta``)."""
    return run_record(evaluators, duration_s=duration_s, usage=usage, cancelled=cancelled, run=run).to_meta()


def model_labels(lab: TestLab | None) -> dict[str, str]:
    """Model key to its readable name, from a lab's models (none without a lab)."""
    return {m.key: m.label for m in lab.models} if lab is not None else {}
