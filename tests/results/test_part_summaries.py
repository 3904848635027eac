"""A partitioned run's statistics add up from its parts: however the rows are split, the tallies,
sums and sample are the whole table's.

The expected values are computed here from the whole table directly (pandas, numpy and
math.fsum), never by the summaries under test; the splits are drawn by hypothesis."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nbeval.results.statistics.part_summaries import PartSummaries, key_hash, part_statistics, sample_bar
from nbeval.results.statistics.tallies import scores_tallies

EVALUATORS = ["judge", "length"]
PRIMARY = {0: "verdict", 1: "chars"}

_value = st.one_of(
    st.none(),
    st.sampled_from([0.0, 1.0]),
    st.floats(min_value=-1e6, max_value=1e6, allow_nan=False),
    st.floats(min_value=-1e300, max_value=1e300, allow_nan=False),
    st.floats(min_value=1e8, max_value=1e8 + 4),  # large and close: a rounded square would cancel
)
_row = st.tuples(
    st.sampled_from(["a", "b", "ключ", "k\x00", "k 1"]),
    st.sampled_from(["m1", "m2"]),
    st.integers(0, 1),  # evaluator position
    st.booleans(),  # skipped
    st.sampled_from([None, "HTTP 500\nbody", "HTTP 500\nother body", "timeout"]),
    _value,
    st.sampled_from([None, "pass", "parse_failure", "timed_out"]),
    st.sampled_from([None, "missing context", "missing actual_output"]),
)


def _table(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """A long table as a part writes it, the primary metric of each evaluator only."""
    out = []
    for pos, (key, model, k, skipped, error, value, label, reason) in enumerate(rows):
        out.append(
            {
                "key": key,
                "model_key": model,
                "evaluator": EVALUATORS[k],
                "metric": PRIMARY[k],
                "value": None if skipped else value,
                "passed": None if skipped or value is None else value >= 0.5,
                "label": label,
                "error": error,
                "skipped": skipped,
                "skip_reason": reason if skipped else None,
                "_evaluator_pos": k,
                "_row_pos": pos,
            }
        )
    return pd.DataFrame(out)


def _arrow(df: pd.DataFrame) -> pa.Table:
    return pa.Table.from_pandas(df, preserve_index=False)


def _summaries(df: pd.DataFrame, cuts: list[int], bar: int) -> PartSummaries:
    """The summaries of ``df`` in ``len(cuts) + 1`` parts, added up in a shuffled order.

    A test case never spans two parts (a run buckets rows by key): each key goes to a part drawn
    from ``cuts``; a part keeps its rows in input order.
    """
    n_parts = len(cuts) + 1
    keys = sorted(set(df["key"]))
    part_of = {key: cuts[i % len(cuts)] % n_parts if cuts else 0 for i, key in enumerate(keys)}
    parts = [df[df["key"].map(part_of) == p] for p in range(n_parts)]
    random.Random(len(cuts)).shuffle(parts)
    folded = PartSummaries(EVALUATORS, bar=bar, model_order={"m1": 0, "m2": 1})
    for part in parts:
        stats = part_statistics(_arrow(part.reset_index(drop=True)), PRIMARY, bar)
        sums: dict[tuple[int, str], dict[str, Any]] = {}
        for (k, mk, m), got in stats["sums"].items():
            sums.setdefault((k, mk), {})[m] = got
        folded.add(
            {
                "groups": [[k, mk, 0, s] for (k, mk), s in sums.items()],
                "tallies": stats["tallies"],
                "sample": stats["sample"],
                "hardest": stats["hardest"],
            }
        )
    return folded


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_row, min_size=1, max_size=60), st.lists(st.integers(0, 60), max_size=6))
def test_tallies_moments_and_the_whole_sample_do_not_depend_on_the_split(rows: list[Any], cuts: list[int]) -> None:
    df = _table(rows)
    cuts = [min(c, len(df)) for c in cuts]
    folded = _summaries(df, cuts, sample_bar(10, sample_keys=10))  # 5 keys: the sample holds them all
    whole = scores_tallies(df.drop(columns=["_evaluator_pos", "_row_pos"]), {"judge": "verdict", "length": "chars"})
    got = folded.tallies()
    assert {k: v.to_json() for k, v in got.items()} == {k: v.to_json() for k, v in whole.items()}
    for k, ev in enumerate(EVALUATORS):
        measured = df[(df["_evaluator_pos"] == k) & df["value"].notna()]
        for model in ("m1", "m2"):
            v = measured[measured["model_key"] == model]["value"].astype(float).to_numpy()
            n, mean, variance = folded.moments(ev, model, PRIMARY[k])
            assert n == len(v)
            if not len(v):
                continue
            from fractions import Fraction

            assert mean == float(sum(map(Fraction, v.tolist()), Fraction(0)) / len(v))  # exact, rounded once
            if np.all(np.abs(v) < 1e150):  # squares within a float: the variance is exact
                total = sum(map(Fraction, v.tolist()), Fraction(0))
                squares = sum((Fraction(x) * Fraction(x) for x in v.tolist()), Fraction(0))
                assert variance == float((squares - total * total / len(v)) / len(v))
            assert folded.span(ev, model, PRIMARY[k]) == (v.min(), v.max())
        # the hardest case: most failing models; equal counts, the first to fail
        fails = measured[measured["passed"] == False]  # noqa: E712 (a column of booleans)
        if len(fails):
            by_key: dict[str, set[str]] = {}
            for key, model in zip(fails["key"], fails["model_key"], strict=True):
                by_key.setdefault(key, set()).add(model)
            top = max(len(m) for m in by_key.values())
            key = next(k for k in fails["key"] if len(by_key[k]) == top)
            total = measured[measured["key"] == key]["model_key"].nunique()
            assert (ev, PRIMARY[k], key, top, total) in folded.hardest()
        # the whole sample is every measured row, in input order
        sample = folded.values(ev, PRIMARY[k])
        assert sample.attrs["sample"] is None
        assert sample["value"].tolist() == measured["value"].astype(float).tolist()
        assert sample["key"].tolist() == measured["key"].tolist()


def test_a_partial_sample_takes_every_models_rows_of_the_keys_below_the_bar_and_says_how_many() -> None:
    keys = [f"case-{i}" for i in range(4000)]
    bar = sample_bar(len(keys), sample_keys=400)
    rows = [
        (key, model, 1, False, None, float(i % 7), None, None) for i, key in enumerate(keys) for model in ("m1", "m2")
    ]
    df = _table(rows)
    folded = _summaries(df, [1000, 5000], bar)
    folded.keys = len(keys)
    sample = folded.values("length", "chars")
    chosen = set(sample["key"])
    # about the size aimed at (a binomial draw: 400 +- 4 standard deviations)
    assert 320 <= len(chosen) <= 480 and sample.attrs["sample"] == {"keys": len(chosen), "of": 4000}
    # the same keys for every model, so comparisons are paired
    by_model = sample.groupby("model_key")["key"].apply(set)
    assert by_model["m1"] == by_model["m2"] == chosen
    assert all(key_hash(k) < bar for k in chosen)
    # the sample never changes the exact moments, which cover every row
    n, mean, _ = folded.moments("length", "m1", "chars")
    assert n == 4000 and mean == math.fsum(float(i % 7) for i in range(4000)) / 4000


def test_odd_keys_hash_and_a_run_within_the_sample_takes_every_key() -> None:
    for key in ["", "\ud800", "\x00", "é" * 10_000]:
        assert 0 <= key_hash(key) < 1 << 64
    assert key_hash("a") != key_hash("b")
    salt = "5a" * 16  # a run's own salt: another sample, which input keys cannot choose
    assert key_hash("a", salt) == key_hash("a", salt) != key_hash("a")
    assert sample_bar(20_000) == 1 << 64 and sample_bar(20_001) < 1 << 64


_float = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(min_value=-1.0, max_value=1.0),
    st.sampled_from([0.1, 1e308, -1e308, 5e-324, 0.0, -0.0]),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_float, max_size=40), st.integers(0, 40))
@example([1e308, 1e308, -1e308], 2)  # a part beyond a float's range, brought back by the next
def test_exact_partials_hold_the_exact_sum_and_add_up_across_parts(values: list[float], cut: int) -> None:
    from fractions import Fraction

    from nbeval.results.storage.partitions import exact_partials, exact_total

    exact = sum(map(Fraction, values), Fraction(0))  # the exact sum, in rationals
    try:
        want = float(exact)
    except OverflowError:
        want = None
    partials = exact_partials(values)
    assert all(math.isfinite(p) for p in partials)
    assert sum(map(Fraction, partials), Fraction(0)) == exact
    split = exact_partials(values[:cut]) + exact_partials(values[cut:])
    # correctly rounded, whatever the split; a total beyond a float is infinite
    assert exact_total(split) == (want if want is not None else math.inf if exact > 0 else -math.inf)


def test_errors_that_all_differ_keep_the_commonest_lines_and_count_the_rest() -> None:
    from nbeval.results.reporting.problems import describe_error_lines
    from nbeval.results.statistics.tallies import MAX_ERROR_LINES, Tally

    folded = Tally("verdict")
    for part in range(3):  # each part's rows failed with errors of their own, and one common error
        t = Tally("verdict", rows=MAX_ERROR_LINES + 5, errored={"HTTP 500": 5})
        t.errored.update({f"bad row {part}-{i}": 1 for i in range(MAX_ERROR_LINES)})
        t.trim()
        folded.add(t)
        folded.trim()
    assert folded.errored_rows == 3 * (MAX_ERROR_LINES + 5)  # every errored row still counted
    assert len(folded.errored) <= 2 * MAX_ERROR_LINES and folded.errored["HTTP 500"] == 15
    text = describe_error_lines(folded.errored, folded.other_errors)
    assert text.startswith("HTTP 500 (15); bad row ") and text.endswith(f"; other errors ({3 * MAX_ERROR_LINES - 2})")


def test_sums_of_many_parts_are_compacted_and_stay_exact() -> None:
    from fractions import Fraction

    rng = np.random.default_rng(7)
    values = (1e8 + rng.normal(size=3000)).tolist()
    folded = PartSummaries(EVALUATORS)
    for lo in range(0, len(values), 10):  # 300 parts: past the partial sums a group keeps before compacting
        part = _table([("k", "m1", 1, False, None, v, None, None) for v in values[lo : lo + 10]])
        stats = part_statistics(_arrow(part), PRIMARY, 1 << 64)
        sums = {(k, mk): {m: got} for (k, mk, m), got in stats["sums"].items()}
        folded.add(
            {"groups": [[k, mk, 0, s] for (k, mk), s in sums.items()], "tallies": [], "sample": [], "hardest": []}
        )
    m = folded._moments[(1, "m1", "chars")]
    assert len(m.sums) <= 64 + 8 and len(m.squares) <= 64 + 8  # compacted, not one list entry per part
    total = sum(map(Fraction, values), Fraction(0))
    squares = sum((Fraction(v) * Fraction(v) for v in values), Fraction(0))
    n, mean, variance = folded.moments("length", "m1", "chars")
    assert (n, mean) == (3000, float(total / 3000))
    assert variance == float((squares - total * total / 3000) / 3000)
