"""Fixtures for the notebook kit: tiny evaluators registered here, real runs on small records,
and a synthetic large result for size and speed checks."""

from __future__ import annotations

import math
import time
from typing import Any, Literal

import pytest

import nbeval
from nbeval.evaluators.base import BOOL_METRICS, Evaluator, EvaluatorSpec, MetricSpec, Score, bool_score
from nbeval.evaluators.registry import register

HOSTILE = "<script>alert('x')</script> and <img src=x onerror=alert(1)>"


def _words(text: str) -> set[str]:
    return set(text.lower().replace(",", " ").replace(".", " ").split())


@register(
    spec=EvaluatorSpec(
        id="w_overlap",
        family="custom",
        kind="score",
        inputs=("expected_output", "actual_output"),
        metrics=(
            MetricSpec("overlap", primary=True, threshold=0.5, description="share of expected words found"),
            MetricSpec(
                "length_gap",
                direction="lower",
                lo=0.0,
                hi=math.inf,
                threshold=3.0,
                description="difference in characters",
            ),
        ),
    )
)
class WOverlap(Evaluator):
    """Share of the expected words found in the answer; an answer 'boom' raises; a record's
    ``note`` field is appended to the rationale (to smuggle markup into it)."""

    def score(self, row):
        if row.actual_output == "boom":
            raise ValueError("the scorer exploded <b>loudly</b>")
        expected = _words(row.expected_output)
        found = len(expected & _words(row.actual_output))
        note = row.extra.get("note", "")
        return Score(
            {
                "overlap": found / len(expected),
                "length_gap": float(abs(len(row.actual_output) - len(row.expected_output))),
            },
            rationale=f"found {found} of {len(expected)} expected words {note}".strip(),
        )


_BOOL_DIRECTIONS: dict[str, Literal["higher", "lower"]] = {"pass": "higher"}


@register(
    spec=EvaluatorSpec(
        id="w_mentions",
        family="custom",
        kind="bool",
        inputs=("actual_output",),
        metrics=tuple(
            MetricSpec(m, direction=_BOOL_DIRECTIONS.get(m, "lower"), primary=m == "pass") for m in BOOL_METRICS
        ),
    )
)
class WMentions(Evaluator):
    """Passes when the answer mentions 'paris' or '4'; an answer holding '???' is a parse failure."""

    def score(self, row):
        if "???" in row.actual_output:
            return bool_score(None, error="could not read the verdict")
        ok = "paris" in row.actual_output.lower() or "4" in row.actual_output
        return bool_score(ok, rationale="mentioned" if ok else "not mentioned")


@register(
    spec=EvaluatorSpec(
        id="w_slow",
        family="custom",
        kind="score",
        inputs=("actual_output",),
        params={"delay": 0.02},
        metrics=(MetricSpec("score", primary=True),),
    )
)
class WSlow(Evaluator):
    """Sleeps ``delay`` seconds per row, then scores 1."""

    def score(self, row):
        time.sleep(self.params["delay"])
        return Score({"score": 1.0})


@register(
    spec=EvaluatorSpec(
        id="w_judged",
        family="custom",
        kind="rating",
        inputs=("actual_output",),
        resources=("judge",),
        metrics=(MetricSpec("score", primary=True),),
    )
)
class WJudged(Evaluator):
    """Declares a judge (never runs in these tests)."""

    def score(self, row):
        return Score({"score": 1.0})


# Hand-worked expectations for the records below (w_overlap.overlap):
#   capital: expected {paris, is, the, capital}; m1 "Paris is the capital." 4/4 = 1.0;
#            m2 "It is Lyon." {is} 1/4 = 0.25; m3 "boom" -> error
#   sum:     expected {4}; m1 "4" 1.0; m2 "four" 0.0; m3 "??? 4" 1.0
#   colour:  no expected output -> w_overlap skips every model
#   river:   expected {the, seine}; m1 "The Seine." 1.0; m2 "The Loire" 0.5;
#            m3 not collected (error "timeout") -> skipped
# means: m1 (1+1+1)/3 = 1.0 (n=3), m2 (0.25+0+0.5)/3 = 0.25 (n=3), m3 1.0 (n=1: "sum" only)
RECORDS: list[dict[str, Any]] = [
    {
        "key": "capital",
        "input": "What is the capital of France?",
        "expected_output": "Paris is the capital",
        "actual_output": "Paris is the capital.",
        "model_key": "m1",
    },
    {
        "key": "capital",
        "input": "What is the capital of France?",
        "expected_output": "Paris is the capital",
        "actual_output": "It is Lyon.",
        "model_key": "m2",
        "note": HOSTILE,
    },
    {
        "key": "capital",
        "input": "What is the capital of France?",
        "expected_output": "Paris is the capital",
        "actual_output": "boom",
        "model_key": "m3",
    },
    {
        "key": "sum",
        "input": "What is 2+2?",
        "expected_output": "4",
        "actual_output": "4",
        "model_key": "m1",
        "context": [{"content": "Arithmetic <i>basics</i>", "doc_uri": "math.md"}],
    },
    {"key": "sum", "input": "What is 2+2?", "expected_output": "4", "actual_output": "four", "model_key": "m2"},
    {"key": "sum", "input": "What is 2+2?", "expected_output": "4", "actual_output": "??? 4", "model_key": "m3"},
    {"key": "colour", "input": "Name a colour.", "actual_output": "Blue", "model_key": "m1"},
    {"key": "colour", "input": "Name a colour.", "actual_output": "Red", "model_key": "m2"},
    {"key": "colour", "input": "Name a colour.", "actual_output": "Green", "model_key": "m3"},
    {
        "key": "river",
        "input": "Which river crosses Paris?",
        "expected_output": "the Seine",
        "actual_output": "The Seine.",
        "model_key": "m1",
    },
    {
        "key": "river",
        "input": "Which river crosses Paris?",
        "expected_output": "the Seine",
        "actual_output": "The Loire",
        "model_key": "m2",
    },
    {
        "key": "river",
        "input": "Which river crosses Paris?",
        "expected_output": "the Seine",
        "actual_output": None,
        "error": "timeout",
        "model_key": "m3",
    },
]


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NBEVAL_JUDGE_MODEL", raising=False)


