"""Case-level evaluators: one test case scored across every model's rows at once, its requests
batched with everything else's, its outcome filed on each model's row."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.data.model import Row
from nbeval.errors import EvaluatorError
from nbeval.evaluators.base import Chat, Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.case import CaseEvaluator, CaseScoreResult, is_case_level
from nbeval.evaluators.registry import register
from tests.support.dask_cluster import in_process_client
from tests.support.fake_openai import FakeOpenAIServer, Recorded, together

#: What each scoring of ``t_shortest`` saw: (case key, model keys), in the order scored.
SEEN: list[tuple[str, tuple[str, ...]]] = []


@register
class Shortest(CaseEvaluator):
    """1 for the shortest answer of the case, 0 for the others."""

    spec = EvaluatorSpec(
        id="t_shortest",
        family="test",
        kind="score",
        inputs=("actual_output",),
        params={"boom_on": None, "drop": None},
        metrics=(MetricSpec("shortest", primary=True),),
    )

    def score_case(self, rows: list[Row]) -> CaseScoreResult:
        SEEN.append((rows[0].key, tuple(r.model_key for r in rows)))
        if rows[0].key == self.params["boom_on"]:
            raise ValueError("case scoring blew up")
        best = min(len(r.actual_output or "") for r in rows)
        return {
            r.model_key: Score({"shortest": float(len(r.actual_output or "") == best)})
            for r in rows
            if r.model_key != self.params["drop"]
        }


@register
class Preferred(CaseEvaluator):
    """Asks the judge once per case which model's answer is best: 1 for it, 0 for the others."""

    spec = EvaluatorSpec(
        id="t_preferred",
        family="test",
        kind="score",
        inputs=("actual_output",),
        resources=("judge",),
        metrics=(MetricSpec("preferred", primary=True),),
    )

    def score_case(self, rows: list[Row]) -> CaseScoreResult:
        listing = "\n".join(f"{r.model_key}: {r.actual_output}" for r in rows)
        reply = yield Chat(
            ({"role": "user", "content": f"CASE {rows[0].key}\n{listing}"},), model=self.params.get("judge")
        )
        winner = reply.text.strip()
        return {r.model_key: Score({"preferred": float(r.model_key == winner)}, rationale=reply.text) for r in rows}


@register
class Polite(Evaluator):
    """A row-level judge evaluator, to run beside the case-level one."""

    spec = EvaluatorSpec(
        id="t_polite_row",
        family="test",
        kind="score",
        inputs=("actual_output",),
        resources=("judge",),
        metrics=(MetricSpec("polite", primary=True),),
    )

    def score(self, row: Row) -> Any:
        reply = yield Chat(({"role": "user", "content": f"ROW {row.actual_output}"},), model=self.params.get("judge"))
        return Score({"polite": float(reply.text.strip() == "yes")})


ANSWERS: dict[str, dict[str, str | None]] = {  # case -> model -> answer; c3's m3 has none (skipped)
    "c1": {"m1": "aaaa", "m2": "bb", "m3": "ccc"},
    "c2": {"m1": "x", "m2": "yyyy", "m3": "zz"},
    "c3": {"m1": "ppp", "m2": "qqqqq", "m3": None},
}
#: The golden values of t_shortest, worked out by hand from ANSWERS.
GOLDEN = {
    ("c1", "m1"): 0.0,
    ("c1", "m2"): 1.0,
    ("c1", "m3"): 0.0,
    ("c2", "m1"): 1.0,
    ("c2", "m2"): 0.0,
    ("c2", "m3"): 0.0,
    ("c3", "m1"): 1.0,
    ("c3", "m2"): 0.0,
}


def _records(order: str = "model") -> list[dict[str, Any]]:
    """Model by model (the rows of one case are never adjacent), or shuffled."""
    out = [
        {"key": case, "model_key": model, "input": f"question {case}", "actual_output": answer}
        for model in ("m1", "m2", "m3")
        for case, answers in ANSWERS.items()
        for m, answer in answers.items()
        if m == model
    ]
    if order == "shuffled":
        random.Random(7).shuffle(out)
    return out


def _values(result: nbeval.EvaluationResult, metric: str) -> dict[tuple[str, str], float]:
    s = result.scores[(result.scores.metric == metric) & result.scores.value.notna()]
    return {(k, m): float(v) for k, m, v in zip(s.key, s.model_key, s.value, strict=True)}


