"""classification: a hand-built confusion matrix with every figure worked out by hand.

Golden rows: golden/classification.json (10 test cases, two models A and B). Labels are trimmed
before comparison (" cat\\n" is "cat", " dog" is "dog"). Matrix rows are the expected class,
columns the predicted one, classes sorted.

Model A: classes {bird, cat, dog} from the labels plus {fish}, predicted once but never a label.

              predicted: bird cat dog fish
    expected bird          0    1   1   0     (r08 -> dog, r09 -> cat)
    expected cat           0    3   1   0     (r01, r02, r04 right; r03 -> dog)
    expected dog           0    1   2   1     (r05, r10 right; r06 -> cat; r07 -> fish)
    expected fish          0    0   0   0

    accuracy  = (0 + 3 + 2 + 0) / 10 = 0.5
    precision = TP / column sum: bird 0/0 -> 0 (never predicted), cat 3/5 = 0.6, dog 2/4 = 0.5,
                fish 0/1 = 0; macro = (0 + 0.6 + 0.5 + 0) / 4 = 1.1 / 4 = 0.275
    recall    = TP / row sum: bird 0/2 = 0, cat 3/4 = 0.75, dog 2/4 = 0.5, fish 0/0 -> 0;
                macro = (0 + 0.75 + 0.5 + 0) / 4 = 1.25 / 4 = 0.3125
    F1        = 2PR / (P + R): bird 0, cat 2*0.6*0.75/1.35 = 0.9/1.35 = 2/3, dog 2*0.5*0.5/1 = 0.5,
                fish 0; macro = (2/3 + 1/2) / 4 = (7/6) / 4 = 7/24 = 0.291666...

Model B: only r03 is wrong (cat -> dog).

              predicted: bird cat dog
    expected bird          2    0   0
    expected cat           0    3   1
    expected dog           0    0   4

    accuracy  = 9 / 10 = 0.9
    precision = bird 2/2 = 1, cat 3/3 = 1, dog 4/5 = 0.8; macro = 2.8 / 3 = 0.93333...
    recall    = bird 2/2 = 1, cat 3/4 = 0.75, dog 4/4 = 1; macro = 2.75 / 3 = 0.91666...
    F1        = bird 1, cat 2*1*0.75/1.75 = 6/7, dog 2*0.8*1/1.8 = 8/9;
                macro = (1 + 6/7 + 8/9) / 3 = (63 + 54 + 56) / 189 = 173/189 = 0.915343...
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nbeval
from nbeval.data.model import Row
from nbeval.evaluators.base import Score
from tests.support.scoring import scored

GOLDEN = json.loads((Path(__file__).parent / "golden" / "classification.json").read_text(encoding="utf-8"))
METRICS = ("accuracy", "precision", "recall", "f1")


def _records() -> list[dict]:
    recs = []
    for model in ("A", "B"):
        for r in GOLDEN["rows"]:
            recs.append(
                {
                    "key": r["key"],
                    "model_key": model,
                    "input": f"classify {r['key']}",
                    "expected_output": r["expected_output"],
                    "actual_output": r[model],
                }
            )
    return recs


@pytest.fixture(scope="module")
def result():
    return nbeval.evaluate(_records(), ["classification"], progress=False)


@pytest.mark.parametrize("model", ["A", "B"])
def test_per_model_metrics_match_the_hand_computation(result, model):
    agg = result.aggregates.set_index(["model_key", "metric"])
    want = GOLDEN["expected"][model]
    for metric in METRICS:
        assert agg.loc[(model, metric), "value"] == pytest.approx(want[metric], abs=1e-12), metric
        assert agg.loc[(model, metric), "n"] == 10
        assert agg.loc[(model, metric), "N"] == 10


@pytest.mark.parametrize("model", ["A", "B"])
def test_confusion_matrix_is_kept_as_the_explanation(result, model):
    explained = result.explanations["classification"][model]["accuracy"]
    want = GOLDEN["expected"][model]
    assert explained["labels"] == want["labels"]
    assert explained["matrix"] == want["matrix"]
    json.dumps(explained)  # must be JSON-serialisable


def test_per_row_values_and_labels(result):
    rows = result.scores[(result.scores["metric"] == "accuracy") & (result.scores["model_key"] == "A")]
    by_key = rows.set_index("key")
    assert by_key.loc["r04", "value"] == 1.0  # " cat\n" trimmed is "cat"
    assert by_key.loc["r04", "label"] == "cat"
    assert by_key.loc["r07", "value"] == 0.0
    assert by_key.loc["r07", "label"] == "fish"
    assert by_key.loc["r10", "value"] == 1.0  # expected " dog" trimmed
    assert rows["value"].sum() == 5


def test_leaderboard_ranks_b_first(result):
    board = result.leaderboard("classification")
    assert list(board.index) == ["B", "A"]
    assert board.loc["B", "f1"] == pytest.approx(173 / 189)
    assert board.loc["A", "accuracy_n"] == 10


def test_problem_reported_for_model_below_threshold(result):
    probs = result.problems
    assert "A" in set(probs["model_key"])
    assert "B" not in set(probs["model_key"])


def test_unit_score_and_aggregate():
    ev = nbeval.evaluator("classification")
    rows = [
        Row(input="q", key=f"k{i}", expected_output=e, actual_output=p)
        for i, (e, p) in enumerate([("yes", "yes "), ("no", "yes"), ("no", "no")])
    ]
    scores = [scored(ev, r) for r in rows]
    assert [s.values["accuracy"] for s in scores] == [1.0, 0.0, 1.0]
    assert [s.label for s in scores] == ["yes", "yes", "no"]
    assert isinstance(scores[0], Score)
    agg = ev.aggregate(rows, scores)
    # labels {no, yes}; matrix no:[1,1] yes:[0,1]; precision no 1/1, yes 1/2 -> 0.75;
    # recall no 1/2, yes 1/1 -> 0.75; F1 no 2*1*.5/1.5 = 2/3, yes 2/3 -> 2/3
    assert agg["accuracy"].value == pytest.approx(2 / 3)
    assert agg["precision"].value == pytest.approx(0.75)
    assert agg["recall"].value == pytest.approx(0.75)
    assert agg["f1"].value == pytest.approx(2 / 3)
    assert agg["accuracy"].details is not None
    assert agg["accuracy"].details["matrix"] == [[1, 1], [0, 1]]


def test_empty_prediction_is_a_class_not_a_skip():
    recs = [
        {"key": "a", "input": "q", "expected_output": "pos", "actual_output": ""},
        {"key": "b", "input": "q", "expected_output": "pos", "actual_output": "pos"},
    ]
    res = nbeval.evaluate(recs, ["classification"], progress=False)
    assert not res.scores["skipped"].any()
    agg = res.aggregates.set_index("metric")
    assert agg.loc["accuracy", "value"] == 0.5
    # classes {"", pos}: precision "" 0/1 = 0, pos 1/1 = 1 -> 0.5; recall "" 0/0 -> 0, pos 1/2 -> 0.25
    assert agg.loc["precision", "value"] == pytest.approx(0.5)
    assert agg.loc["recall", "value"] == pytest.approx(0.25)


def test_missing_label_is_skipped():
    recs = [
        {"key": "a", "input": "q", "actual_output": "pos"},
        {"key": "b", "input": "q", "expected_output": "neg", "actual_output": "neg"},
    ]
    res = nbeval.evaluate(recs, ["classification"], progress=False)
    skipped = res.scores[res.scores["skipped"]]
    assert set(skipped["key"]) == {"a"}
    assert "expected_output" in skipped["skip_reason"].iloc[0]
    agg = res.aggregates.set_index("metric")
    assert agg.loc["accuracy", "value"] == 1.0
    assert agg.loc["accuracy", "n"] == 1 and agg.loc["accuracy", "N"] == 2


def test_many_classes_skip_the_matrix_but_keep_the_figures():
    from nbeval.evaluators.deterministic.classification import MAX_MATRIX_CLASSES

    k = MAX_MATRIX_CLASSES + 50
    # every row right, each its own class: precision = recall = F1 = 1 for each of k classes
    recs = [{"key": f"r{i}", "input": "q", "expected_output": f"c{i}", "actual_output": f"c{i}"} for i in range(k)]
    res = nbeval.evaluate(recs, ["classification"], progress=False)
    agg = res.aggregates.set_index("metric")
    assert agg.loc["f1", "value"] == 1.0 and agg.loc["accuracy", "value"] == 1.0
    explained = res.explanations["classification"]["model"]["accuracy"]
    assert "matrix" not in explained
    assert explained["classes"] == k
