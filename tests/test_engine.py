"""The engine: planning, skipping, errors, batched requests, max_rows, cancel, progress."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nbeval
from nbeval.engine import Plan
from nbeval.errors import EvaluatorError, JudgeNotConfigured, ResourceError, UnknownEvaluator
from nbeval.evaluators.base import Chat, Embed, Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register
from nbeval.request_kinds.embed import EmbedHandler


def _spec(id: str, inputs: tuple[str, ...], resources: tuple[str, ...] = (), **kw) -> EvaluatorSpec:
    return EvaluatorSpec(
        id=id,
        family="test",
        kind="score",
        inputs=inputs,
        resources=resources,
        metrics=(MetricSpec("score", primary=True, threshold=0.5), MetricSpec("other", "lower")),
        **kw,
    )


@register(spec=_spec("t_equal", ("expected_output", "actual_output"), params={"boom_on": None}))
class Equal(Evaluator):
    def score(self, row):
        if row.actual_output == self.params["boom_on"]:
            raise ValueError("scoring blew up")
        same = float(row.expected_output == row.actual_output)
        return Score({"score": same, "other": 1 - same}, rationale=f"compared {row.actual_output!r}")


@register(spec=_spec("t_embed_a", ("expected_output", "actual_output"), ("embedder",)))
class EmbedA(Evaluator):
    def score(self, row):
        a, b = yield Embed((row.expected_output, row.actual_output), model=self.params.get("embedder"))
        return Score({"score": float(a @ b), "other": 0.0})


@register(spec=_spec("t_embed_b", ("input", "actual_output"), ("embedder",)))
class EmbedB(Evaluator):
    def score(self, row):
        (q,) = yield Embed((row.input,))
        vectors = yield Embed((row.actual_output, row.input))  # a second round
        return Score({"score": float(vectors[0] @ q), "other": float(vectors[1] @ q)})


@register(spec=_spec("t_judge", ("actual_output",), ("judge",)))
class Judge(Evaluator):
    def score(self, row):
        try:
            reply = yield Chat(({"role": "user", "content": row.actual_output},), model=self.params.get("judge"))
        except ResourceError as exc:
            return Score({}, error=f"judge failed: {exc}")
        return Score({"score": float(reply.text == "yes"), "other": 0.0}, rationale=reply.text)


class FakeEmbedder:
    """Deterministic unit vectors; records every batch it is asked to encode."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def encode(self, texts):
        self.batches.append(list(texts))
        out = np.array([[len(t) + 1.0, t.count("a") + 1.0, 1.0] for t in texts])
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def truncated(self, text):
        return text.startswith("LONG")


@pytest.fixture
def fake_embedder(monkeypatch: pytest.MonkeyPatch) -> FakeEmbedder:
    fake = FakeEmbedder()
    monkeypatch.setattr(EmbedHandler, "embedder", lambda self, resources, model=None: fake)
    return fake


def _rows(n: int, models=("m1", "m2")) -> list[dict]:
    return [
        {
            "key": f"k{i}",
            "input": f"question {i}",
            "expected_output": f"ans {i % 3}",
            "actual_output": f"ans {i % 2}",
            "model_key": m,
        }
        for m in models
        for i in range(n)
    ]


def test_missing_inputs_are_skipped_with_reason_and_errors_stay_on_their_row(records) -> None:
    records[3]["expected_output"] = None
    res = nbeval.evaluate(records, [nbeval.evaluator("t_equal", boom_on="four")], progress=False)
    s = res.scores[res.scores.metric == "score"].set_index(["key", "model_key"])
    assert s.loc[("a", "m1"), "value"] == 1.0 and s.loc[("b", "m1"), "value"] == 0.0
    assert s.loc[("b", "m2"), "skipped"] and s.loc[("b", "m2"), "skip_reason"] == "missing expected_output"
    assert s.loc[("a", "m2"), "error"] == "ValueError: scoring blew up"
    assert np.isnan(s.loc[("a", "m2"), "value"]) and not s.loc[("a", "m2"), "skipped"]
    agg = res.aggregates.set_index(["model_key", "metric"])
    assert (agg.loc[("m2", "score"), "n"], agg.loc[("m2", "score"), "N"]) == (0, 2)
    assert (agg.loc[("m1", "score"), "n"], agg.loc[("m1", "score"), "N"]) == (2, 2)


