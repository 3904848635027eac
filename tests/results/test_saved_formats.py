"""Today's nbeval reads result folders that earlier nbeval code really wrote, one per format.

tests/results/saved_formats/ holds folders saved by old commits (scripts/make_saved_format_fixtures.py
made them; see the README there). Next to each folder's files, ``expected.json`` is what the *old*
process had in memory (scores, aggregates, dataset rows, labels, meta) and the ``meta`` its
``result.json`` holds, so every comparison here is with the old code's own values, never with
today's idea of them. test_run_record.py tests the reading of made-up ``meta``; this file, of real
old folders: scores, record, labels, reports, diffs and re-saving."""

from __future__ import annotations

import json
import math
import warnings
from itertools import combinations
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbeval
from nbeval.data.fields import DataWarning
from nbeval.results.record import FORMAT_VERSION, NOT_RECORDED, JudgeFact, RunRecord

SAVED = Path(__file__).resolve().parent / "saved_formats"
FOLDERS = sorted(p for p in SAVED.iterdir() if p.is_dir() and (p / "expected.json").is_file())
IDS = [p.name for p in FOLDERS]
ROW = ["key", "model_key", "evaluator", "metric"]
#: Columns of the long table every format wrote, compared cell by cell.
SCORE_CELLS = ["value", "passed", "label", "rationale", "error", "skipped", "skip_reason", "details"]


def _plain(value: Any) -> Any:
    """A cell as JSON would hold it: numpy scalars as Python, NaN and missing as ``None``."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str, dict, list)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    return None if pd.isna(value) else value


def _rows(frame: pd.DataFrame, index: list[str], columns: list[str]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """``frame``'s rows by ``index`` (each index appearing once), as plain values of ``columns``."""
    out: dict[tuple[Any, ...], dict[str, Any]] = {}
    for rec in frame[index + columns].itertuples(index=False, name=None):
        key = tuple(str(v) for v in rec[: len(index)])
        assert key not in out, f"row {key} appears twice"
        out[key] = {c: _plain(v) for c, v in zip(columns, rec[len(index) :], strict=True)}
    return out


def _expected_rows(records: list[dict[str, Any]], index: list[str], columns: list[str]) -> dict[Any, Any]:
    return {tuple(str(r[i]) for i in index): {c: r[c] for c in columns} for r in records}


