"""What a partitioned run's parts say of their scores, added up: the statistics read without the long table.

A partitioned run (:mod:`nbeval.engine.dask_parts`) never holds its rows on the client. Each part
sends back a summary (:func:`part_statistics`: exact sums, the problem
:mod:`~nbeval.results.statistics.tallies`, sampled rows and hardest cases), and
:class:`PartSummaries` adds them up. From them
come, without reading a score:

* the **problems** (errored, unrated and unmeasured rows): tallies add up exactly;
* **Wilson intervals**: a share's successes and rows add up exactly, so the interval is the one
  a local run gives;
* **bootstrap intervals** and **paired comparisons** from a *sample of test cases*: a test case
  is in it when a hash of its key falls below a bar set so that about :data:`SAMPLE_KEYS` keys
  are (every key when the run has no more), with every model's rows of each key. When the
  sample holds every key, the bootstrap is the local run's, value for value. When it does not,
  a mean's interval is the normal one from the exact mean and variance of *all* rows (summed
  exactly, like the aggregates; method ``"normal"``), kept within the least and greatest value
  as a bootstrap's is, and a comparison is the local test on the
  sampled keys only, which says so (``attrs["sample"]``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbeval.results.statistics.tallies import Tally, tally_rows
from nbeval.results.storage.partitions import exact_partials, exact_total

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "SAMPLE_KEYS",
    "PartSummaries",
    "hardest_cases",
    "hardest_in_part",
    "key_hash",
    "part_statistics",
    "sample_bar",
]

#: Test cases the sample of a partitioned run holds, about (all of them when the run has no more).
SAMPLE_KEYS = 20_000
#: Partial sums a group keeps before they are added up again into a few (exactly).
_COMPACT = 64
#: The bar of a sample that holds every key: every :func:`key_hash` is below it.
_ALL = 1 << 64


def key_hash(key: str, salt: str = "") -> int:
    """A 64-bit hash of a test case's key, independent of the bucket it lands in, for the sample.

    ``salt`` (hex, a run's own, kept in its ``plan.json``) keys the hash, so that whoever writes
    the input's keys cannot choose which test cases the sample, and the tests run on it, hold.
    """
    digest = hashlib.blake2b(
        key.encode("utf-8", "surrogatepass"), digest_size=8, person=b"nbeval-sample", key=bytes.fromhex(salt)
    ).digest()
    return int.from_bytes(digest, "little")


def sample_bar(keys: int, sample_keys: int | None = None) -> int:
    """The bar below which a key's :func:`key_hash` puts it in the sample of a run of ``keys`` test cases.

    ``sample_keys`` is the sample's size to aim at (default :data:`SAMPLE_KEYS`).
    """
    if sample_keys is None:
        sample_keys = SAMPLE_KEYS
    if keys <= sample_keys:
        return _ALL
    return int(_ALL * sample_keys // keys)


def hardest_cases(
    entries: list[list[Any]], evaluators: Sequence[str], metric_of: Callable[[int], str]
) -> list[tuple[str | None, str | None, str, int, int]]:
    """The hardest test cases of :func:`hardest_in_part`'s entries, as the insights list them.

    Per evaluator with failures (evaluator, primary metric ``metric_of(position)``, key, failing
    models, models measured); then, when failures span evaluators, (None, None, key, failing
    pairs, 0). ``entries`` hold at most one per evaluator position and one overall (the best).
    """
    per_evaluator = sorted((e for e in entries if e[0] >= 0), key=lambda e: e[0])
    out: list[tuple[str | None, str | None, str, int, int]] = [
        (evaluators[k], metric_of(k), str(key), int(n), int(total)) for k, n, _, key, total in per_evaluator
    ]
    overall = [e for e in entries if e[0] < 0]
    if len(per_evaluator) > 1 and overall:
        _, n, _, key, _ = overall[0]
        out.append((None, None, str(key), int(n), 0))
    return out


def hardest_in_part(fails: pd.DataFrame, measured: pd.DataFrame) -> list[list[Any]]:
    """The part's hardest test cases, as :func:`~nbeval.results.reporting.insights` picks them.

    ``fails`` and ``measured`` are the part's rows on a primary metric that failed and that have a
    value (columns ``_evaluator_pos``, ``key``, ``model_key``, ``_row_pos``). Per evaluator
    position: ``[k, failing models, first failing row, key, models measured]`` of the key failed
    by the most models (equal counts: the one that failed first); then ``[-1, failing pairs,
    [k, row], key, 0]`` of the key with the most failing (model, evaluator) pairs. A test case
    never spans two parts, so the parts' bests are the run's.
    """
    import pandas as pd

    if fails.empty:
        return []
    groups = fails.groupby(["_evaluator_pos", "key"], sort=False, observed=True)
    per_case = pd.DataFrame({"models": groups["model_key"].nunique(), "first": groups["_row_pos"].min()}).reset_index()
    out: list[list[Any]] = []
    for k, cases in per_case.groupby("_evaluator_pos", sort=True, observed=True):
        top = cases.sort_values(["models", "first"], ascending=[False, True], kind="stable").iloc[0]
        key = str(top["key"])
        on = measured[(measured["_evaluator_pos"] == k) & (measured["key"] == key)]
        out.append([int(k), int(top["models"]), int(top["first"]), key, int(on["model_key"].nunique())])
    pairs = per_case.groupby("key", sort=False, observed=True).agg(models=("models", "sum"))
    first = per_case.sort_values(["_evaluator_pos", "first"], kind="stable").drop_duplicates("key").set_index("key")
    pairs["k"], pairs["row"] = first["_evaluator_pos"], first["first"]
    top = pairs.reset_index().sort_values(["models", "k", "row"], ascending=[False, True, True], kind="stable").iloc[0]
    out.append([-1, int(top["models"]), [int(top["k"]), int(top["row"])], str(top["key"]), 0])
    return out


def _exact_squares(v: Any) -> list[float]:
    """Each value's square as two floats whose sum is exactly it (Dekker's product), all in one list.

    Rounding each square would make the variance of large, close values (1e8 plus noise) cancel
    to nothing; the exact squares keep it exact. A value past about 1e150 squares to infinity.
    """
    import numpy as np

    with np.errstate(over="ignore", invalid="ignore"):
        p = v * v
        c = 134217729.0 * v  # 2**27 + 1: splits each value into two halves of 26 bits
        hi = c - (c - v)
        lo = v - hi
        e = ((hi * hi - p) + 2.0 * hi * lo) + lo * lo
    e = np.where(np.isfinite(p), e, 0.0)
    return [*p.tolist(), *e.tolist()]


#: The columns of a part's long table the statistics read.
_COLUMNS = (
    "_evaluator_pos",
    "model_key",
    "metric",
    "key",
    "_row_pos",
    "value",
    "passed",
    "skipped",
    "error",
    "label",
    "skip_reason",
)


def part_statistics(table: Any, primary: dict[int, str], bar: int, salt: str = "") -> dict[str, Any]:
    """What one part's summary says of its scores (the pieces :meth:`PartSummaries.add` adds up).

    Column-wise (pandas), so that summing a part costs little beside scoring it; only the rows
    without a value are looked at one by one (for the problem tallies).

    Args:
        table: The part's long table as Arrow, with its order columns (``_evaluator_pos``, ``_row_pos``).
        primary: Each evaluator's primary metric, by evaluator position.
        bar: The sample's bar (:func:`sample_bar`).
        salt: The run's salt of :func:`key_hash`.

    Returns:
        ``sums``: per (evaluator position, model, metric) the measured rows, the exact partial sums
        of their values and of their squares, how many are neither 0 nor 1, the least and the
        greatest; ``tallies``: per (evaluator position, model) its
        :class:`~nbeval.results.statistics.tallies.Tally` as JSON; ``sample``: per (evaluator
        position, model, metric) the input positions, keys and values of its rows whose key is in
        the sample; ``hardest``: the part's hardest test cases (per evaluator, then overall).
    """
    import numpy as np

    df = table.select(list(_COLUMNS)).to_pandas()
    for c in ("model_key", "metric", "key"):
        df[c] = df[c].astype(str)
    value = df["value"].to_numpy(dtype=float, na_value=np.nan)
    has_value = ~np.isnan(value)
    measured = df[has_value]
    sums: dict[tuple[int, str, str], list[Any]] = {}
    for (k, mk, m), at in measured.groupby(
        ["_evaluator_pos", "model_key", "metric"], sort=False, observed=True
    ).indices.items():
        v = value[has_value][at]
        sums[(int(k), str(mk), str(m))] = [
            int(v.size),
            exact_partials(v.tolist()),
            exact_partials(_exact_squares(v)),
            int(((v != 0.0) & (v != 1.0)).sum()),
            float(v.min()),
            float(v.max()),
        ]
    keys = measured["key"].unique().tolist()
    chosen = keys if bar >= _ALL else [key for key in keys if key_hash(key, salt) < bar]
    sample: dict[tuple[int, str, str], tuple[list[int], list[str], list[float]]] = {}
    picked = measured[measured["key"].isin(chosen)]
    for (k, mk, m), part in picked.groupby(["_evaluator_pos", "model_key", "metric"], sort=False, observed=True):
        sample[(int(k), str(mk), str(m))] = (
            part["_row_pos"].astype(int).tolist(),
            part["key"].tolist(),
            part["value"].astype(float).tolist(),
        )
    on_primary = df["metric"].to_numpy(dtype=object) == df["_evaluator_pos"].map(primary).to_numpy(dtype=object)
    counted = df[on_primary]
    rows = counted.groupby(["model_key", "_evaluator_pos"], sort=False, observed=True).size()
    without = counted[~has_value[on_primary] | counted["skipped"].astype(bool).to_numpy()]
    lists = [without[c].astype(object).where(without[c].notna(), None).tolist() for c in _COLUMNS[:3] + _COLUMNS[7:]]
    pos, model, metric, skipped, error, label, reason = lists
    values = [None] * len(model)  # these rows have no value
    tallies = tally_rows(zip(model, pos, metric, skipped, error, values, label, reason, strict=True), primary)
    out_tallies = []
    for (mk, k), n in rows.items():
        t = tallies.get((mk, k)) or Tally(primary[int(k)])
        t.rows = int(n)
        t.trim()
        out_tallies.append([int(k), str(mk), t.to_json()])
    fails = counted[has_value[on_primary] & counted["passed"].eq(False).fillna(False).to_numpy(dtype=bool)]
    return {
        "sums": sums,
        "tallies": out_tallies,
        "sample": [[k, mk, m, *got] for (k, mk, m), got in sample.items()],
        "hardest": hardest_in_part(fails, counted[has_value[on_primary]]),
    }


@dataclass
class _Moments:
    n: int = 0
    sums: list[float] = field(default_factory=list)
    squares: list[float] = field(default_factory=list)
    not_binary: int = 0
    least: float = math.inf
    greatest: float = -math.inf


@dataclass
class PartSummaries:
    """The summaries of a partitioned run's parts, added up, keyed by evaluator name.

    Built by the run (:class:`~nbeval.engine.dask_parts`); a result keeps it as
    ``result.part_summaries`` and its intervals, comparisons and problems read it instead of the
    long table.
    """

    evaluators: list[str]
    """The evaluators' names, by position."""
    bar: int = _ALL
    """The sample's bar (:func:`sample_bar`)."""
    salt: str = ""
    """The run's salt of :func:`key_hash` (hex)."""
    keys: int = 0
    """Test cases in the run."""
    model_order: dict[str, int] = field(default_factory=dict)
    """Each model's rank in input order."""
    perturbed: int = 0
    """Rows perturbed from another test case: their flips are found in the long table, read for them."""
    _moments: dict[tuple[int, str, str], _Moments] = field(default_factory=dict)
    _tallies: dict[tuple[int, str], Tally] = field(default_factory=dict)
    _sample: dict[tuple[int, str, str], list[tuple[int, str, float]]] = field(default_factory=dict)
    _hardest: dict[int, list[Any]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether the sample holds every test case."""
        return self.bar >= _ALL

    def add(self, summary: dict[str, Any]) -> None:
        """Add one part's summary (what ``summary.json`` holds)."""
        for k, mk, _n, sums in summary["groups"]:
            for metric, (count, partials, squares, not_binary, least, greatest) in sums.items():
                m = self._moments.setdefault((k, mk, metric), _Moments())
                m.n += count
                m.sums.extend(partials)
                m.squares.extend(squares)
                m.not_binary += not_binary
                m.least, m.greatest = min(m.least, least), max(m.greatest, greatest)
                if max(len(m.sums), len(m.squares)) > _COMPACT:  # a few floats hold any exact sum: keep them few
                    m.sums, m.squares = exact_partials(m.sums), exact_partials(m.squares)
        for k, mk, tally in summary["tallies"]:
            t = Tally.from_json(tally)
            have = self._tallies.get((k, mk))
            if have is None:
                self._tallies[(k, mk)] = t
            else:
                have.add(t)
                have.trim()
        for entry in summary["hardest"]:
            best = self._hardest.get(entry[0])
            if best is None or (-entry[1], entry[2]) < (-best[1], best[2]):
                self._hardest[entry[0]] = entry
        for k, mk, metric, positions, keys, values in summary["sample"]:
            self._sample.setdefault((k, mk, metric), []).extend(zip(positions, keys, values, strict=True))

    def _position(self, evaluator: str) -> int:
        return self.evaluators.index(evaluator)

    def tallies(self) -> dict[tuple[str, str], Tally]:
        """The problem tallies per (model key, evaluator), by evaluator then model in input order."""
        order = self.model_order
        ranked = sorted(self._tallies, key=lambda km: (km[0], order.get(km[1], len(order)), km[1]))
        return {(mk, self.evaluators[k]): self._tallies[(k, mk)] for k, mk in ranked}

    def hardest(self) -> list[tuple[str | None, str | None, str, int, int]]:
        """The hardest test cases, as :func:`~nbeval.results.reporting.insights.insights` lists them.

        Per evaluator with failures (evaluator, primary metric, key, failing models, models
        measured); then, when failures span evaluators, (None, None, key, failing pairs, 0).
        """
        return hardest_cases(list(self._hardest.values()), self.evaluators, self._primary_of)

    def _primary_of(self, k: int) -> str:
        return next(t.metric for (kk, _), t in self._tallies.items() if kk == k)

    def is_binary(self, evaluator: str, metric: str) -> bool:
        """Whether every measured value of the metric, of every model, is 0 or 1."""
        k = self._position(evaluator)
        return all(m.not_binary == 0 for (kk, _, mm), m in self._moments.items() if kk == k and mm == metric)

    def moments(self, evaluator: str, model_key: str, metric: str) -> tuple[int, float, float]:
        """Rows measured, their mean and their variance (divided by the rows, as the bootstrap's), both exact.

        Exact as fractions from the exact sums of the values and of their squares, then rounded
        once; the variance is NaN when a value is infinite or its square passes a float.
        """
        m = self._moments.get((self._position(evaluator), model_key, metric))
        if m is None or m.n == 0:
            return 0, math.nan, math.nan
        if not all(math.isfinite(x) for x in (*m.sums, *m.squares)):  # an infinite value, or a square past a float
            return m.n, exact_total(m.sums) / m.n, math.nan
        from fractions import Fraction

        total = sum(map(Fraction, m.sums), Fraction(0))  # exact: a few partials each
        squares = sum(map(Fraction, m.squares), Fraction(0))
        variance = (squares - total * total / m.n) / m.n
        return m.n, float(total / m.n), float(variance)

    def is_mean(self, evaluator: str, model_key: str, metric: str, aggregate: float) -> bool:
        """Whether a model's aggregate is the exact mean of its measured values (a NaN aggregate is)."""
        if math.isnan(aggregate):
            return True
        n, mean, _ = self.moments(evaluator, model_key, metric)
        return n > 0 and math.isclose(aggregate, mean, rel_tol=1e-9, abs_tol=1e-12)

    def span(self, evaluator: str, model_key: str, metric: str) -> tuple[float, float]:
        """The least and the greatest measured value (``(inf, -inf)`` for none)."""
        m = self._moments.get((self._position(evaluator), model_key, metric))
        return (math.inf, -math.inf) if m is None else (m.least, m.greatest)

    def successes(self, evaluator: str, model_key: str, metric: str) -> tuple[int, int]:
        """Of a metric whose values are 0 or 1: the rows that are 1, and the rows measured."""
        m = self._moments.get((self._position(evaluator), model_key, metric))
        if m is None:
            return 0, 0
        return round(exact_total(m.sums)), m.n

    def values(self, evaluator: str, metric: str) -> pd.DataFrame:
        """The sampled rows' values of one metric: ``key``, ``model_key``, ``value``, in input order.

        ``attrs["sample"]`` is ``None`` when the sample holds every test case, otherwise
        ``{"keys": sampled keys, "of": keys in the run}``.
        """
        import pandas as pd

        k = self._position(evaluator)
        rows = sorted(
            (pos, key, mk, value)
            for (kk, mk, mm), got in self._sample.items()
            if kk == k and mm == metric
            for pos, key, value in got
        )
        out = pd.DataFrame(
            {
                "key": [r[1] for r in rows],
                "model_key": [r[2] for r in rows],
                "value": pd.Series([r[3] for r in rows], dtype=float),
            }
        )
        out.attrs["sample"] = None if self.complete else {"keys": self.sampled_keys(), "of": self.keys}
        return out

    def sampled_keys(self) -> int:
        """Test cases in the sample."""
        return len({key for got in self._sample.values() for _, key, _ in got})
