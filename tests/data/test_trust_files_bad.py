"""Bad files get exit 2 and a message, never a traceback (Trust, point 8).

Every read path: JSON, JSONL and CSV files that are not UTF-8, folders, nested too deeply, with a
cell over the CSV limit, empty, garbled or of the wrong shape give ``nbeval run`` exit status 2
and one line on stderr naming the file (and the row and field where there is one), and
``nbeval.load`` a :class:`~nbeval.errors.DataError`. Files written with a byte-order mark (as
Excel's "CSV UTF-8" writes them) load as if it were not there. Suspicious but readable data loads
with a :class:`~nbeval.data.fields.DataWarning`. A saved result folder that was damaged or
tampered with makes ``load_result`` raise a DataError naming the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

import nbeval
from nbeval.cli import main
from nbeval.data import tabular
from nbeval.data.fields import DataWarning
from nbeval.data.model import LlmDataset, TestSuite
from nbeval.errors import DataError
from tests.support.refusals import run_error_line, tampered_folder_error

GOOD_ROW = {"input": "q", "expected_output": "a", "actual_output": "a"}


def _write(name: str, content: str | bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        return path

    return make


def _folder(tmp: Path) -> Path:
    path = tmp / "data.json"
    path.mkdir()
    return path


def _deep(suffix: str) -> Callable[[Path], Path]:
    nested = "[" * 100_000 + "]" * 100_000
    row = '{"input": "q", "x": ' + nested + "}"
    return _write(f"deep{suffix}", row if suffix == ".jsonl" else '{"inputs": [' + row + "]}")


# (id, how to make the file, what the one line must also say besides the file's name)
BAD_FILES = [
    ("json-not-utf8", _write("d.json", b'{"inputs": [{"input": "caf\xe9"}]}'), ["not UTF-8", "line 1, column 27"]),
    ("csv-not-utf8", _write("d.csv", b"input,actual_output\nq,ok\ncaf\xe9,x\n"), ["not UTF-8", "line 3"]),
    ("jsonl-not-utf8", _write("d.jsonl", b'{"input": "q"}\n{"input": "\xff"}\n'), ["not UTF-8", "line 2"]),
    ("csv-utf16", _write("d.csv", "input\nq\n".encode("utf-16")), ["UTF-16", "save it as UTF-8"]),
    ("a-folder", _folder, ["is a folder"]),
    ("missing", lambda tmp: tmp / "nope.json", ["file not found"]),
    ("json-deep", _deep(".json"), ["nested too deeply"]),
    ("jsonl-deep", _deep(".jsonl"), ["row 1", "nested too deeply"]),
    ("json-empty", _write("d.json", ""), ["the file is empty"]),
    ("json-blank", _write("d.json", " \n\t\n"), ["the file is empty"]),
    ("jsonl-empty", _write("d.jsonl", b""), ["the file is empty"]),
    ("csv-empty", _write("d.csv", b""), ["the file is empty"]),
    ("csv-bom-only", _write("d.csv", b"\xef\xbb\xbf"), ["the file is empty"]),
    (
        "json-garbled",
        _write("d.json", '{"inputs": [{"input": "q"}\n  {"input": "r"}]}'),
        ["not valid JSON", "line 2, column 3"],
    ),
    ("jsonl-garbled", _write("d.jsonl", '{"input": "q"}\n{"input": \n'), ["row 2", "not valid JSON"]),
    ("json-huge-int", _write("d.json", '{"inputs": [{"input": "q", "n": ' + "7" * 5000 + "}]}"), ["not valid JSON"]),
    ("csv-extra-cells", _write("d.csv", "input,actual_output\nq,a\nr,b,c\n"), ["row 2", "3 cells", "2 columns"]),
    ("csv-header-twice", _write("d.csv", "input,input\nq,r\n"), ["field 'input'", "more than once"]),
    ("suite-test-not-object", _write("d.json", '{"tests": [3]}'), ["row tests[1]", "a test must be a JSON object"]),
    ("suite-case-not-object", _write("d.json", '{"tests": [{"test_cases": ["x"]}]}'), ["row tests[1].test_cases[1]"]),
    ("lab-models-not-list", _write("d.json", '{"dataset": {"inputs": []}, "models": 3}'), ["field 'models'"]),
    ("lab-dataset-not-rows", _write("d.json", '{"dataset": 3, "models": []}'), ["field 'dataset'"]),
    ("row-not-object", _write("d.json", '[{"input": "q"}, 3]'), ["row 2", "a row must be an object"]),
    ("row-bad-field", _write("d.jsonl", '{"input": "q", "cost": "cheap"}\n'), ["row 1", "field 'cost'"]),
]


@pytest.fixture
def small_csv_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CSV cell limit made small, so a test need not write a 64 MiB cell to pass it."""
    monkeypatch.setattr(tabular, "CSV_FIELD_LIMIT", 1000)


