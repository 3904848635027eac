"""A run keeps no per-row objects: outcomes are spooled as they finish and the result is built from the spool."""

from __future__ import annotations

import gc

import pandas as pd
import pytest

import nbeval
from nbeval.engine import finish, plan_run, run_chunk
from nbeval.results import EvaluationResult
from nbeval.results.outcome import RowOutcome
from nbeval.results.storage import columnar

EVALUATORS = ["exact_match", "text_matching", "rouge"]


def _records(cases: int) -> list[dict]:
    return [
        {
            "key": f"k{i}",
            "model_key": m,
            "input": f"q{i}",
            "expected_output": f"the answer is {i % 9}",
            "actual_output": f"the answer is {(i + len(m)) % 9}",
            "output_condition": f'"{i % 9}"',
        }
        for m in ("m1", "m22")
        for i in range(cases)
    ]


def test_evaluate_holds_at_most_one_chunk_of_outcomes() -> None:
    alive: list[int] = []
    counted = [0]

    def count(live: object, done: int, total: int) -> None:
        if done - counted[0] < 60 and done < total:  # progress comes per row: look about once a chunk
            return
        counted[0] = done
        gc.collect()
        alive.append(sum(isinstance(o, RowOutcome) for o in gc.get_objects()))

    res = nbeval.evaluate(_records(150), EVALUATORS, progress=False, chunk_rows=20, on_progress=count)
    assert len(alive) >= 10 and len(res.scores) == 300 * 10  # 1 + 5 + 4 metrics per row
    assert max(alive) <= 20 * len(EVALUATORS)  # the last chunk's, at most; not the 900 of the run


def test_the_result_from_the_spool_equals_one_built_from_every_outcome(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columnar, "SPOOL_PART_ROWS", 50)  # many part files
    state = plan_run(_records(60), EVALUATORS, keep_outcomes=True)
    while not state.finished:
        run_chunk(state, 16)
    assert len(state.live._spool._parts) > 5
    got = finish(state)
    pos = {id(r): i for i, r in enumerate(state.dataset.rows)}
    order = {id(ev): k for k, ev in enumerate(state.evaluators)}
    every = sorted(state.outcomes, key=lambda o: (order[id(o.evaluator)], pos[id(o.row)]))
    want = EvaluationResult.from_outcomes(every, state.evaluators, state.dataset)
    pd.testing.assert_frame_equal(got.scores, want.scores)
    pd.testing.assert_frame_equal(got.aggregates, want.aggregates)
    assert got.explanations == want.explanations


def test_rows_let_go_of_what_they_cached_once_scored() -> None:
    ds = nbeval.LlmDataset.from_records(_records(5))
    res = nbeval.evaluate(ds, ["text_matching"], progress=False)
    assert all("condition" not in vars(r) for r in ds.rows)  # the parsed condition was dropped...
    assert ds.rows[0].condition is not None  # ...and comes back when asked
    passed = res.scores[res.scores["metric"] == "pass"]["value"].tolist()
    assert passed == [
        1.0 if str(i % 9) in f"the answer is {(i + len(m)) % 9}" else 0.0 for m in ("m1", "m22") for i in range(5)
    ]
