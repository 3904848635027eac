"""The long table of scores in pandas: its columns, built from outcomes, typed one way, appended.

Every path that makes a long table (a finished run, the live view, a saved folder, an old
``scores.jsonl``) types it with :func:`typed_scores`, so two tables of the same scores compare
equal whichever way they were made:

* ``key``, ``model_key``, ``evaluator`` and ``metric`` are pandas categoricals with their
  categories sorted (a million rows of three models hold a few hundred thousand distinct keys and
  three model names, stored once each); group them with ``observed=True`` (pandas' default);
* ``value`` is float (NaN where there is none), ``passed`` pandas' nullable boolean, ``skipped`` bool;
* the text columns (``label``, ``rationale``, ``error``, ``skip_reason``, ``details``) are pandas
  strings, or ``object`` holding ``None`` where the whole column is empty.

How the table is stored as Parquet and spooled while a run runs is :mod:`nbeval.results.storage.columnar`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from nbeval.results.aggregates import passes
from nbeval.results.storage.limits import MAX_STORED_CHARS, cap_details, truncate_text

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results.outcome import RowOutcome

__all__ = [
    "KEY_COLUMNS",
    "ORDER_COLUMNS",
    "SCORE_COLUMNS",
    "TEXT_COLUMNS",
    "append_typed",
    "outcome_columns",
    "typed_scores",
]

#: Columns of the long table, in order.
SCORE_COLUMNS = [
    "key",
    "model_key",
    "evaluator",
    "metric",
    "value",
    "passed",
    "label",
    "rationale",
    "error",
    "skipped",
    "skip_reason",
    "details",
]
#: Columns stored as categoricals.
KEY_COLUMNS = ("key", "model_key", "evaluator", "metric")
#: Columns of free text (``None`` where empty).
TEXT_COLUMNS = ("label", "rationale", "error", "skip_reason", "details")
#: Hidden columns a spool keeps to put rows back in the order of a finished result.
ORDER_COLUMNS = ("_evaluator_pos", "_row_pos")


def outcome_columns(
    outcomes: Iterable[RowOutcome],
    evaluator_pos: Mapping[int, int] | None = None,
    row_pos: Mapping[int, int] | None = None,
) -> dict[str, list[Any]]:
    """The long-table rows of ``outcomes`` as columns (lists): one row per outcome and metric.

    With ``evaluator_pos`` (evaluator ``id`` to its position in the run) and ``row_pos`` (row
    ``id`` to its position in the dataset) the hidden :data:`ORDER_COLUMNS` are filled too.
    """
    cols: dict[str, list[Any]] = {c: [] for c in SCORE_COLUMNS}
    ordered = evaluator_pos is not None and row_pos is not None
    ev_col: list[int] = []
    row_col: list[int] = []
    plans: dict[int, list[tuple[str, float | None, bool]]] = {}
    key, model, evaluator, metric, value, passed = (cols[c] for c in SCORE_COLUMNS[:6])
    label, rationale, error, skipped, skip_reason, details = (cols[c] for c in SCORE_COLUMNS[6:])
    for o in outcomes:
        ev, row = o.evaluator, o.row
        plan = plans.get(id(ev))
        if plan is None:  # the metric names, thresholds and directions, looked up once per evaluator
            plan = plans[id(ev)] = [
                (m.name, ev.thresholds.get(m.name), m.direction == "higher") for m in ev.spec.metrics
            ]
        n = len(plan)
        key.extend([row.key] * n)
        model.extend([row.model_key] * n)
        evaluator.extend([ev.name] * n)
        metric.extend(name for name, _, _ in plan)
        if ordered:
            ev_col.extend([evaluator_pos[id(ev)]] * n)  # type: ignore[index]
            row_col.extend([row_pos[id(row)]] * n)  # type: ignore[index]
        if o.score is None:
            reason = truncate_text(o.skip_reason or "not scored", MAX_STORED_CHARS)
            value.extend([None] * n)
            passed.extend([None] * n)
            for column in (label, rationale, error, details):
                column.extend([None] * n)
            skipped.extend([True] * n)
            skip_reason.extend([reason] * n)
            continue
        s = o.score
        text = s.rationale
        if o.warnings:
            text = "; ".join([*o.warnings, text] if text else o.warnings)
        # what the evaluator or its judge wrote is capped (see nbeval.results.storage.limits)
        label.extend([truncate_text(s.label, MAX_STORED_CHARS)] * n)
        rationale.extend([truncate_text(text, MAX_STORED_CHARS)] * n)
        error.extend([truncate_text(s.error, MAX_STORED_CHARS)] * n)
        details.extend([cap_details(s.details)] * n)
        skipped.extend([False] * n)
        skip_reason.extend([None] * n)
        for name, threshold, higher in plan:
            v = s.values.get(name)
            v = None if v is None else float(v)
            value.append(v)
            passed.append(passes(v, threshold, higher))
    if ordered:
        cols[ORDER_COLUMNS[0]], cols[ORDER_COLUMNS[1]] = ev_col, row_col
    return cols


def _categorical(values: Any) -> Any:
    """A categorical with its categories sorted (only those that occur)."""
    import pandas as pd

    if isinstance(getattr(values, "dtype", None), pd.CategoricalDtype):
        cat = pd.Categorical(values).remove_unused_categories()
        return cat.reorder_categories(sorted(cat.categories)) if list(cat.categories) != sorted(cat.categories) else cat
    return pd.Categorical(values)


def _text(values: Any) -> Any:
    """Free text as a one-shot DataFrame build would type it: strings, or ``None``s in an object column."""
    import numpy as np
    import pandas as pd

    series = values if isinstance(values, pd.Series) else pd.Series(values, dtype=object)
    if len(series) and series.notna().any():
        return series.astype("str").array
    return np.full(len(series), None, dtype=object)


def typed_scores(columns: Mapping[str, Any] | pd.DataFrame, *, keep_order: bool = False) -> pd.DataFrame:
    """Build the long table from columns, with the dtypes every path shares.

    The columns are lists, arrays or a DataFrame (see the module's docstring for the dtypes).
    ``keep_order`` keeps the hidden :data:`ORDER_COLUMNS`.
    """
    import numpy as np
    import pandas as pd

    def column(name: str) -> Any:
        got = columns[name]
        return got.to_numpy(dtype=object) if isinstance(got, pd.Series) and name == "passed" else got

    data: dict[str, Any] = {}
    for name in SCORE_COLUMNS:
        got = columns[name]
        if name in KEY_COLUMNS:
            data[name] = _categorical(got)
        elif name == "value":
            data[name] = (
                pd.Series(got, dtype=object).astype(float).to_numpy()
                if not isinstance(got, pd.Series)
                else got.astype(float).to_numpy()
            )
        elif name == "passed":
            data[name] = pd.array(column(name), dtype="boolean")
        elif name == "skipped":
            data[name] = np.asarray(got, dtype=bool)
        else:
            data[name] = _text(got)
    if keep_order:
        for name in ORDER_COLUMNS:
            data[name] = np.asarray(columns[name], dtype=np.int64)
    return pd.DataFrame(data)


def append_typed(first: pd.DataFrame, then: pd.DataFrame) -> pd.DataFrame:
    """Append one typed long table to another, typed as :func:`typed_scores` types the whole.

    The key columns' categories are the sorted union of both; a text column is text where either
    holds some (``None`` becomes missing text), all ``None`` where neither does. Codes, numbers and
    text are concatenated, not converted from Python objects again.
    """
    import numpy as np
    import pandas as pd
    from pandas.api.types import is_object_dtype

    data: dict[str, Any] = {}
    for name in SCORE_COLUMNS:
        a, b = first[name].array, then[name].array
        if name in KEY_COLUMNS:
            data[name] = _append_categorical(a, b)
        elif name in TEXT_COLUMNS:
            text = [x.dtype for x in (a, b) if isinstance(x.dtype, pd.StringDtype)]
            if text and all(isinstance(x.dtype, pd.StringDtype) or is_object_dtype(x.dtype) for x in (a, b)):
                parts = [
                    x if x.dtype == text[0] else pd.array(np.asarray(x, dtype=object), dtype=text[0]) for x in (a, b)
                ]
                data[name] = type(parts[0])._concat_same_type(parts)
            else:  # object columns (all None; text before pandas 3): typed as a whole
                data[name] = _text(np.concatenate([np.asarray(a, dtype=object), np.asarray(b, dtype=object)]))
        elif name == "passed":
            data[name] = type(a)._concat_same_type([a, b])
        else:
            data[name] = np.concatenate([np.asarray(a), np.asarray(b)])
    return pd.DataFrame(data)


def _append_categorical(a: pd.Categorical, b: pd.Categorical) -> pd.Categorical:
    """``a`` then ``b`` (both with sorted categories), with the sorted union of their categories.

    ``a``'s codes are kept when ``b`` brings no new category (names, models, metrics) and shifted once when it does
    (keys).
    """
    import numpy as np
    import pandas as pd

    cats = a.categories
    where = cats.get_indexer(b.categories)
    if (where >= 0).all():
        dtype, shift = a.dtype, None
    else:
        cats = cats.append(b.categories[where < 0]).sort_values()
        dtype, shift = pd.CategoricalDtype(cats), cats.get_indexer(a.categories)
        where = cats.get_indexer(b.categories)
    codes = [a.codes if shift is None else shift[a.codes], where[b.codes]]
    return pd.Categorical.from_codes(np.concatenate(codes), dtype=dtype)
