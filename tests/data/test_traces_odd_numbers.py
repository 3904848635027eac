"""Odd numbers in trace files are a DataError naming the file, the span and the field (issue 43).

Before: ``²`` as an attribute's list index and an index of 4,400 digits crashed ``int()``
(ValueError), and a time of 400 digits crashed the duration (OverflowError). Each case here is
written the way an exporter writes the span, with one number changed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nbeval.data.fields import DataWarning
from nbeval.data.readers import load
from nbeval.data.traces import trace_records
from nbeval.errors import DataError
from tests.data.test_traces import _otlp, _span

TRACE, ROOT = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
WHERE = f"trace {TRACE} span {ROOT}"
BASE = {"openinference.span.kind": "LLM", "input.value": "hi", "output.value": "hello"}


def _with(attrs: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    span = _span(TRACE, ROOT, None, "llm", (0, 10), BASE | (attrs or {}))
    return _otlp([span | fields])


ODD = [  # (id, document, field named, what the message says)
    (
        "superscript-index",
        _with({"llm.input_messages.².message.role": "user"}),
        "llm.input_messages.².message.role",
        "² is not a list index",
    ),
    (
        "arabic-indic-index",
        _with({"llm.output_messages.٣.message.role": "assistant"}),
        "llm.output_messages.٣.message.role",
        "٣ is not a list index",
    ),
    (
        "4400-digit-index",
        _with({"llm.input_messages." + "9" * 4400 + ".message.role": "user"}),
        "llm.input_messages." + "9" * 100,
        "a number of 4400 digits is not a list index",
    ),
    ("400-digit-end", _with(endTimeUnixNano="9" * 400), "endTimeUnixNano", "is not a time"),
    ("400-digit-start", _with(startTimeUnixNano="9" * 400), "startTimeUnixNano", "is not a time"),
    ("end-past-2**64", _with(endTimeUnixNano=str(2**64)), "endTimeUnixNano", "below 2**64"),
    ("int-end-past-2**64", _with(endTimeUnixNano=2**70), "endTimeUnixNano", "below 2**64"),
    ("float-start", _with(startTimeUnixNano=1.7e18), "startTimeUnixNano", "is not a time"),
    ("superscript-time", _with(startTimeUnixNano="1²"), "startTimeUnixNano", "is not a time"),
    ("spaced-time", _with(startTimeUnixNano=" 17 "), "startTimeUnixNano", "is not a time"),
    (
        "document-index",
        _with({"openinference.span.kind": "RETRIEVER", "retrieval.documents.¹.document.content": "x"}),
        "retrieval.documents.¹",
        "¹ is not a list index",
    ),
]


@pytest.mark.parametrize(("doc", "field", "says"), [pytest.param(*o[1:], id=o[0]) for o in ODD])
def test_an_odd_number_is_a_data_error_naming_file_span_and_field(doc: dict, field: str, says: str) -> None:
    with pytest.raises(DataError) as info:
        trace_records(doc, source="odd.json")
    err = info.value
    assert err.source == "odd.json" and err.row == WHERE
    assert str(err.field).startswith(field) and says in str(err)
    assert len(str(err)) < 400  # a 4,400-digit number is not written back in full


def test_phoenix_odd_times_and_ids_are_data_errors() -> None:
    span = {"name": "x", "context": {"trace_id": "t", "span_id": "s"}, "span_kind": "LLM", "status_code": "OK"}
    for start, says in [
        ("9" * 400, "is not a time"),
        ("2026-13-01T00:00:00Z", "ISO 8601"),
        ("1969-12-31T23:59:59Z", "after 1970"),
        ("2026-07-09T00:00:0²Z", "ISO 8601"),
        (True, "is not a time"),
    ]:
        with pytest.raises(DataError, match=says) as info:
            trace_records([span | {"start_time": start}], source="p.json")
        assert (info.value.row, info.value.field) == ("trace t span s (item 1)", "start_time")
    with pytest.raises(DataError, match="is not an id") as info:
        trace_records([span | {"start_time": 1, "context": {"trace_id": 10**400, "span_id": "s"}}], source="p.json")
    assert info.value.field == "context.trace_id" and len(str(info.value)) < 300


def test_the_cli_exits_2_with_one_line_naming_file_and_span(tmp_path: Path) -> None:
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps(_with(endTimeUnixNano="9" * 400)) + "\n", encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "nbeval.cli", "run", str(path), "-e", "exact_match", "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert f"{path}, row {WHERE} (line 1), field 'endTimeUnixNano'" in lines[0]


def test_times_at_the_edges_are_read() -> None:
    """2**64 - 1 is OTLP's largest time; the duration is computed without overflow."""
    (record,) = trace_records(_with(startTimeUnixNano="1", endTimeUnixNano=str(2**64 - 1)), source="t")
    assert record["actual_duration"] == (2**64 - 2) / 1e9


def test_a_huge_number_as_json_is_a_data_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    text = json.dumps(_with(startTimeUnixNano=0)).replace(
        '"startTimeUnixNano": 0', '"startTimeUnixNano": ' + "1" * 5000
    )
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(DataError) as info:
        load(path)
    assert info.value.source == str(path) and info.value.row == 1
    # says what is wrong with the file, not Python's advice to raise the interpreter's digit limit
    assert "5000 digits" in str(info.value) and "set_int_max_str_digits" not in str(info.value)


def test_a_trace_that_ends_before_it_starts_has_no_duration() -> None:
    # a clock that ran backwards gave actual_duration -1.0 s, shown as a measured duration
    doc = _with(startTimeUnixNano="2000000000", endTimeUnixNano="1000000000")
    with pytest.warns(DataWarning, match="ends 1 s before it starts") as caught:
        (record,) = trace_records(doc, source="t.json")
    assert "actual_duration" not in record
    assert WHERE in str(caught[0].message)
    (fine,) = trace_records(_with(startTimeUnixNano="1000000000", endTimeUnixNano="3500000000"), source="t.json")
    assert fine["actual_duration"] == 2.5
