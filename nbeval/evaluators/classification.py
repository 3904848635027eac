"""``classification``: the answer is a predicted class, the expected output the true label.

Per row the evaluator only says whether the prediction is right (``accuracy`` 1 or 0, the
predicted class as the label). The interesting numbers are per model, so :meth:`aggregate` is
overridden: accuracy, and precision, recall and F1 macro-averaged over every class that occurs as
a label or as a prediction, plus the confusion matrix as the explanation.

Conventions (those of scikit-learn with ``zero_division=0``): labels and predictions are
compared after trimming surrounding white space, case-sensitively; a ratio whose denominator is
0 counts 0 (a class never predicted has precision 0; a class that is never the true label has
recall 0); macro F1 is the mean of the per-class F1 scores, not the F1 of the macro averages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbeval.evaluators.base import Aggregate, Evaluator, Score
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = ["Classification", "confusion", "macro_scores"]


def _label(text: str | None) -> str:
    return (text or "").strip()


@register("classification")
class Classification(Evaluator):
    """Accuracy and macro precision / recall / F1 of predicted classes, per model."""

    def score(self, row: Row) -> Score:
        truth, predicted = _label(row.expected_output), _label(row.actual_output)
        right = truth == predicted
        rationale = None if right else f"expected {truth!r}, predicted {predicted!r}"
        return Score({"accuracy": float(right)}, label=predicted, rationale=rationale)

    def aggregate(self, rows: Sequence[Row], scores: Sequence[Score]) -> dict[str, Aggregate]:
        pairs = [(_label(r.expected_output), _label(r.actual_output)) for r in rows]
        labels, matrix = confusion(pairs)
        n = len(pairs)
        if n == 0:
            return {m.name: Aggregate(None, 0) for m in self.spec.metrics}
        correct = sum(matrix[i][i] for i in range(len(labels)))
        precision, recall, f1, per_class = macro_scores(labels, matrix)
        details: dict[str, Any] = {"labels": labels, "matrix": matrix, "rows": "expected", "columns": "predicted",
                                   "per_class": per_class}
        return {
            "accuracy": Aggregate(correct / n, n, details=details),
            "precision": Aggregate(precision, n),
            "recall": Aggregate(recall, n),
            "f1": Aggregate(f1, n),
        }


def confusion(pairs: Sequence[tuple[str, str]]) -> tuple[list[str], list[list[int]]]:
    """Sorted classes and the confusion matrix (``matrix[i][j]``: expected ``labels[i]``,
    predicted ``labels[j]``) of ``(expected, predicted)`` pairs."""
    labels = sorted({c for pair in pairs for c in pair})
    index = {c: i for i, c in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for truth, predicted in pairs:
        matrix[index[truth]][index[predicted]] += 1
    return labels, matrix


def _ratio(a: int | float, b: int | float) -> float:
    return a / b if b else 0.0


def macro_scores(labels: Sequence[str], matrix: Sequence[Sequence[int]]) -> tuple[float, float, float, dict[str, Any]]:
    """Macro precision, recall and F1 over ``labels``, and the per-class figures."""
    k = len(labels)
    per_class: dict[str, Any] = {}
    for i, c in enumerate(labels):
        tp = matrix[i][i]
        predicted = sum(matrix[r][i] for r in range(k))
        actual = sum(matrix[i])
        p, r = _ratio(tp, predicted), _ratio(tp, actual)
        per_class[c] = {"precision": p, "recall": r, "f1": _ratio(2 * p * r, p + r), "support": actual}
    if not k:
        return 0.0, 0.0, 0.0, per_class
    mean = lambda key: sum(v[key] for v in per_class.values()) / k  # noqa: E731
    return mean("precision"), mean("recall"), mean("f1"), per_class
