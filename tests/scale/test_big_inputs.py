"""Big inputs: Parquet files and large JSONL files read in chunks, by nbeval.load, evaluate and the CLI."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import nbeval
from nbeval.cli import main
from nbeval.data import readers
from nbeval.data.rows import rows_from_chunks
from nbeval.errors import DataError

RECORDS = [
    {
        "key": f"k{i}",
        "model_key": m,
        "input": f"q{i}",
        "expected_output": f"answer {i}",
        "actual_output": f"answer {i}" if (i + len(m)) % 3 else "no idea",
        "context": [f"doc {i}", "shared"],
    }
    for m in ("m1", "m2")
    for i in range(7)
]


def _parquet(path: Path, records: list[dict]) -> Path:
    pq.write_table(pa.Table.from_pylist(records), path, row_group_size=4)
    return path


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_parquet_rows_equal_the_same_records(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "rows.parquet", RECORDS)
    got = readers.read_parquet(path, chunk_rows=3)  # 5 chunks
    want = nbeval.LlmDataset.from_records(RECORDS)
    assert got.to_records() == want.to_records()
    assert [c.content for c in got.rows[0].context] == ["doc 0", "shared"]
    loaded = nbeval.load(path)
    assert isinstance(loaded, nbeval.LlmDataset) and loaded.to_records() == want.to_records()


def test_large_jsonl_is_read_line_by_line_with_the_same_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _jsonl(tmp_path / "rows.jsonl", RECORDS)
    whole = nbeval.load(path)  # small: read whole, as any JSON
    monkeypatch.setattr(readers, "_CHUNKED_JSONL_BYTES", 1)
    monkeypatch.setattr(readers, "_READ_CHUNK_ROWS", 4)
    calls: list[str] = []

    def counted(chunks, source):
        calls.append(source)
        return rows_from_chunks(chunks, source=source)

    monkeypatch.setattr(readers, "rows_from_chunks", counted)
    chunked = nbeval.load(path)
    assert isinstance(chunked, nbeval.LlmDataset) and isinstance(whole, nbeval.LlmDataset)
    assert calls == [str(path)]
    assert chunked.to_records() == whole.to_records() == nbeval.LlmDataset.from_records(RECORDS).to_records()


def test_a_key_repeated_in_a_later_chunk_names_the_file_row(tmp_path: Path) -> None:
    records = [*RECORDS, dict(RECORDS[1], input="q1")]  # row 15 repeats k1 for m1 (row 2)
    path = _parquet(tmp_path / "dup.parquet", records)
    with pytest.raises(
        DataError,
        match=r"dup\.parquet, row 15, field 'key': duplicate key 'k1' for model 'm1' "
        r"\(also row 2\)",
    ):
        readers.read_parquet(path, chunk_rows=4)


def test_a_different_prompt_in_a_later_chunk_warns_with_its_row(tmp_path: Path) -> None:
    records = [dict(r) for r in RECORDS]
    records[9]["input"] = "another prompt"  # k2 for m2: row 10, first seen for m1 at row 3
    path = _jsonl(tmp_path / "rows.jsonl", records)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        readers.read_jsonl_rows(path, chunk_rows=4)
    messages = [str(w.message) for w in caught]
    assert any("row 10" in m and "different prompt" in m and "(row 3)" in m for m in messages), messages


def test_a_bad_jsonl_line_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n\n" + '{"key": "k9", oops}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"rows\.jsonl, row 3: not valid JSON"):
        readers.read_jsonl_rows(path)


def test_a_file_that_is_not_parquet_is_a_data_error(tmp_path: Path) -> None:
    path = tmp_path / "rows.parquet"
    path.write_text("key,input\nk1,q\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"rows\.parquet: not a readable Parquet file"):
        nbeval.load(path)
    with pytest.raises(DataError, match="no such file"):
        nbeval.load(tmp_path / "missing.parquet")


def test_evaluate_and_the_cli_take_a_parquet_path(tmp_path: Path) -> None:
    path = _parquet(tmp_path / "rows.parquet", RECORDS)
    res = nbeval.evaluate(path, ["exact_match"], progress=False)
    ref = nbeval.evaluate(RECORDS, ["exact_match"], progress=False)
    pd.testing.assert_frame_equal(res.scores, ref.scores)
    out = tmp_path / "out"
    assert main(["run", str(path), "-e", "exact_match", "--out", str(out), "--no-progress"]) == 0
    pd.testing.assert_frame_equal(nbeval.load_result(out).scores, ref.scores)
