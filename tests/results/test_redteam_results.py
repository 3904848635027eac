"""A saved result folder tampered with after it was saved: a DataError, never a crash or a quiet load.

Red-team findings (issue 35, point 15). ``load_result`` promises a whole, untouched result: a file
it cannot read (damaged Parquet metadata, text that is not UTF-8, run facts of the wrong shape)
and a file that reads but does not agree with the others (a score given twice, scores of an
evaluator the result does not have, a dataset row given twice, a condition that does not parse,
two primary metrics for one evaluator, a label past its cap) each raise a
:class:`~nbeval.errors.DataError` on one line naming the file (and the row and field where
there is one).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import nbeval
from nbeval.errors import DataError
from nbeval.results.storage.limits import MAX_LABEL_CHARS, MAX_STORED_CHARS
from tests.support.refusals import tampered_folder_error

Tamper = Callable[[Path], None]


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo lab scored by three cheap evaluators, with one human label, saved (format 3)."""
    result = nbeval.evaluate(nbeval.demo_lab(), ["exact_match", "rouge", "text_matching"], progress=False)
    result.set_labels([{"key": "revenue", "model_key": "gpt-4o-mini", "evaluator": "text_matching", "label": "pass"}])
    folder = result.save(tmp_path_factory.mktemp("saved") / "r")
    result.save(folder.parent / "v1", scores_format="jsonl")
    return folder


# -- ways to tamper with a file -------------------------------------------------------------------


def _parquet(name: str, change: Callable[[pa.Table], pa.Table]) -> Tamper:
    """Rewrite the Parquet file ``name`` as ``change`` makes its table (metadata kept unless changed)."""

    def tamper(folder: Path) -> None:
        path = folder / name
        table = change(pq.read_table(path))
        pq.write_table(table, path)

    return tamper


def _metadata(value: bytes) -> Tamper:
    return _parquet(
        "dataset.parquet", lambda t: t.replace_schema_metadata({**(t.schema.metadata or {}), b"nbeval.dataset": value})
    )


def _set_cell(column: str, row: int, value: object) -> Callable[[pa.Table], pa.Table]:
    """Set ``column`` of ``row`` (1-based) to ``value`` (bytes: stored as they are, UTF-8 or not)."""

    def change(table: pa.Table) -> pa.Table:
        i = table.schema.get_field_index(column)
        typ = table.schema.field(i).type
        values = (
            table.column(column).to_pylist()
            if not isinstance(value, bytes)
            else [None if v is None else v.encode() for v in table.column(column).to_pylist()]
        )
        values[row - 1] = value
        if isinstance(value, bytes):
            array = pa.array(values, pa.binary()).view(typ)  # not checked: the bytes go in as they are
        else:
            array = pa.array(values, typ)
        return table.set_column(i, table.schema.field(i), array)

    return change


def _duplicate_row(row: int) -> Callable[[pa.Table], pa.Table]:
    """The table with its row ``row`` (1-based) given again at the end."""
    return lambda t: pa.concat_tables([t, t.slice(row - 1, 1)])


def _json(name: str, change: Callable[[dict], None]) -> Tamper:
    def tamper(folder: Path) -> None:
        path = folder / name
        data = json.loads(path.read_text(encoding="utf-8"))
        change(data)
        path.write_text(json.dumps(data), encoding="utf-8")

    return tamper


def _meta(field: str, value: object) -> Tamper:
    return _json("result.json", lambda d: d["meta"].update({field: value}))


def _lines(name: str, change: Callable[[list[dict]], None]) -> Tamper:
    """Edit the records of a JSON-lines file as a list."""

    def tamper(folder: Path) -> None:
        path = folder / name
        recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        change(recs)
        path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")

    return tamper


def _set(line: int, **values: object) -> Callable[[list[dict]], None]:
    return lambda recs: recs[line - 1].update(values)


def _again(line: int) -> Callable[[list[dict]], None]:
    return lambda recs: recs.append(dict(recs[line - 1]))


