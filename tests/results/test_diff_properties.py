"""Properties of the diff, its coverage and its gate, and of the run gate (issue 43, closing
section): invariant to row order and to renaming models, symmetric when the runs swap, bounded,
NaN where nothing was measured, and never passed with nothing compared or measured.

Each run is drawn as cells: (model, test case) -> a score in [0, 1], ``"x"`` (the scorer failed:
an errored row) or ``None`` (no answer: a skipped row). Its long table is built here row by row in
the shape ``nbeval.evaluate`` gives with ``st_score`` (tests/stats/helpers.py: ``s`` is the score,
``hit`` is ``s >= 0.5``), and its aggregates are computed here by hand (the mean of the measured
rows), so one example costs a diff, not an evaluation. The expected coverage and gate come from
the cells, counted with sets, never from the code under test.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st

import nbeval
from nbeval.data.model import LlmDataset
from nbeval.results import EvaluationResult
from nbeval.results.reporting.gate import GATE_KINDS, check_gate
from nbeval.results.runs.diff import diff
from tests.stats.helpers import records

MODELS = ("a", "b", "c")
KEYS = tuple(f"k{i}" for i in range(8))
Cell = float | str | None
Cells = dict[tuple[str, str], Cell]
#: Hypothesis's explain phase re-runs a failing test hundreds of times (minutes here): left out.
PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)

answers = st.one_of(
    st.none(), st.just("x"), st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), st.floats(0, 1, allow_nan=False)
)
cells = st.dictionaries(st.tuples(st.sampled_from(MODELS), st.sampled_from(KEYS)), answers, max_size=24)


@cache
def _metrics() -> pd.DataFrame:
    """``st_score``'s metrics table, as a real run records it."""
    return nbeval.evaluate(records({"a": ["0.5"]}), ["st_score"], progress=False).metrics


def _rows(model: str, key: str, answer: Cell) -> list[dict[str, Any]]:
    base: dict[str, Any] = {"key": key, "model_key": model, "evaluator": "st_score", "label": None, "rationale": None}
    base |= {"error": np.nan, "skipped": False, "skip_reason": np.nan, "details": None}
    if answer is None:
        return [
            base
            | {"metric": m, "value": np.nan, "passed": pd.NA, "skipped": True, "skip_reason": "missing actual_output"}
            for m in ("s", "hit")
        ]
    if answer == "x":
        return [base | {"metric": m, "value": np.nan, "passed": pd.NA, "error": "not a number"} for m in ("s", "hit")]
    assert isinstance(answer, float)
    hit = float(answer >= 0.5)
    return [
        base | {"metric": "s", "value": answer, "passed": answer >= 0.5},
        base | {"metric": "hit", "value": hit, "passed": hit >= 0.5},
    ]


def _aggregates(scores: pd.DataFrame, metrics: pd.DataFrame) -> pd.DataFrame:
    """Per model and metric: the mean of the measured rows, ``n`` measured, ``N`` rows (by hand)."""
    out = []
    for (model, metric), part in scores.groupby(["model_key", "metric"], observed=True, sort=True):
        spec = metrics.set_index("metric").loc[metric]
        measured = part["value"][~part["skipped"] & part["value"].notna()]
        value = float(measured.mean()) if len(measured) else math.nan
        passed = pd.NA if math.isnan(value) else value >= spec["threshold"]
        row = [str(model), "st_score", str(metric), value, len(measured), len(part), passed]
        out.append([*row, spec["direction"], float(spec["threshold"]), bool(spec["primary"])])
    columns = ["model_key", "evaluator", "metric", "value", "n", "N", "passed", "direction", "threshold", "primary"]
    table = pd.DataFrame(out, columns=columns)
    return table.astype({"n": "int64", "N": "int64", "passed": "boolean", "value": "float64", "primary": bool})


def _result(run: Cells, order: list[int] | None = None) -> EvaluationResult:
    """A result of ``run``'s cells; ``order`` permutes its long table's rows."""
    rows = [r for (model, key), answer in sorted(run.items()) for r in _rows(model, key, answer)]
    columns = ["key", "model_key", "evaluator", "metric", "value", "passed", "label", "rationale"]
    scores = pd.DataFrame(rows, columns=[*columns, "error", "skipped", "skip_reason", "details"])
    if order is not None:
        scores = scores.iloc[[i for i in order if i < len(scores)]].reset_index(drop=True)
    scores = scores.astype({c: "category" for c in ("key", "model_key", "evaluator", "metric")})
    scores = scores.astype({"passed": "boolean", "skipped": bool, "value": float})
    return EvaluationResult(scores, _aggregates(scores, _metrics()), _metrics(), LlmDataset([]), meta={})


def _measured(run: Cells, model: str) -> set[str]:
    return {k for (m, k), v in run.items() if m == model and isinstance(v, float)}


