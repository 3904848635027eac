"""Property-based tests (Hypothesis) of the dataset and suite readers (issue 43, "make the class of
bug hard to write again").

* Round trip: rows of any text (unicode, newlines, quotes, commas, formula-like starts, empty
  strings), numbers and ``expected_tool_calls`` (``None``, ``[]`` or calls) written as records,
  JSON, JSONL, CSV and a DataFrame read back equal, field by field.
* Malformed input: any JSON value as records or as a suite, any text as a JSON, JSONL or CSV file,
  is read or refused with a :class:`~nbeval.errors.DataError`, never another exception.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import nbeval
from nbeval.data.model import LlmDataset
from nbeval.data.readers import load
from nbeval.data.rows import rows_from_records
from nbeval.errors import DataError

pytestmark = pytest.mark.filterwarnings("ignore")

# any text a person or a model may write: every plane, newlines, CSV's and spreadsheets' specials
TEXT = st.text(
    alphabet=st.one_of(st.characters(exclude_categories=["Cs"]), st.sampled_from("\n\r,\"=+-@\t '[]{}")),
    max_size=30,
)
CALL = st.fixed_dictionaries(
    {"name": st.text(min_size=1, max_size=8), "arguments": st.dictionaries(st.text(max_size=5), TEXT, max_size=2)}
)
NUMBER = st.one_of(st.none(), st.floats(min_value=0, max_value=1e9, allow_nan=False))


@st.composite
def records(draw: Any) -> list[dict[str, Any]]:
    n = draw(st.integers(min_value=1, max_value=4))
    keys = draw(st.lists(st.text(min_size=1, max_size=10), min_size=n, max_size=n, unique=True))
    out = []
    for key in keys:
        rec: dict[str, Any] = {
            "key": key,
            "model_key": draw(st.sampled_from(["m", "model-é"])),
            "input": draw(TEXT),
            "expected_output": draw(st.one_of(st.none(), TEXT)),
            "actual_output": draw(st.one_of(st.none(), TEXT)),
            "categories": draw(st.lists(st.text(min_size=1, max_size=8), max_size=2)),
            "cost": draw(NUMBER),
        }
        calls = draw(st.one_of(st.none(), st.just([]), st.lists(CALL, min_size=1, max_size=2)))
        if calls is not None:
            rec["expected_tool_calls"] = calls
        out.append(rec)
    return out


def _fields(ds: LlmDataset) -> list[dict[str, Any]]:
    return [r.to_json() for r in ds.rows]


def _write(tmp: Path, ds: LlmDataset, kind: str) -> Any:
    if kind == "records":
        return ds.to_records()
    if kind == "dataframe":
        return ds.to_pandas()
    path = tmp / f"rows.{kind}"
    if kind == "json":
        ds.to_json(str(path))
    elif kind == "jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ds.to_records()), encoding="utf-8")
    else:
        ds.to_csv(str(path))
    return str(path)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(recs=records(), kind=st.sampled_from(["records", "json", "jsonl", "csv", "dataframe"]))
# found by this test: str.splitlines cut a JSONL row at U+0085 (and U+2028, ...) inside its text
@example(recs=[{"key": "0", "model_key": "m", "input": "\x85", "categories": [], "cost": None}], kind="jsonl")
@example(recs=[{"key": "0", "model_key": "m", "input": "a\u2028b", "expected_tool_calls": []}], kind="jsonl")
def test_rows_written_and_read_back_are_the_same(tmp_path: Path, recs: list[dict[str, Any]], kind: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = LlmDataset.from_records(recs)
        back = LlmDataset.from_json(_write(tmp_path, ds, kind))
    assert _fields(back) == _fields(ds)
    assert [r.expected_tool_calls for r in back.rows] == [r.expected_tool_calls for r in ds.rows]


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=20,
)
#: Records that look like rows: the known field names with any JSON value.
ROW_FIELDS = st.sampled_from(
    [
        "key",
        "model_key",
        "input",
        "expected_output",
        "actual_output",
        "context",
        "expected_context",
        "categories",
        "relationships",
        "guidelines",
        "cost",
        "actual_duration",
        "output_condition",
        "messages",
        "expected_tool_calls",
        "reference_topics",
        "constraints",
        "user_input",
        "reference_tool_calls",
        "request",
        "response",
    ]
)
ROWISH = st.lists(st.dictionaries(ROW_FIELDS, JSON, max_size=6), max_size=4)


def _read_or_refuse(read: Any) -> None:
    """``read()`` succeeds or raises a DataError (nbeval's, naming the source); anything else fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            read()
        except DataError as exc:
            assert str(exc)


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(ROWISH, JSON))
def test_any_json_as_records_is_read_or_a_data_error(value: Any) -> None:
    _read_or_refuse(lambda: rows_from_records(value if isinstance(value, list) else [value]))