def test_empty_string_answer_is_scored_not_skipped() -> None:
    recs = [{"key": "a", "input": "q", "expected_output": "", "actual_output": ""}]
    res = nbeval.evaluate(recs, ["t_equal"], progress=False)
    assert res.scores.loc[res.scores.metric == "score", "value"].tolist() == [1.0]


def test_embed_requests_are_deduplicated_across_rows_and_evaluators(fake_embedder: FakeEmbedder) -> None:
    recs = _rows(6)
    res = nbeval.evaluate(recs, ["t_embed_a", "t_embed_b"], progress=False)
    distinct = {t for r in recs for t in (r["expected_output"], r["actual_output"], r["input"])}
    encoded = [t for b in fake_embedder.batches for t in b]
    assert sorted(encoded) == sorted(distinct)  # every distinct text exactly once...
    assert len(fake_embedder.batches) == 1  # ...in one batch: the second round needs nothing new
    s = res.scores[(res.scores.evaluator == "t_embed_a") & (res.scores.metric == "score")]
    e = fake_embedder.encode(["ans 0", "ans 1"])  # independent recomputation of one value
    row = s[(s.key == "k3") & (s.model_key == "m1")]  # expected "ans 0", actual "ans 1"
    assert row["value"].iloc[0] == pytest.approx(float(e[0] @ e[1]))


def test_truncation_warning_lands_on_its_row(fake_embedder: FakeEmbedder) -> None:
    recs = [
        {"key": "a", "input": "q", "expected_output": "x", "actual_output": "LONG answer"},
        {"key": "b", "input": "q2", "expected_output": "x", "actual_output": "short"},
    ]
    res = nbeval.evaluate(recs, ["t_embed_a"], progress=False)
    s = res.scores[res.scores.metric == "score"].set_index("key")
    assert "truncated" in s.loc["a", "rationale"]
    assert s.loc["b", "rationale"] is None or pd.isna(s.loc["b", "rationale"])


def test_failed_chat_becomes_that_rows_error(monkeypatch: pytest.MonkeyPatch) -> None:
    class Reply:
        def __init__(self, text):
            self.text = text

    def answer_chats(self, resources, items, rnd):
        for i, r in items:
            content = r.messages[0]["content"]
            rnd.answers[i] = ResourceError("server said 500") if content == "bad" else Reply("yes")
            rnd.deliver(i)

    from nbeval.request_kinds.chat import ChatHandler

    monkeypatch.setattr(ChatHandler, "answer", answer_chats)
    monkeypatch.setattr(ChatHandler, "client", lambda self, resources, model=None: object())
    recs = [{"key": k, "input": "q", "actual_output": k} for k in ("good", "bad", "fine")]
    res = nbeval.evaluate(recs, ["t_judge"], progress=False)
    s = res.scores[res.scores.metric == "score"].set_index("key")
    assert s.loc["good", "value"] == 1.0 and s.loc["fine", "value"] == 1.0
    assert s.loc["bad", "error"] == "judge failed: server said 500"


def test_judge_evaluator_without_judge_fails_before_scoring() -> None:
    with pytest.raises(JudgeNotConfigured, match="t_judge"):
        nbeval.evaluate([{"input": "q", "actual_output": "a"}], ["t_judge"], progress=False)


def test_max_rows_per_model() -> None:
    res = nbeval.evaluate(_rows(5), [nbeval.evaluator("t_equal", max_rows=2)], progress=False)
    s = res.scores[res.scores.metric == "score"]
    assert s.groupby("model_key")["skipped"].sum().tolist() == [3, 3]
    assert set(s.loc[s.skipped, "skip_reason"]) == {"beyond max_rows=2 for this model"}
    assert set(s.loc[~s.skipped, "key"]) == {"k0", "k1"}


