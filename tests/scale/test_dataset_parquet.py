"""A saved result's dataset as dataset.parquet: lossless, chunked, and the old dataset.json folders still load."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import nbeval
from nbeval.data.model import DEFAULT_MODEL_KEY, Chunk, LlmDataset, Relationship, Row
from nbeval.errors import DataError
from nbeval.results import EvaluationResult
from nbeval.results.storage import dataset_file
from nbeval.results.storage.dataset_file import read_dataset_parquet, write_dataset_parquet


def _odd_rows() -> list[Row]:
    """Rows with every field set in some row and left empty or None in another."""
    full = Row(
        input="Quelle est la capitale ? 🇫🇷 \u00e9\u4e2d\n\ttab",
        key="k-é",
        model_key="modèle-α",
        corpus=["doc1.pdf", "文書.txt"],
        context=[
            Chunk(content="Paris est…", doc_uri="doc1.pdf"),
            Chunk(content="plain"),
            Chunk(content=None, doc_uri="only-uri"),
        ],
        categories=["geo", ""],
        relationships=[
            Relationship(type="perturbation_source", target="k2"),
            Relationship(type="see_also", target="x", target_type="document"),
        ],
        expected_output="Paris",
        output_condition='"Paris" AND NOT "Lyon"',
        actual_output="Paris 😀",
        actual_duration=1.25,
        cost=0.000123456789012345,
        expected_context=[Chunk(content="exp", doc_uri="u")],
        guidelines=["be brief", "cite"],
        error="timeout after 3 s",
        extra={"tags": ["a", "é"], "score": 1.5, "nested": {"x": None, "n": [1, 2]}, "flag": True, "ü": "v"},
        warnings=["field 'input': repaired text"],
    )
    empty = Row(input="", key="k2", model_key="m")
    nones = Row(
        input=None,
        key="k3",
        model_key="m",
        expected_output=None,
        actual_output=None,
        actual_duration=0.0,
        cost=None,
        extra={"only_null": None},
    )
    return [full, empty, nones]


def test_every_field_of_every_row_survives_the_round_trip(tmp_path: Path) -> None:
    rows = _odd_rows()
    write_dataset_parquet(tmp_path / "d.parquet", LlmDataset(rows))
    back = read_dataset_parquet(tmp_path / "d.parquet")
    assert len(back.rows) == len(rows)
    for mine, theirs in zip(rows, back.rows, strict=True):
        assert theirs == mine  # the dataclass compares every field, extra and warnings included
        assert theirs.to_json() == mine.to_json()
    assert back.rows[1].corpus == [] and back.rows[1].context == [] and back.rows[1].extra == {}
    assert back.rows[2].input is None and back.rows[2].actual_duration == 0.0 and back.rows[2].cost is None
    # rows must not share their lists: changing one row leaves the next alone
    back.rows[1].categories.append("x")
    assert back.rows[2].categories == []


def test_the_file_is_chunked_and_readable_by_pyarrow_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dataset_file, "DATASET_CHUNK_ROWS", 4)
    rows = [
        Row(input=f"q{i}", key=f"k{i}", model_key=f"m{i % 2}", context=[Chunk(content=f"c{i}")] * (i % 3))
        for i in range(10)
    ]
    write_dataset_parquet(tmp_path / "d.parquet", LlmDataset(rows))
    file = pq.ParquetFile(tmp_path / "d.parquet")
    assert file.metadata.num_row_groups == 3  # 4 + 4 + 2 rows
    meta = json.loads(file.schema_arrow.metadata[b"nbeval.dataset"])
    assert meta == {"layout": 1, "rows": 10}
    table = file.read()
    assert table.column("key").to_pylist() == [f"k{i}" for i in range(10)]
    assert table.column("context").to_pylist()[2] == [{"content": "c2", "doc_uri": None}] * 2
    back = read_dataset_parquet(tmp_path / "d.parquet")
    assert back.rows == rows


def test_an_empty_dataset_round_trips(tmp_path: Path) -> None:
    write_dataset_parquet(tmp_path / "d.parquet", LlmDataset([]))
    assert read_dataset_parquet(tmp_path / "d.parquet").rows == []


def test_a_saved_result_keeps_its_dataset_in_parquet(tmp_path: Path) -> None:
    rows = [
        {
            "key": "k1",
            "model_key": "a",
            "input": "q1 ✓",
            "expected_output": "x",
            "actual_output": "x",
            "context": ["c1", {"content": "c2", "doc_uri": "d.pdf"}],
            "my_field": {"deep": [1, None]},
        },
        {"key": "k1", "model_key": "b", "input": "q1 ✓", "expected_output": "x", "actual_output": None},
    ]
    res = nbeval.evaluate(rows, ["exact_match"], progress=False)
    folder = res.save(tmp_path / "r")
    assert (folder / "dataset.parquet").is_file() and not (folder / "dataset.json").exists()
    assert json.loads((folder / "result.json").read_text())["meta"]["format_version"] == 3
    back = nbeval.load_result(folder)
    assert back.dataset.rows == res.dataset.rows
    assert back.dataset.to_records() == res.dataset.to_records()
    assert back.dataset.rows[0].extra == {"my_field": {"deep": [1, None]}}


def test_a_jsonl_save_still_writes_dataset_json(tmp_path: Path) -> None:
    res = nbeval.evaluate(
        [{"key": "k1", "input": "q", "expected_output": "a", "actual_output": "a"}], ["exact_match"], progress=False
    )
    folder = res.save(tmp_path / "r", scores_format="jsonl")
    assert (folder / "dataset.json").is_file() and not (folder / "dataset.parquet").exists()
    assert nbeval.load_result(folder).dataset.rows == res.dataset.rows


def _old_v2_folder(folder: Path) -> EvaluationResult:
    """A folder as format version 2 wrote it: scores.parquet, and the dataset as dataset.json."""
    res = nbeval.evaluate(
        [
            {"key": "k1", "input": "q1", "expected_output": "a", "actual_output": "a"},
            {"key": "k2", "input": "q2 é", "expected_output": "b", "actual_output": "c"},
        ],
        ["exact_match"],
        progress=False,
    )
    res.save(folder)
    (folder / "dataset.parquet").unlink()
    (folder / "dataset.json").write_text(
        json.dumps(
            {
                "inputs": [
                    {
                        "key": "k1",
                        "model_key": DEFAULT_MODEL_KEY,
                        "input": "q1",
                        "expected_output": "a",
                        "actual_output": "a",
                    },
                    {
                        "key": "k2",
                        "model_key": DEFAULT_MODEL_KEY,
                        "input": "q2 é",
                        "expected_output": "b",
                        "actual_output": "c",
                    },
                ]
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    info = json.loads((folder / "result.json").read_text())
    info["meta"]["format_version"] = 2
    del info["save"]  # format 2 wrote no save id (its files are not those the save listed)
    (folder / "result.json").write_text(json.dumps(info), encoding="utf-8")
    return res


def test_a_version_2_folder_with_dataset_json_still_loads(tmp_path: Path) -> None:
    res = _old_v2_folder(tmp_path / "old")
    back = nbeval.load_result(tmp_path / "old")
    assert [(r.key, r.input, r.actual_output) for r in back.dataset.rows] == [("k1", "q1", "a"), ("k2", "q2 é", "c")]
    assert back.aggregates["value"].tolist() == res.aggregates["value"].tolist() == [0.5]


def test_a_stale_dataset_parquet_beside_an_old_folder_is_ignored(tmp_path: Path) -> None:
    _old_v2_folder(tmp_path / "old")
    write_dataset_parquet(tmp_path / "old" / "dataset.parquet", LlmDataset([Row(input="other", key="zz")]))
    assert [r.key for r in nbeval.load_result(tmp_path / "old").dataset.rows] == ["k1", "k2"]


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    res = nbeval.evaluate(
        [{"key": "k1", "input": "q1", "expected_output": "a", "actual_output": "a"}], ["exact_match"], progress=False
    )
    return res.save(tmp_path / "r")


def test_a_missing_dataset_parquet_is_a_data_error(saved: Path) -> None:
    (saved / "dataset.parquet").unlink()
    with pytest.raises(DataError, match=r"dataset\.parquet.*dataset\.parquet is missing"):
        nbeval.load_result(saved)


def test_a_garbled_dataset_parquet_is_a_data_error(saved: Path) -> None:
    (saved / "dataset.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(DataError, match=r"dataset\.parquet.*not a readable Parquet file"):
        nbeval.load_result(saved)


def test_a_dataset_parquet_without_a_column_is_a_data_error(saved: Path) -> None:
    table = pq.read_table(saved / "dataset.parquet")
    pq.write_table(
        table.drop_columns(["actual_output"]).replace_schema_metadata(table.schema.metadata), saved / "dataset.parquet"
    )
    with pytest.raises(DataError, match=r"dataset\.parquet, field 'actual_output'.*missing"):
        nbeval.load_result(saved)


def test_scores_of_a_row_the_dataset_parquet_lacks_is_a_data_error(saved: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(saved, copy)
    write_dataset_parquet(copy / "dataset.parquet", LlmDataset([Row(input="q", key="other")]))
    with pytest.raises(DataError, match=r"key 'k1'.*which dataset\.parquet does not have"):
        nbeval.load_result(copy)


def test_text_spoiled_after_the_row_was_made_is_repaired_not_fatal(tmp_path: Path) -> None:
    row = Row(input="q", key="k1")
    row.actual_output = "bad \ud800 text"  # a lone surrogate UTF-8 cannot hold
    with pytest.warns(Warning, match="actual_output"):
        write_dataset_parquet(tmp_path / "d.parquet", LlmDataset([row]))
    back = read_dataset_parquet(tmp_path / "d.parquet").rows[0]
    assert back.actual_output == "bad \ufffd text"
    assert back.warnings and "actual_output" in back.warnings[0]
