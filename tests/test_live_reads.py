"""Reading the live result during a run writes no part file and reads each part file once (issue 28).

Before, every ``live.result()`` flushed the spool's buffer to a new Parquet part and read every
part back: a read after each of ``n`` chunks wrote ``n`` parts and made about ``n² / 2`` file reads.
"""

from __future__ import annotations

import pandas as pd
import pyarrow.parquet as pq
import pytest

import nbeval
from nbeval.engine import finish, plan_run, run_chunk
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.results.outcome import RowOutcome
from nbeval.results.storage import columnar
from nbeval.results.storage.columnar import ScoreSpool, outcome_columns, typed_scores
from tests.support.scoring import scored

EVALUATORS = ["exact_match", "rouge", "text_matching"]


def _records(cases: int) -> list[dict]:
    # every third case has no expected output: skipped by exact_match and rouge (text only in
    # skip_reason), so the text columns start empty in some reads and fill later
    return [
        {
            "key": f"k{i}",
            "model_key": m,
            "input": f"q{i}",
            "expected_output": None if i % 3 == 0 else f"the answer is {i % 7}",
            "actual_output": f"the answer is {(i + len(m)) % 7}",
            "output_condition": f'"{i % 7}"',
        }
        for m in ("m1", "m22")
        for i in range(cases)
    ]


@pytest.fixture
def files(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of Parquet files read and written (the spool's only file I/O)."""
    counts = {"reads": 0, "writes": 0}
    read, write = pq.read_table, pq.write_table

    def read_table(*args, **kwargs):
        counts["reads"] += 1
        return read(*args, **kwargs)

    def write_table(*args, **kwargs):
        counts["writes"] += 1
        return write(*args, **kwargs)

    monkeypatch.setattr(pq, "read_table", read_table)
    monkeypatch.setattr(pq, "write_table", write_table)
    return counts


def test_reading_the_live_result_after_every_row_reads_each_part_once(
    files: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(columnar, "SPOOL_PART_ROWS", 40)  # many part files
    records = _records(40)  # 80 rows
    plain = nbeval.evaluate(records, EVALUATORS, progress=False, chunk_rows=1)
    parts = files["writes"]  # the parts a run writes, read or not (a buffer of 40 rows is written as it fills)
    assert parts >= 10 and files["reads"] == parts  # the finished result reads each once
    files.update(reads=0, writes=0)

    seen: list[int] = []

    def on_progress(live, done, total) -> None:
        scores = live.result().scores
        seen.append(len(scores))

    res = nbeval.evaluate(records, EVALUATORS, progress=False, chunk_rows=1, on_progress=on_progress)
    assert len(seen) >= 80 and seen[-1] == len(plain.scores)  # read after every row (a small run reports each)
    assert files["writes"] == parts  # reading wrote nothing (before: a part per read, over 160 here)
    # each part is read at most once by the live reads and once by the finished result (before:
    # every read read every part, over 160² / 2 = 12,800 reads here)
    assert files["reads"] <= 2 * parts
    pd.testing.assert_frame_equal(res.scores, plain.scores)
    pd.testing.assert_frame_equal(res.aggregates, plain.aggregates)
    assert res.explanations == plain.explanations


def test_every_live_read_equals_the_long_table_built_at_once(
    files: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(columnar, "SPOOL_PART_ROWS", 25)
    state = plan_run(_records(30), EVALUATORS, keep_outcomes=True)
    reads = 0
    while not state.finished:
        run_chunk(state, 2)
        got = state.live.result().scores
        reads += 1
        want = typed_scores(outcome_columns(state.outcomes))  # every outcome, in the order filed
        pd.testing.assert_frame_equal(got, want)
        for column in columnar.KEY_COLUMNS:
            assert got[column].cat.categories.dtype == want[column].cat.categories.dtype
    assert reads == 30 and files["writes"] == len(state.live._spool._parts) >= 5  # no part written per read
    assert files["reads"] <= files["writes"]  # a part with rows no read had seen is read once
    finish(state)


def test_the_spool_reads_only_the_parts_written_since_the_last_read(
    files: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(columnar, "SPOOL_PART_ROWS", 7)
    ds = nbeval.LlmDataset.from_records(_records(12))
    evs = resolve_evaluators(EVALUATORS)
    outcomes = [
        RowOutcome(ev, row, score=scored(ev, row))
        if row.expected_output
        else RowOutcome(ev, row, skip_reason="no expected output")
        for row in ds.rows
        for ev in evs
    ]
    spool = ScoreSpool(evs, {id(r): i for i, r in enumerate(ds.rows)})
    assert len(spool.scores()) == 0
    done = 0
    for size in (1, 2, 9, 1, 1, 14, 3, 0, 20, 5, 17):  # batches over and under a part's 7 rows
        spool.add(outcomes[done : done + size])
        done += size
        parts_before = len(spool._parts)
        got = spool.scores()
        assert len(spool._parts) == parts_before  # a read writes nothing
        reads = files["reads"]
        pd.testing.assert_frame_equal(got, typed_scores(outcome_columns(outcomes[:done])))
        assert spool.scores() is not got  # each read hands out its own table...
        got.loc[0, "value"] = -1.0  # ...which can be changed without changing the next read's
        assert (spool.scores()["value"] != -1.0).all()
        assert files["reads"] == reads  # reading again reads nothing
    # a part written between two reads is read once (if the first did not see all its rows)
    assert files["writes"] == len(spool._parts) >= 5 and 0 < files["reads"] <= len(spool._parts)
    reads = files["reads"]
    spool.add(outcomes[done:])
    pd.testing.assert_frame_equal(spool.scores(), typed_scores(outcome_columns(outcomes)))
    pd.testing.assert_frame_equal(
        spool.scores(ordered=True).reset_index(drop=True),
        typed_scores(outcome_columns(sorted(outcomes, key=lambda o: (evs.index(o.evaluator), ds.rows.index(o.row))))),
    )
    assert files["reads"] - reads <= 2 * len(spool._parts)
    spool.close()
