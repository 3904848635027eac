"""``@nbeval.scorer``: a plain function is an evaluator, in Python, in a saved result and in the CLI."""

from __future__ import annotations

import importlib.metadata
import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import nbeval
from nbeval.cli import main
from nbeval.data.model import Row
from nbeval.demo import demo_lab_path
from nbeval.errors import EvaluatorError, UnknownEvaluator
from nbeval.evaluators import registry
from nbeval.evaluators.registry import get_spec, unregister
from nbeval.evaluators.scorer import FIELDS


@nbeval.scorer
def polite(actual_output: str) -> bool:
    """Whether the answer says please."""
    return "please" in actual_output.lower()


ROWS = [
    {"key": "a", "input": "Say it", "expected_output": "please", "actual_output": "Please, sit."},
    {"key": "b", "input": "Say it", "expected_output": "please", "actual_output": "Sit."},
]


@pytest.fixture
def made() -> Any:
    """Scorers a test makes are unregistered after it."""
    ids: list[str] = []
    yield ids
    for id in ids:
        unregister(id)


def _values(result: Any, metric: str) -> dict[str, float]:
    """The scored rows' values of ``metric`` by key."""
    s = result.scores
    s = s[(s["metric"] == metric) & ~s["skipped"]]
    return dict(s[["key", "value"]].itertuples(index=False))


def test_a_bool_scorer_by_object_and_by_id() -> None:
    assert polite("please") is True  # still the function
    for evaluators in ([polite], polite, ["polite"], "polite"):
        result = nbeval.evaluate(ROWS, evaluators)
        assert _values(result, "polite") == {"a": 1.0, "b": 0.0}
    spec = get_spec("polite")
    assert spec.inputs == ("actual_output",) and [m.name for m in spec.metrics] == ["polite"]
    assert spec.metrics[0].threshold == 0.5 and spec.primary.name == "polite"
    assert spec.description == "Whether the answer says please."


def test_a_float_scorer_with_name_threshold_and_direction(made: list[str]) -> None:
    @nbeval.scorer(name="t_wordiness", threshold=3.0, direction="lower", range=(0, float("inf")))
    def words(actual_output, expected_output):
        return len(actual_output.split()) - len(expected_output.split())

    made.append("t_wordiness")
    assert words.id == "t_wordiness"
    result = nbeval.evaluate(ROWS, [words])
    assert _values(result, "t_wordiness") == {"a": 1.0, "b": 0.0}
    row = result.metrics.iloc[0]
    assert (row["metric"], row["direction"], row["threshold"]) == ("t_wordiness", "lower", 3.0)
    assert get_spec("t_wordiness").inputs == ("actual_output", "expected_output")


def test_named_metrics_from_a_score_or_a_dict_and_mapped_parameters(made: list[str]) -> None:
    seen: list[tuple[Any, ...]] = []

    @nbeval.scorer(name="t_parts", metrics=["echo", "has_context"])
    def parts(input, actual_output, context, row, guidelines=None):
        seen.append((input, context, row.key, guidelines))
        if row.key == "a":
            return nbeval.Score(
                {"echo": float(input in actual_output), "has_context": float(bool(context))}, rationale="as a Score"
            )
        return {"echo": input in actual_output, "has_context": bool(context)}

    made.append("t_parts")
    spec = get_spec("t_parts")
    assert spec.inputs == ("input", "actual_output", "context") and spec.optional_inputs == ("guidelines",)
    assert spec.primary.name == "echo" and [m.threshold for m in spec.metrics] == [0.5, 0.5]
    rows = [
        {**ROWS[0], "context": ["ctx one", "ctx two"]},
        {**ROWS[1], "actual_output": "Say it.", "context": ["ctx"]},
        {**ROWS[1], "key": "c"},
    ]  # no context: skipped, not passed None
    result = nbeval.evaluate(rows, ["t_parts"])
    assert _values(result, "echo") == {"a": 0.0, "b": 1.0}
    assert _values(result, "has_context") == {"a": 1.0, "b": 1.0}
    s = result.scores.set_index(["key", "metric"])
    assert s.loc[("a", "echo"), "rationale"] == "as a Score"
    assert s.loc[("c", "echo"), "skipped"] and "context" in s.loc[("c", "echo"), "skip_reason"]
    assert sorted(seen, key=lambda t: t[2]) == [
        ("Say it", ["ctx one", "ctx two"], "a", []),
        ("Say it", ["ctx"], "b", []),
    ]