def _huge_cell(tmp: Path) -> Path:
    return _write("d.csv", "input,context\nq,short\nr," + "x" * 2000 + "\n")(tmp)


BAD_FILES.append(("csv-huge-cell", _huge_cell, ["row 2", "longer than 1,000 characters"]))


@pytest.mark.parametrize(("make", "says"), [pytest.param(m, s, id=i) for i, m, s in BAD_FILES])
@pytest.mark.usefixtures("small_csv_cells")
def test_a_bad_file_is_exit_2_and_one_line(
    make: Callable[[Path], Path], says: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path)
    line = run_error_line(path, tmp_path, capsys)
    assert line.startswith("nbeval: error: ") and path.name in line
    for words in says:
        assert words in line


@pytest.mark.parametrize(("make", "says"), [pytest.param(m, s, id=i) for i, m, s in BAD_FILES])
@pytest.mark.usefixtures("small_csv_cells")
def test_a_bad_file_is_a_data_error(make: Callable[[Path], Path], says: list[str], tmp_path: Path) -> None:
    path = make(tmp_path)
    with pytest.raises(DataError) as info:
        nbeval.load(str(path))
    assert path.name in str(info.value) and info.value.source == str(path)
    for words in says:
        assert words in str(info.value)


def test_a_cell_past_pythons_default_csv_limit_loads(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    pd.DataFrame({"input": ["q"], "context": ["x" * 300_000]}).to_csv(path, index=False)
    loaded = nbeval.load(str(path))
    assert isinstance(loaded, nbeval.LlmDataset)
    assert loaded.rows[0].context[0].content == "x" * 300_000


# -- a byte-order mark is not part of the data ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("d.csv", "input,expected_output,actual_output\nq,a,a\n"),
        ("d.json", json.dumps({"inputs": [GOOD_ROW]})),
        ("d.jsonl", json.dumps(GOOD_ROW) + "\n"),
    ],
)
def test_a_file_with_a_byte_order_mark_reads_as_excel_writes_it(
    name: str, content: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + content.encode("utf-8"))
    ds = nbeval.load(str(path))
    assert isinstance(ds, LlmDataset) and ds.rows[0].input == "q" and "\ufeffinput" not in ds.rows[0].extra
    assert main(["run", str(path), "-e", "exact_match", "--out", str(tmp_path / "out"), "--no-progress"]) == 0