@pytest.fixture
def wrecords() -> list[dict]:
    return [dict(r) for r in RECORDS]


@pytest.fixture(scope="session")
def small_result() -> nbeval.EvaluationResult:
    """A real run of w_overlap and w_mentions on the records above."""
    return nbeval.evaluate([dict(r) for r in RECORDS], ["w_overlap", "w_mentions"], progress=False)


def synthetic_result(n_cases: int, n_models: int, *, seed: int = 0) -> nbeval.EvaluationResult:
    """A result with ``n_cases × n_models`` rows of one evaluator (``w_overlap``'s two metrics),
    built directly as tables (no scoring), with some skipped and errored cells."""
    import numpy as np
    import pandas as pd

    from nbeval.data.model import LlmDataset, Row
    from nbeval.results.result import AGGREGATE_COLUMNS, METRIC_COLUMNS, SCORE_COLUMNS

    rng = np.random.default_rng(seed)
    keys = [f"k{i:06d}" for i in range(n_cases)]
    models = [f"model-{j}" for j in range(n_models)]
    rows = [
        Row(input=f"question {i} " + "x" * 200, key=k, model_key=m, expected_output="a", actual_output="b")
        for i, k in enumerate(keys)
        for m in models
    ]
    n = n_cases * n_models
    frames = []
    nones = np.full(n, None, dtype=object)  # numpy's stubs take no bare None in np.where
    for metric, threshold, direction in (("overlap", 0.5, "higher"), ("length_gap", 3.0, "lower")):
        value = rng.random(n) * (1 if metric == "overlap" else 10)
        skipped = rng.random(n) < 0.05
        error = np.where(rng.random(n) < 0.03, "failed", nones)
        value = np.where(skipped | (error != nones), np.nan, value)
        passed = np.where(np.isnan(value), nones, value >= threshold if direction == "higher" else value <= threshold)
        frames.append(
            pd.DataFrame(
                {
                    "key": np.repeat(keys, n_models),
                    "model_key": np.tile(models, n_cases),
                    "evaluator": "w_overlap",
                    "metric": metric,
                    "value": value,
                    "passed": passed,
                    "label": None,
                    "rationale": "because " * 30,
                    "error": error,
                    "skipped": skipped,
                    "skip_reason": np.where(skipped, "missing expected_output", nones),
                    "details": None,
                },
                columns=SCORE_COLUMNS,
            )
        )
    scores = pd.concat(frames, ignore_index=True)
    agg = (
        scores.groupby(["model_key", "metric"], sort=False)
        .agg(value=("value", "mean"), n=("value", "count"), N=("value", "size"))
        .reset_index()
    )
    agg["evaluator"], agg["primary"] = "w_overlap", agg["metric"] == "overlap"
    agg["direction"] = np.where(agg["primary"], "higher", "lower")
    agg["threshold"] = np.where(agg["primary"], 0.5, 3.0)
    agg["passed"] = np.where(agg["primary"], agg["value"] >= 0.5, agg["value"] <= 3.0)
    metrics = pd.DataFrame(
        [
            ["w_overlap", "w_overlap", "custom", "score", "overlap", "higher", 0.0, 1.0, 0.5, True, ""],
            ["w_overlap", "w_overlap", "custom", "score", "length_gap", "lower", 0.0, math.inf, 3.0, False, ""],
        ],
        columns=METRIC_COLUMNS,
    )
    return nbeval.EvaluationResult(scores, agg[AGGREGATE_COLUMNS], metrics, LlmDataset(rows))


@pytest.fixture(scope="session")
def big_result() -> nbeval.EvaluationResult:
    """100,000 score rows: 10,000 cases × 5 models × 2 metrics."""
    return synthetic_result(10_000, 5)