def _label(text: str) -> Tamper:
    def tamper(folder: Path) -> None:
        (folder / "labels.csv").write_text(
            f"key,model_key,evaluator,label\r\nrevenue,gpt-4o-mini,text_matching,{text}\r\n", encoding="utf-8"
        )

    return tamper


# (id, tamper, the file named, what the message also says)
TAMPERED: list[tuple[str, Tamper, str, list[str]]] = [
    # what crashed: Parquet metadata that is not JSON, nested too deeply, not UTF-8, not an object
    ("dataset-metadata-not-json", _metadata(b'{"layout": '), "dataset.parquet", ["metadata", "not valid JSON"]),
    (
        "dataset-metadata-deep",
        _metadata(b"[" * 100_000 + b"]" * 100_000),
        "dataset.parquet",
        ["metadata", "nested too deeply"],
    ),
    ("dataset-metadata-not-utf8", _metadata(b'{"layout": "\xff"}'), "dataset.parquet", ["metadata", "not UTF-8"]),
    ("dataset-metadata-not-object", _metadata(b"[1]"), "dataset.parquet", ["metadata", "JSON object"]),
    # text that is not UTF-8 inside a Parquet column
    (
        "dataset-text-not-utf8",
        _parquet("dataset.parquet", _set_cell("input", 2, b"caf\xe9")),
        "dataset.parquet",
        ["row 2, field 'input'", "not UTF-8"],
    ),
    (
        "scores-text-not-utf8",
        _parquet("scores.parquet", _set_cell("rationale", 3, b"caf\xe9")),
        "scores.parquet",
        ["row 3, field 'rationale'", "not UTF-8"],
    ),
    (
        "scores-key-not-utf8",
        _parquet("scores.parquet", _set_cell("key", 4, b"\xff")),
        "scores.parquet",
        ["row 4, field 'key'", "not UTF-8"],
    ),
    # run facts of the wrong shape (meta.usage as a list crashed to_html later)
    ("meta-usage-a-list", _meta("usage", [1, 2]), "result.json", ["field 'meta.usage'", "object"]),
    ("meta-usage-text-value", _meta("usage", {"calls": "many"}), "result.json", ["field 'meta.usage.calls'"]),
    ("meta-duration-text", _meta("duration_s", "long"), "result.json", ["field 'meta.duration_s'"]),
    ("meta-cancelled-text", _meta("cancelled", "no"), "result.json", ["field 'meta.cancelled'"]),
    ("meta-version-number", _meta("nbeval_version", 3), "result.json", ["field 'meta.nbeval_version'"]),
    ("meta-evaluators-text", _meta("evaluators", "rouge"), "result.json", ["field 'meta.evaluators'"]),
    (
        "explanations-not-nested",
        _json("result.json", lambda d: d.update(explanations={"rouge": [1]})),
        "result.json",
        ["field 'explanations.rouge'"],
    ),
    # what loaded quietly: a score given twice (agreement().n doubled), scores of no evaluator of the result
    (
        "scores-duplicated",
        _parquet("scores.parquet", _duplicate_row(1)),
        "scores.parquet",
        ["row 301", "also row 1", "'revenue'"],
    ),
    (
        "scores-unknown-evaluator",
        _parquet("scores.parquet", _set_cell("evaluator", 5, "bogus")),
        "scores.parquet",
        ["row 5, field 'evaluator'", "'bogus'", "metrics.jsonl"],
    ),
    (
        "scores-unknown-metric",
        _parquet("scores.parquet", _set_cell("metric", 1, "rouge_9")),
        "scores.parquet",
        ["row 1, field 'metric'", "'rouge_9'"],
    ),
    (
        "scores-text-too-long",
        _parquet("scores.parquet", _set_cell("label", 2, "x" * (MAX_STORED_CHARS + 500))),
        "scores.parquet",
        ["row 2, field 'label'", "20,000"],
    ),
    # a dataset row given twice, a condition never checked
    (
        "dataset-duplicated",
        _parquet("dataset.parquet", _duplicate_row(2)),
        "dataset.parquet",
        ["row 31", "row 2", "'revenue-perturbed'"],
    ),
    (
        "dataset-bad-condition",
        _parquet("dataset.parquet", _set_cell("output_condition", 1, '"a" AND (')),
        "dataset.parquet",
        ["row 1, field 'output_condition'", "malformed condition"],
    ),
    # two primary metrics for one evaluator, and the other tables' agreement
    (
        "metrics-two-primaries",
        _lines("metrics.jsonl", _set(2, primary=True)),
        "metrics.jsonl",
        ["row 4, field 'primary'", "'rouge'", "row 2"],
    ),
    (
        "metrics-no-primary",
        _lines("metrics.jsonl", _set(1, primary=False)),
        "metrics.jsonl",
        ["'exact_match'", "no primary"],
    ),
    ("metrics-duplicated", _lines("metrics.jsonl", _again(3)), "metrics.jsonl", ["row 11", "also row 3"]),
    (
        "metrics-direction",
        _lines("metrics.jsonl", _set(1, direction="up")),
        "metrics.jsonl",
        ["row 1, field 'direction'", "'higher' or 'lower'"],
    ),
    ("aggregates-duplicated", _lines("aggregates.jsonl", _again(1)), "aggregates.jsonl", ["also row 1"]),
    (
        "aggregates-unknown-evaluator",
        _lines("aggregates.jsonl", _set(2, evaluator="bogus")),
        "aggregates.jsonl",
        ["row 2, field 'evaluator'", "'bogus'"],
    ),
    (
        "aggregates-unknown-model",
        _lines("aggregates.jsonl", _set(1, model_key="gpt-9")),
        "aggregates.jsonl",
        ["row 1, field 'model_key'", "'gpt-9'"],
    ),
    # a label past its cap (a 70 MB one loaded)
    ("label-too-long", _label("x" * (MAX_LABEL_CHARS + 1)), "labels.csv", ["row 1, field 'label'", "1,000"]),
]


