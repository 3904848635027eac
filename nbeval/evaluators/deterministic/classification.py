"""``classification``: the answer is a predicted class, the expected output the true label.

Per row the evaluator only says whether the prediction is right (``accuracy`` 1 or 0, the
predicted class as the label). The interesting numbers are per model, so :meth:`Classification.aggregate` is
overridden: accuracy, and precision, recall and F1 macro-averaged over every class that occurs as
a label or as a prediction, plus the confusion matrix as the explanation.

Conventions (those of scikit-learn with ``zero_division=0``): labels and predictions are
compared after trimming surrounding white space, case-sensitively, and numbers by value
(:func:`~nbeval.data.fields.label_text`: ``1``, ``1.0`` and ``"1"`` are one class, written
``"1"``); a ratio whose denominator is
0 counts 0 (a class never predicted has precision 0; a class that is never the true label has
recall 0); macro F1 is the mean of the per-class F1 scores, not the F1 of the macro averages.

The figures are computed from per-class counts in O(rows). The confusion matrix is only kept when
there are at most :data:`MAX_MATRIX_CLASSES` classes: a free-text dataset run through this
evaluator by mistake would otherwise build a matrix with millions of cells (the details then say
how many classes there were instead).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from nbeval.data.fields import label_text
from nbeval.evaluators.base import Aggregate, Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register

if TYPE_CHECKING:
    from nbeval.data.model import Row

__all__ = ["MAX_MATRIX_CLASSES", "Classification", "confusion", "macro_scores"]

#: Above this many distinct classes the confusion matrix is left out of the explanation.
MAX_MATRIX_CLASSES = 100


def _label(text: str | None) -> str:
    return label_text((text or "").strip())


@register
class Classification(Evaluator):
    """Accuracy and macro precision / recall / F1 of predicted classes, per model."""

    spec = EvaluatorSpec(
        id="classification",
        family="deterministic",
        kind="score",
        inputs=("expected_output", "actual_output"),
        description=(
            "The answer is a predicted class and the expected output the true label (compared after "
            "trimming whitespace). Per model: accuracy and macro precision, recall and F1 over every "
            "class seen; the confusion matrix is kept."
        ),
        metrics=(
            MetricSpec("accuracy", threshold=0.75, primary=True, description="share of correct predictions"),
            MetricSpec("precision", threshold=0.75, description="macro-averaged precision"),
            MetricSpec("recall", threshold=0.75, description="macro-averaged recall"),
            MetricSpec("f1", threshold=0.75, description="macro-averaged F1"),
        ),
    )

    def score(self, row: Row) -> Score:
        """Score 1 when the predicted class equals the expected one (after trimming), else 0.

        The row's label is the predicted class.
        """
        truth, predicted = _label(row.expected_output), _label(row.actual_output)
        right = truth == predicted
        rationale = None if right else f"expected {truth!r}, predicted {predicted!r}"
        return Score({"accuracy": float(right)}, label=predicted, rationale=rationale)

    def aggregate(self, rows: Sequence[Row], scores: Sequence[Score]) -> dict[str, Aggregate]:
        """Compute accuracy and macro precision, recall and F1 over the model's rows.

        The accuracy's details keep the confusion matrix and the per-class figures, unless there are
        more than :data:`MAX_MATRIX_CLASSES` classes.
        """
        pairs = [(_label(r.expected_output), _label(r.actual_output)) for r in rows]
        n = len(pairs)
        if n == 0:
            return {m.name: Aggregate(None, 0) for m in self.spec.metrics}
        labels = sorted({c for pair in pairs for c in pair})
        precision, recall, f1, per_class = macro_scores(pairs, labels)
        correct = sum(v["tp"] for v in per_class.values())
        details: dict[str, Any]
        if len(labels) <= MAX_MATRIX_CLASSES:
            details = {
                "labels": labels,
                "matrix": confusion(pairs, labels),
                "rows": "expected",
                "columns": "predicted",
                "per_class": per_class,
            }
        else:
            details = {
                "classes": len(labels),
                "note": (
                    f"{len(labels)} distinct classes: too many for a confusion matrix "
                    f"(limit {MAX_MATRIX_CLASSES}); are these really class labels?"
                ),
            }
        return {
            "accuracy": Aggregate(correct / n, n, details=details),
            "precision": Aggregate(precision, n),
            "recall": Aggregate(recall, n),
            "f1": Aggregate(f1, n),
        }


def confusion(pairs: Sequence[tuple[str, str]], labels: Sequence[str] | None = None) -> list[list[int]]:
    """Count the confusion matrix of ``(expected, predicted)`` pairs.

    ``matrix[i][j]`` counts rows whose expected class is ``labels[i]`` and predicted class
    ``labels[j]`` (``labels``: every class seen, sorted, when not given).
    """
    if labels is None:
        labels = sorted({c for pair in pairs for c in pair})
    index = {c: i for i, c in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for truth, predicted in pairs:
        matrix[index[truth]][index[predicted]] += 1
    return matrix


def _ratio(a: float, b: float) -> float:
    return a / b if b else 0.0


def macro_scores(
    pairs: Sequence[tuple[str, str]], labels: Sequence[str]
) -> tuple[float, float, float, dict[str, dict[str, Any]]]:
    """Compute macro precision, recall and F1 of ``(expected, predicted)`` pairs over ``labels``.

    The per-class figures (``tp``, ``support``, ``precision``, ``recall``, ``f1``) come with them.
    """
    tp: Counter[str] = Counter(t for t, p in pairs if t == p)
    actual: Counter[str] = Counter(t for t, _ in pairs)
    predicted: Counter[str] = Counter(p for _, p in pairs)
    per_class: dict[str, dict[str, Any]] = {}
    for c in labels:
        p, r = _ratio(tp[c], predicted[c]), _ratio(tp[c], actual[c])
        per_class[c] = {"tp": tp[c], "support": actual[c], "precision": p, "recall": r, "f1": _ratio(2 * p * r, p + r)}
    k = len(labels)
    if not k:
        return 0.0, 0.0, 0.0, per_class
    return (
        sum(v["precision"] for v in per_class.values()) / k,
        sum(v["recall"] for v in per_class.values()) / k,
        sum(v["f1"] for v in per_class.values()) / k,
        per_class,
    )
