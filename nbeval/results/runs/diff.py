"""Two runs of the same suite compared: did it get better, and what broke?

``diff(before, after)`` pairs the two runs' long tables on (test case ``key``, ``model_key``)
for each evaluator and metric: only rows measured in both runs (not skipped, with a value)
count (``n``). It uses the rules of :mod:`nbeval.results.statistics.compare` with one run in place of each
model:

* ``diff = mean_after - mean_before`` over the pairs, with a 95% interval of the mean paired
  difference: the percentile bootstrap of :func:`~nbeval.results.statistics.stats.bootstrap_mean_interval`
  (seeded, 2,000 resamples) below :data:`NORMAL_INTERVAL_FROM` pairs; from there up the normal
  interval ``mean ± z·sd/√n`` (``sd`` with ``ddof=0``, the spread the bootstrap resamples). The
  bootstrap only approximates that normal interval at such sizes, and would take seconds per
  metric (2,000 resamples of hundreds of thousands of pairs); ``table["interval"]`` names each
  row's method and ``table.attrs["interval"]`` the rule;
* the exact McNemar test when every value is 0 or 1, otherwise the Wilcoxon signed-rank test
  (:func:`~nbeval.results.statistics.stats.wilcoxon_signed_rank`, as ``compare`` uses);
* ``p_holm``: Holm's adjustment over every row of the table (one family, named in words in
  ``table.attrs["family"]``); ``significant`` is ``p_holm < alpha``;
* ``regression``: significant, in the metric's wrong direction, and ``|diff| >= min_effect``;
  ``improvement`` the same in the right direction.

A metric whose aggregate is not the mean of its rows (a macro F1) shows the two aggregates and
their difference with ``test`` ``"none"``, as compare does. Flips are the rows whose pass/fail
verdict on their evaluator's primary metric changed; rows of an evaluator both runs have that
only one run holds are new or gone. Configuration differences (evaluators, their parameters and
thresholds, the judge, the embedder, the prompts, the dataset, nbeval's version) come from each
result's ``meta``; what a result does not record is unknown, never a change.

``coverage`` counts, per evaluator and model, the test cases each run measured and those measured
in both (:mod:`nbeval.results.runs.diff_coverage`); :meth:`RunDiff.gate` fails on a regression and on a
comparison of nothing or of far fewer rows than either run measured
(:mod:`nbeval.results.runs.diff_gate`): no pair means no test, so ``has_regressions`` alone would pass.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from nbeval.errors import BadArgumentType, BadParameter
from nbeval.results.reporting.problems import unmeasured_problems
from nbeval.results.runs import diff_changes, diff_render
from nbeval.results.runs.diff_changes import UNKNOWN
from nbeval.results.runs.diff_coverage import coverage_table, empty_coverage
from nbeval.results.runs.diff_gate import MIN_SHARED, check_min_shared
from nbeval.results.statistics import stats
from nbeval.results.statistics.compare import family_words, is_mean_of_rows

if TYPE_CHECKING:
    import pandas as pd

    from nbeval.results import EvaluationResult
    from nbeval.results.runs.diff_gate import DiffVerdict

__all__ = ["DIFF_COLUMNS", "NORMAL_INTERVAL_FROM", "UNKNOWN", "RunDiff", "diff", "mean_difference_interval"]

#: The columns of a run diff's table (one row per evaluator, metric and model), in order.
DIFF_COLUMNS = [
    *("evaluator", "metric", "model_key", "direction", "mean_before", "mean_after", "diff", "diff_lo", "diff_hi"),
    *("interval", "n", "test", "p_value", "p_holm", "significant", "regression", "improvement"),
]
#: From this many pairs up, the interval of a mean difference is the normal one, not the bootstrap.
NORMAL_INTERVAL_FROM = 10_000
_NAN = float("nan")
_SHOWN_FLIPS = 20


def mean_difference_interval(d: np.ndarray, level: float = 0.95) -> tuple[float, float, str]:
    """Return the ``level`` interval of the mean of ``d`` and its method.

    The method is the seeded percentile bootstrap below :data:`NORMAL_INTERVAL_FROM` values, else
    the normal interval ``mean ± z·sd/√n``.
    """
    if d.size < NORMAL_INTERVAL_FROM:
        lo, hi = stats.bootstrap_mean_interval(d, level)
        return lo, hi, "bootstrap"
    half = NormalDist().inv_cdf(0.5 + level / 2) * float(d.std()) / math.sqrt(d.size)
    mean = float(d.mean())
    return mean - half, mean + half, "normal"


@dataclass(repr=False)
class RunDiff:
    """What changed from one run (``before``) to another (``after``); see :mod:`nbeval.results.runs.diff`."""

    table: pd.DataFrame
    """One row per (evaluator, metric, model) of both runs: :data:`DIFF_COLUMNS`."""
    flips: pd.DataFrame
    """Rows whose verdict on the primary metric changed: ``key, model_key, evaluator, metric,
    value_before, value_after, passed_before, passed_after, change`` ("now fails"/"now passes")."""
    new_rows: pd.DataFrame
    """``key, model_key, evaluator`` rows only ``after`` has (evaluators of both runs)."""
    gone_rows: pd.DataFrame
    """``key, model_key, evaluator`` rows only ``before`` has (evaluators of both runs)."""
    usage: pd.DataFrame
    """``what, before, after, change``: tokens, calls, cost (USD) and duration (s); NaN unknown."""
    changes: pd.DataFrame
    """Configuration differences: ``what, before, after, kind``
    (:data:`~nbeval.results.runs.diff_changes.UNKNOWN` where not recorded)."""
    warnings: list[str] = field(default_factory=list)
    """Sentences about changed configuration that may explain a difference; printed first."""
    runs: tuple[str, str] = ("", "")
    """Each run in words (label, start, commit), where its result records them."""
    min_effect: float = 0.0
    """The smallest ``|diff|`` counted as a regression or an improvement."""
    min_shared: float = MIN_SHARED
    """The smallest share of a run's measured rows that both runs must share (:meth:`gate`)."""
    sources: tuple[Any, Any] = (None, None)
    """The two runs as given (results, or their folders): :meth:`results` reads them whole."""
    coverage: pd.DataFrame = field(default_factory=empty_coverage)
    """Per evaluator and model, the test cases each run measured and those measured in both:
    :data:`~nbeval.results.runs.diff_coverage.COVERAGE_COLUMNS`."""

    def results(self) -> tuple[EvaluationResult, EvaluationResult]:
        """Both runs whole, with their datasets: what a view of a flipped case needs, beyond the diff's tables.

        A folder is loaded with :func:`nbeval.load_result` on each call.

        Returns:
            The results ``(before, after)``.

        Raises:
            BadParameter: When the diff does not know its runs (it was not made by :func:`diff`).
        """
        from nbeval.results.result import EvaluationResult
        from nbeval.results.storage.loading import load_result

        def whole(run: Any) -> EvaluationResult:
            if run is None:
                msg = "this diff does not know its runs; make it with nbeval.diff(before, after)"
                raise BadParameter(msg)
            return run if isinstance(run, EvaluationResult) else load_result(run)

        return whole(self.sources[0]), whole(self.sources[1])

    @property
    def regressions(self) -> pd.DataFrame:
        """The rows of :attr:`table` that got significantly worse (by at least ``min_effect``)."""
        return self.table[self.table["regression"]]

    @property
    def improvements(self) -> pd.DataFrame:
        """The rows of :attr:`table` that got significantly better (by at least ``min_effect``)."""
        return self.table[self.table["improvement"]]

    @property
    def has_regressions(self) -> bool:
        """Whether any comparison regressed.

        False when nothing was compared: a CI gate checks :meth:`gate`, which also fails then.
        """
        return bool(self.table["regression"].any())

    def gate(self, min_shared: float | None = None) -> DiffVerdict:
        """The CI gate of ``nbeval diff --fail-on-regression``.

        It is tripped by a regression, by a comparison of nothing, by a model and evaluator measured
        before and not after, and by fewer shared rows than ``min_shared`` (default :attr:`min_shared`) of
        the rows either run measured (see :func:`~nbeval.results.runs.diff_gate.check_diff_gate`).

        Args:
            min_shared: The smallest share (0 to 1) of each run's measured rows that both runs must share;
                ``None`` for :attr:`min_shared`.

        Returns:
            The gate's verdict: the lines saying what trips it, none when it passes.

        Raises:
            BadParameter: When ``min_shared`` is not a number from 0 to 1.
        """
        from nbeval.results.runs.diff_gate import check_diff_gate

        return check_diff_gate(self, min_shared)

    def _known_change(self, kind: str) -> bool:
        c = self.changes
        return bool(((c["kind"] == kind) & (c["before"] != UNKNOWN) & (c["after"] != UNKNOWN)).any())

    @property
    def judge_changed(self) -> bool:
        """Whether both runs record their judge and it differs (model or parameters)."""
        return self._known_change("judge")

    @property
    def prompt_changed(self) -> bool:
        """Whether some evaluator of both runs records its prompt and the prompt differs."""
        return self._known_change("prompt")

    def __repr__(self) -> str:
        return (
            f"RunDiff({len(self.table)} comparisons, {len(self.regressions)} regressions, "
            f"{len(self.improvements)} improvements, {len(self.flips)} flips)"
        )

    def __str__(self) -> str:
        return self.to_text()

    def to_text(self, max_flips: int = _SHOWN_FLIPS) -> str:
        """A plain-text report, every line at most 100 columns.

        Warnings about changed configuration come first, then regressions, improvements, flips (the first
        ``max_flips``) and usage.

        Args:
            max_flips: How many flipped rows to show, a whole number >= 0.

        Returns:
            The report, lines separated by newlines.

        Raises:
            BadParameter: When ``max_flips`` is not a whole number >= 0.
        """
        if isinstance(max_flips, bool) or not isinstance(max_flips, int) or max_flips < 0:
            msg = f"max_flips is how many flipped rows to show, a whole number >= 0; got {max_flips!r}"
            raise BadParameter(msg)
        return diff_render.diff_text(self, max_flips)

    def _repr_html_(self) -> str:
        return diff_render.diff_html(self, _SHOWN_FLIPS)