@pytest.mark.parametrize(("tamper", "file", "says"), [pytest.param(t, f, s, id=i) for i, t, f, s in TAMPERED])
def test_a_tampered_result_folder_is_a_data_error(
    saved: Path, tamper: Tamper, file: str, says: list[str], tmp_path: Path
) -> None:
    text = tampered_folder_error(saved, tamper, tmp_path)
    assert file in text
    for words in says:
        assert words in text, text


# the long table as JSON lines (format version 1): the same checks
TAMPERED_V1: list[tuple[str, Tamper, list[str]]] = [
    ("scores-duplicated", _lines("scores.jsonl", _again(7)), ["row 301", "also row 7"]),
    (
        "scores-unknown-evaluator",
        _lines("scores.jsonl", _set(1, evaluator="bogus")),
        ["row 1, field 'evaluator'", "'bogus'"],
    ),
    (
        "scores-text-too-long",
        _lines("scores.jsonl", _set(1, rationale="x" * (MAX_STORED_CHARS + 500))),
        ["row 1, field 'rationale'"],
    ),
]


@pytest.mark.parametrize(("tamper", "says"), [pytest.param(t, s, id=i) for i, t, s in TAMPERED_V1])
def test_a_tampered_jsonl_result_is_a_data_error(saved: Path, tamper: Tamper, says: list[str], tmp_path: Path) -> None:
    folder = tmp_path / "v1"
    shutil.copytree(saved.parent / "v1", folder)
    nbeval.load_result(folder)
    tamper(folder)
    with pytest.raises(DataError) as info:
        nbeval.load_result(folder)
    text = str(info.value)
    assert "scores.jsonl" in text and "\n" not in text, text
    for words in says:
        assert words in text, text


