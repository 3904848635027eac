"""The long table in columnar form: its dtypes, Parquet files, the old JSONL folders, the spool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.errors import DataError
from nbeval.evaluators.registry import resolve_evaluators
from nbeval.results import EvaluationResult
from nbeval.results.outcome import RowOutcome
from nbeval.results.storage import columnar
from nbeval.results.storage.columnar import ScoreSpool, outcome_columns, typed_scores
from tests.support.scoring import scored

ROWS: list[dict[str, Any]] = [
    {"key": "k1", "model_key": "m1", "input": "q1", "expected_output": "the cat sat", "actual_output": "the cat sat"},
    {"key": "k2", "model_key": "m1", "input": "q2", "expected_output": "a b c d", "actual_output": "a b x y"},
    {"key": "k1", "model_key": "m2", "input": "q1", "expected_output": "the cat sat", "actual_output": "a dog"},
    {"key": "k2", "model_key": "m2", "input": "q2", "expected_output": None, "actual_output": "a b c d"},
]


def _result() -> EvaluationResult:
    return nbeval.evaluate(ROWS, ["exact_match", "rouge"], progress=False)


def test_key_columns_are_sorted_categoricals_and_values_typed() -> None:
    s = _result().scores
    for column in ("key", "model_key", "evaluator", "metric"):
        assert isinstance(s[column].dtype, pd.CategoricalDtype), column
        assert list(s[column].cat.categories) == sorted(set(s[column].astype(str)))
    assert s["value"].dtype == float and str(s["passed"].dtype) == "boolean" and s["skipped"].dtype == bool
    # worked by hand: exact_match (1 metric) and rouge (3 metrics) over 4 rows, k2/m2 skipped (no expected output)
    assert len(s) == 4 * 5  # exact_match's score and rouge's four metrics per row
    em = s[s["evaluator"] == "exact_match"].set_index(["key", "model_key"])["value"]
    assert em[("k1", "m1")] == 1.0 and em[("k2", "m1")] == 0.0 and em[("k1", "m2")] == 0.0
    assert pd.isna(em[("k2", "m2")])
    r1 = s[(s["metric"] == "rouge_1") & (s["key"] == "k2") & (s["model_key"] == "m1")]["value"].iloc[0]
    assert r1 == pytest.approx(0.5)  # unigrams a b x y vs a b c d: precision 2/4, recall 2/4


def test_groupby_on_the_categoricals_sees_only_what_occurs() -> None:
    s = _result().scores
    counts = s[s["evaluator"] == "rouge"].groupby(["evaluator", "metric"], observed=True).size()
    assert counts.to_dict() == {
        ("rouge", "rouge_1"): 4,
        ("rouge", "rouge_2"): 4,
        ("rouge", "rouge_l"): 4,
        ("rouge", "rouge_lsum"): 4,
    }


def test_parquet_save_and_load_give_the_same_tables(tmp_path: Path) -> None:
    res = _result()
    folder = res.save(tmp_path / "r")
    assert (folder / "scores.parquet").is_file() and not (folder / "scores.jsonl").exists()
    assert json.loads((folder / "result.json").read_text())["meta"]["format_version"] == 3
    back = nbeval.load_result(folder)
    pd.testing.assert_frame_equal(back.scores, res.scores)
    pd.testing.assert_frame_equal(back.aggregates, res.aggregates)
    pd.testing.assert_frame_equal(back.leaderboard("rouge"), res.leaderboard("rouge"))
    # pyarrow reads the file by itself: a plain table other tools can open
    import pyarrow.parquet as pq

    table = pq.read_table(folder / "scores.parquet")
    assert table.column_names == columnar.SCORE_COLUMNS and table.num_rows == 20


def test_jsonl_save_is_format_1_and_loads_the_same(tmp_path: Path) -> None:
    res = _result()
    folder = res.save(tmp_path / "r", scores_format="jsonl")
    assert (folder / "scores.jsonl").is_file() and not (folder / "scores.parquet").exists()
    assert json.loads((folder / "result.json").read_text())["meta"]["format_version"] == 1
    pd.testing.assert_frame_equal(nbeval.load_result(folder).scores, res.scores)
    with pytest.raises(ValueError, match="scores_format must be one of parquet, jsonl"):
        res.save(tmp_path / "x", scores_format="csv")


def test_an_old_folder_written_by_hand_still_loads(tmp_path: Path) -> None:
    """A folder in the format nbeval wrote before Parquet (format version 1), written line by line here."""
    folder = tmp_path / "old"
    folder.mkdir()
    score = {
        "key": "k1",
        "model_key": "m1",
        "evaluator": "exact_match",
        "metric": "score",
        "value": 1.0,
        "passed": True,
        "label": None,
        "rationale": "identical",
        "error": None,
        "skipped": False,
        "skip_reason": None,
        "details": None,
    }
    skipped = dict(
        score, key="k2", value=None, passed=None, rationale=None, skipped=True, skip_reason="missing expected_output"
    )
    (folder / "scores.jsonl").write_text("\n".join(json.dumps(r) for r in (score, skipped)) + "\n")
    agg = {
        "model_key": "m1",
        "evaluator": "exact_match",
        "metric": "score",
        "value": 1.0,
        "n": 1,
        "N": 2,
        "passed": True,
        "direction": "higher",
        "threshold": 0.5,
        "primary": True,
    }
    (folder / "aggregates.jsonl").write_text(json.dumps(agg) + "\n")
    metric = {
        "evaluator": "exact_match",
        "evaluator_id": "exact_match",
        "family": "deterministic",
        "kind": "score",
        "metric": "score",
        "direction": "higher",
        "lo": 0.0,
        "hi": 1.0,
        "threshold": 0.5,
        "primary": True,
        "description": "1 for an identical answer",
    }
    (folder / "metrics.jsonl").write_text(json.dumps(metric) + "\n")
    (folder / "dataset.json").write_text(
        json.dumps(
            {
                "inputs": [
                    {"key": "k1", "model_key": "m1", "input": "q", "expected_output": "a", "actual_output": "a"},
                    {"key": "k2", "model_key": "m1", "input": "q2", "actual_output": "b"},
                ]
            }
        )
    )
    (folder / "result.json").write_text(
        json.dumps({"meta": {"format_version": 1, "duration_s": 0.1}, "explanations": {}, "model_labels": {}})
    )
    res = nbeval.load_result(folder)
    assert isinstance(res.scores["key"].dtype, pd.CategoricalDtype)
    assert res.scores["value"].tolist()[0] == 1.0 and pd.isna(res.scores["value"].tolist()[1])
    assert res.scores["skipped"].tolist() == [False, True]
    assert res.scores["passed"].tolist()[0] is True and pd.isna(res.scores["passed"].tolist()[1])
    assert res.leaderboard("exact_match").loc["m1", "score"] == 1.0
    # and it saves again in the new format, which loads back to the same table
    again = nbeval.load_result(res.save(tmp_path / "new"))
    pd.testing.assert_frame_equal(again.scores, res.scores)


def test_a_damaged_parquet_file_is_a_clear_error(tmp_path: Path) -> None:
    folder = _result().save(tmp_path / "r")
    (folder / "scores.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match=r"scores\.parquet.*not a readable Parquet file"):
        nbeval.load_result(folder)


def test_a_parquet_file_with_a_wrong_column_names_it(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = _result().save(tmp_path / "r")
    table = pq.read_table(folder / "scores.parquet")
    bad = table.set_column(
        table.column_names.index("value"), "value", pa.array(["high"] * table.num_rows, type=pa.string())
    )
    pq.write_table(bad, folder / "scores.parquet")
    with pytest.raises(DataError, match=r"scores\.parquet, field 'value': must hold double, holds string"):
        nbeval.load_result(folder)
    pq.write_table(table.drop_columns(["label"]), folder / "scores.parquet")
    with pytest.raises(DataError, match=r"field 'label': the column is missing"):
        nbeval.load_result(folder)
    pq.write_table(table.set_column(0, "key", pa.array(["k9"] * table.num_rows)), folder / "scores.parquet")
    with pytest.raises(DataError, match=r"scores\.parquet, row 1: scores the row with key 'k9'"):
        nbeval.load_result(folder)


def test_json_lines_and_csv_exports(tmp_path: Path) -> None:
    res = _result()
    res.to_jsonl(tmp_path / "scores.jsonl")
    lines = [json.loads(line) for line in (tmp_path / "scores.jsonl").read_text().splitlines()]
    assert len(lines) == 20 and list(lines[0]) == columnar.SCORE_COLUMNS
    assert [r["value"] for r in lines] == [None if pd.isna(v) else v for v in res.scores["value"]]
    res.to_csv(tmp_path / "scores.csv")
    back = pd.read_csv(tmp_path / "scores.csv")
    assert back["key"].tolist() == res.scores["key"].astype(str).tolist()


def test_the_spool_writes_parts_and_reads_back_in_result_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(columnar, "SPOOL_PART_ROWS", 3)
    ds = nbeval.LlmDataset.from_records(ROWS)
    evs = resolve_evaluators(["rouge", "exact_match"])
    outcomes = [
        RowOutcome(ev, row, score=scored(ev, row))
        if row.expected_output
        else RowOutcome(ev, row, skip_reason="no expected output")
        for row in ds.rows
        for ev in evs
    ]
    spool = ScoreSpool(evs, {id(r): i for i, r in enumerate(ds.rows)})
    spool.add(outcomes[:3])
    spool.add(outcomes[3:])
    assert len(spool._parts) == 2 and spool.rows == 20  # 4 rouge metrics + 1 per row and evaluator
    by_evaluator = sorted(outcomes, key=lambda o: (evs.index(o.evaluator), ds.rows.index(o.row)))
    expected = EvaluationResult.from_outcomes(by_evaluator, evs, ds).scores
    pd.testing.assert_frame_equal(spool.scores(ordered=True), expected)
    finished_order = typed_scores(outcome_columns(outcomes))
    pd.testing.assert_frame_equal(spool.scores(), finished_order)
    folder = spool._folder
    assert folder is not None and folder.is_dir()
    spool.close()
    assert not folder.exists()


def test_the_long_table_is_written_in_slices_and_reads_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq

    res = _result()  # 20 scores
    monkeypatch.setattr(columnar, "WRITE_SLICE_ROWS", 5)
    columnar.write_scores_parquet(tmp_path / "s.parquet", res.scores)
    assert pq.ParquetFile(tmp_path / "s.parquet").metadata.num_row_groups == 4  # 5 + 5 + 5 + 5
    pd.testing.assert_frame_equal(columnar.read_scores_parquet(tmp_path / "s.parquet"), res.scores)
    # the same table as pyarrow writes it in one piece, cell for cell
    whole = pq.read_table(tmp_path / "s.parquet").to_pylist()
    assert [(r["key"], r["model_key"], r["metric"], r["value"]) for r in whole] == list(
        zip(
            res.scores["key"].astype(str),
            res.scores["model_key"].astype(str),
            res.scores["metric"].astype(str),
            [None if pd.isna(v) else v for v in res.scores["value"]],
            strict=True,
        )
    )
