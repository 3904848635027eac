"""Red-team inputs that once crashed ``nbeval run`` with a traceback (issue 35, point 14).

A CSV cell nested 100,000 levels deep (in the ``context`` column or in an extra column), an extra
CSV column holding a 5,000-digit number (over Python's int-string conversion limit) and a Parquet
string column that is not valid UTF-8 must each give exit status 2 and one line
``nbeval: error: FILE, row N, field 'F': ...``.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.refusals import run_error_line

DEEP = "[" * 100_000 + "]" * 100_000


def _csv(extra: dict[str, str]) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "data.csv"
        rows = [
            {"input": "q0", "expected_output": "a", "actual_output": "a"},
            {"input": "q", "expected_output": "a", "actual_output": "a", **extra},
        ]
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=["input", "expected_output", "actual_output", *extra])
            writer.writeheader()
            writer.writerows(rows)
        return path

    return make


def _parquet_not_utf8(tmp: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    raw = pa.array([b"q0", b"q1", b"bad \xff\xfe bytes"], pa.binary())
    text = pa.StringArray.from_buffers(len(raw), raw.buffers()[1], raw.buffers()[2], raw.buffers()[0])
    path = tmp / "data.parquet"
    pq.write_table(pa.table({"input": text, "expected_output": ["a"] * 3, "actual_output": ["a"] * 3}), path)
    return path


CASES = [
    ("deep-context", _csv({"context": DEEP}), "row 2", "field 'context'", "nested too deeply"),
    ("deep-extra", _csv({"meta": DEEP}), "row 2", "field 'meta'", "nested too deeply"),
    ("long-number-extra", _csv({"meta": "9" * 5000}), "row 2", "field 'meta'", "digits"),
    ("long-number-in-context", _csv({"context": "[" + "9" * 5000 + "]"}), "row 2", "field 'context'", "digits"),
    ("parquet-not-utf8", _parquet_not_utf8, "row 3", "field 'input'", "UTF-8"),
]


@pytest.mark.parametrize(("make", "row", "field", "why"), [pytest.param(*c[1:], id=c[0]) for c in CASES])
def test_a_red_team_file_is_exit_2_and_one_line(
    make: Callable[[Path], Path], row: str, field: str, why: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path)
    line = run_error_line(path, tmp_path, capsys)
    assert line.startswith(f"nbeval: error: {path}"), line
    assert row in line and field in line and why in line, line
