"""The history chart: the numbers it inlines are run_history's, runs in the order they started."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.results.runs.registry import run_history, runs
from nbeval.widgets.history_charts import history_chart
from tests.widgets.conftest import HOSTILE


def _records(answers: tuple[str, str]) -> list[dict[str, Any]]:
    cases = [("a", "4"), ("b", "5")]
    return [
        {"key": key, "input": f"q {key}", "expected_output": want, "actual_output": got, "model_key": model}
        for (key, want), answer in zip(cases, answers, strict=True)
        for model, got in (("m1", answer), ("m2", want))
    ]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """Three runs; the newest is labelled with markup and the oldest shares its folder's name."""
    for name, answers, label in (("r1", ("4", "5"), "baseline"), ("r2", ("4", "6"), None), ("r3", ("3", "6"), HOSTILE)):
        nbeval.evaluate(_records(answers), ["exact_match"], progress=False).save(tmp_path / name, label=label)
    return tmp_path


def _data(chart: Any) -> list[dict[str, Any]]:
    spec = chart.to_dict()
    [values] = list(spec["datasets"].values())  # one data set, shared by every layer
    rows: list[dict[str, Any]] = values
    return rows


def test_the_chart_inlines_run_historys_numbers(folder: Path) -> None:
    history = run_history(folder, "exact_match")
    rows = _data(history_chart(folder, "exact_match"))
    got = [(r["run"], r["model"], r["value"], r["lo"], r["hi"], r["n"]) for r in rows]
    want = [
        (r.run, r.model_key, pytest.approx(r.value), pytest.approx(r.lo), pytest.approx(r.hi), r.n)
        for r in history.itertuples()
    ]
    assert got == want
    assert [r["value"] for r in rows if r["model"] == "m1"] == pytest.approx([1.0, 0.5, 0.0])


def test_runs_are_placed_in_time_order_named_by_label(folder: Path) -> None:
    chart = history_chart(runs(folder), "exact_match", "score")
    spec = chart.to_dict()
    sorts = [layer["encoding"]["x"]["sort"] for layer in spec["layer"]]
    assert sorts == [["baseline", "r2", HOSTILE]] * 2
    rows = _data(chart)
    assert {r["x"] for r in rows} == {"baseline", "r2", HOSTILE}  # the markup is data, as given
    newest = next(r for r in rows if r["run"] == "r3")
    commit = nbeval.load_result(folder / "r3").meta["run"]["git_commit"]
    assert newest["commit"].startswith(commit[:12] if commit else "unknown")
    assert newest["date"].endswith("UTC") and newest["label"] == HOSTILE


def test_two_runs_with_one_label_stay_apart(tmp_path: Path) -> None:
    for name in ("first", "second"):
        nbeval.evaluate(_records(("4", "5")), ["exact_match"], progress=False).save(tmp_path / name, label="same")
    rows = _data(history_chart(tmp_path, "exact_match"))
    assert [r["x"] for r in rows if r["model"] == "m1"] == ["same (first)", "same (second)"]
