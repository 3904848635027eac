"""The engine's steps (plan_run -> run_chunk -> finish) and the live result fed to ``on_progress``."""

from __future__ import annotations

import math
import threading

import pandas as pd
import pytest

import nbeval
from nbeval.engine import finish, plan_run, run_chunk
from nbeval.evaluators.base import Aggregate, Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register, unregister
from nbeval.results import EvaluationResult
from nbeval.results.live import LiveResult


class CountingValues(dict):
    """A Score's values that count how often they are read."""

    reads = 0

    def get(self, key, default=None):
        CountingValues.reads += 1
        return super().get(key, default)


def _spec(id: str, inputs: tuple[str, ...]) -> EvaluatorSpec:
    return EvaluatorSpec(
        id=id,
        family="test",
        kind="score",
        inputs=inputs,
        metrics=(MetricSpec("score", primary=True, threshold=0.5), MetricSpec("other", "lower")),
    )


class Mean(Evaluator):
    """Scores by the answer: "nan" gives NaN, "none" no value, "boom" an error, digits a number."""

    def score(self, row):
        a = row.actual_output
        if a == "boom":
            raise ValueError("blew up")
        value = math.nan if a == "nan" else None if a == "none" else int(a) / 10
        return Score(CountingValues(score=value, other=1.0), rationale=a)


class Best(Mean):
    """Its own aggregate: the best row, with details (they land in the result's explanations)."""

    def aggregate(self, rows, scores):
        vals = [s.values["score"] for s in scores if s.values.get("score") is not None]
        vals = [v for v in vals if not math.isnan(v)]
        best = max(vals) if vals else None
        return {"score": Aggregate(best, len(vals), details={"rows": len(rows)}), "other": Aggregate(1.0, len(scores))}


@pytest.fixture(autouse=True, scope="module")
def _evaluators():
    register(spec=_spec("t_live_mean", ("expected_output", "actual_output")))(Mean)
    register(spec=_spec("t_live_best", ("actual_output",)))(Best)
    yield
    unregister("t_live_best")
    unregister("t_live_mean")


ANSWERS = ["3", "7", "nan", "boom", "none", "9", "1", "5", "2", "8", "6", "4", "0"]


def _records(n: int = 13) -> list[dict]:
    recs = []
    for m in ("m1", "m2", "m3"):
        for i in range(n):
            a = ANSWERS[(i + len(m) * (m == "m2")) % len(ANSWERS)]
            recs.append(
                {
                    "key": f"k{i}",
                    "input": f"q{i}",
                    "expected_output": None if i == 5 else "x",
                    "actual_output": a,
                    "model_key": m,
                }
            )
    return recs


EVS = ["t_live_mean", "t_live_best"]


def _sorted(scores: pd.DataFrame) -> pd.DataFrame:
    return scores.sort_values(["evaluator", "model_key", "key", "metric"], kind="stable").reset_index(drop=True)


def test_steps_driven_by_hand_give_what_evaluate_gives() -> None:
    expected = nbeval.evaluate(_records(), EVS, progress=False, chunk_rows=4)
    state = plan_run(_records(), EVS)
    assert (state.done, state.total) == (3, 78)  # t_live_mean needs expected_output, which k5 lacks: skipped at once
    sizes = []
    while not state.finished:
        sizes.append(len(run_chunk(state, 4)))
    assert sum(sizes) == 75 and len(sizes) == 10 and state.done == state.total
    got = finish(state)
    pd.testing.assert_frame_equal(got.scores, expected.scores)
    pd.testing.assert_frame_equal(got.aggregates, expected.aggregates)
    assert (
        got.explanations
        == expected.explanations
        == {"t_live_best": {m: {"score": {"rows": 13}} for m in ("m1", "m2", "m3")}}
    )


def test_live_result_matches_a_rebuild_from_scratch_after_every_chunk() -> None:
    """What the live view shows equals rebuilding the partial result from every outcome so far."""
    state = plan_run(_records(), EVS)
    chunks = 0
    while not state.finished:
        run_chunk(state, 3)
        chunks += 1
        live = state.live
        assert (live.done, live.total) == (state.done, state.total)
        reference = EvaluationResult.from_outcomes(list(state.outcomes), state.evaluators, state.dataset)
        pd.testing.assert_frame_equal(live.aggregates, reference.aggregates)
        got = live.result()
        pd.testing.assert_frame_equal(got.aggregates, reference.aggregates)
        pd.testing.assert_frame_equal(got.metrics, reference.metrics)
        pd.testing.assert_frame_equal(_sorted(got.scores), _sorted(reference.scores))
        assert got.explanations == reference.explanations
        assert live.result() is got  # cached until the next chunk
        pd.testing.assert_frame_equal(live.leaderboard("t_live_mean"), reference.leaderboard("t_live_mean"))
        pd.testing.assert_frame_equal(live.leaderboard(), reference.leaderboard())
        agg = reference.aggregates.set_index(["evaluator", "model_key", "metric"])["value"]
        for mk in ("m1", "m2", "m3"):
            want = agg.get(("t_live_best", mk, "score"), math.nan)
            value = live.value("t_live_best", mk)
            assert (value is None and math.isnan(want)) or value == want
    assert chunks == 13 and state.live.done == 78
    final = finish(state)
    pd.testing.assert_frame_equal(state.live.aggregates, final.aggregates)  # the final result's numbers
    pd.testing.assert_frame_equal(_sorted(state.live.scores), _sorted(final.scores))