def test_excels_csv_utf8_with_a_pandas_frame(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    pd.DataFrame([GOOD_ROW]).to_csv(path, index=False, encoding="utf-8-sig")
    loaded = nbeval.load(str(path))
    assert isinstance(loaded, nbeval.LlmDataset)
    assert loaded.rows[0].to_json()["input"] == "q"


# -- readable, but worth a warning ---------------------------------------------------------------


def test_a_key_given_twice_in_one_object_warns_with_file_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "d.json"
    path.write_text(
        '{"inputs": [{"input": "q"}, {"input": "r", "expected_output": "x", "expected_output": "y"}]}', encoding="utf-8"
    )
    with pytest.warns(
        DataWarning,
        match=r"d\.json, row 2, field 'expected_output': the key 'expected_output' is "
        r"given twice in one object; the last value is kept",
    ):
        ds = nbeval.load(str(path))
    assert isinstance(ds, nbeval.LlmDataset)
    assert ds.rows[1].expected_output == "y"


def test_a_key_given_twice_in_a_jsonl_line_and_in_a_chunk(tmp_path: Path) -> None:
    path = tmp_path / "d.jsonl"
    path.write_text('{"input": "q"}\n{"input": "r", "context": [{"content": "a", "content": "b"}]}\n', encoding="utf-8")
    with pytest.warns(DataWarning, match=r"d\.jsonl, row 2, field 'context\[0\]\.content'"):
        nbeval.load(str(path))


def test_one_key_with_different_prompts_for_two_models_warns() -> None:
    rows = [
        {"key": "k", "model_key": "a", "input": "what is 2+2?"},
        {"key": "k", "model_key": "b", "input": "what is 3+3?"},
    ]
    with pytest.warns(
        DataWarning,
        match=r"records, row 2, field 'input': the key 'k' has a different prompt for "
        r"model 'b' than for model 'a' \(row 1\)",
    ):
        LlmDataset.from_records(rows)


def test_a_relationship_that_points_nowhere_warns(tmp_path: Path) -> None:
    rel = [{"type": "perturbation_source", "target": "missing"}]
    with pytest.warns(
        DataWarning,
        match=r"records, row 2, field 'relationships\[0\]': the relationship "
        r"'perturbation_source' points at the key 'missing', which no row has",
    ):
        LlmDataset.from_records([{"key": "k0", "input": "q"}, {"key": "k1", "input": "r", "relationships": rel}])
    suite = {
        "tests": [{"test_cases": [{"key": "k0", "prompt": "q"}, {"key": "k1", "prompt": "r", "relationships": rel}]}]
    }
    with pytest.warns(DataWarning, match=r"row tests\[1\]\.test_cases\[2\], field 'relationships\[0\]'"):
        TestSuite.from_dict(suite)


def test_good_data_loads_without_any_warning(tmp_path: Path, recwarn: pytest.WarningsRecorder) -> None:
    rel = [{"type": "perturbation_source", "target": "k0"}]
    ds = LlmDataset.from_records(
        [
            {"key": "k0", "model_key": "a", "input": "q"},
            {"key": "k0", "model_key": "b", "input": "q"},
            {"key": "k1", "input": "r", "relationships": rel},
        ]
    )
    ds.to_json(tmp_path / "d.json")
    nbeval.load(str(tmp_path / "d.json"))
    assert not [w for w in recwarn if issubclass(w.category, DataWarning)]


# -- a damaged or tampered result folder ---------------------------------------------------------


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = [
        {"key": "k1", "input": "q1", "expected_output": "a", "actual_output": "a"},
        {"key": "k2", "input": "q2", "expected_output": "b", "actual_output": "c"},
    ]
    # the long table as JSON lines (format version 1), whose lines the cases below edit
    return nbeval.evaluate(rows, ["exact_match"], progress=False).save(
        tmp_path_factory.mktemp("saved") / "r", scores_format="jsonl"
    )


def _edit_line(name: str, line: int, change: Callable[[dict], object]) -> Callable[[Path], None]:
    """Change line ``line`` of ``name``: ``change`` edits the record in place (returning None) or
    returns what to write instead (a text as it is, anything else as JSON)."""

    def tamper(folder: Path) -> None:
        path = folder / name
        lines = path.read_text(encoding="utf-8").splitlines()
        rec = json.loads(lines[line - 1])
        new = change(rec)
        lines[line - 1] = new if isinstance(new, str) else json.dumps(rec if new is None else new)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    return tamper


def _drop(column: str) -> Callable[[dict], None]:
    def edit(rec: dict) -> None:
        del rec[column]

    return edit


def _replace(name: str, content: str | bytes) -> Callable[[Path], None]:
    def tamper(folder: Path) -> None:
        path = folder / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")

    return tamper


def _remove(name: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).unlink()


# (id, tamper, the file named, what the message also says)
TAMPERED = [
    ("result-json-garbled", _replace("result.json", '{"meta": '), "result.json", ["not valid JSON"]),
    ("result-json-a-list", _replace("result.json", "[]"), "result.json", ["expected a JSON object"]),
    ("result-json-meta-text", _replace("result.json", '{"meta": "x"}'), "result.json", ["field 'meta'"]),
    (
        "result-json-newer",
        _replace("result.json", '{"meta": {"format_version": 99}}'),
        "result.json",
        ["format version 99", "upgrade nbeval"],
    ),
    ("scores-missing", _remove("scores.jsonl"), "scores.jsonl", ["scores.jsonl is missing"]),
    (
        "scores-garbled-line",
        _edit_line("scores.jsonl", 2, lambda r: "{oops"),
        "scores.jsonl",
        ["row 2", "not valid JSON"],
    ),
    (
        "scores-line-not-object",
        _edit_line("scores.jsonl", 1, lambda r: [1, 2]),
        "scores.jsonl",
        ["row 1", "expected an object"],
    ),
    (
        "scores-column-missing",
        _edit_line("scores.jsonl", 2, _drop("value")),
        "scores.jsonl",
        ["row 2, field 'value'", "missing"],
    ),
    (
        "scores-column-unknown",
        _edit_line("scores.jsonl", 1, lambda r: r.update(extra=1)),
        "scores.jsonl",
        ["row 1, field 'extra'", "unknown column"],
    ),
    (
        "scores-value-text",
        _edit_line("scores.jsonl", 2, lambda r: r.update(value="high")),
        "scores.jsonl",
        ["row 2, field 'value'", "must be a number or null"],
    ),
    (
        "scores-passed-text",
        _edit_line("scores.jsonl", 1, lambda r: r.update(passed="yes")),
        "scores.jsonl",
        ["field 'passed'", "true or false"],
    ),
    (
        "scores-skipped-null",
        _edit_line("scores.jsonl", 1, lambda r: r.update(skipped=None)),
        "scores.jsonl",
        ["field 'skipped'", "got null"],
    ),
    (
        "scores-key-number",
        _edit_line("scores.jsonl", 1, lambda r: r.update(key=3)),
        "scores.jsonl",
        ["field 'key'", "must be text"],
    ),
    (
        "scores-key-unknown",
        _edit_line("scores.jsonl", 2, lambda r: r.update(key="k9")),
        "scores.jsonl",
        ["row 2", "'k9'", "dataset.json does not have"],
    ),
    ("scores-not-utf8", _replace("scores.jsonl", b'{"key": "\xff"}\n'), "scores.jsonl", ["not UTF-8"]),
    (
        "aggregates-n-text",
        _edit_line("aggregates.jsonl", 1, lambda r: r.update(n="2")),
        "aggregates.jsonl",
        ["row 1, field 'n'", "whole number"],
    ),
    (
        "metrics-column-missing",
        _edit_line("metrics.jsonl", 1, _drop("direction")),
        "metrics.jsonl",
        ["field 'direction'"],
    ),
    ("metrics-missing", _remove("metrics.jsonl"), "metrics.jsonl", ["missing"]),
    ("dataset-garbled", _replace("dataset.json", '{"inputs": [}'), "dataset.json", ["not valid JSON"]),
    ("dataset-empty", _replace("dataset.json", ""), "dataset.json", ["empty"]),
    ("dataset-missing", _remove("dataset.json"), "dataset.json", ["file not found"]),
]


@pytest.mark.parametrize(("tamper", "file", "says"), [pytest.param(t, f, s, id=i) for i, t, f, s in TAMPERED])
def test_a_tampered_result_folder_is_a_data_error(
    saved: Path, tamper: Callable[[Path], None], file: str, says: list[str], tmp_path: Path
) -> None:
    text = tampered_folder_error(saved, tamper, tmp_path)
    assert file in text
    for words in says:
        assert words in text


@pytest.mark.parametrize("what", ["missing", "a-file"])
def test_load_result_of_no_folder_is_a_data_error(tmp_path: Path, what: str) -> None:
    path = tmp_path / "r"
    if what == "a-file":
        path.write_text("x", encoding="utf-8")
    with pytest.raises(DataError, match=r"give the folder result\.save"):
        nbeval.load_result(path)