def diff(
    before: Any, after: Any, *, alpha: float = 0.05, min_effect: float = 0.0, min_shared: float = MIN_SHARED
) -> RunDiff:
    """Compare two runs of the same suite: what got better, what got worse, and what changed.

    See :mod:`nbeval.results.runs.diff` for how the runs are paired and tested.

    Args:
        before: The earlier run: an :class:`~nbeval.results.EvaluationResult` or the folder of a saved
            one (read and checked as :func:`nbeval.load_result` does, but for the dataset, which a diff
            does not use: :func:`~nbeval.results.runs.diff_changes.load_tables`).
        after: The later run, given the same way.
        alpha: The significance level of the Holm-adjusted tests, between 0 and 1.
        min_effect: The smallest ``|diff|`` that counts as a regression or an improvement.
        min_shared: The smallest share of each run's measured rows both must share for
            :meth:`RunDiff.gate` to pass.

    Returns:
        The differences between the runs.

    Raises:
        BadParameter: When ``alpha`` is not between 0 and 1, ``min_effect`` is not a number >= 0, or
            ``min_shared`` is not a number from 0 to 1.
        BadArgumentType: When ``before`` or ``after`` is neither a result nor a folder.
        DataError: When a folder does not hold a saved result that can be read.
    """
    import pandas as pd

    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        msg = f"alpha is a significance level between 0 and 1 (e.g. 0.05), got {alpha!r}"
        raise BadParameter(msg)
    if isinstance(min_effect, bool) or not isinstance(min_effect, (int, float)) or not min_effect >= 0:
        msg = f"min_effect is the smallest change that counts, a number >= 0 (e.g. 0.02), got {min_effect!r}"
        raise BadParameter(msg)
    min_shared = check_min_shared(min_shared)
    res_b, res_a = _result(before, "before"), _result(after, "after")
    names, b, a = _encode(res_b.scores, res_a.scores)
    pb, pa = _pairs(b, a, len(names[0]))
    table = _table(res_b, res_a, names, b, a, pb, pa)
    p = table["p_value"].to_numpy(dtype=float)
    table["p_holm"] = stats.holm(p) if len(table) else []
    table["significant"] = (table["p_holm"] < alpha).astype(bool)
    worse = np.where(table["direction"] == "lower", table["diff"] > 0, table["diff"] < 0)
    large = table["diff"].abs().to_numpy(dtype=float) >= min_effect
    table["regression"] = table["significant"].to_numpy(dtype=bool) & worse & large
    table["improvement"] = table["significant"].to_numpy(dtype=bool) & ~worse & large & (table["diff"] != 0)
    size = int((~np.isnan(p)).sum())
    rule = f"percentile bootstrap below {NORMAL_INTERVAL_FROM:,} pairs, normal interval (mean ± z·sd/√n) from there up"
    table.attrs.update({"alpha": alpha, "family": family_words(size), "family_size": size, "interval": rule})
    changes = diff_changes.changes(res_b, res_a)
    common = [e for e in res_b.evaluators if e in set(res_a.evaluators)]
    new, gone = _new_and_gone(names, b, a, common)
    runs = [_primary_rows(res, names, run) for res, run in ((res_b, b), (res_a, a))]
    unmeasured = [{(str(p[2]), str(p[3])) for p in unmeasured_problems(res)} for res in (res_b, res_a)]
    return RunDiff(
        table=table,
        flips=_flips(res_a, names, b, a, pb, pa, common),
        new_rows=new,
        gone_rows=gone,
        usage=diff_changes.usage(res_b.record, res_a.record),
        changes=pd.DataFrame(changes, columns=["what", "before", "after", "kind"]),
        warnings=diff_changes.warnings(changes, res_b.record, res_a.record),
        runs=(diff_changes.describe_run(res_b.record), diff_changes.describe_run(res_a.record)),
        min_effect=float(min_effect),
        min_shared=min_shared,
        sources=(before, after),
        coverage=coverage_table(names, runs, [_totals(res_b), _totals(res_a)], unmeasured),
    )


