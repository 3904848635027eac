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
    res.set_labels(
        pd.DataFrame(
            {"key": ["c1", "c2"], "model_key": ["A", "A"], "evaluator": ["st_score"] * 2, "label": ["pass", "fail"]}
        )
    )
    res.set_labels(
        [
            {"key": "c2", "model_key": "A", "evaluator": "st_score", "label": " pass "},
            {"key": "c3", "model_key": "B", "evaluator": "st_score", "label": "fail"},
        ]
    )
    got = res.labels.sort_values(["model_key", "key"]).reset_index(drop=True)
    assert got.values.tolist() == [
        ["c1", "A", "st_score", "pass"],
        ["c2", "A", "st_score", "pass"],
        ["c3", "B", "st_score", "fail"],
    ]
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
    res.set_labels(
        [
            {"key": "c1", "model_key": "A", "evaluator": "st_score", "label": "=cmd|' /C calc'!A0"},
            {"key": "c2", "model_key": "B", "evaluator": "st_score", "label": "fail"},
        ]
    )
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


def _mixed() -> nbeval.EvaluationResult:
    """rouge and exact_match have a pass/fail verdict; classification's rows carry the predicted class."""
    from tests.stats.helpers import records

    recs = [{**r, "expected_output": "1"} for r in records({"A": ["1", "0", "1"], "B": ["0", "1", "1"]})]
    return nbeval.evaluate(recs, ["exact_match", "rouge", "classification"], progress=False)


def test_pass_fail_labels_may_be_ints_booleans_or_yes_no() -> None:
    from nbeval.results.storage.labels import pass_fail_evaluators

    res = _mixed()
    assert pass_fail_evaluators(res) == {"exact_match", "rouge"}
    # the common case: a DataFrame whose label column is ints
    res.set_labels(
        pd.DataFrame(
            {"key": ["c1", "c2", "c3"], "model_key": ["A"] * 3, "evaluator": ["exact_match"] * 3, "label": [1, 0, 1]}
        )
    )
    res.set_labels(
        [
            {"key": "c1", "model_key": "B", "evaluator": "rouge", "label": True},
            {"key": "c2", "model_key": "B", "evaluator": "rouge", "label": False},
            {"key": "c3", "model_key": "B", "evaluator": "rouge", "label": " Yes "},
            {"key": "c1", "model_key": "B", "evaluator": "exact_match", "label": "no"},
            {"key": "c2", "model_key": "B", "evaluator": "exact_match", "label": 1.0},
            {"key": "c3", "model_key": "B", "evaluator": "exact_match", "label": "FALSE"},
        ]
    )
    got = {(r.key, r.model_key, r.evaluator): r.label for r in res.labels.itertuples()}
    assert got == {
        ("c1", "A", "exact_match"): "pass",
        ("c2", "A", "exact_match"): "fail",
        ("c3", "A", "exact_match"): "pass",
        ("c1", "B", "rouge"): "pass",
        ("c2", "B", "rouge"): "fail",
        ("c3", "B", "rouge"): "pass",
        ("c1", "B", "exact_match"): "fail",
        ("c2", "B", "exact_match"): "pass",
        ("c3", "B", "exact_match"): "fail",
    }
    assert res.agreement("exact_match").n == 6  # read as pass/fail verdicts, not as classes


def test_pass_fail_words_in_a_csv_file(tmp_path: Path) -> None:
    res = _mixed()
    path = tmp_path / "labels.csv"
    path.write_text(
        "key,model_key,evaluator,label\nc1,A,rouge,1\nc2,A,rouge,0\nc3,A,rouge,yes\nc1,A,classification,1\n",
        encoding="utf-8",
    )
    res.set_labels(path)
    assert res.labels["label"].tolist() == ["pass", "fail", "pass", "1"]  # a class stays a class


