"""Numbers are numbers (Trust, point 3).

One rule, :func:`nbeval.data.fields.label_text`, decides how labels and answers compare: an int,
a finite float or a string that is exactly a plain decimal number compares by value (``1``,
``1.0``, ``"1"``, ``"1.0"``, ``"+1"``, ``"1e0"`` are all ``"1"``); a string with a leading zero
(``"01"``), white space around it, a thousands separator, or any other text compares as it is.
``classification`` (after trimming, its own convention) and ``exact_match`` both use it, and the
DataFrame reader gives an integer column that pandas made float (because a cell is empty) its
integers back.

Golden values are worked by hand in each test.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nbeval
from nbeval.data.fields import label_text
from nbeval.data.model import LlmDataset
from tests.support.scoring import scored


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1, "1"),
        (1.0, "1"),
        ("1", "1"),
        ("1.0", "1"),
        ("+1", "1"),
        ("1e0", "1"),
        ("1.", "1"),
        (np.int64(1), "1"),
        (np.float64(1.0), "1"),
        (0.5, "0.5"),
        ("0.50", "0.5"),
        (".5", "0.5"),
        (0.1, "0.1"),
        ("0.1", "0.1"),
        ("-0", "0"),
        (-0.0, "0"),
        ("1E-3", "0.001"),
        (1e16, "10000000000000000"),
        ("1e16", "10000000000000000"),
        (1e100, "1E+100"),
        ("1e100", "1E+100"),
        ("01", "01"),
        ("00", "00"),
        (" 1", " 1"),
        ("1,000", "1,000"),
        ("inf", "inf"),
        ("yes", "yes"),
        (True, "True"),
        (None, ""),
        (math.nan, ""),
    ],
)
def test_the_rule(value: object, text: str) -> None:
    assert label_text(value) == text


def _metric(result: nbeval.EvaluationResult, evaluator: str, metric: str) -> tuple[float, int]:
    a = result.aggregates.set_index(["evaluator", "metric"]).loc[(evaluator, metric)]
    return float(a["value"]), int(a["n"])


def test_a_label_column_made_float_by_an_empty_cell_scores_against_integer_answers() -> None:
    # expected_output is [1, 0, <empty>, 2]: pandas stores it as float64 [1.0, 0.0, NaN, 2.0].
    df = pd.DataFrame(
        {
            "key": ["a", "b", "c", "d"],
            "input": ["qa", "qb", "qc", "qd"],
            "expected_output": [1, 0, None, 2],
            "actual_output": [1, 0, 1, 2],
        }
    )
    assert df["expected_output"].dtype == np.float64
    ds = LlmDataset.from_pandas(df)
    assert [r.expected_output for r in ds] == ["1", "0", None, "2"]  # not "1.0"
    assert [r.actual_output for r in ds] == ["1", "0", "1", "2"]

    result = nbeval.evaluate(df, ["classification", "exact_match"], progress=False)
    # Row c has no expected output and is skipped; a, b, d are right. Classes {0, 1, 2}, each
    # predicted once and right once: precision = recall = F1 = 1 for each, so every macro is 1.
    for metric in ("accuracy", "precision", "recall", "f1"):
        assert _metric(result, "classification", metric) == (1.0, 3), metric
    assert result.explanations["classification"]["model"]["accuracy"]["labels"] == ["0", "1", "2"]
    assert _metric(result, "exact_match", "score") == (1.0, 3)  # 3 rows of 1.0


def test_an_answer_column_made_float_by_an_empty_cell_scores_against_integer_labels() -> None:
    # actual_output is [1, <no answer>, 1, 2] -> float64 [1.0, NaN, 1.0, 2.0]; labels are ints.
    df = pd.DataFrame(
        {"input": ["qa", "qb", "qc", "qd"], "expected_output": [1, 0, 1, 2], "actual_output": [1.0, math.nan, 1.0, 2.0]}
    )
    result = nbeval.evaluate(df, ["classification", "exact_match"], progress=False)
    # Row b has no answer and is skipped; a, c, d are right: 3/3.
    assert _metric(result, "classification", "accuracy") == (1.0, 3)
    assert _metric(result, "exact_match", "score") == (1.0, 3)


def test_mixed_number_forms_and_a_leading_zero() -> None:
    # expected  "1"   "1.0"  "01"  "yes"       (text labels, object column)
    # answer    1.0   "1"    "1"   "yes"
    # compared  1=1   1=1    01≠1  yes=yes     -> accuracy 3/4 = 0.75, exact match 3/4 = 0.75
    # classes {01, 1, yes}: precision 01: 0/0 -> 0, 1: 2/3, yes: 1/1 -> macro (0 + 2/3 + 1)/3 = 5/9
    #                       recall    01: 0/1 = 0,  1: 2/2, yes: 1/1 -> macro 2/3
    #                       F1        01: 0,  1: 2*(2/3)*1/(5/3) = 4/5, yes: 1 -> macro 1.8/3 = 0.6
    df = pd.DataFrame(
        {
            "input": ["a", "b", "c", "d"],
            "expected_output": ["1", "1.0", "01", "yes"],
            "actual_output": [1.0, "1", "1", "yes"],
        },
        dtype=object,
    )
    result = nbeval.evaluate(df, ["classification", "exact_match"], progress=False)
    assert _metric(result, "classification", "accuracy") == pytest.approx((0.75, 4))
    assert _metric(result, "classification", "precision")[0] == pytest.approx(5 / 9)
    assert _metric(result, "classification", "recall")[0] == pytest.approx(2 / 3)
    assert _metric(result, "classification", "f1")[0] == pytest.approx(0.6)
    assert _metric(result, "exact_match", "score") == pytest.approx((0.75, 4))


def test_exact_match_still_counts_white_space_and_case_around_text() -> None:
    ev = nbeval.evaluator("exact_match")
    from nbeval.data.model import Row

    def score(answer: str, expected: str) -> float | None:
        return scored(ev, Row(input="q", actual_output=answer, expected_output=expected)).values["score"]

    assert score("1.0", "1") == 1.0 and score("2.50", "2.5") == 1.0
    assert score("1\n", "1") == 0.0  # white space counts, as the seed's "Hello!\n" does
    assert score("01", "1") == 0.0 and score("Yes", "yes") == 0.0


def test_csv_labels_keep_what_the_file_says_and_compare_by_value(tmp_path: Path) -> None:
    # A CSV written by pandas from a float column says "1.0"; the answers say "1".
    path = tmp_path / "labels.csv"
    pd.DataFrame(
        {"input": ["qa", "qb", "qc"], "expected_output": [1, None, 0], "actual_output": ["1", "0", "0"]}
    ).to_csv(path, index=False)
    assert "1.0" in path.read_text()
    ds = nbeval.load(str(path))
    assert isinstance(ds, nbeval.LlmDataset)
    assert [r.expected_output for r in ds] == ["1.0", None, "0.0"]  # nothing the file says is changed
    result = nbeval.evaluate(str(path), ["classification", "exact_match"], progress=False)
    assert _metric(result, "classification", "accuracy") == (1.0, 2)
    assert _metric(result, "exact_match", "score") == (1.0, 2)
    # read back through pandas, the same column (float again) gives its integers
    assert [r.expected_output for r in LlmDataset.from_pandas(pd.read_csv(path))] == ["1", None, "0"]


def test_only_whole_number_columns_with_an_empty_cell_become_integers() -> None:
    df = pd.DataFrame({"input": ["a", "b"], "score": [3, None], "ratio": [0.5, None], "weight": [2.0, 3.0]})
    rows = LlmDataset.from_pandas(df).rows
    assert rows[0].extra == {"score": 3, "ratio": 0.5, "weight": 2.0}
    assert type(rows[0].extra["score"]) is int and type(rows[0].extra["weight"]) is float
    assert rows[1].extra == {"weight": 3.0}