def _result(run: Any, name: str) -> EvaluationResult:
    from nbeval.results import EvaluationResult

    if isinstance(run, EvaluationResult):
        return run
    if isinstance(run, (str, os.PathLike)):
        return diff_changes.load_tables(run)
    msg = f"{name} must be an EvaluationResult or the folder result.save(folder) wrote, got {type(run).__name__}"
    raise BadArgumentType(msg)


# -- both long tables as codes into shared names -----------------------------------------------


@dataclass
class _Run:
    """One run's long table as arrays: codes into the shared names, and the values."""

    key: np.ndarray
    group: np.ndarray
    """(evaluator, metric, model) as one code: ``(evaluator * n_metrics + metric) * n_models + model``."""
    value: np.ndarray
    measured: np.ndarray
    known: np.ndarray
    """Whether the row's pass/fail verdict is known."""
    passed: np.ndarray


def _encode(before: pd.DataFrame, after: pd.DataFrame) -> tuple[list[pd.Index], _Run, _Run]:
    """Encode the key columns of both long tables against shared names.

    Returns the union of each key column's names (key, model_key, evaluator, metric) over both long
    tables, and each table as :class:`_Run` codes into them (categories recoded once, not rows).
    """
    import pandas as pd

    names: list[pd.Index] = []
    codes: list[list[np.ndarray]] = [[], []]
    for column in ("key", "model_key", "evaluator", "metric"):
        cats = [pd.Categorical(t[column]) for t in (before, after)]
        union = cats[0].categories.union(cats[1].categories)
        names.append(union)
        for i, cat in enumerate(cats):
            codes[i].append(union.get_indexer(cat.categories).astype(np.int64)[cat.codes])
    n_models, n_metrics = len(names[1]), len(names[3])
    runs = []
    for table, (key, model, evaluator, metric) in zip((before, after), codes, strict=True):
        value = table["value"].to_numpy(dtype=float)
        passed = pd.array(table["passed"], dtype="boolean")
        runs.append(
            _Run(
                key=key,
                group=(evaluator * n_metrics + metric) * n_models + model,
                value=value,
                measured=~table["skipped"].to_numpy(dtype=bool) & ~np.isnan(value),
                known=~np.asarray(passed.isna(), dtype=bool),
                passed=np.asarray(passed.fillna(False), dtype=bool),
            )
        )
    return names, runs[0], runs[1]


