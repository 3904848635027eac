"""Two saves into one folder never leave a mix that loads (issue 43, point 10).

Two real processes save different results (A: answers right, label "A", labels "pass"; B: answers
wrong, label "B", labels "fail") into one folder at the same moment, round after round; after each
round the folder loads as A whole or B whole. A folder made a mix by hand (a file of another save
copied in, as a crash between the renames or a save without the lock leaves it) is a DataError
naming the file, never a result. A reader loading while the two save gets a whole result or a
DataError. Folders saved before the save id existed still load.
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.errors import DataError

ROUNDS = 25
ANSWERS = {"A": "yes", "B": "no"}
VERDICTS = {"A": "pass", "B": "fail"}
#: What each whole result holds: its answers, its exact_match value, its labels.
EXACT = {"A": 1.0, "B": 0.0}


def _result(which: str, n: int = 40, *, labelled: bool = True) -> nbeval.EvaluationResult:
    rows = [
        {"key": f"c{i}", "input": f"question {i}", "expected_output": "yes", "actual_output": ANSWERS[which]}
        for i in range(n)
    ]
    res = nbeval.evaluate(rows, ["exact_match"], progress=False)
    if not labelled:
        return res
    res.set_labels(
        [{"key": f"c{i}", "model_key": "model", "evaluator": "exact_match", "label": VERDICTS[which]} for i in range(n)]
    )
    return res


def _which(res: nbeval.EvaluationResult) -> str:
    """``"A"`` or ``"B"`` when ``res`` is that result whole; an AssertionError naming the mix otherwise."""
    label = res.meta["run"]["label"]
    assert label in ANSWERS, label
    answers = set(res.dataset.to_pandas()["actual_output"])
    values = set(res.scores["value"])
    aggregates = set(res.aggregates["value"])
    labels = set(res.labels["label"])
    whole = (answers, values, aggregates, labels) == (
        {ANSWERS[label]},
        {EXACT[label]},
        {EXACT[label]},
        {VERDICTS[label]},
    )
    assert whole, f"a mix: label {label}, answers {answers}, scores {values}, aggregates {aggregates}, labels {labels}"
    return str(label)


def _saver(which: str, folder: str, rounds: int, barrier: Any, scores_format: str) -> None:
    res = _result(which)
    for _ in range(rounds):
        barrier.wait()  # both start saving at once
        res.save(folder, label=which, scores_format=scores_format)
        barrier.wait()  # the main process loads


def _run_savers(folder: Path, rounds: int, scores_format: str, check: Any, *, during: bool = False) -> None:
    """Two processes save A and B into ``folder`` at once, ``rounds`` times; ``check()`` is called
    after each round's saves (``during``: while they run)."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(3, timeout=180)
    procs = [ctx.Process(target=_saver, args=(which, str(folder), rounds, barrier, scores_format)) for which in ANSWERS]
    for p in procs:
        p.start()
    try:
        for _ in range(rounds):
            barrier.wait()
            if during:
                check()
            barrier.wait()
            if not during:
                check()
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0, 0]


@pytest.mark.parametrize("scores_format", ["parquet", "jsonl"])
def test_two_processes_saving_at_once_leave_one_whole_result(tmp_path: Path, scores_format: str) -> None:
    folder = tmp_path / "run"
    seen: list[str] = []
    _run_savers(folder, ROUNDS, scores_format, lambda: seen.append(_which(nbeval.load_result(folder))))
    assert len(seen) == ROUNDS
    leftovers = [p.name for p in folder.iterdir() if p.name.startswith(".")]
    assert leftovers == []  # no staging folder or lock file left behind


@pytest.mark.parametrize(
    "name", ["scores.parquet", "dataset.parquet", "aggregates.jsonl", "metrics.jsonl", "labels.csv"]
)
def test_a_file_of_another_save_is_named_on_load(tmp_path: Path, name: str) -> None:
    a, b = _result("A").save(tmp_path / "a", label="A"), _result("B").save(tmp_path / "b", label="B")
    if name == "metrics.jsonl":  # the same metrics in another save: one description changed
        lines = (b / name).read_text(encoding="utf-8").splitlines()
        first = json.loads(lines[0])
        first["description"] = "written by another save"
        (b / name).write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    shutil.copy(b / name, a / name)
    with pytest.raises(DataError) as err:
        nbeval.load_result(a)
    assert err.value.source == str(a / name)
    assert "another save" in str(err.value)


def test_labels_left_by_another_save_are_named(tmp_path: Path) -> None:
    a = tmp_path / "a"
    _result("A", labelled=False).save(a, label="A")  # A has no labels: a labels.csv in its folder is not A's
    shutil.copy(_result("B").save(tmp_path / "b", label="B") / "labels.csv", a / "labels.csv")
    with pytest.raises(DataError, match="another save") as err:
        nbeval.load_result(a)
    assert err.value.source == str(a / "labels.csv")


def test_a_folder_saved_before_the_save_id_still_loads(tmp_path: Path) -> None:
    folder = _result("A").save(tmp_path / "old", label="A")
    info = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    assert set(info["save"]) == {"id", "files"}
    del info["save"]
    (folder / "result.json").write_text(json.dumps(info), encoding="utf-8")
    assert _which(nbeval.load_result(folder)) == "A"


def test_a_reader_during_the_saves_gets_a_whole_result_or_a_clear_error(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    _result("A").save(folder, label="A")
    outcomes: dict[str, int] = {"A": 0, "B": 0, "error": 0}

    def load_while_saving() -> None:
        try:
            outcomes[_which(nbeval.load_result(folder))] += 1
        except DataError:
            outcomes["error"] += 1

    _run_savers(folder, 10, "parquet", load_while_saving, during=True)
    assert outcomes["A"] + outcomes["B"] + outcomes["error"] == 10


@pytest.mark.parametrize("name", ["scores.parquet", "aggregates.jsonl"])
def test_a_diff_reads_no_file_of_another_save(tmp_path: Path, name: str) -> None:
    # nbeval diff reads a saved folder through its own fast path (no dataset); it checks the save too
    a, b = _result("A").save(tmp_path / "a", label="A"), _result("B").save(tmp_path / "b", label="B")
    shutil.copy(b / name, a / name)
    with pytest.raises(DataError, match="another save") as err:
        nbeval.diff(b, a)
    assert err.value.source == str(a / name)
