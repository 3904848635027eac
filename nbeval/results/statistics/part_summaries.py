"""What a partitioned run's parts say of their scores, added up: the statistics read without the long table.

A partitioned run (:mod:`nbeval.engine.dask_parts`) never holds its rows on the client. Each part
sends back a summary (:func:`metric_summary`, :func:`sample_rows` and the problem
:mod:`~nbeval.results.statistics.tallies`), and :class:`PartSummaries` adds them up. From them
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
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nbeval.results.statistics.tallies import Tally, tally_rows
from nbeval.results.storage.partitions import exact_partials

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SAMPLE_KEYS", "PartSummaries", "key_hash", "part_statistics", "sample_bar"]

#: Test cases the sample of a partitioned run holds, about (all of them when the run has no more).
SAMPLE_KEYS = 20_000
#: The bar of a sample that holds every key: every :func:`key_hash` is below it.
_ALL = 1 << 64


def key_hash(key: str) -> int:
    """A 64-bit hash of a test case's key, independent of the bucket it lands in, for the sample."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8, person=b"nbeval-sample").digest()
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


def _hardest_in_part(cols: dict[str, list[Any]], primary: dict[int, str]) -> list[list[Any]]:
    """The part's hardest test cases, as :func:`~nbeval.results.reporting.insights` picks them.

    Per evaluator position (on its primary metric): ``[k, failing models, first failing row, key,
    models measured]`` of the key failed by the most models (equal counts: the one that failed
    first); then ``[-1, failing pairs, [k, row], key, 0]`` of the key with the most failing
    (model, evaluator) pairs. A test case never spans two parts, so the parts' bests are the run's.
    """
    failing: dict[tuple[int, str], set[str]] = {}
    first: dict[tuple[int, str], int] = {}
    measured: dict[tuple[int, str], set[str]] = {}
    for i, k in enumerate(cols["_evaluator_pos"]):
        v = cols["value"][i]
        if primary.get(k) != cols["metric"][i] or cols["skipped"][i] or v is None or math.isnan(v):
            continue
        key = cols["key"][i]
        measured.setdefault((k, key), set()).add(cols["model_key"][i])
        if cols["passed"][i] is False:
            failing.setdefault((k, key), set()).add(cols["model_key"][i])
            first[(k, key)] = min(first.get((k, key), cols["_row_pos"][i]), cols["_row_pos"][i])
    best: dict[int, list[Any]] = {}
    pairs: dict[str, list[Any]] = {}
    for (k, key), models in failing.items():
        entry: list[Any] = [k, len(models), first[(k, key)], key, len(measured[(k, key)])]
        have = best.get(k)
        if have is None or (-entry[1], entry[2]) < (-have[1], have[2]):
            best[k] = entry
        overall = pairs.setdefault(key, [-1, 0, [k, first[(k, key)]], key, 0])
        overall[1] += len(models)
        overall[2] = min(overall[2], [k, first[(k, key)]])
    out = [best[k] for k in sorted(best)]
    if pairs:
        out.append(min(pairs.values(), key=lambda e: (-e[1], e[2])))
    return out


def _fsum(values: Sequence[float]) -> float:
    try:
        return math.fsum(values)
    except (ValueError, OverflowError):
        return math.nan


