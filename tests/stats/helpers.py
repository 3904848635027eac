"""Small results to test the statistics on: evaluators that read their score from the answer."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import nbeval
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register


@register(
    spec=EvaluatorSpec(
        id="st_score",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("s", "higher", threshold=0.5, primary=True), MetricSpec("hit", "higher", threshold=0.5)),
    )
)
class ReadScore(Evaluator):
    """An answer "0.7 safe" scores s = 0.7, hit = 1 (s >= 0.5) and has the verdict label "safe";
    an answer "x" cannot be scored."""

    def score(self, row):
        parts = row.actual_output.split()
        try:
            v = float(parts[0])
        except ValueError:
            return Score({}, error="not a number")
        return Score({"s": v, "hit": float(v >= 0.5)}, label=parts[1] if len(parts) > 1 else None)


@register(
    spec=EvaluatorSpec(
        id="st_low",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("err", "lower", threshold=0.5, primary=True),),
    )
)
class ReadError(Evaluator):
    """Like st_score, for a metric where lower is better."""

    def score(self, row):
        return Score({"err": float(row.actual_output.split()[0])})


@register(
    spec=EvaluatorSpec(
        id="st_plain",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("s", "higher", threshold=None, primary=True),),
    )
)
class ReadScoreNoThreshold(Evaluator):
    """Like st_score without a threshold: scores that neither pass nor fail."""

    def score(self, row):
        return Score({"s": float(row.actual_output.split()[0])})


def records(answers: dict[str, Sequence[str | None]]) -> list[dict]:
    """One record per model and test case c1, c2, ...; ``None`` is a row with no answer (skipped)."""
    out = []
    for model, values in answers.items():
        for i, answer in enumerate(values, 1):
            out.append({"key": f"c{i}", "input": f"q{i}", "actual_output": answer, "model_key": model})
    return out


def result_of(
    answers: dict[str, Sequence[str | None]], evaluators: Sequence[str] = ("st_score",)
) -> nbeval.EvaluationResult:
    return nbeval.evaluate(records(answers), list(evaluators), progress=False)


@cache
def demo_result() -> nbeval.EvaluationResult:
    """The demo lab scored by exact_match (shares), rouge (scores) and classification (macro F1)."""
    from nbeval.demo import demo_lab

    return nbeval.evaluate(demo_lab(), ["exact_match", "rouge", "classification"], progress=False)