def test_threshold_override_changes_passed() -> None:
    recs = [{"key": "a", "input": "q", "expected_output": "x", "actual_output": "x"}]
    strict = nbeval.evaluate(recs, [nbeval.evaluator("t_equal", threshold={"other": -1.0})], progress=False)
    other = strict.scores[strict.scores.metric == "other"].iloc[0]
    assert (other["value"] == 0.0 and other["passed"] is False) or other["passed"] == False  # noqa: E712
    assert strict.metrics.set_index("metric").loc["other", "threshold"] == -1.0


def test_cancel_returns_partial_result_with_the_rest_marked() -> None:
    stop = threading.Event()
    seen = []

    def on_progress(partial, done, total):
        seen.append((done, total))
        if done == 4:
            stop.set()  # cancel once four rows are scored: the fifth is never started

    res = nbeval.evaluate(_rows(10), ["t_equal"], progress=False, cancel=stop, on_progress=on_progress, chunk_rows=8)
    s = res.scores[res.scores.metric == "score"]
    assert res.meta["cancelled"] is True
    assert seen == [(0, 20), (1, 20), (2, 20), (3, 20), (4, 20)]
    assert (~s.skipped).sum() == 4 and set(s.loc[s.skipped, "skip_reason"]) == {"cancelled"}
    assert len(s) == 20  # nothing is lost


def test_progress_callback_sees_growing_partial_results() -> None:
    sizes = []
    nbeval.evaluate(
        _rows(5),
        ["t_equal"],
        progress=False,
        chunk_rows=2,
        on_progress=lambda partial, done, total: sizes.append((len(partial.scores), done, total)),
    )
    assert [d for _, d, _ in sizes] == list(range(11)) and all(t == 10 for *_, t in sizes)  # every row, not every chunk
    assert sizes[-1][0] == 20  # 10 rows x 2 metrics


def test_accepts_path_dataframe_lab_and_records(tmp_path: Path, records) -> None:
    ds = nbeval.LlmDataset.from_records(records)
    ds.to_json(str(tmp_path / "d.json"))
    ds.to_csv(str(tmp_path / "d.csv"))
    expected = nbeval.evaluate(records, ["t_equal"], progress=False).scores
    for data in (ds, str(tmp_path / "d.json"), tmp_path / "d.csv", ds.to_pandas(), nbeval.TestLab(dataset=ds)):
        got = nbeval.evaluate(data, ["t_equal"], progress=False).scores
        pd.testing.assert_frame_equal(got, expected)


def test_suite_without_answers_is_a_clear_error() -> None:
    suite = nbeval.TestSuite(name="s")
    suite.add_test_case(nbeval.TestCase(prompt="p"))
    with pytest.raises(nbeval.DataError, match="no answers"):
        nbeval.evaluate(suite, ["t_equal"], progress=False)


def test_unknown_evaluator_and_parameter_errors() -> None:
    with pytest.raises(UnknownEvaluator, match="did you mean 't_equal'"):
        nbeval.evaluate([{"input": "q"}], ["t_equall"], progress=False)
    with pytest.raises(EvaluatorError, match="no parameter 'treshold'"):
        nbeval.evaluator("t_equal", treshold=0.3)
    with pytest.raises(EvaluatorError, match="given twice"):
        nbeval.evaluate([{"input": "q"}], ["t_equal", "t_equal"], progress=False)
    two = nbeval.evaluate(
        [{"input": "q", "expected_output": "a", "actual_output": "a"}],
        ["t_equal", nbeval.evaluator("t_equal", name="t_equal_strict", threshold=0.99)],
        progress=False,
    )
    assert two.evaluators == ["t_equal", "t_equal_strict"]


def test_dry_run_counts_without_scoring() -> None:
    plan = nbeval.evaluate([*_rows(3), {"key": "z", "input": "q", "model_key": "m1"}], ["t_equal"], dry_run=True)
    assert isinstance(plan, Plan)
    assert plan.rows == {"t_equal": 6} and plan.skipped == {"t_equal": 1}
    assert "t_equal" in str(plan)