def test_other_labels_get_the_error_they_always_did() -> None:
    res = _mixed()
    for evaluator, label in (("classification", 1), ("rouge", None), ("classification", " ")):
        with pytest.raises(nbeval.DataError, match="must be non-empty text") as err:
            res.set_labels([{"key": "c1", "model_key": "A", "evaluator": evaluator, "label": label}])
        assert (err.value.row, err.value.field) == (1, "label")
    with pytest.raises(nbeval.DataError, match="only for an evaluator with a pass/fail verdict"):
        res.set_labels([{"key": "c1", "model_key": "A", "evaluator": "classification", "label": 1}])
    assert res.labels.empty


def test_passed_and_failed_are_verdicts_too() -> None:
    # new-user review (2): "passed"/"failed" were kept as they were, and agreement measured nothing
    res = _mixed()
    res.set_labels(
        [
            {"key": "c1", "model_key": "A", "evaluator": "exact_match", "label": "passed"},
            {"key": "c2", "model_key": "A", "evaluator": "exact_match", "label": "FAILED"},
            {"key": "c3", "model_key": "A", "evaluator": "exact_match", "label": " Passed "},
        ]
    )
    assert res.labels["label"].tolist() == ["pass", "fail", "pass"]
    assert res.agreement("exact_match").n == 3


@pytest.mark.parametrize("label", ["maybe", "good", 2, 0.5, "0.7", "-1"])
def test_a_pass_fail_evaluator_refuses_a_label_that_is_no_verdict(label: object) -> None:
    # new-user review (2): "maybe" was stored, and agreement said n=0 (or kappa 0) without a word
    res = _mixed()
    good = {"key": "c1", "model_key": "A", "evaluator": "rouge", "label": "pass"}
    with pytest.raises(nbeval.DataError) as err:
        res.set_labels([good, {"key": "c2", "model_key": "B", "evaluator": "rouge", "label": label}])
    assert (err.value.row, err.value.field) == (2, "label")
    text = str(err.value)
    assert f"the label {label!r} of test case 'c2', model 'B' is not a verdict" in text
    assert "'rouge' passes or fails a row" in text
    for accepted in ("pass/fail", "passed/failed", "yes/no", "true/false", "1/0"):
        assert accepted in text
    assert res.labels.empty  # nothing was set, the good row neither


def test_a_score_without_a_threshold_takes_pass_fail_labels() -> None:
    # its pass/fail labels choose a threshold (the ROC curve); any other text measured nothing
    from tests.stats.helpers import result_of

    res = result_of({"A": ["0.9", "0.2"]}, ["st_plain"])
    res.set_labels([{"key": "c1", "model_key": "A", "evaluator": "st_plain", "label": "yes"}])
    assert res.labels["label"].tolist() == ["pass"]
    with pytest.raises(nbeval.DataError, match="'maybe' of test case 'c2', model 'A' is not a verdict"):
        res.set_labels([{"key": "c2", "model_key": "A", "evaluator": "st_plain", "label": "maybe"}])


def test_a_class_label_is_any_text() -> None:
    res = _mixed()
    res.set_labels([{"key": "c1", "model_key": "A", "evaluator": "classification", "label": "maybe"}])
    assert res.labels["label"].tolist() == ["maybe"]


def test_a_label_over_the_cap_is_refused_when_set(tmp_path) -> None:
    # issue 35 (19): a 70 MB label was kept; the cap load_result enforces now applies on the way in
    import nbeval
    from nbeval.errors import DataError
    from nbeval.results.storage.limits import MAX_LABEL_CHARS

    result = nbeval.evaluate(nbeval.demo_lab(), ["classification"], progress=False)  # a class: any text
    row = result.scores.iloc[0]
    ok = {"key": row["key"], "model_key": row["model_key"], "evaluator": "classification"}
    result.set_labels([{**ok, "label": "x" * MAX_LABEL_CHARS}])
    with pytest.raises(DataError, match=r"row 1.*label|label.*row 1"):
        result.set_labels([{**ok, "label": "x" * (MAX_LABEL_CHARS + 1)}])
