"""Human labels: set from a DataFrame, dicts or CSV, checked, replaced, saved and loaded back."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import nbeval
from tests.stats.helpers import result_of


def _res() -> nbeval.EvaluationResult:
    return result_of({"A": ["0.9 safe", "0.2 toxic", "0.7 safe"], "B": ["0.4 safe", "0.6 toxic", "0.1 toxic"]})


def test_a_result_starts_without_labels() -> None:
    labels = _res().labels
    assert list(labels.columns) == ["key", "model_key", "evaluator", "label"] and labels.empty


def test_set_labels_adds_and_replaces_on_key_model_and_evaluator() -> None:
    res = _res()
    res.set_labels(pd.DataFrame({"key": ["c1", "c2"], "model_key": ["A", "A"], "evaluator": ["st_score"] * 2,
                                 "label": ["pass", "fail"]}))
    res.set_labels([{"key": "c2", "model_key": "A", "evaluator": "st_score", "label": " pass "},
                    {"key": "c3", "model_key": "B", "evaluator": "st_score", "label": "fail"}])
    got = res.labels.sort_values(["model_key", "key"]).reset_index(drop=True)
    assert got.values.tolist() == [["c1", "A", "st_score", "pass"], ["c2", "A", "st_score", "pass"],
                                   ["c3", "B", "st_score", "fail"]]
    copy = res.labels
    copy.loc[0, "label"] = "changed"  # a copy: the result keeps its labels
    assert "changed" not in set(res.labels["label"])


def test_labels_from_csv_and_errors_naming_row_and_field(tmp_path: Path) -> None:
    res = _res()
    good = tmp_path / "labels.csv"
    good.write_text("key,model_key,evaluator,label\nc1,A,st_score,pass\nc2,B,st_score,fail\n", encoding="utf-8")
    res.set_labels(good)
    assert len(res.labels) == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("key,model_key,evaluator,label\nc1,A,st_score,pass\nc9,A,st_score,fail\n", encoding="utf-8")
    with pytest.raises(nbeval.DataError) as err:
        res.set_labels(bad)
    assert (err.value.source, err.value.row, err.value.field) == (str(bad), 2, "key")
    assert "c9" in str(err.value)
    assert len(res.labels) == 2  # nothing changed
    cases = [({"model_key": "Z"}, "model_key"), ({"evaluator": "rouge"}, "evaluator"), ({"label": " "}, "label")]
    for change, field in cases:
        rec = {"key": "c1", "model_key": "A", "evaluator": "st_score", "label": "pass", **change}
        with pytest.raises(nbeval.DataError) as err:
            res.set_labels([rec])
        assert (err.value.row, err.value.field) == (1, field)
    with pytest.raises(nbeval.DataError, match="column is missing"):
        res.set_labels(pd.DataFrame({"key": ["c1"], "label": ["pass"]}))
    with pytest.raises(nbeval.DataError, match="does not exist"):
        res.set_labels(tmp_path / "nope.csv")


def test_labels_are_saved_and_loaded_with_the_result(tmp_path: Path) -> None:
    res = _res()
    res.set_labels([{"key": "c1", "model_key": "A", "evaluator": "st_score", "label": "=cmd|' /C calc'!A0"},
                    {"key": "c2", "model_key": "B", "evaluator": "st_score", "label": "fail"}])
    folder = res.save(tmp_path / "run")
    text = (folder / "labels.csv").read_text(encoding="utf-8")
    assert "'=cmd" in text  # a spreadsheet shows it as text
    back = nbeval.load_result(folder)
    pd.testing.assert_frame_equal(back.labels, res.labels)
    # a result without labels saved over it leaves no stale labels behind
    _res().save(folder)
    assert not (folder / "labels.csv").exists()
    assert nbeval.load_result(folder).labels.empty


def test_a_changed_labels_file_is_reported_on_load(tmp_path: Path) -> None:
    folder = _res().save(tmp_path / "run")
    (folder / "labels.csv").write_text("key,model_key,evaluator,label\nc1,A,nope,pass\n", encoding="utf-8")
    with pytest.raises(nbeval.DataError) as err:
        nbeval.load_result(folder)
    assert err.value.source == str(folder / "labels.csv") and err.value.field == "evaluator"


def test_a_labels_file_that_is_not_utf8_text_is_named(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_bytes("key,model_key,evaluator,label\nc1,A,st_score,caf\xe9\n".encode("latin-1"))
    with pytest.raises(nbeval.DataError, match="not a readable CSV") as err:
        _res().set_labels(path)
    assert err.value.source == str(path)


def test_a_folder_where_labels_csv_goes(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    (folder / "labels.csv").mkdir(parents=True)
    res = _res()
    res.set_labels([{"key": "c1", "model_key": "A", "evaluator": "st_score", "label": "pass"}])
    with pytest.raises(nbeval.DataError, match="is a folder"):
        res.save(folder)
    assert not (folder / "result.json").exists()  # nothing of the result was moved in
    with pytest.raises(nbeval.DataError, match="cannot read the labels file"):
        res.set_labels(folder / "labels.csv")