def _present(run: Cells, model: str) -> set[str]:
    return {k for (m, k) in run if m == model}


def _expected_failures(before: Cells, after: Cells, min_shared: float) -> set[tuple[str, str]]:
    """(kind, model) the gate must name, by the README's rules, from the cells alone."""
    out = set()
    shared_total = 0
    for model in MODELS:
        mb, ma = _measured(before, model), _measured(after, model)
        nb = len(_present(before, model))
        shared_total += len(mb & ma)
        unmeasured_before = nb > 0 and not mb  # the run's own gate: rows, none measured
        unmeasured_after = len(_present(after, model)) > 0 and not ma
        if mb and not ma:
            out.add(("unmeasured after", model))
        elif not mb and ma and unmeasured_before:
            out.add(("unmeasured before", model))
        elif not mb and not ma and nb and (unmeasured_before or unmeasured_after):
            out.add(("measured in neither run", model))
        elif mb and ma and len(mb & ma) / max(len(mb), len(ma)) < min_shared:
            out.add(("few shared rows", model))
    if shared_total == 0:
        out.add(("nothing compared", ""))
    return out


def _key_table(d: Any, rename: dict[str, str] | None = None) -> pd.DataFrame:
    """``d.table`` in a fixed order, its models renamed by ``rename`` (the names' dtype is not compared)."""
    table = d.table.copy()
    names = rename or {}
    table["model_key"] = [names.get(m, m) for m in table["model_key"].astype(object)]
    return table.sort_values(["evaluator", "metric", "model_key"]).reset_index(drop=True)


# -- the diff's statistics and coverage ----------------------------------------------------------


@settings(max_examples=25, deadline=None, phases=PHASES)
@given(before=cells, after=cells, seed=st.randoms(use_true_random=False))
def test_the_diff_is_invariant_to_row_order(before: Cells, after: Cells, seed: Any) -> None:
    plain = diff(_result(before), _result(after))
    orders = [seed.sample(range(2 * len(run)), 2 * len(run)) for run in (before, after)]
    shuffled = diff(_result(before, orders[0]), _result(after, orders[1]))
    pd.testing.assert_frame_equal(plain.table, shuffled.table)
    pd.testing.assert_frame_equal(plain.coverage, shuffled.coverage)
    assert plain.gate().failing == shuffled.gate().failing


@settings(max_examples=25, deadline=None, phases=PHASES)
@given(
    before=cells,
    after=cells,
    names=st.lists(st.text(min_size=1, max_size=6).filter(str.strip), min_size=3, max_size=3, unique=True),
)
def test_the_diff_is_invariant_to_renaming_models(before: Cells, after: Cells, names: list[str]) -> None:
    rename = dict(zip(MODELS, names, strict=True))
    back = {v: k for k, v in rename.items()}
    plain = diff(_result(before), _result(after))
    renamed = diff(*(_result({(rename[m], k): v for (m, k), v in run.items()}) for run in (before, after)))
    pd.testing.assert_frame_equal(_key_table(plain), _key_table(renamed, back))
    cov = renamed.coverage.assign(model_key=renamed.coverage["model_key"].map(back).astype(object))
    pd.testing.assert_frame_equal(
        plain.coverage.assign(model_key=plain.coverage["model_key"].astype(object))
        .sort_values("model_key")
        .reset_index(drop=True),
        cov.sort_values("model_key").reset_index(drop=True),
    )
    assert plain.gate().tripped == renamed.gate().tripped
    assert len(plain.gate().failing) == len(renamed.gate().failing)


@settings(max_examples=25, deadline=None, phases=PHASES)
@given(before=cells, after=cells)
def test_swapping_the_runs_negates_the_change(before: Cells, after: Cells) -> None:
    forward, backward = diff(_result(before), _result(after)), diff(_result(after), _result(before))
    f, b = _key_table(forward), _key_table(backward)
    assert f["n"].tolist() == b["n"].tolist()
    np.testing.assert_allclose(f["diff"].to_numpy(float), -b["diff"].to_numpy(float), atol=1e-12)
    np.testing.assert_allclose(f["p_value"].to_numpy(float), b["p_value"].to_numpy(float), rtol=1e-9)  # two-sided
    np.testing.assert_array_equal(f["mean_before"].to_numpy(float), b["mean_after"].to_numpy(float))
    cf, cb = forward.coverage, backward.coverage
    assert cf["rows_before"].tolist() == cb["rows_after"].tolist()
    assert cf["shared"].tolist() == cb["shared"].tolist()
    np.testing.assert_array_equal(cf["share"], cb["share"])