def _column(result: nbeval.EvaluationResult, column: str, evaluator: str = "t_shortest") -> dict[tuple[str, str], Any]:
    """Per row (key, model): the first non-empty ``column`` of ``evaluator``'s scores."""
    s = result.scores[(result.scores.evaluator == evaluator) & result.scores[column].notna()]
    return {(k, m): v for k, m, v in zip(s.key, s.model_key, s[column], strict=True)}


def _errors(result: nbeval.EvaluationResult, evaluator: str = "t_shortest") -> dict[tuple[str, str], str]:
    return _column(result, "error", evaluator)


@pytest.fixture(autouse=True)
def _fresh_seen() -> Iterator[None]:
    SEEN.clear()
    yield


def test_the_case_evaluator_is_declared_like_any_other() -> None:
    ev = nbeval.evaluator("t_shortest")
    assert is_case_level(ev) and not is_case_level(nbeval.evaluator("t_polite_row"))
    assert nbeval.evaluator("t_shortest").spec.id == "t_shortest"
    with pytest.raises(EvaluatorError, match="case-level"):
        ev.score(Row(input="q", actual_output="a"))


@pytest.mark.parametrize(("order", "chunk_rows"), [("model", 256), ("model", 1), ("shuffled", 1), ("shuffled", 2)])
def test_each_case_is_scored_once_with_every_models_row(order: str, chunk_rows: int) -> None:
    res = nbeval.evaluate(_records(order), ["t_shortest"], progress=False, chunk_rows=chunk_rows)
    assert _values(res, "shortest") == GOLDEN
    # once per case, with every scorable row of it (c3's m3 has no answer: skipped, not shown)
    assert sorted((k, tuple(sorted(ms))) for k, ms in SEEN) == [
        ("c1", ("m1", "m2", "m3")),
        ("c2", ("m1", "m2", "m3")),
        ("c3", ("m1", "m2")),
    ]
    assert _column(res, "skip_reason") == {("c3", "m3"): "missing actual_output"}
    assert _errors(res) == {}
    # per-model aggregates are ordinary ones: the mean over each model's scored rows
    lb = res.leaderboard("t_shortest")
    assert lb.shortest.to_dict() == pytest.approx({"m1": 2 / 3, "m2": 1 / 3, "m3": 0.0})
    assert lb.shortest_n.to_dict() == {"m1": 3, "m2": 3, "m3": 2}


def test_a_case_is_scored_in_the_chunk_of_its_last_row_with_its_rows_in_dataset_order() -> None:
    # rows model by model: c1 at rows 0, 3, 6; c2 at 1, 4, 7; c3 at 2, 5 (and 8, skipped): c3 is
    # complete first, at row 5
    nbeval.evaluate(_records("model"), ["t_shortest"], progress=False, chunk_rows=1)
    assert SEEN == [("c3", ("m1", "m2")), ("c1", ("m1", "m2", "m3")), ("c2", ("m1", "m2", "m3"))]


def test_an_exception_errors_every_row_of_the_case_and_a_missing_model_errors_its_row() -> None:
    res = nbeval.evaluate(_records(), [("t_shortest", {"boom_on": "c2"})], progress=False)
    errors = _errors(res)
    assert {k for k in errors} == {("c2", "m1"), ("c2", "m2"), ("c2", "m3")}
    assert all("ValueError: case scoring blew up" in e for e in errors.values())
    assert _values(res, "shortest") == {k: v for k, v in GOLDEN.items() if k[0] != "c2"}

    res = nbeval.evaluate(_records(), [("t_shortest", {"drop": "m2"})], progress=False, chunk_rows=2)
    errors = _errors(res)
    assert set(errors) == {("c1", "m2"), ("c2", "m2"), ("c3", "m2")}
    assert all("returned no score for model 'm2'" in e for e in errors.values())
    assert _values(res, "shortest") == {k: v for k, v in GOLDEN.items() if k[1] != "m2"}


def _reply(rec: Recorded) -> str:
    text = rec.messages[0]["content"]
    return "m3" if text.startswith("CASE") else "yes"