def _expected(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    return data


def _load(folder: Path) -> Any:
    """``nbeval.load_result(folder)``; an old folder reads without any DataWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        return nbeval.load_result(folder)


def _check_scores(result: Any, expected: dict[str, Any]) -> None:
    """The long table has exactly the rows the old code had, with the same cells."""
    scores = result.scores
    cells = [c for c in SCORE_CELLS if c in expected["score_columns"]]
    assert {"value", "passed", "skipped", "rationale"} <= set(cells)
    missing = set(cells) - set(scores.columns)
    assert not missing, f"today's scores lack the columns {missing} the old code wrote"
    assert len(scores) == len(expected["scores"])
    assert _rows(scores, ROW, cells) == _expected_rows(expected["scores"], ROW, cells)


def test_the_folders_cover_every_format() -> None:
    # Guards the fixtures themselves: every format, run facts, labels and both score files are here.
    formats = {_expected(f)["meta_saved"].get("format_version", 1) for f in FOLDERS}
    assert formats == {1, 2, 3}
    assert any("run" in _expected(f)["meta_saved"] for f in FOLDERS)
    assert any("run" not in _expected(f)["meta_saved"] for f in FOLDERS)
    assert any((f / "labels.csv").is_file() for f in FOLDERS)
    assert {f.name.rsplit("_", 1)[1] for f in FOLDERS} == {"jsonl", "parquet"}
    assert len({_expected(f)["commit"] for f in FOLDERS}) >= 5


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_folder_is_as_the_old_code_saved_it(folder: Path) -> None:
    expected = _expected(folder)
    assert sorted(p.name for p in folder.iterdir() if p.name != "expected.json") == expected["files"]
    assert folder.name.startswith(f"v{expected['meta_saved'].get('format_version', 1)}_{expected['commit']}_")


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_scores_aggregates_and_rows_are_the_saved_ones(folder: Path) -> None:
    expected = _expected(folder)
    result = _load(folder)
    _check_scores(result, expected)
    agg = ["value", "n", "N"]
    assert _rows(result.aggregates, ROW[1:], agg) == _expected_rows(expected["aggregates"], ROW[1:], agg)
    fields = ["key", "model_key", "input", "actual_output", "expected_output"]
    rows = [{f: _plain(getattr(row, f)) for f in fields} for row in result.dataset]
    assert rows == expected["dataset"]
    assert any(r["expected_output"] is None for r in rows)  # the row without one stays without one
    assert any(not r["actual_output"].isascii() for r in rows)
    assert result.model_labels == expected["model_labels"]


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_labels_are_the_saved_ones(folder: Path) -> None:
    expected = _expected(folder)
    labels = _load(folder).labels
    if expected["labels"] is None:  # a version without human labels saved none
        assert labels.empty
        return
    cols = ["key", "model_key", "evaluator", "label"]
    assert [{c: _plain(r[c]) for c in cols} for r in labels.to_dict("records")] == [
        {c: r[c] for c in cols} for r in expected["labels"]
    ]


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_record_holds_what_the_version_recorded(folder: Path) -> None:
    expected = _expected(folder)
    saved, memory = expected["meta_saved"], expected["meta_in_memory"]
    record: RunRecord = _load(folder).record
    assert record.format_version == saved["format_version"]
    assert record.folder_format == int(folder.name[1])
    assert record.nbeval_version == saved["nbeval_version"] == memory["nbeval_version"] == expected["nbeval_version"]
    assert record.duration_s == saved["duration_s"] == memory["duration_s"]
    assert record.cancelled is saved["cancelled"] is False
    usage = saved["usage"]
    assert usage == memory["usage"]
    assert record.usage.calls == usage["calls"] == 4  # one judge call per row with an expected output
    assert record.usage.attempts == usage["attempts"]
    assert record.usage.prompt_tokens == usage["prompt_tokens"]
    assert record.usage.cost is None  # recorded as no price, not NOT_RECORDED
    assert record.usage.unknown_usage_calls is None  # no version recorded it for this run
    assert record.usage.other == {}
    assert record.evaluators is not None
    entries = [{"name": e.name, "id": e.id, "params": dict(e.params or {})} for e in record.evaluators]
    assert entries == saved["evaluators"] == memory["evaluators"]
    judged = record.evaluator("correctness")
    assert judged is not None and judged.id == "correctness"
    assert judged.params is not None and judged.params["judge"] is None  # the run's judge, not its own
    assert record.extra == {}
    assert record.to_meta() == saved  # read and written back unchanged


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_run_facts_where_recorded_and_not_recorded_before(folder: Path) -> None:
    expected = _expected(folder)
    run = expected["meta_saved"].get("run")
    record: RunRecord = _load(folder).record
    if run is None:  # saved before nbeval recorded run facts
        assert record.run is None
        facts = record.run_or_empty()
        assert facts.judge is NOT_RECORDED and facts.embedder is NOT_RECORDED
        assert facts.label is None and facts.git_commit is None and facts.dataset_fingerprint is None
        return
    assert record.run is not None
    assert record.run.label == run["label"] == f"fixture {expected['commit']}"
    assert record.run.git_commit == run["git_commit"]
    assert record.run.git_commit is not None and record.run.git_commit.startswith(expected["commit"])
    assert record.run.git_dirty is run["git_dirty"]
    assert record.run.started_at == run["started_at"] == expected["meta_in_memory"]["run"]["started_at"]
    assert record.run.dataset_fingerprint == run["dataset_fingerprint"]
    assert record.run.judge == JudgeFact(run["judge"]["model"], run["judge"]["params"])
    assert record.run.judge_model == "judge"  # the Python function the old run judged with
    assert record.run.embedder is None and run["embedder"] is None  # recorded: no embedder used
    assert record.run.prompts == run["prompts"]
    assert record.run.prompts is not None and set(record.run.prompts) == {"correctness"}
    assert record.run.extra == {}


@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_leaderboard_summary_and_report_render(folder: Path) -> None:
    expected = _expected(folder)
    result = _load(folder)
    means = _expected_rows(expected["aggregates"], ROW[1:], ["value"])
    for evaluator, metric in (("exact_match", "score"), ("rouge", "rouge_l"), ("correctness", "correctness")):
        board = result.leaderboard(evaluator, metric=metric)
        for model in ("m1", "m2"):
            assert board.loc[model, metric] == means[(model, evaluator, metric)]["value"]
    assert "exact_match" in result.summary()
    html = result.to_html()
    assert "Zürich ist groß — ja" in html and "Größte Stadt der Schweiz?" in html


PAIRS = [(a, b) for a, b in combinations(FOLDERS, 2) if a.name.split("_")[1] != b.name.split("_")[1]]


@pytest.mark.parametrize(("before", "after"), PAIRS, ids=lambda p: p.name)
def test_diff_between_old_folders(before: Path, after: Path) -> None:
    # The same answers scored by the same evaluators: a diff of two versions' folders finds no change.
    change = nbeval.diff(before, after)
    text = str(change)
    assert "regressions: none" in text and "improvements: none" in text
    table = change.table
    shared = set.intersection(
        *({(a["evaluator"], a["metric"], a["model_key"]) for a in _expected(f)["aggregates"]} for f in (before, after))
    )
    assert len(shared) >= 10  # exact_match, rouge x 3 (rouge_lsum came later), correctness; 2 models
    assert set(zip(table["evaluator"], table["metric"], table["model_key"], strict=True)) == shared
    assert (table["mean_before"] == table["mean_after"]).all()
    assert not table["regression"].any() and not table["improvement"].any()
    assert change.flips.empty


def test_runs_lists_every_old_folder() -> None:
    runs = nbeval.runs(SAVED)
    assert sorted(runs["run"]) == IDS
    assert runs["error"].isna().all()
    labels = dict(zip(runs["run"], runs["label"], strict=True))
    for folder in FOLDERS:
        run = _expected(folder)["meta_saved"].get("run")
        assert _plain(labels[folder.name]) == (None if run is None else run["label"])


@pytest.mark.parametrize("scores_format", ["parquet", "jsonl"])
@pytest.mark.parametrize("folder", FOLDERS, ids=IDS)
def test_resaved_by_today_reads_the_same(folder: Path, scores_format: str, tmp_path: Path) -> None:
    expected = _expected(folder)
    old = _load(folder)
    again = _load(old.save(tmp_path / "again", scores_format=scores_format))
    _check_scores(again, expected)
    pd.testing.assert_frame_equal(again.scores, old.scores)
    pd.testing.assert_frame_equal(again.labels, old.labels)
    assert again.record.format_version == (FORMAT_VERSION if scores_format == "parquet" else 1)
    kept = {k: v for k, v in expected["meta_saved"].items() if k != "format_version"}
    assert {k: v for k, v in again.record.to_meta().items() if k != "format_version"} == kept