@settings(max_examples=40, deadline=None, phases=PHASES)
@example(before={("a", "k0"): 1.0}, after={("a", "k1"): 0.0}, min_shared=0.5).via("disjoint datasets: 1.0 -> 0.0")
@example(before={("a", "k0"): 1.0}, after={("a", "k0"): "x"}, min_shared=0.5).via("every call failed after")
@example(before={("a", "k0"): None}, after={("a", "k0"): None}, min_shared=0.5).via("no answer in either run")
@example(before={}, after={}, min_shared=0.5).via("two empty runs")
@given(before=cells, after=cells, min_shared=st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]))
def test_coverage_statistics_and_gate_match_the_cells(before: Cells, after: Cells, min_shared: float) -> None:
    d = diff(_result(before), _result(after), min_shared=min_shared)
    cov = d.coverage.set_index("model_key")
    for model in MODELS:
        mb, ma = _measured(before, model), _measured(after, model)
        if not (_present(before, model) or _present(after, model)):
            assert model not in cov.index
            continue
        row = cov.loc[model]
        assert (row["rows_before"], row["rows_after"], row["shared"]) == (len(mb), len(ma), len(mb & ma))
        assert (row["N_before"], row["N_after"]) == (len(_present(before, model)), len(_present(after, model)))
        larger = max(len(mb), len(ma))
        assert math.isnan(row["share"]) if larger == 0 else row["share"] == len(mb & ma) / larger
        assert 0 <= row["share"] <= 1 or math.isnan(row["share"])
    for r in d.table.itertuples(index=False):
        shared = sorted(_measured(before, r.model_key) & _measured(after, r.model_key))
        x = np.array([float(before[(r.model_key, k)]) for k in shared])  # type: ignore[arg-type]
        y = np.array([float(after[(r.model_key, k)]) for k in shared])  # type: ignore[arg-type]
        if r.metric == "hit":
            x, y = (x >= 0.5).astype(float), (y >= 0.5).astype(float)
        assert r.n == len(shared)
        if r.n == 0:  # nothing measured in both: no number, no test, no verdict
            assert math.isnan(r.diff) and math.isnan(r.p_value) and not r.regression and not r.improvement
            continue
        assert math.isclose(r.mean_before, x.mean(), abs_tol=1e-12) and math.isclose(
            r.mean_after, y.mean(), abs_tol=1e-12
        )
        assert 0 <= r.p_value <= 1 and r.p_value <= r.p_holm <= 1
        d_rows = y - x
        assert d_rows.min() - 1e-12 <= r.diff_lo <= r.diff_hi <= d_rows.max() + 1e-12
    verdict = d.gate()
    expected = _expected_failures(before, after, min_shared)
    named = {(kind, model) for kind, model, _ in verdict.found if kind != "regression"}
    assert named == expected, verdict.failing
    assert len(verdict.failing) == len({kind for kind, _, _ in verdict.found})  # one line per kind
    assert verdict.tripped == bool(expected or d.has_regressions)
    if int(d.coverage["shared"].sum()) == 0:
        assert verdict.tripped  # never passed with nothing compared


# -- the run gate --------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None, phases=PHASES)
@example(run={}, kinds=["threshold"]).via("an empty dataset")
@example(run={("a", "k0"): "x"}, kinds=["threshold"]).via("every call failed")
@given(
    run=st.dictionaries(
        st.tuples(st.sampled_from(MODELS), st.sampled_from(KEYS)), st.one_of(st.none(), st.just("x")), max_size=12
    ),
    kinds=st.lists(st.sampled_from(list(GATE_KINDS)), min_size=1, unique=True),
)
def test_the_run_gate_fails_every_choice_of_kinds_when_nothing_was_measured(run: Cells, kinds: list[str]) -> None:
    result = _result(run)
    for fail_on in (kinds, True):
        verdict = check_gate(result, fail_on)
        assert verdict.tripped and verdict.failing[-1].startswith("nothing was measured")


@settings(max_examples=40, deadline=None, phases=PHASES)
@given(run=cells, kinds=st.lists(st.sampled_from(list(GATE_KINDS)), min_size=1, unique=True))
def test_the_run_gate_says_nothing_was_measured_only_when_so(run: Cells, kinds: list[str]) -> None:
    measured = any(isinstance(v, float) for v in run.values())
    verdict = check_gate(_result(run), kinds)
    assert any(line.startswith("nothing was measured") for line in verdict.failing) == (not measured)


@cache
def _reference_dtypes() -> dict[str, Any]:
    """The dtypes of a diff table with a row."""
    return diff(_result({("a", "k0"): 0.5}), _result({("a", "k0"): 0.75})).table.dtypes.to_dict()


@settings(max_examples=25, deadline=None, phases=PHASES)
@example(before={}, after={}).via("found by test_swapping_the_runs_negates_the_change: an empty table was all object")
@given(before=cells, after=cells)
def test_the_table_has_the_same_dtypes_whatever_it_holds(before: Cells, after: Cells) -> None:
    assert diff(_result(before), _result(after)).table.dtypes.to_dict() == _reference_dtypes()