def _pairs(b: _Run, a: _Run, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Find the rows measured in both runs.

    Returns their positions in ``b`` and ``a`` (a row given twice counts once, its first time),
    ordered by group, then key.
    """
    found = []
    for run in (b, a):
        where = np.flatnonzero(run.measured)
        ids, first = np.unique(run.group[where] * n_keys + run.key[where], return_index=True)
        found.append((ids, where[first]))
    _, ib, ia = np.intersect1d(found[0][0], found[1][0], assume_unique=True, return_indices=True)
    return found[0][1][ib], found[1][1][ia]


def _primary_rows(
    result: EvaluationResult, names: list[pd.Index], run: _Run
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return each row's key, model and evaluator codes, and whether it counts on its primary metric.

    It counts when it is a measured row of its evaluator's primary metric in ``result`` (what
    :func:`~nbeval.results.runs.diff_coverage.coverage_table` counts).
    """
    n_models, n_metrics = len(names[1]), len(names[3])
    primary = np.zeros(len(names[2]) * n_metrics, dtype=bool)  # by evaluator * n_metrics + metric
    for ev in result.evaluators:
        e, t = names[2].get_indexer([ev])[0], names[3].get_indexer([result.primary_metric(ev)])[0]
        if e >= 0 and t >= 0:  # else no long-table row has it
            primary[e * n_metrics + t] = True
    metric = run.group // n_models
    return run.key, run.group % n_models, metric // n_metrics, primary[metric] & run.measured


def _totals(result: EvaluationResult) -> dict[tuple[str, str], int]:
    """(model_key, evaluator) to its test cases (``N`` of the primary metric's aggregate)."""
    agg = result.aggregates
    primary = agg.loc[agg["primary"].astype(bool)]  # .loc: an empty object column is no list of names
    return {
        (str(m), str(e)): int(n)
        for m, e, n in zip(primary["model_key"], primary["evaluator"], primary["N"], strict=True)
    }


def _group_code(names: list[pd.Index], evaluator: str, metric: str, model: str) -> int:
    """The group code of (evaluator, metric, model), -1 when a long table has none of its rows."""
    e, t, m = (int(names[i].get_indexer([v])[0]) for i, v in ((2, evaluator), (3, metric), (1, model)))
    return -1 if min(e, t, m) < 0 else (e * len(names[3]) + t) * len(names[1]) + m


def _spans(groups: np.ndarray) -> dict[int, tuple[int, int]]:
    """Each group's slice of the sorted array ``groups``."""
    if not groups.size:
        return {}
    starts = np.r_[0, np.flatnonzero(np.diff(groups)) + 1]
    stops = [*starts[1:].tolist(), groups.size]
    return {int(g): (int(lo), hi) for g, lo, hi in zip(groups[starts], starts, stops, strict=True)}


def _row_means(run: _Run, size: int) -> np.ndarray:
    """The mean of each group's measured rows, paired or not (NaN without any)."""
    group = run.group[run.measured]
    with np.errstate(invalid="ignore", divide="ignore"):
        means: np.ndarray = np.bincount(group, run.value[run.measured], size) / np.bincount(group, None, size)
    return means


def _aggregates(result: EvaluationResult) -> dict[tuple[str, str, str], float]:
    """(evaluator, metric, model_key) to the aggregate's value."""
    agg = result.aggregates[["evaluator", "metric", "model_key", "value"]]
    return {(str(e), str(m), str(k)): float(v) for e, m, k, v in agg.itertuples(index=False)}


def _table(
    res_b: EvaluationResult,
    res_a: EvaluationResult,
    names: list[pd.Index],
    b: _Run,
    a: _Run,
    pb: np.ndarray,
    pa: np.ndarray,
) -> pd.DataFrame:
    """Build one row per (evaluator, metric, model) both runs aggregate, before Holm's adjustment.

    The rows follow ``before``'s order of metrics and models.
    """
    import pandas as pd

    spans = _spans(b.group[pb])
    size = len(names[1]) * len(names[2]) * len(names[3])
    means = [_row_means(b, size), _row_means(a, size)]
    aggs = [_aggregates(res_b), _aggregates(res_a)]
    directions = res_a.metrics.set_index(["evaluator", "metric"])["direction"]
    rows = []
    for ev, metric in zip(res_b.metrics["evaluator"], res_b.metrics["metric"], strict=True):
        for model in res_b.model_keys:
            which = (str(ev), str(metric), str(model))
            if which not in aggs[0] or which not in aggs[1]:
                continue
            g = _group_code(names, *which)
            lo, hi = spans.get(g, (0, 0))
            x, y = b.value[pb[lo:hi]], a.value[pa[lo:hi]]
            row_means = [float(m[g]) if g >= 0 else _NAN for m in means]
            head = [*which, str(directions.get((ev, metric), "higher"))]
            rows.append(head + _compare(x, y, [aggs[0][which], aggs[1][which]], row_means))
    table = pd.DataFrame(rows, columns=DIFF_COLUMNS[:13])
    # typed whatever it holds: built from no row, every column would be object
    floats = ("mean_before", "mean_after", "diff", "diff_lo", "diff_hi", "p_value")
    texts = ("evaluator", "metric", "model_key", "direction", "interval", "test")
    return table.astype({"n": int} | dict.fromkeys(floats, float) | dict.fromkeys(texts, "str"))


def _compare(x: np.ndarray, y: np.ndarray, aggregates: list[float], means: list[float]) -> list[Any]:
    """Compute ``mean_before .. p_value`` of one paired comparison.

    ``x`` is before, ``y`` after, paired; ``aggregates`` and ``means`` (of all measured rows) of
    each run decide whether the metric is a mean of rows
    (:func:`~nbeval.results.statistics.compare.is_mean_of_rows`).
    """
    n = int(x.size)
    rows_mean = all(
        is_mean_of_rows(agg, np.array([mean]) if not math.isnan(mean) else np.zeros(0))
        for agg, mean in zip(aggregates, means, strict=True)
    )
    if not rows_mean:
        return [aggregates[0], aggregates[1], aggregates[1] - aggregates[0], _NAN, _NAN, "", n, "none", _NAN]
    if n == 0:
        return [_NAN, _NAN, _NAN, _NAN, _NAN, "", 0, "none", _NAN]
    d = y - x
    lo, hi, method = mean_difference_interval(d)
    if stats.is_binary(x) and stats.is_binary(y):
        test, p = (
            "mcnemar-exact",
            stats.mcnemar_exact(int(((x == 1) & (y == 0)).sum()), int(((x == 0) & (y == 1)).sum())),
        )
    else:
        test, p = "wilcoxon", stats.wilcoxon_signed_rank(y, x)
    return [float(x.mean()), float(y.mean()), float(d.mean()), lo, hi, method, n, test, p]


def _flips(
    res_a: EvaluationResult, names: list[pd.Index], b: _Run, a: _Run, pb: np.ndarray, pa: np.ndarray, common: list[str]
) -> pd.DataFrame:
    """The pairs of each common evaluator's primary metric (``after``'s) whose verdict changed."""
    import pandas as pd

    primary = np.zeros(len(names[2]) * len(names[3]), dtype=bool)  # by evaluator * n_metrics + metric
    for ev in common:
        e, t = names[2].get_indexer([ev])[0], names[3].get_indexer([res_a.primary_metric(ev)])[0]
        if e >= 0 and t >= 0:  # else no long-table row has it
            primary[e * len(names[3]) + t] = True
    keep = primary[b.group[pb] // len(names[1])] & b.known[pb] & a.known[pa] & (b.passed[pb] != a.passed[pa])
    ib, ia = pb[keep], pa[keep]
    group = b.group[ib]
    flips = pd.DataFrame(
        {
            "key": names[0].take(b.key[ib]).to_numpy(),
            "model_key": names[1].take(group % len(names[1])).to_numpy(),
            "evaluator": names[2].take(group // (len(names[1]) * len(names[3]))).to_numpy(),
            "metric": names[3].take(group // len(names[1]) % len(names[3])).to_numpy(),
            "value_before": b.value[ib],
            "value_after": a.value[ia],
            "passed_before": b.passed[ib],
            "passed_after": a.passed[ia],
            "change": np.where(a.passed[ia], "now passes", "now fails"),
        }
    )
    return flips.sort_values("change", kind="stable").reset_index(drop=True)  # "now fails" first


def _new_and_gone(names: list[pd.Index], b: _Run, a: _Run, common: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The (key, model_key, evaluator) rows of the common evaluators only ``a`` / only ``b`` has."""
    import pandas as pd

    n_keys, n_models, n_metrics = len(names[0]), len(names[1]), len(names[3])
    shared = np.zeros(len(names[2]), dtype=bool)
    where = names[2].get_indexer(common)
    shared[where[where >= 0]] = True
    rows = []
    for run in (b, a):
        ev, model = run.group // (n_metrics * n_models), run.group % n_models
        ids = np.sort(((ev * n_models + model) * n_keys + run.key)[shared[ev]])
        rows.append(ids[np.r_[True, ids[1:] != ids[:-1]]] if ids.size else ids)

    def frame(ids: np.ndarray) -> pd.DataFrame:
        key, rest = ids % n_keys, ids // n_keys
        return pd.DataFrame(
            {
                "key": names[0].take(key).to_numpy(),
                "model_key": names[1].take(rest % n_models).to_numpy(),
                "evaluator": names[2].take(rest // n_models).to_numpy(),
            }
        )

    new = np.setdiff1d(rows[1], rows[0], assume_unique=True)
    return frame(new), frame(np.setdiff1d(rows[0], rows[1], assume_unique=True))