def test_a_judge_call_per_case_batched_with_the_row_evaluators_calls(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        # 3 case calls + 8 row calls: all 11 must be in flight at once, so they were asked together
        server.reply = together(server, 11, then=_reply, hold=10.0)
        judge = {"model": "judge-model", "base_url": server.url, "api_key": "sk-test-123456"}
        res = nbeval.evaluate(
            _records(),
            ["t_preferred", "t_polite_row"],
            judge=judge,
            progress=False,
            concurrency=16,
            cache=tmp_path / "cache.sqlite",
        )
        prompts = [r.messages[0]["content"] for r in server.requests]
        assert sum(p.startswith("CASE") for p in prompts) == 3  # one per case
        assert sum(p.startswith("ROW") for p in prompts) == 8
        assert server.max_in_flight == 11
    assert _values(res, "preferred") == {
        ("c1", "m3"): 1.0,
        ("c2", "m3"): 1.0,
        ("c1", "m1"): 0.0,
        ("c1", "m2"): 0.0,
        ("c2", "m1"): 0.0,
        ("c2", "m2"): 0.0,
        ("c3", "m1"): 0.0,
        ("c3", "m2"): 0.0,
    }
    assert set(_values(res, "polite").values()) == {1.0}

    plan = nbeval.evaluate(
        _records(), ["t_preferred", "t_polite_row"], judge=judge, dry_run=True, cache=tmp_path / "cache.sqlite"
    )
    assert isinstance(plan, nbeval.Plan)
    assert plan.rows == {"t_preferred": 8, "t_polite_row": 8} and plan.skipped == {"t_preferred": 1, "t_polite_row": 1}
    assert plan.judge_calls == 11 and plan.cached_calls == 11  # 3 case calls + 8 row calls, cached by the run
    assert plan.calls_per_row["t_preferred"] == pytest.approx(3 / 8)


def test_cancel_before_the_run_reports_every_row_cancelled() -> None:
    stop = threading.Event()
    stop.set()
    res = nbeval.evaluate(_records(), ["t_shortest"], progress=False, cancel=stop)
    assert SEEN == [] and res.meta["cancelled"] is True
    assert _values(res, "shortest") == {}


def test_progress_counts_every_row_of_a_case() -> None:
    seen: list[tuple[int, int]] = []
    nbeval.evaluate(
        _records(),
        ["t_shortest"],
        progress=False,
        chunk_rows=1,
        on_progress=lambda live, done, total: seen.append((done, total)),
    )
    assert seen[0] == (1, 9) and seen[-1] == (9, 9)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_a_saved_result_loads_back_the_same(tmp_path: Path) -> None:
    res = nbeval.evaluate(_records(), ["t_shortest"], progress=False)
    back = nbeval.load_result(res.save(tmp_path / "run"))
    pd.testing.assert_frame_equal(back.scores, res.scores)
    pd.testing.assert_frame_equal(back.aggregates, res.aggregates)
    assert _values(back, "shortest") == GOLDEN


def test_a_bad_return_value_errors_every_row() -> None:
    @register
    class Bad(CaseEvaluator):
        spec = EvaluatorSpec(
            id="t_bad_case",
            family="test",
            kind="score",
            inputs=("actual_output",),
            metrics=(MetricSpec("x", primary=True),),
        )

        def score_case(self, rows: list[Row]) -> Mapping[str, Score]:
            return Score({"x": 1.0})  # type: ignore[return-value]

    res = nbeval.evaluate(_records(), ["t_bad_case"], progress=False)
    errors = _errors(res, "t_bad_case")
    assert len(errors) == 8 and all("returned Score, not a mapping" in e for e in errors.values())


def test_a_dask_run_equals_a_local_run() -> None:
    pytest.importorskip("cloudpickle")
    records = _records("shuffled")
    local = nbeval.evaluate(records, ["t_shortest", "exact_match"], progress=False, chunk_rows=1)
    with in_process_client(n_workers=2) as client:
        SEEN.clear()
        remote = nbeval.evaluate(records, ["t_shortest", "exact_match"], progress=False, chunk_rows=1, scheduler=client)
    assert len(SEEN) == 3  # each case once, on the worker holding its last row
    pd.testing.assert_frame_equal(remote.scores, local.scores)
    pd.testing.assert_frame_equal(remote.aggregates, local.aggregates)
    assert _values(remote, "shortest") == GOLDEN
