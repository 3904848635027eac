"""Paired comparisons of two models: is the difference on each metric larger than noise?

Both models answered the same test cases, so the comparison is paired on the test case ``key``:
only cases where both have a value count (``n``). For each evaluator and metric:

* ``diff = mean_a - mean_b`` over those pairs, with the 95% percentile bootstrap interval of the
  mean paired difference (seeded, 2,000 resamples; see :mod:`nbeval.results.statistics.stats`);
* a paired test: the exact McNemar test when every value is 0 or 1 (it looks only at the cases
  where exactly one model passed), otherwise the Wilcoxon signed-rank test;
* ``p_holm``: the p-values adjusted with Holm's method over all rows of the table, since
  testing many metrics at once makes some small p-value likely by chance alone;
  ``significant`` is ``p_holm < alpha``.

An adjusted p-value depends on its *family*: the comparisons adjusted together. nbeval has one
rule: Holm over the comparisons shown together, and every place that shows an adjusted p-value
names its family in words (:func:`family_words`). ``compare()``'s table is one family
(``attrs["family"]``: "Holm-adjusted over the 9 comparisons of this table"); the insights'
leader comparisons are another ("Holm-adjusted over the 4 comparisons of the leaders against
their runners-up (one per evaluator)"). Both come from :func:`paired_comparisons`, so the same
comparisons in the same family give the same p-values.

A metric whose aggregate is not the mean of its rows' values (a macro F1 computed over all rows
at once) cannot be compared row by row: its row shows the two aggregates and their difference,
with ``test`` ``"none"`` and no interval or p-value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbeval.errors import BadParameter, NotFound
from nbeval.results.statistics.intervals import row_values

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult

__all__ = [
    "COMPARE_COLUMNS",
    "TABLE_FAMILY",
    "aggregate_is_mean",
    "compare",
    "compare_metrics",
    "family_words",
    "is_mean_of_rows",
    "paired_comparisons",
]

#: The columns of a paired comparison's table (one row per evaluator and metric), in order.
COMPARE_COLUMNS = [
    "evaluator",
    "metric",
    "mean_a",
    "mean_b",
    "diff",
    "diff_lo",
    "diff_hi",
    "n",
    "test",
    "p_value",
    "p_holm",
    "significant",
]
_NAN = float("nan")
#: How :func:`compare`'s family (every row of its table) is named.
TABLE_FAMILY = "of this table"


def family_words(m: int, of: str = TABLE_FAMILY) -> str:
    """Say the family of a Holm adjustment in words.

    For example ``"Holm-adjusted over the 9 comparisons of this table"``; ``m`` counts the
    comparisons with a p-value (those without one do not count).
    """
    if m == 1:
        return f"Holm-adjusted over the 1 comparison {of}, i.e. unadjusted"
    return f"Holm-adjusted over the {m} comparisons {of}"


def _check_model(result: EvaluationResult, model: str) -> None:
    if model not in result.model_keys:
        msg = f"no model '{model}' in this result; it has {result.model_keys}"
        raise NotFound(msg)


def compare(
    result: EvaluationResult, model_a: str, model_b: str, evaluator: str | None = None, *, alpha: float = 0.05
) -> pd.DataFrame:
    """Compare ``model_a`` against ``model_b`` on every metric of ``evaluator`` (default: every evaluator).

    One row per evaluator and metric (:data:`COMPARE_COLUMNS`); ``attrs["alpha"]`` holds ``alpha``
    and ``attrs["family"]`` the family of ``p_holm`` in words ("Holm-adjusted over the 9 comparisons
    of this table"). See the module's description for the method.
    """
    if evaluator is not None:
        result.check_evaluator(evaluator)
    m = result.metrics
    if evaluator is not None:
        m = m[m["evaluator"] == evaluator]
    pairs = [(str(e), str(x)) for e, x in zip(m["evaluator"], m["metric"], strict=True)]
    return compare_metrics(result, model_a, model_b, pairs, alpha=alpha)


def compare_metrics(
    result: EvaluationResult,
    model_a: str,
    model_b: str,
    metrics: Sequence[tuple[str, str]],
    *,
    alpha: float = 0.05,
    family: str = TABLE_FAMILY,
) -> pd.DataFrame:
    """Compare like :func:`compare`, for the given (evaluator, metric) pairs.

    Holm's adjustment runs over exactly these (:func:`paired_comparisons`).
    """
    _check_model(result, model_a)
    _check_model(result, model_b)
    table = paired_comparisons(
        result, [(model_a, model_b, ev, metric) for ev, metric in metrics], alpha=alpha, family=family
    )
    out = table[COMPARE_COLUMNS].copy()
    out.attrs.update(table.attrs)
    return out


def paired_comparisons(
    result: EvaluationResult,
    comparisons: Sequence[tuple[str, str, str, str]],
    *,
    alpha: float = 0.05,
    family: str = TABLE_FAMILY,
) -> pd.DataFrame:
    """Run paired comparisons ``(model_a, model_b, evaluator, metric)`` as one Holm family.

    They may be of different model pairs; the columns are ``model_a``, ``model_b`` then
    :data:`COMPARE_COLUMNS`.

    ``attrs``: ``alpha``, ``family`` (the family in words, :func:`family_words` with ``family``
    as its "of ..." part) and ``family_size`` (how many comparisons have a p-value). The one
    function behind :func:`compare` and the insights' leader comparisons.
    """
    import pandas as pd

    from nbeval.results.statistics.stats import holm

    for model_a, model_b, _, _ in comparisons:
        _check_model(result, model_a)
        _check_model(result, model_b)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        msg = f"alpha is a significance level between 0 and 1 (e.g. 0.05), got {alpha!r}"
        raise BadParameter(msg)
    rows = [[a, b, *_compare_one(result, a, b, ev, metric)] for a, b, ev, metric in comparisons]
    table = pd.DataFrame(rows, columns=["model_a", "model_b", *COMPARE_COLUMNS[:-2]])
    table["n"] = table["n"].astype(int)
    p = table["p_value"].to_numpy(dtype=float)
    table["p_holm"] = holm(p) if len(table) else []
    table["significant"] = (table["p_holm"] < alpha).astype(bool)
    size = int((~pd.isna(p)).sum())
    table.attrs.update({"alpha": alpha, "family": family_words(size, family), "family_size": size})
    parts = result.part_summaries
    if parts is not None and not parts.complete:
        table.attrs["sample"] = {"keys": parts.sampled_keys(), "of": parts.keys}
    return table


def _aggregate(result: EvaluationResult, model: str, evaluator: str, metric: str) -> float:
    agg = result.aggregates
    hit = agg[(agg["model_key"] == model) & (agg["evaluator"] == evaluator) & (agg["metric"] == metric)]
    return _NAN if hit.empty else float(hit["value"].iloc[0])


def is_mean_of_rows(aggregate: float, values: Any) -> bool:
    """Whether a model's aggregate is the mean of its rows' values (or unknown).

    An aggregate without row values was computed some other way.
    """
    if math.isnan(aggregate):
        return True
    if len(values) == 0:
        return False
    return math.isclose(aggregate, float(values.mean()), rel_tol=1e-9, abs_tol=1e-12)


def aggregate_is_mean(
    result: EvaluationResult, evaluator: str, metric: str, model_key: str, aggregate: float, values: Any = None
) -> bool:
    """Whether a model's aggregate is the mean of its rows' values (or unknown).

    A partitioned run's is told by its parts' exact sums (its ``row_values`` may be a sample);
    any other result's by ``values`` (default: the model's :func:`row_values`), as
    :func:`is_mean_of_rows`.
    """
    if result.part_summaries is not None:
        return result.part_summaries.is_mean(evaluator, model_key, metric, aggregate)
    if values is None:
        rows = row_values(result, evaluator, metric)
        values = rows.loc[rows["model_key"] == model_key, "value"]
    return is_mean_of_rows(aggregate, values)


def _compare_one(result: EvaluationResult, model_a: str, model_b: str, evaluator: str, metric: str) -> list[Any]:
    from nbeval.results.statistics import stats

    values = row_values(result, evaluator, metric)
    a = values[values["model_key"] == model_a].drop_duplicates("key").set_index("key")["value"]
    b = values[values["model_key"] == model_b].drop_duplicates("key").set_index("key")["value"]
    agg_a, agg_b = (_aggregate(result, m, evaluator, metric) for m in (model_a, model_b))
    common = a.index.intersection(b.index)
    x, y = a.loc[common].to_numpy(dtype=float), b.loc[common].to_numpy(dtype=float)
    n = int(common.size)
    means = aggregate_is_mean(result, evaluator, metric, model_a, agg_a, a) and aggregate_is_mean(
        result, evaluator, metric, model_b, agg_b, b
    )
    if not means:
        return [evaluator, metric, agg_a, agg_b, agg_a - agg_b, _NAN, _NAN, n, "none", _NAN]
    if n == 0:
        return [evaluator, metric, _NAN, _NAN, _NAN, _NAN, _NAN, 0, "none", _NAN]
    d = x - y
    lo, hi = stats.bootstrap_mean_interval(d)
    if stats.is_binary(x) and stats.is_binary(y):
        only_a, only_b = int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())
        test, p = "mcnemar-exact", stats.mcnemar_exact(only_a, only_b)
    else:
        test, p = "wilcoxon", stats.wilcoxon_signed_rank(x, y)
    return [evaluator, metric, float(x.mean()), float(y.mean()), float(d.mean()), lo, hi, n, test, p]