def test_on_progress_gets_one_live_result_that_grows() -> None:
    seen = []
    final = nbeval.evaluate(
        _records(),
        EVS,
        progress=False,
        chunk_rows=10,
        on_progress=lambda live, done, total: seen.append((live, done, total, len(live.scores))),
    )
    # first the rows skipped at once (k5's), then every score as it finishes (not every chunk of 10 rows)
    assert [d for _, d, _, _ in seen] == list(range(3, 79)) and {t for *_, t, _ in seen} == {78}
    assert all(isinstance(live, LiveResult) and live is seen[0][0] for live, *_ in seen)
    assert [n for *_, n in seen] == [2 * d for _, d, _, _ in seen]  # 2 metrics per score
    pd.testing.assert_frame_equal(seen[-1][0].aggregates, final.aggregates)


def test_running_means_equal_the_final_result_exactly() -> None:
    seen = {}
    final = nbeval.evaluate(
        _records(),
        EVS,
        progress=False,
        chunk_rows=2,
        on_progress=lambda live, *_: seen.update(
            {mk: live.value("t_live_mean", mk, "score") for mk in ("m1", "m2", "m3")}
        ),
    )
    agg = final.aggregates.set_index(["evaluator", "model_key", "metric"])["value"]
    assert seen == {mk: agg[("t_live_mean", mk, "score")] for mk in ("m1", "m2", "m3")}  # == , not approx
    assert seen["m1"] == pytest.approx((3 + 7 + 1 + 5 + 2 + 8 + 6 + 4 + 0) / 10 / 9)  # k5 skipped


def test_the_live_view_does_not_rebuild_from_the_start() -> None:
    """Reading the running aggregates after every chunk reads each score once; building the partial
    result after every chunk converts each outcome once (it used to be rebuilt from all of them)."""
    recs = _records(52)  # 156 rows, 2 evaluators
    CountingValues.reads = 0
    nbeval.evaluate(recs, EVS, progress=False, chunk_rows=1)
    alone = CountingValues.reads

    def read_values(live: LiveResult, done: int, total: int) -> None:
        for mk in ("m1", "m2", "m3"):
            live.value("t_live_mean", mk)

    CountingValues.reads = 0
    nbeval.evaluate(recs, EVS, progress=False, chunk_rows=1, on_progress=read_values)
    scored = 3 * 51  # t_live_mean's scored rows (k5 is skipped)
    # the running sums are the final aggregates too: reading them as the run goes costs no extra read
    assert alone <= CountingValues.reads <= alone + 2 * scored  # 2 metrics, each score read once

    from nbeval.results.storage import columnar

    converted = []
    original = columnar.outcome_columns

    def counting(outcomes, *args, **kwargs):
        outcomes = list(outcomes)
        converted.append(len(outcomes))
        return original(outcomes, *args, **kwargs)

    columnar.outcome_columns = counting
    try:
        nbeval.evaluate(recs, EVS, progress=False, chunk_rows=1, on_progress=lambda live, *_: live.result())
    finally:
        columnar.outcome_columns = original
    total = 2 * len(recs)
    assert sum(converted) == total  # each outcome once, as it finished: the live view and the result share it


def test_cancel_between_chunks_with_the_steps() -> None:
    stop = threading.Event()
    state = plan_run(_records(), EVS, cancel=stop)
    run_chunk(state, 4)
    stop.set()
    assert state.finished
    res = finish(state)
    assert res.meta["cancelled"] is True
    s = res.scores[res.scores.metric == "score"]
    assert len(s) == 78 and set(s.loc[s.skip_reason.notna() & (s.key != "k5"), "skip_reason"]) == {"cancelled"}
    assert state.live.done == 78  # the live view counts the cancelled rows too


def test_live_value_errors_and_repr() -> None:
    state = plan_run(_records(2), EVS)
    live = state.live
    assert repr(live) == "LiveResult(0/12 scores, 2 evaluators)" and live.model_keys == []
    assert live.value("t_live_mean", "m1") is None
    assert live.aggregates.empty and list(live.metrics["evaluator"]) == ["t_live_mean"] * 2 + ["t_live_best"] * 2
    assert len(live.result().scores) == 0
    with pytest.raises(KeyError, match="no evaluator 'nope'"):
        live.value("nope", "m1")
    with pytest.raises(Exception, match="nope"):
        live.value("t_live_mean", "m1", "nope")
    run_chunk(state, 1)
    assert live.model_keys == ["m1"] and live.value("t_live_mean", "m1") == 0.3