@settings(max_examples=200, deadline=None)
@given(value=st.one_of(JSON, st.fixed_dictionaries({"tests": st.lists(st.dictionaries(TEXT, JSON), max_size=3)})))
def test_any_json_as_a_suite_is_read_or_a_data_error(value: Any) -> None:
    _read_or_refuse(lambda: nbeval.TestSuite.from_dict(value).to_dataset())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT, suffix=st.sampled_from([".json", ".jsonl", ".csv"]))
def test_any_text_as_a_file_is_read_or_a_data_error(tmp_path: Path, text: str, suffix: str) -> None:
    path = tmp_path / f"f{suffix}"
    path.write_text(text, encoding="utf-8")
    _read_or_refuse(lambda: load(str(path)))


@settings(max_examples=100, deadline=None)
@given(columns=st.dictionaries(ROW_FIELDS, st.lists(JSON, min_size=2, max_size=2), max_size=5))
def test_any_dataframe_is_read_or_a_data_error(columns: dict[str, list[Any]]) -> None:
    df = pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in columns.items()})
    _read_or_refuse(lambda: load(df))


@st.composite
def suites(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(min_value=1, max_value=4))
    keys = draw(st.lists(st.text(min_size=1, max_size=8), min_size=n, max_size=n, unique=True))
    cases = []
    for key in keys:
        case: dict[str, Any] = {"key": key, "prompt": draw(TEXT), "expected_output": draw(st.one_of(st.none(), TEXT))}
        calls = draw(st.one_of(st.none(), st.just([]), st.lists(CALL, min_size=1, max_size=2)))
        if calls is not None:
            case["expected_tool_calls"] = calls
        cases.append(case)
    return {"name": draw(TEXT), "tests": [{"test_cases": cases}]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=suites())
def test_a_suite_written_and_read_back_is_the_same(tmp_path: Path, data: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        suite = nbeval.TestSuite.from_dict(data)
        path = tmp_path / "suite.json"
        suite.save(str(path))
        back = nbeval.TestSuite.from_json(str(path))
    assert back.to_json() == suite.to_json()
    calls = [c.get("expected_tool_calls") for c in data["tests"][0]["test_cases"]]
    assert [r.expected_tool_calls for r in back.to_dataset().rows] == calls


@settings(max_examples=60, deadline=None)
@given(recs=records(), seed=st.randoms(use_true_random=False))
def test_the_fingerprint_ignores_row_order_and_tells_none_expected_from_not_given(
    recs: list[dict[str, Any]], seed: Any
) -> None:
    from nbeval.results.storage.fingerprint import dataset_fingerprint

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = LlmDataset.from_records(recs)
        shuffled = list(recs)
        seed.shuffle(shuffled)
        assert dataset_fingerprint(LlmDataset.from_records(shuffled)) == dataset_fingerprint(ds)
        unsaid = [r for r in recs if "expected_tool_calls" not in r]
        if unsaid:  # saying "no call expected" on a row that said nothing is another dataset
            said = [{**r, "expected_tool_calls": []} if r is unsaid[0] else r for r in recs]
            assert dataset_fingerprint(LlmDataset.from_records(said)) != dataset_fingerprint(ds)


def test_a_repeated_malformed_condition_names_each_row_it_is_on() -> None:
    # conditions are checked once per text (each case's comes once per model): the second row
    # with the same bad text must still be refused, and named, not pass on the first's verdict
    good = {"input": "q", "key": "a", "model_key": "m1", "output_condition": '"Paris" AND NOT "Lyon"'}
    bad = {"input": "q", "key": "b", "model_key": "m1", "output_condition": '"Paris" AND AND'}
    rows = rows_from_records([good, {**good, "model_key": "m2"}], source="s.jsonl")
    assert [r.output_condition for r in rows] == ['"Paris" AND NOT "Lyon"'] * 2
    for n in (1, 2):
        with pytest.raises(DataError, match=r"row 2, field 'output_condition': malformed condition") as info:
            rows_from_records([good, bad], source=f"s{n}.jsonl")
        assert f"s{n}.jsonl" in str(info.value)