def test_the_untouched_folder_loads_whole_and_reports(saved: Path, tmp_path: Path) -> None:
    loaded = nbeval.load_result(saved)
    assert len(loaded.scores) == 300 and len(loaded.dataset) == 30
    assert loaded.labels["label"].tolist() == ["pass"]
    assert loaded.agreement("text_matching").n == 1
    assert "<!DOCTYPE html>" in loaded.to_html()


def test_a_label_at_the_cap_loads(tmp_path: Path) -> None:
    # on classification, whose labels are classes: any text (a pass/fail evaluator's are verdicts)
    rows = [{"key": "k1", "input": "q", "expected_output": "a", "actual_output": "a"}]
    result = nbeval.evaluate(rows, ["classification"], progress=False)
    # set and saved (a labels.csv written into a saved folder by hand is not that save's: issue 43)
    result.set_labels(
        [
            {
                "key": "k1",
                "model_key": result.model_keys[0],
                "evaluator": "classification",
                "label": "x" * MAX_LABEL_CHARS,
            }
        ]
    )
    folder = result.save(tmp_path / "r")
    assert nbeval.load_result(folder).labels["label"].tolist() == ["x" * MAX_LABEL_CHARS]


def test_saving_a_label_past_the_cap_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """set_labels refuses a label past the cap; one put in the table some other way is refused by
    save, as load would refuse it, so no folder is left that cannot be loaded back."""
    import pandas as pd

    rows = [{"key": "k1", "input": "q", "expected_output": "a", "actual_output": "a"}]
    result = nbeval.evaluate(rows, ["rouge"], progress=False)
    label = {"key": "k1", "model_key": result.model_keys[0], "evaluator": "rouge", "label": "x" * (MAX_LABEL_CHARS + 1)}
    with pytest.raises(DataError, match=r"row 1, field 'label'.*1,000"):
        result.set_labels([label])
    result._labels = pd.DataFrame([label])  # past set_labels' check
    with pytest.raises(DataError, match=r"row 1, field 'label'.*1,000"):
        result.save(tmp_path / "r")
    assert not (tmp_path / "r" / "result.json").exists()


def test_a_label_at_the_cap_that_looks_like_a_formula_round_trips(tmp_path: Path) -> None:
    """Saved with an apostrophe in front (CSV injection), it is measured without it on load."""
    rows = [{"key": "k1", "input": "q", "expected_output": "a", "actual_output": "a"}]
    result = nbeval.evaluate(rows, ["classification"], progress=False)  # a class label: any text
    label = "=" + "x" * (MAX_LABEL_CHARS - 1)
    result.set_labels([{"key": "k1", "model_key": result.model_keys[0], "evaluator": "classification", "label": label}])
    assert nbeval.load_result(result.save(tmp_path / "r")).labels["label"].tolist() == [label]


def test_a_spec_that_flags_two_primaries_saves_a_result_that_loads(tmp_path: Path) -> None:
    """A result lists one primary metric per evaluator (the spec's ``primary``: the first flagged),
    so what ``save`` writes ``load_result`` takes back."""
    from nbeval.evaluators.base import Evaluator, EvaluatorSpec, MetricSpec, Score
    from nbeval.evaluators.registry import register, unregister

    spec = EvaluatorSpec(
        "t_two_primaries",
        "custom",
        "score",
        ("actual_output",),
        (MetricSpec("a", primary=True), MetricSpec("b", primary=True)),
    )

    @register(spec=spec)
    class TwoPrimaries(Evaluator):
        def score(self, row: object) -> Score:
            return Score({"a": 1.0, "b": 0.0})

    try:
        rows = [{"key": "k1", "input": "q", "actual_output": "a"}]
        result = nbeval.evaluate(rows, ["t_two_primaries"], progress=False)
        assert result.metrics["primary"].tolist() == [True, False]
        back = nbeval.load_result(result.save(tmp_path / "r"))
        assert back.primary_metric("t_two_primaries") == "a"
    finally:
        unregister("t_two_primaries")