def test_a_dict_with_an_undeclared_metric_errors_the_row(made: list[str]) -> None:
    @nbeval.scorer(name="t_ok", metrics=["ok"])
    def ok(actual_output):
        return {"okk" if actual_output == "Sit." else "ok": 1.0}

    made.append("t_ok")
    s = nbeval.evaluate(ROWS, [ok]).scores.set_index("key")
    assert "'okk'" in s.loc["b", "error"] and "'ok'" in s.loc["b", "error"]
    assert s.loc["a", "value"] == 1.0


def test_bad_returns_and_exceptions_error_their_row_only(made: list[str]) -> None:
    @nbeval.scorer(name="t_fussy")
    def fussy(actual_output):
        if actual_output == "Sit.":
            raise ValueError("cannot judge this")
        return "yes"

    made.append("t_fussy")
    s = nbeval.evaluate([*ROWS, {**ROWS[0], "key": "c", "actual_output": "x"}], [fussy]).scores.set_index("key")
    assert "ValueError: cannot judge this" in s.loc["b", "error"]
    assert "returned 'yes'" in s.loc["a", "error"] and "returned 'yes'" in s.loc["c", "error"]


def test_unknown_parameter_names_fail_at_decoration() -> None:
    with pytest.raises(EvaluatorError, match="parameter 'answer' is not a row field") as info:

        @nbeval.scorer
        def t_bad(answer):
            return True

    assert "actual_output" in str(info.value) and "expected_output" in str(info.value)
    with pytest.raises(EvaluatorError, match=r"'\*\*kw'"):
        nbeval.scorer(name="t_kw")(lambda actual_output, **kw: True)
    with pytest.raises(EvaluatorError, match="built-in evaluator"):

        @nbeval.scorer
        def rouge(actual_output):
            return 1.0

    with pytest.raises(EvaluatorError, match="name="):
        nbeval.scorer(lambda actual_output: True)
    with pytest.raises(UnknownEvaluator):
        get_spec("t_bad")
    assert set(FIELDS) >= {"actual_output", "input", "expected_output", "context", "row"}


def test_decorating_again_replaces_the_scorer(made: list[str]) -> None:
    def cell(value: float) -> None:  # a notebook cell run twice
        @nbeval.scorer(name="t_again")
        def again(actual_output):
            return value

    cell(0.25)
    cell(0.75)
    made.append("t_again")
    assert set(_values(nbeval.evaluate(ROWS, ["t_again"]), "t_again").values()) == {0.75}
    assert registry._SHADOWED["t_again"] == [(None, None, None)]


def test_a_configured_scorer_pickles() -> None:
    ev = polite.evaluator(threshold=0.9, max_rows=1)
    copy = pickle.loads(pickle.dumps(ev))
    assert copy.thresholds == {"polite": 0.9} and copy.params["max_rows"] == 1
    assert copy.score(Row(input="q", actual_output="please")).values == {"polite": 1.0}


def test_a_saved_result_loads_without_the_function(tmp_path: Path) -> None:
    result = nbeval.evaluate(ROWS, [polite.evaluator(threshold=0.75)])
    result.save(tmp_path / "saved")
    code = (
        "import json, sys, nbeval\n"
        "r = nbeval.load_result(sys.argv[1])\n"
        "assert 'polite' not in nbeval.catalogue()\n"
        "m = r.metrics.iloc[0]\n"
        "s = r.scores\n"
        "print(json.dumps({'metric': m['metric'], 'threshold': float(m['threshold']),\n"
        "                  'values': sorted(zip(s['key'], s['value'].astype(float)))}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "saved")], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {
        "metric": "polite",
        "threshold": 0.75,
        "values": [["a", 1.0], ["b", 0.0]],
    }


class _EP:
    def __init__(self, name: str, obj: Any) -> None:
        self.name, self._obj = name, obj

    def load(self) -> Any:
        return self._obj