def part_statistics(table: Any, primary: dict[int, str], bar: int) -> dict[str, Any]:
    """What one part's summary says of its scores (the pieces :meth:`PartSummaries.add` adds up).

    Args:
        table: The part's long table as Arrow, with its order columns (``_evaluator_pos``, ``_row_pos``).
        primary: Each evaluator's primary metric, by evaluator position.
        bar: The sample's bar (:func:`sample_bar`).

    Returns:
        ``sums``: per (evaluator position, model, metric) the measured rows, the exact partial sums of
        their values and of their squares, how many are neither 0 nor 1, the least and the greatest; ``tallies``: per
        (evaluator position, model) its :class:`~nbeval.results.statistics.tallies.Tally` as JSON;
        ``sample``: per (evaluator position, model, metric) the input positions, keys and values
        of its rows whose key is in the sample.
    """
    cols = {
        c: table.column(c).to_pylist()
        for c in (
            "passed",
            "_evaluator_pos",
            "model_key",
            "metric",
            "skipped",
            "error",
            "value",
            "label",
            "skip_reason",
            "key",
            "_row_pos",
        )
    }
    positions, models, metrics, values = cols["_evaluator_pos"], cols["model_key"], cols["metric"], cols["value"]
    measured: dict[tuple[int, str, str], list[float]] = {}
    sample: dict[tuple[int, str, str], tuple[list[int], list[str], list[float]]] = {}
    in_sample: dict[str, bool] = {}
    for i, v in enumerate(values):
        if v is None or math.isnan(v):
            continue
        group = (positions[i], models[i], metrics[i])
        measured.setdefault(group, []).append(v)
        key = cols["key"][i]
        chosen = in_sample.get(key)
        if chosen is None:
            chosen = in_sample[key] = bar >= _ALL or key_hash(key) < bar
        if chosen:
            at = sample.setdefault(group, ([], [], []))
            at[0].append(cols["_row_pos"][i])
            at[1].append(key)
            at[2].append(v)
    sums = {
        group: [
            len(vals),
            exact_partials(vals),
            exact_partials(v * v for v in vals),
            sum(v not in (0.0, 1.0) for v in vals),
            min(vals),
            max(vals),
        ]
        for group, vals in measured.items()
    }
    rows = zip(
        models,
        positions,
        metrics,
        cols["skipped"],
        cols["error"],
        values,
        cols["label"],
        cols["skip_reason"],
        strict=True,
    )
    tallies = tally_rows(rows, primary)
    return {
        "hardest": _hardest_in_part(cols, primary),
        "sums": sums,
        "tallies": [[k, mk, t.to_json()] for (mk, k), t in tallies.items()],
        "sample": [[k, mk, m, *got] for (k, mk, m), got in sample.items()],
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
    _failing: set[int] = field(default_factory=set)

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
        for k, mk, tally in summary["tallies"]:
            t = Tally.from_json(tally)
            have = self._tallies.get((k, mk))
            if have is None:
                self._tallies[(k, mk)] = t
            else:
                have.add(t)
        for entry in summary["hardest"]:
            best = self._hardest.get(entry[0])
            if best is None or (-entry[1], entry[2]) < (-best[1], best[2]):
                self._hardest[entry[0]] = entry
            if entry[0] >= 0:
                self._failing.add(entry[0])
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
        out: list[tuple[str | None, str | None, str, int, int]] = []
        for k in sorted(kk for kk in self._hardest if kk >= 0):
            _, n, _, key, total = self._hardest[k]
            out.append((self.evaluators[k], self._primary_of(k), str(key), int(n), int(total)))
        if len(self._failing) > 1 and -1 in self._hardest:
            _, n, _, key, _ = self._hardest[-1]
            out.append((None, None, str(key), int(n), 0))
        return out

    def _primary_of(self, k: int) -> str:
        return next(t.metric for (kk, _), t in self._tallies.items() if kk == k)

    def is_binary(self, evaluator: str, metric: str) -> bool:
        """Whether every measured value of the metric, of every model, is 0 or 1."""
        k = self._position(evaluator)
        return all(m.not_binary == 0 for (kk, _, mm), m in self._moments.items() if kk == k and mm == metric)

    def moments(self, evaluator: str, model_key: str, metric: str) -> tuple[int, float, float]:
        """Rows measured, their exact mean and their variance (divided by the rows, as the bootstrap's)."""
        m = self._moments.get((self._position(evaluator), model_key, metric))
        if m is None or m.n == 0:
            return 0, math.nan, math.nan
        total = _fsum(m.sums)
        mean = total / m.n
        variance = _fsum([*m.squares, -(total * mean)]) / m.n
        return m.n, mean, max(0.0, variance)

    def span(self, evaluator: str, model_key: str, metric: str) -> tuple[float, float]:
        """The least and the greatest measured value (``(inf, -inf)`` for none)."""
        m = self._moments.get((self._position(evaluator), model_key, metric))
        return (math.inf, -math.inf) if m is None else (m.least, m.greatest)

    def successes(self, evaluator: str, model_key: str, metric: str) -> tuple[int, int]:
        """Of a metric whose values are 0 or 1: the rows that are 1, and the rows measured."""
        m = self._moments.get((self._position(evaluator), model_key, metric))
        if m is None:
            return 0, 0
        return round(_fsum(m.sums)), m.n

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
