"""Saving is atomic: a save, report or CSV that fails half-way leaves the previous files whole."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.errors import DataError
from nbeval.results.storage import dataset_file
from nbeval.results.storage import saving as saving_module

FILES = ["aggregates.jsonl", "dataset.parquet", "metrics.jsonl", "result.json", "scores.parquet"]


def _result(answer: str, n: int = 3) -> nbeval.EvaluationResult:
    rows = [{"key": f"c{i}", "input": f"q{i}", "expected_output": "yes", "actual_output": answer} for i in range(n)]
    return nbeval.evaluate(rows, ["exact_match"], progress=False)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@contextlib.contextmanager
def _disk_full_after(n_bytes: int) -> Iterator[None]:
    """Any file this process writes fails past ``n_bytes`` (EFBIG), as on a full disk."""
    resource = pytest.importorskip("resource")
    import signal

    if sys.platform != "linux":
        pytest.skip("file size limits are used as on Linux")
    old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    old = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (n_bytes, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, old)
        signal.signal(signal.SIGXFSZ, old_handler)


@pytest.mark.parametrize("fail_at", [1, 2])  # aggregates.jsonl, metrics.jsonl (scores are Parquet)
def test_a_save_that_fails_half_way_keeps_the_previous_result(
    fail_at: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "run"
    _result("yes").save(folder)
    before = _snapshot(folder)
    assert sorted(before) == FILES

    real = saving_module.write_records
    calls = []

    def fails_later(path: Path, df: Any) -> None:  # writes the first table(s), then the disk "fills up"
        calls.append(path)
        if len(calls) == fail_at:
            path.write_text('{"key": "half', encoding="utf-8")
            raise OSError("No space left on device")
        real(path, df)

    monkeypatch.setattr(saving_module, "write_records", fails_later)
    with pytest.raises(OSError, match="No space left"):
        _result("no").save(folder)
    assert _snapshot(folder) == before  # every file as it was, and nothing left aside
    back = nbeval.load_result(folder)
    assert set(back.dataset.to_pandas()["actual_output"]) == {"yes"}
    assert back.aggregates["value"].tolist() == [1.0]


def test_a_save_that_fails_writing_the_dataset_keeps_the_previous_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "run"
    _result("yes").save(folder)
    before = _snapshot(folder)

    def interrupted(path: Any, dataset: Any) -> Any:
        Path(path).write_bytes(b"PAR1 half")
        raise KeyboardInterrupt

    monkeypatch.setattr(dataset_file, "write_dataset_parquet", interrupted)
    with pytest.raises(KeyboardInterrupt):
        _result("no").save(folder)
    assert _snapshot(folder) == before


def test_a_save_on_a_full_disk_keeps_the_previous_result(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    _result("yes").save(folder)
    before = _snapshot(folder)
    # its dataset.parquet is larger than the limit below (text that does not compress), its scores are not
    big = _result(" ".join(f"no{i * 7919 % 10007}" for i in range(2000)))
    with _disk_full_after(4000), pytest.raises(OSError):
        big.save(folder)
    assert _snapshot(folder) == before
    assert set(nbeval.load_result(folder).dataset.to_pandas()["actual_output"]) == {"yes"}


def test_a_save_leaves_other_files_in_the_folder_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    _result("yes").save(tmp_path)
    _result("no").save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*FILES, "notes.txt"])
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert set(nbeval.load_result(tmp_path).dataset.to_pandas()["actual_output"]) == {"no"}


def test_save_to_a_file_is_a_clear_error_that_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text("mine", encoding="utf-8")
    with pytest.raises(DataError, match="is a file, not a folder"):
        _result("yes").save(path)
    assert path.read_text(encoding="utf-8") == "mine"


def test_a_report_that_fails_half_way_keeps_the_previous_report(tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    _result("yes").to_html(path)
    before = path.read_bytes()
    assert len(before) > 3000
    with _disk_full_after(1000), pytest.raises(OSError):
        _result("no").to_html(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_a_csv_that_fails_half_way_keeps_the_previous_csv(tmp_path: Path) -> None:
    path = tmp_path / "scores.csv"
    _result("yes " * 100, n=20).to_csv(path)
    before = path.read_bytes()
    assert len(before) > 1000
    with _disk_full_after(500), pytest.raises(OSError):
        _result("no " * 100, n=20).to_csv(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scores.csv"]
