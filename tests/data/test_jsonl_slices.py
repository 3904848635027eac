"""JSON-lines files cut into slices for a partitioned run read exactly as a local read does: the
same records and the same line numbers, whatever the line endings (``\\n``, ``\\r\\n``, a bare
``\\r``), blank lines, a byte-order mark or where the cuts fall.

The expected records come from Python's own text-mode reading of the file (universal newlines),
never from the slicing code under test."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from nbeval.data.readers import jsonl_slice_records, jsonl_slices
from nbeval.errors import DataError

_record = st.fixed_dictionaries(
    {"key": st.text(min_size=1, max_size=8), "input": st.text(max_size=20)},
    optional={"n": st.integers(), "tags": st.lists(st.text(max_size=4), max_size=3)},
)
_ending = st.sampled_from(["\n", "\r\n", "\r"])


def _expected(path: Path) -> list[tuple[int, Any]]:
    """(line number, record) of every non-blank line, as Python's text mode reads the file."""
    with open(path, encoding="utf-8-sig") as fh:
        return [(n, json.loads(line)) for n, line in enumerate(fh, 1) if line.strip()]


def _sliced(path: Path, per_slice: int) -> list[Any]:
    out: list[Any] = []
    for start, end, first_line, before, count in jsonl_slices(path, per_slice):
        got = [r for chunk in jsonl_slice_records(path, (start, end), first_line, chunk_rows=3) for r in chunk]
        assert len(got) == count and before == len(out)
        out.extend(got)
    return out


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(st.tuples(_record, _ending, st.sampled_from(["", "\n", "  \r\n", "\r"])), max_size=25),
    st.booleans(),
    st.integers(1, 6),
)
@example([({"key": "a", "input": "x"}, "\r", ""), ({"key": "b", "input": "y"}, "\r", "")], False, 1)
def test_slices_hold_the_records_a_local_read_finds(
    tmp_path: Path, lines: list[tuple[dict[str, Any], str, str]], bom: bool, per_slice: int
) -> None:
    text = "".join(json.dumps(rec, ensure_ascii=False) + end + blank for rec, end, blank in lines)
    path = tmp_path / "rows.jsonl"
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass"))
    try:
        want = [rec for _, rec in _expected(path)]
    except UnicodeDecodeError:
        return  # a lone surrogate drawn in a key: not UTF-8, refused by both
    assert _sliced(path, per_slice) == want


def test_a_bad_line_is_named_by_its_line_number_whatever_the_line_endings(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"key": "a"}\r{"key": "b"}\r\n\r\n{"key": \r')  # line 4 is not JSON
    n_lines = len(path.read_text(encoding="utf-8").splitlines())
    assert n_lines == 4
    with pytest.raises(DataError, match="row 4"):
        _sliced(path, 1)