def test_the_cli_runs_a_scorer_from_an_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    unregister("polite")  # as in a fresh process: only the entry point knows it
    monkeypatch.setattr(
        importlib.metadata,
        "entry_points",
        lambda group: [_EP("polite", polite)] if group == registry.ENTRY_POINT_GROUP else [],
    )
    registry._load_entry_points.cache_clear()
    try:
        code = main(
            ["run", demo_lab_path(), "-e", "polite,exact_match", "--out", str(tmp_path / "out"), "--no-progress"]
        )
        assert code == 0, capsys.readouterr().err
        back = nbeval.load_result(tmp_path / "out")
        s = back.scores[back.scores["evaluator"] == "polite"]
        assert len(s) > 0 and s["error"].isna().all() and set(s["value"]) <= {0.0, 1.0}
        assert "polite" in capsys.readouterr().out
    finally:
        monkeypatch.undo()
        registry._load_entry_points.cache_clear()
        if "polite" not in registry._CLASSES:
            polite.register()


# ---------------------------------------------------------------------------------------------
# One route: pipeline(fn=...) is a spelling of @nbeval.scorer, with the same return convention


def _scored(ev: nbeval.Evaluator, row: Row) -> nbeval.Score:
    """``ev``'s score of ``row`` (a function route asks for nothing, so it returns a Score)."""
    got = ev.score(row)
    assert isinstance(got, nbeval.Score)
    return got


@pytest.mark.parametrize(
    ("returned", "value", "rationale"),
    [
        (0.25, 0.25, None),
        (True, 1.0, None),
        (False, 0.0, None),
        ((0.5, "half"), 0.5, "half"),
        ((True, None), 1.0, None),
        ({"t_same": 0.75, "rationale": "as a dict"}, 0.75, "as a dict"),
        (nbeval.Score({"t_same": 0.125}, rationale="a Score"), 0.125, "a Score"),
    ],
)
def test_a_scorer_reads_each_return_of_the_convention(
    made: list[str], returned: Any, value: float, rationale: str | None
) -> None:
    @nbeval.scorer(name="t_same", range=(0.0, 1.0))
    def same(actual_output):
        return returned

    made.append("t_same")
    got = _scored(same.evaluator(), Row(input="q", actual_output="a"))
    assert (got.values, got.rationale, got.error) == ({"t_same": value}, rationale, None)


@pytest.mark.parametrize(
    ("returned", "value", "rationale"),
    [
        (0.25, 0.25, None),
        (True, 1.0, None),  # a bool is read as by a scorer (pipeline used to refuse it)
        ((0.5, "half"), 0.5, "half"),
        ({"score": 0.75, "rationale": "as a dict"}, 0.75, "as a dict"),
        ({"value": 0.75, "rationale": "the older key"}, 0.75, "the older key"),
        (nbeval.Score({"score": 0.125}, rationale="a Score"), 0.125, "a Score"),
    ],
)
def test_pipeline_reads_the_same_convention(returned: Any, value: float, rationale: str | None) -> None:
    ev = nbeval.evaluator("pipeline", fn=lambda actual_output, n=3, **more: returned)
    assert ev.spec.inputs == ("actual_output",)  # n (no field, with a default) and **more are the function's
    got = _scored(ev, Row(input="q", actual_output="a"))
    assert (got.values, got.rationale, got.error) == ({"score": value}, rationale, None)


def test_what_neither_route_reads_errors_the_row_the_same_way(made: list[str]) -> None:
    @nbeval.scorer(name="t_words")
    def words(actual_output):
        return "high"

    made.append("t_words")
    row = Row(input="q", actual_output="a")
    by_scorer = _scored(words.evaluator(), row)
    by_pipeline = _scored(nbeval.evaluator("pipeline", fn=lambda actual_output: "high"), row)
    assert by_scorer.values == {"t_words": None} and by_pipeline.values == {"score": None}
    assert by_scorer.error == "scorer 't_words' " + (by_pipeline.error or "").removeprefix("evaluator 'pipeline' ")
    assert "returned 'high', not a number" in (by_scorer.error or "")


def test_a_metric_cannot_be_named_rationale() -> None:
    with pytest.raises(EvaluatorError, match="cannot be named 'rationale'"):
        nbeval.scorer(name="t_why", metrics=["ok", "rationale"])(lambda actual_output: 1.0)
    with pytest.raises(UnknownEvaluator):
        get_spec("t_why")
